//! Settle: makes every grab durable and finalises packets, exactly once, whatever crashes.
//! Redis is the fast path, the ledger the truth.
//!
//! For each packet of the shards it is given (the Redis settle index and the ledger's open
//! index together), one pass:
//! 1. record the grabs the ledger has not confirmed, each under conditions that refuse a share
//!    paid to two users, a user paid two shares or a changed amount, then advance the packet's
//!    persisted mark in Redis. A grab the ledger refuses is reported ([`RECONCILIATION_MISMATCH`])
//!    and the packet is re-synced in Redis from the ledger;
//! 2. if the packet is finished, expired or cancelled, close it in Redis (no grab succeeds
//!    after; a cancelled packet is closed already), record the last grabs, claim every share
//!    nobody holds for the refund (after which no grab of them can be recorded), and compute
//!    the refund from the ledger's own grabs; one conditional transaction writes the refund and
//!    moves the packet out of `open`, so no run refunds twice;
//! 3. reconcile it against the ledger (grabs + refund == total, grabs <= count);
//! 4. retire it from Redis; a packet whose ledger record is missing or whose books do not
//!    balance is quarantined instead, its keys kept for inspection.
//!
//! Packets are independent, so a run settles up to [`PACKETS_IN_FLIGHT`] at a time. A packet
//! that fails for its own reasons (corrupt data, an item DynamoDB refuses) is skipped and
//! named; only an unreachable store ends a run. A run that stops before its deadline resumes
//! at the shard it stopped in. A packet the index names but Redis lost is restored from the
//! ledger. A crash at any point leaves work the next run redoes idempotently; fault points
//! (`FaultPoint`, `Settler::crashing_at`) let tests crash it on purpose; no setting reaches
//! them, so a deployed settler never crashes there.
//!
//! The rooms: [`run`] plans a run over shards and drives the packets; [`packet`] is one packet's
//! state machine (persist, close, re-sync, restore, finalise, quarantine); [`summary`] is what a
//! run reports. Two injected clocks: the business clock (expiry, stamps) and the wall clock of
//! the invocation's time budget (its deadline, its draining).

mod packet;
mod run;
mod summary;

use std::ops::RangeInclusive;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::clock::{rfc3339, Clock, Millis, SystemClock};
use crate::domain::audit::{Attribution, AuditAction, AuditEntry, AuditFacts};
use crate::domain::{Invalid, PacketId};
use crate::ports::{AuditTrail, SettleIndex, SettleLedger, StoreError};

pub use crate::markers::RECONCILIATION_MISMATCH;
pub use summary::{SettleSummary, QUARANTINE_LISTED};

/// Packets one run settles at a time: they are independent, and each waits mostly on I/O.
pub const PACKETS_IN_FLIGHT: usize = 16;

/// How long before the Lambda deadline a run stops taking new packets.
pub const DEADLINE_MARGIN_MS: Millis = 3_000;

/// How often the recovery sweep reads each shard's open packets from the ledger: a slice of
/// the shards at a time, so every shard once in this period.
pub const SWEEP_PERIOD_MS: Millis = 60 * 60 * 1000;

/// The pause between passes of an invocation that keeps draining.
pub const DRAIN_PAUSE_MS: Millis = 1_000;

/// Points where tests can make settle crash, in the order a packet passes them; only
/// [`Settler::crashing_at`] sets one, and no setting reaches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPoint {
    /// Grab items written, the persisted mark not yet advanced.
    AfterGrabItems,
    /// The packet closed in Redis, its last grabs not yet persisted.
    AfterClose,
    /// Every grab persisted, the finalising transaction not yet sent.
    BeforeFinalise,
    /// Finalised in DynamoDB, not yet reconciled nor retired from Redis.
    AfterFinalise,
}

impl FaultPoint {
    /// Every fault point, in order.
    pub const ALL: [FaultPoint; 4] =
        [FaultPoint::AfterGrabItems, FaultPoint::AfterClose, FaultPoint::BeforeFinalise, FaultPoint::AfterFinalise];
}

/// The invocation payload: `{"shards": [from, to]}` (inclusive); absent means every shard.
/// `{"release": ["<packet id>", …], "operator": "<name>", "reason": "<why>"}` takes packets out
/// of quarantine first (an operator who explained them), and the run settles them again; each
/// release is an entry of the audit trail, so a release names its operator and reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettleRequest {
    /// First and last shard to settle.
    #[serde(default)]
    pub shards: Option<[u32; 2]>,
    /// Packets to take out of quarantine before the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub release: Vec<PacketId>,
    /// Who releases them (required with `release`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    /// Why (required with `release`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// After the ledger was restored from a backup (docs/OPERATIONS.md, "Restoring the
    /// ledger"): every packet Redis still holds is settled again from its first grab, before the
    /// run ([`SettleIndex::replay_held`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replay: bool,
}

impl SettleRequest {
    /// Who releases the packets of `release`, and why; `None` for a request that releases none.
    pub fn release_by(&self) -> Result<Option<Attribution>, Invalid> {
        if self.release.is_empty() {
            return Ok(None);
        }
        let attribution = Attribution {
            operator: self.operator.clone().unwrap_or_default(),
            reason: self.reason.clone().unwrap_or_default(),
        };
        attribution.validate()?;
        Ok(Some(attribution))
    }
}

