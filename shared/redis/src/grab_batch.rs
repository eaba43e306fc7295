//! What a grab's script call carries through the coalescer ([`super::coalesce`]): each grab
//! with the instant it read, and why a call answered nothing. The store holds the coalescer; the
//! grab path (`grab_path.rs`) fills and answers it.

use super::coalesce::{Coalescer, Unanswered};
use super::scripts::ScriptGrab;
use red_packets_core::clock::Millis;
use red_packets_core::domain::grab::GrabAttempt;

/// Concurrent grabs of one packet (keyed by its hash's key), coalesced into one script call.
pub(super) type GrabCoalescer = Coalescer<String, TimedGrab, ScriptGrab, BatchFailure>;

/// One grab waiting in the coalescer: who, carrying what passphrase, at the time it read.
#[derive(Debug, Clone)]
pub(super) struct TimedGrab {
    pub(super) attempt: GrabAttempt,
    pub(super) now_ms: Millis,
    /// Counts against the user's grab rate: the request's first call does; a call again while
    /// another caller asks the ledger, or after this one asked it, does not.
    pub(super) counts: bool,
}

/// Why a grab script call (one grab's or a batch's) answered nothing.
#[derive(Debug, Clone)]
pub(super) enum BatchFailure {
    /// Redis is over `maxmemory` and refused the script whole, before anything changed.
    OutOfMemory(String),
    /// Redis failed, or the batch ended without this grab's answer.
    Unavailable(String),
    /// Redis did not answer within the store's limit: the script may have run, its answer lost.
    TimedOut(String),
}

impl From<Unanswered> for BatchFailure {
    fn from(_: Unanswered) -> Self {
        BatchFailure::Unavailable("the grab's batch ended without its answer".into())
    }
}
