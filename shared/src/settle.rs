//! Settle: makes every grab durable and finalises packets, exactly once, whatever crashes.
//!
//! For each packet of the shards it is given (the Redis settle index and the ledger's open
//! index together), one pass:
//! 1. persist the grabs DynamoDB has not confirmed (BatchWriteItem, idempotent), then advance
//!    the packet's persisted mark in Redis;
//! 2. if the packet is finished or expired, close it in Redis (no grab succeeds after), persist
//!    the last grabs, then one conditional transaction writes the refund and moves the packet
//!    out of `open`, so no second run can refund again;
//! 3. reconcile it against the ledger (grabs + refund == total, grabs <= count), logging
//!    [`RECONCILIATION_MISMATCH`] at ERROR when the books do not balance;
//! 4. retire it from Redis.
//!
//! Packets are independent, so a run settles up to [`PACKETS_IN_FLIGHT`] at a time, and a
//! packet's grab items go out in concurrent batches of 25.
//!
//! A packet the index names but Redis lost is restored from its ledger record: its seed gives
//! its shares, the grab items say which are taken. A crash at any point leaves work the next run
//! redoes idempotently; [`FaultPoint`]s let tests crash it on purpose.

use std::collections::BTreeSet;
use std::ops::RangeInclusive;
use std::sync::Arc;

use futures::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::adapters::redis_store::LivePacket;
use crate::adapters::scripts::CloseOutcome;
use crate::adapters::{DynamoLedger, RedisStore};
use crate::clock::{Clock, Millis, SystemClock};
use crate::domain::settlement::{finalise, reconcile};
use crate::domain::{PacketId, PacketStatus};
use crate::error::ApiError;

/// The marker on every reconciliation failure's log line (alarms filter on it).
pub const RECONCILIATION_MISMATCH: &str = "RECONCILIATION_MISMATCH";

/// Packets one run settles at a time: they are independent, and each waits mostly on I/O.
pub const PACKETS_IN_FLIGHT: usize = 16;

/// How long before the Lambda deadline a run stops taking new packets.
pub const DEADLINE_MARGIN_MS: Millis = 3_000;

/// Points where tests can make settle crash, in the order a packet passes them.
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettleRequest {
    /// First and last shard to settle.
    #[serde(default)]
    pub shards: Option<[u32; 2]>,
}

/// What one run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettleSummary {
    /// First and last shard this run covered.
    pub shards: [u32; 2],
    /// Packets looked at.
    pub packets: u32,
    /// Grab items written.
    pub grabs_persisted: u64,
    /// Packets this run finalised.
    pub finalised: u32,
    /// Money this run returned to senders.
    pub refunded_cents: u64,
    /// Packets whose books do not balance.
    pub mismatches: u32,
    /// Packets restored into Redis from the ledger.
    pub restored: u32,
    /// Packets skipped because their data is corrupt (logged at ERROR).
    pub failed: u32,
    /// True when the run stopped before its deadline with packets left for the next run.
    pub stopped_early: bool,
}

impl SettleSummary {
    fn absorb(&mut self, packet: &SettleSummary) {
        self.grabs_persisted += packet.grabs_persisted;
        self.finalised += packet.finalised;
        self.refunded_cents += packet.refunded_cents;
        self.mismatches += packet.mismatches;
        self.restored += packet.restored;
    }
}

/// Why a run ended early.
#[derive(Debug, Error)]
pub enum SettleError {
    /// A store could not be reached; what was done stays done, the next run continues.
    #[error("settle stopped: {error}")]
    Unavailable {
        /// The failure.
        error: ApiError,
        /// What the run did before it.
        summary: Box<SettleSummary>,
    },
    /// A test's fault point was reached.
    #[error("settle crashed on purpose at {0:?}")]
    Crashed(FaultPoint),
}

enum Stop {
    Api(ApiError),
    Crash(FaultPoint),
}

impl From<ApiError> for Stop {
    fn from(error: ApiError) -> Self {
        Stop::Api(error)
    }
}

/// The settle engine, on the live store and the ledger.
pub struct Settler {
    store: Arc<RedisStore>,
    ledger: DynamoLedger,
    clock: Arc<dyn Clock>,
    crash_at: Option<FaultPoint>,
}

