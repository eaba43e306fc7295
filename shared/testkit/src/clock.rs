//! A clock tests move by hand.

use std::sync::atomic::{AtomicI64, Ordering};

use red_packets::clock::{Clock, Millis, SystemClock};

/// A clock that starts at the machine's time and moves only when told to.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock reading the machine's time now.
    pub fn starting_now() -> Self {
        Self(AtomicI64::new(SystemClock.now_ms()))
    }

    /// Moves the clock forward by `ms` milliseconds.
    pub fn advance(&self, ms: Millis) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> Millis {
        self.0.load(Ordering::SeqCst)
    }
}
