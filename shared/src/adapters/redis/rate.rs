//! One user's grab rate across packets ([`GrabRate`]), counted in Redis: a counter per user per
//! window, `<prefix>:{u:<user>}:grabs:<window>`, in the user's own hash slot (the key carries
//! the user's hash tag, so one user's counters live on one node, and users spread across the
//! cluster). Counting is two plain commands in one round trip, `INCR` and `EXPIRE … NX` (Redis
//! 7.0, Valkey): the counter's first count sets its lifetime, the later ones leave it. A batch of
//! grabs counts every user's at once: in one pipeline on one node, one request a user (each its
//! own slot) on a cluster.

use futures::future::try_join_all;
use redis::RedisResult;

use super::connection::RedisConnection;
use crate::clock::Millis;
use crate::domain::risk::GrabRate;
use crate::domain::{GrabOutcome, UserId};

/// The counter of `user`'s grabs in window `window`.
pub fn counter_key(prefix: &str, user: &UserId, window: u64) -> String {
    format!("{prefix}:{{u:{user}}}:grabs:{window}")
}

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
            let key = counter_key(prefix, user, rate.window(*now_ms));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_carries_its_users_hash_tag_and_names_its_window() {
        let alice = UserId::from_claim("alice").unwrap();
        assert_eq!(counter_key("rp", &alice, 29_000_000), "rp:{u:alice}:grabs:29000000");
    }
}