impl Settler {
    /// A settler with the system clock.
    pub fn new(store: Arc<RedisStore>, ledger: DynamoLedger) -> Self {
        Settler { store, ledger, clock: Arc::new(SystemClock), crash_at: None }
    }

    /// The same settler reading time from `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The same settler, crashing when it reaches `point` (tests only).
    pub fn crashing_at(mut self, point: Option<FaultPoint>) -> Self {
        self.crash_at = point;
        self
    }

    /// The shards a request names, clamped to the configured count; every shard by default.
    pub fn shards_of(&self, request: &SettleRequest) -> RangeInclusive<u32> {
        let last = self.store.settle_shards() - 1;
        match request.shards {
            Some([from, to]) => from.min(last)..=to.min(last),
            None => 0..=last,
        }
    }

    /// Settles `shards`, [`PACKETS_IN_FLIGHT`] packets at a time, taking no new packet once
    /// `deadline_ms` (epoch ms, real time) is within [`DEADLINE_MARGIN_MS`].
    pub async fn run(
        &self,
        shards: RangeInclusive<u32>,
        deadline_ms: Option<Millis>,
    ) -> Result<SettleSummary, SettleError> {
        let mut summary = SettleSummary { shards: [*shards.start(), *shards.end()], ..SettleSummary::default() };
        let past_deadline =
            || deadline_ms.is_some_and(|deadline| SystemClock.now_ms() + DEADLINE_MARGIN_MS >= deadline);
        for shard in shards {
            let packets = match self.packets_in(shard).await {
                Ok(packets) => packets,
                Err(error) => return Err(SettleError::Unavailable { error, summary: Box::new(summary) }),
            };
            let mut settled = stream::iter(packets)
                .map(|id| async move {
                    if past_deadline() {
                        return (id, None);
                    }
                    let mut delta = SettleSummary::default();
                    let result = self.settle_packet(&id, &mut delta).await;
                    (id, Some((delta, result)))
                })
                .buffer_unordered(PACKETS_IN_FLIGHT);
            while let Some((id, outcome)) = settled.next().await {
                let Some((delta, result)) = outcome else {
                    summary.stopped_early = true;
                    continue;
                };
                summary.packets += 1;
                summary.absorb(&delta);
                match result {
                    Ok(()) => {}
                    Err(Stop::Crash(point)) => return Err(SettleError::Crashed(point)),
                    Err(Stop::Api(ApiError::Internal(detail))) => {
                        summary.failed += 1;
                        tracing::error!(packet_id = %id, detail, "settle skipped a packet with corrupt data");
                    }
                    Err(Stop::Api(error)) => {
                        tracing::error!(packet_id = %id, %error, "settle stopped: a store is unreachable");
                        return Err(SettleError::Unavailable { error, summary: Box::new(summary) });
                    }
                }
            }
            if summary.stopped_early {
                tracing::warn!(?summary, "settle stopping before its deadline; the next run continues");
                return Ok(summary);
            }
        }
        tracing::info!(?summary, "settle run complete");
        Ok(summary)
    }

    /// The packets of `shard`: indexed in Redis or open in the ledger (which survives a Redis loss).
    async fn packets_in(&self, shard: u32) -> Result<BTreeSet<PacketId>, ApiError> {
        let mut packets: BTreeSet<PacketId> = self.store.indexed_packets(shard).await?.into_iter().collect();
        packets.extend(self.ledger.open_packets(shard).await?);
        Ok(packets)
    }

    fn checkpoint(&self, point: FaultPoint) -> Result<(), Stop> {
        if self.crash_at == Some(point) {
            return Err(Stop::Crash(point));
        }
        Ok(())
    }

