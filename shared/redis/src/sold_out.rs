//! The hot-packet fast path's memory: packets this instance has seen sell out.
//!
//! A sold-out packet never gets shares back, so once one grab learned it, the instance answers
//! later grabs on it with a plain `HMGET` of the packet hash (the repeat grabber's share, or sold
//! out) instead of the grab script. The memo is per instance, bounded in size and in time; the
//! first grab after an entry lapses runs the script again and relearns it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use red_packets_core::domain::PacketId;

/// How long an instance trusts that a packet is sold out.
pub const SOLD_OUT_MEMO_WINDOW: Duration = Duration::from_secs(10 * 60);

/// How many packets one instance remembers at most (about 100 bytes each).
pub const SOLD_OUT_MEMO_CAPACITY: usize = 10_000;

/// Packet ids known to be sold out, each with the instant it was learned.
#[derive(Debug)]
pub struct SoldOutMemo {
    learned: Mutex<HashMap<PacketId, Instant>>,
    window: Duration,
    capacity: usize,
}

impl SoldOutMemo {
    /// A memo trusting each entry for `window`, holding at most `capacity` entries.
    pub fn new(window: Duration, capacity: usize) -> Self {
        SoldOutMemo { learned: Mutex::new(HashMap::new()), window, capacity }
    }

    /// True when `id` was learned sold out less than the window before `now`.
    pub fn contains(&self, id: &PacketId, now: Instant) -> bool {
        self.entries().get(id).is_some_and(|learned| now.duration_since(*learned) < self.window)
    }

    /// Forgets `id`: a packet loaded again from the ledger may have shares again.
    pub fn forget(&self, id: &PacketId) {
        self.entries().remove(id);
    }

    /// Remembers that `id` is sold out as of `now`. When full, lapsed entries go first; if none
    /// has lapsed the memo stays as it is (the script still answers correctly, only slower).
    pub fn learn(&self, id: &PacketId, now: Instant) {
        let mut learned = self.entries();
        if learned.len() >= self.capacity && !learned.contains_key(id) {
            learned.retain(|_, at| now.duration_since(*at) < self.window);
            if learned.len() >= self.capacity {
                return;
            }
        }
        learned.insert(id.clone(), now);
    }

    /// How many packets the memo holds.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// True when the memo holds no packet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<PacketId, Instant>> {
        // A panic while holding this lock cannot leave the map half-updated: every update is one call.
        self.learned.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Default for SoldOutMemo {
    fn default() -> Self {
        SoldOutMemo::new(SOLD_OUT_MEMO_WINDOW, SOLD_OUT_MEMO_CAPACITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_holds_for_the_window_only() {
        let memo = SoldOutMemo::new(Duration::from_secs(10), 4);
        let id = PacketId::random();
        let start = Instant::now();
        assert!(!memo.contains(&id, start));
        memo.learn(&id, start);
        assert!(memo.contains(&id, start + Duration::from_secs(9)));
        assert!(!memo.contains(&id, start + Duration::from_secs(10)));
        assert!(!memo.contains(&PacketId::random(), start));
    }

    #[test]
    fn a_full_memo_drops_lapsed_entries_and_never_grows_past_capacity() {
        let memo = SoldOutMemo::new(Duration::from_secs(10), 3);
        let start = Instant::now();
        let old: Vec<PacketId> = (0..3).map(|_| PacketId::random()).collect();
        for id in &old {
            memo.learn(id, start);
        }
        let newcomer = PacketId::random();
        memo.learn(&newcomer, start + Duration::from_secs(1));
        assert_eq!(memo.len(), 3, "nothing lapsed yet: the newcomer is not remembered");
        assert!(!memo.contains(&newcomer, start + Duration::from_secs(1)));

        memo.learn(&newcomer, start + Duration::from_secs(11));
        assert_eq!(memo.len(), 1, "the lapsed entries made room");
        assert!(memo.contains(&newcomer, start + Duration::from_secs(11)));
        assert!(!memo.contains(&old[0], start + Duration::from_secs(11)));
    }
}