/// Why a run ended early: a store, or a test's fault point.
#[derive(Debug, Error)]
pub enum SettleError {
    /// A store could not be reached; what was done stays done, the next run continues.
    #[error("settle stopped: {error}")]
    Unavailable {
        /// The failure.
        error: StoreError,
        /// What the run did before it.
        summary: Box<SettleSummary>,
    },
    /// A test's fault point was reached.
    #[error("settle crashed on purpose at {0:?}")]
    Crashed(FaultPoint),
}

/// Why a packet's pass stopped short: a port failed (settle skips the packet or ends the run,
/// by [`StoreError::is_the_records_fault`]), or a test's fault point was reached.
enum Stop {
    Store(StoreError),
    Crash(FaultPoint),
}

impl From<StoreError> for Stop {
    fn from(error: StoreError) -> Self {
        Stop::Store(error)
    }
}

/// The settle engine, on the live store's settle queue and the ledger (the ports; the
/// deployed pair is `adapters::DeployedSettler`).
pub struct Settler<S, L> {
    store: Arc<S>,
    ledger: L,
    clock: Arc<dyn Clock>,
    wall: Arc<dyn Clock>,
    crash_at: Option<FaultPoint>,
    drain_ms: Millis,
}

impl<S: SettleIndex, L: SettleLedger> Settler<S, L> {
    /// A settler with the system clock, for business time and for its time budget alike.
    pub fn new(store: Arc<S>, ledger: L) -> Self {
        Settler {
            store,
            ledger,
            clock: Arc::new(SystemClock),
            wall: Arc::new(SystemClock),
            crash_at: None,
            drain_ms: 0,
        }
    }

    /// The same settler, each invocation draining for `drain` ([`Settler::drain`]).
    pub fn draining_for(mut self, drain: std::time::Duration) -> Self {
        self.drain_ms = Millis::try_from(drain.as_millis()).unwrap_or(Millis::MAX);
        self
    }

    /// Until when (epoch ms) an invocation started now with `deadline_ms` keeps draining:
    /// `None` for a single pass.
    pub fn drain_until(&self, deadline_ms: Option<Millis>) -> Option<Millis> {
        if self.drain_ms == 0 {
            return None;
        }
        let until = self.wall.now_ms().saturating_add(self.drain_ms);
        Some(deadline_ms.map_or(until, |deadline| until.min(deadline - DEADLINE_MARGIN_MS)))
    }

    /// The same settler reading business time (expiry, due packets, write times) from `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The same settler measuring its time budget (the Lambda deadline, draining) on `wall`:
    /// real time in Lambda, where the deadline is a wall-clock instant, whatever a test does
    /// to business time.
    pub fn with_wall_clock(mut self, wall: Arc<dyn Clock>) -> Self {
        self.wall = wall;
        self
    }

    /// The same settler, crashing when it reaches `point`.
    pub fn crashing_at(mut self, point: Option<FaultPoint>) -> Self {
        self.crash_at = point;
        self
    }

    /// The ledger this settler writes to (tests and operator tools read it back).
    pub fn ledger(&self) -> &L {
        &self.ledger
    }

    /// The live store this settler reads.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The shards a request names, clamped to the configured count; every shard by default.
    pub fn shards_of(&self, request: &SettleRequest) -> RangeInclusive<u32> {
        let last = self.store.settle_shards() - 1;
        match request.shards {
            Some([from, to]) => from.min(last)..=to.min(last),
            None => 0..=last,
        }
    }

    /// Marks every packet Redis holds in `shards` to be settled again from its first grab (the
    /// ledger was restored from a backup): how many.
    pub async fn replay(&self, shards: RangeInclusive<u32>) -> Result<u32, StoreError> {
        let mut replayed = 0;
        for shard in shards {
            replayed += self.store.replay_held(shard).await?;
        }
        Ok(replayed)
    }

    /// Takes `ids` out of quarantine (an operator explained them, `by`): [`release_packets`].
    pub async fn release(&self, ids: &[PacketId], by: &Attribution) -> Result<u32, StoreError> {
        release_packets(self.store.as_ref(), &self.ledger, self.clock.as_ref(), ids, by).await
    }

    /// The packets in quarantine, oldest first (at most [`QUARANTINE_LISTED`]).
    pub async fn quarantined(&self) -> Result<Vec<PacketId>, StoreError> {
        Ok(self.store.quarantined(QUARANTINE_LISTED).await?.into_iter().map(|(id, _)| id).collect())
    }
}

/// Takes `ids` out of quarantine (an operator explained them, `by`); the next pass settles them
/// again. Each release is an entry of the audit trail, written before Redis releases the packet,
/// so no release goes unrecorded: a run that fails between the two leaves the entry of a
/// release the operator's retry then makes (the entry records the operator's act; the summary
/// says what was in quarantine). Returns how many were in quarantine. Settle's `release` request
/// and the operators' API (`POST /ops/v1/packets/{packet_id}/release`) both release through it.
pub async fn release_packets<S: SettleIndex, L: AuditTrail>(
    store: &S,
    ledger: &L,
    clock: &dyn Clock,
    ids: &[PacketId],
    by: &Attribution,
) -> Result<u32, StoreError> {
    let mut released = 0;
    for id in ids {
        let now_ms = clock.now_ms();
        let entry = AuditEntry {
            at: rfc3339(now_ms),
            action: AuditAction::PacketReleased,
            subject: id.to_string(),
            actor: by.operator.clone(),
            reason: by.reason.clone(),
            user: None,
            facts: AuditFacts::words(&by.reason),
        };
        ledger.record(entry, now_ms).await?;
        released += u32::from(store.release(id).await?);
    }
    Ok(released)
}