    async fn settle_packet(&self, id: &PacketId, summary: &mut SettleSummary) -> Result<(), Stop> {
        let live = match self.store.snapshot(id).await? {
            Some(live) => live,
            None => match self.restore(id, summary).await? {
                Some(live) => live,
                None => return Ok(()),
            },
        };
        summary.grabs_persisted += self.persist(&live).await?;

        if self.store.close(id, self.clock.now_ms()).await? != CloseOutcome::Closed {
            return Ok(());
        }
        self.checkpoint(FaultPoint::AfterClose)?;
        let Some(live) = self.store.snapshot(id).await? else { return Ok(()) };
        summary.grabs_persisted += self.persist(&live).await?;
        self.checkpoint(FaultPoint::BeforeFinalise)?;

        let packet = &live.packet;
        let result = match finalise(packet.total_cents, packet.count, &live.grabs) {
            Ok(result) => result,
            Err(mismatch) => {
                summary.mismatches += 1;
                tracing::error!(marker = RECONCILIATION_MISMATCH, packet_id = %id, %mismatch, "{RECONCILIATION_MISMATCH} {id}: Redis log does not balance");
                return Ok(());
            }
        };
        if self.ledger.finalise(packet, &result, self.clock.now_ms()).await? {
            summary.finalised += 1;
            summary.refunded_cents += result.refund_cents;
            tracing::info!(packet_id = %id, status = result.status.as_str(), refund_cents = result.refund_cents, "finalised");
        }
        self.checkpoint(FaultPoint::AfterFinalise)?;
        if !self.reconcile(id).await? {
            summary.mismatches += 1;
        }
        self.store.retire(id).await?;
        Ok(())
    }

    /// Writes the grabs the ledger lacks, then advances the persisted mark. Returns how many.
    async fn persist(&self, live: &LivePacket) -> Result<u64, Stop> {
        let pending = live.pending();
        if pending.is_empty() {
            return Ok(0);
        }
        self.ledger.put_grabs(&live.packet, pending).await?;
        self.checkpoint(FaultPoint::AfterGrabItems)?;
        self.store.mark_persisted(&live.packet.id, live.grabs.len()).await?;
        Ok(pending.len() as u64)
    }

    /// Reloads a packet Redis lost from the ledger, if the ledger still has it open.
    async fn restore(&self, id: &PacketId, summary: &mut SettleSummary) -> Result<Option<LivePacket>, Stop> {
        let Some(ledgered) = self.ledger.ledger_packet(id).await? else {
            self.store.retire(id).await?;
            return Ok(None);
        };
        if ledgered.status != PacketStatus::Open {
            self.store.retire(id).await?;
            return Ok(None);
        }
        // Shares are handed out in order, so grab `seq` took share `seq - 1`; everything up to
        // the highest seq on record is gone, even where a grab between was lost with Redis.
        let shares = ledgered.packet.shares();
        let taken = ledgered.grabs.iter().map(|grab| grab.seq as usize).max().unwrap_or(0).min(shares.len());
        self.store.restore(&ledgered.packet, &ledgered.grabs, &shares[taken..]).await?;
        summary.restored += 1;
        tracing::warn!(packet_id = %id, grabs_on_record = ledgered.grabs.len(), shares_left = shares.len() - taken, "restored a packet Redis had lost, from the ledger");
        Ok(self.store.snapshot(id).await?)
    }

    /// Checks a finalised packet's books in the ledger; false (and an ERROR line) when they do not balance.
    async fn reconcile(&self, id: &PacketId) -> Result<bool, Stop> {
        let Some(ledgered) = self.ledger.ledger_packet(id).await? else { return Ok(true) };
        let amounts: Vec<u64> = ledgered.grabs.iter().map(|grab| grab.amount_cents).collect();
        let refund = ledgered.refund_item_cents.unwrap_or(0);
        let mut verdict = reconcile(ledgered.packet.total_cents, ledgered.packet.count, &amounts, refund);
        if verdict.is_ok() && ledgered.refund_cents != Some(refund) {
            verdict = Err(crate::domain::settlement::Mismatch(format!(
                "packet records refund {:?}, refund item says {refund}",
                ledgered.refund_cents
            )));
        }
        match verdict {
            Ok(()) => Ok(true),
            Err(mismatch) => {
                tracing::error!(marker = RECONCILIATION_MISMATCH, packet_id = %id, %mismatch, "{RECONCILIATION_MISMATCH} {id}");
                Ok(false)
            }
        }
    }
}
