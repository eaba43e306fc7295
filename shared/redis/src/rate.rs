//! One user's grab rate across packets ([`GrabRate`]), counted in Redis: a counter per user per
//! window ([`grab_counter_key`]), in the user's own hash slot (the key carries
//! the user's hash tag, so one user's counters live on one node, and users spread across the
//! cluster). Counting is two plain commands in one round trip, `INCR` and `EXPIRE … NX` (Redis
//! 7.0, Valkey): the counter's first count sets its lifetime, the later ones leave it. A batch of
//! grabs counts every user's at once: in one pipeline on one node, one request a user (each its
//! own slot) on a cluster.
//!
//! Counted alongside the grab ([`RateCounting::Alongside`](red_packets_core::domain::risk::RateCounting)),
//! what the counts find is kept in a [`RefusedMemo`]: the users this instance saw past the
//! limit, refused without a call until their window ends.

use std::collections::HashMap;
use std::sync::Mutex;

use futures::future::try_join_all;
use redis::RedisResult;

use super::connection::RedisConnection;
use super::keys::grab_counter_key;
use red_packets_core::clock::Millis;
use red_packets_core::domain::risk::GrabRate;
use red_packets_core::domain::{GrabOutcome, UserId};

/// Counts one grab for each of `grabs` (a user and the grab's instant), in order: `None` for a
/// grab within the rate, the rate's refusal for one past it. On one node every count goes in one
/// pipeline; on a cluster each user's in its own (a pipeline's keys share a slot), all at once.
pub async fn count(
    conn: &RedisConnection,
    prefix: &str,
    rate: GrabRate,
    cluster: bool,
    grabs: impl IntoIterator<Item = (&UserId, Millis)>,
) -> RedisResult<Vec<Option<GrabOutcome>>> {
    let ttl = rate.counter_ttl_seconds();
    let grabs: Vec<(&UserId, Millis)> = grabs.into_iter().collect();
    if grabs.is_empty() {
        return Ok(Vec::new()); // a batch of calls again while another caller asks the ledger
    }
    let pipeline = |grabs: &[(&UserId, Millis)]| {
        let mut pipe = redis::pipe();
        for (user, now_ms) in grabs {
            let key = grab_counter_key(prefix, user, rate.window(*now_ms));
            pipe.cmd("INCR").arg(&key).cmd("EXPIRE").arg(&key).arg(ttl).arg("NX").ignore();
        }
        pipe
    };
    let counted: Vec<u64> = if cluster {
        let counts = grabs.chunks(1).map(|one| {
            let (mut conn, pipe) = (conn.clone(), pipeline(one));
            async move { pipe.query_async::<(u64,)>(&mut conn).await.map(|(counted,)| counted) }
        });
        try_join_all(counts).await?
    } else {
        pipeline(&grabs).query_async(&mut conn.clone()).await?
    };
    Ok(grabs
        .iter()
        .zip(counted)
        .map(|((_, now_ms), counted)| {
            (!rate.admits(counted))
                .then(|| GrabOutcome::RateLimited { retry_after_seconds: rate.retry_after_seconds(*now_ms) })
        })
        .collect())
}

/// How many users one instance remembers past the limit at most (about 100 bytes each).
pub const REFUSED_MEMO_CAPACITY: usize = 100_000;

/// The users this instance's counts found past the grab rate, each with the window it holds
/// for: refused without a call until that window ends. Bounded: when full, past windows' entries
/// go first; if every entry is current, a new one is not kept (that user is counted again and
/// passes at most once more).
#[derive(Debug)]
pub struct RefusedMemo {
    refused: Mutex<HashMap<UserId, u64>>,
    capacity: usize,
}

impl Default for RefusedMemo {
    fn default() -> Self {
        RefusedMemo::new(REFUSED_MEMO_CAPACITY)
    }
}

impl RefusedMemo {
    /// A memo of at most `capacity` users.
    pub fn new(capacity: usize) -> Self {
        RefusedMemo { refused: Mutex::new(HashMap::new()), capacity }
    }

    /// The rate's refusal of `user`'s grab at `now_ms` when a count found them past the limit
    /// in the window `now_ms` falls in; `None` otherwise.
    pub fn refusal(&self, rate: GrabRate, user: &UserId, now_ms: Millis) -> Option<GrabOutcome> {
        let window = rate.window(now_ms);
        (self.entries().get(user) == Some(&window))
            .then(|| GrabOutcome::RateLimited { retry_after_seconds: rate.retry_after_seconds(now_ms) })
    }

    /// Remembers that a count found `user` past the limit in the window of `now_ms`.
    pub fn learn(&self, rate: GrabRate, user: &UserId, now_ms: Millis) {
        let window = rate.window(now_ms);
        let mut refused = self.entries();
        if refused.len() >= self.capacity && !refused.contains_key(user) {
            refused.retain(|_, held| *held >= window);
            if refused.len() >= self.capacity {
                return;
            }
        }
        refused.insert(user.clone(), window);
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<UserId, u64>> {
        self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use red_packets_core::domain::risk::RateCounting;

    const RATE: GrabRate = GrabRate { grabs: 3, window_seconds: 60, counting: RateCounting::Alongside };

    #[test]
    fn a_user_found_past_the_limit_is_refused_until_the_window_ends() {
        let memo = RefusedMemo::default();
        let (mallory, bob) = (UserId::from_claim("mallory").unwrap(), UserId::from_claim("bob").unwrap());
        assert_eq!(memo.refusal(RATE, &mallory, 60_000), None);
        memo.learn(RATE, &mallory, 61_000);
        assert_eq!(memo.refusal(RATE, &mallory, 119_500), Some(GrabOutcome::RateLimited { retry_after_seconds: 1 }));
        assert_eq!(memo.refusal(RATE, &bob, 119_500), None, "only the user the count found");
        assert_eq!(memo.refusal(RATE, &mallory, 120_000), None, "the next window counts afresh");
    }

    #[test]
    fn a_full_memo_makes_room_from_past_windows_only() {
        let memo = RefusedMemo::new(2);
        let user = |name: &str| UserId::from_claim(name).unwrap();
        memo.learn(RATE, &user("a"), 0);
        memo.learn(RATE, &user("b"), 60_000);
        memo.learn(RATE, &user("c"), 60_000);
        assert!(memo.refusal(RATE, &user("c"), 60_000).is_some(), "a's past window made room");
        memo.learn(RATE, &user("d"), 60_000);
        assert!(memo.refusal(RATE, &user("d"), 60_000).is_none(), "full of current entries: not kept");
        assert!(memo.refusal(RATE, &user("b"), 60_000).is_some());
    }
}
