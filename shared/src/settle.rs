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
//! ledger. A crash at any point leaves work the next run redoes idempotently; [`FaultPoint`]s
//! let tests crash it on purpose.

use std::collections::BTreeSet;
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::clock::{Clock, Millis, SystemClock};
use crate::domain::packet::LedgerPacket;
use crate::domain::recovery::{plan_recovery, Casualty, Remedy};
use crate::domain::settlement::{check_against_shares, finalise_from_ledger, reconcile, LoggedGrab, Mismatch};
use crate::domain::LivePacket;
use crate::domain::{Cents, Packet, PacketId, PacketStatus};
use crate::error::ApiError;
use crate::packets::reload_from_ledger;
use crate::ports::{CloseOutcome, Frozen, LiveStore, Restored, SettleLedger, SettleQueue};

/// The marker on every reconciliation failure's log line (alarms filter on it).
pub const RECONCILIATION_MISMATCH: &str = "RECONCILIATION_MISMATCH";

/// Packets one run settles at a time: they are independent, and each waits mostly on I/O.
pub const PACKETS_IN_FLIGHT: usize = 16;

/// How long before the Lambda deadline a run stops taking new packets.
pub const DEADLINE_MARGIN_MS: Millis = 3_000;

/// How often the recovery sweep reads each shard's open packets from the ledger: a slice of
/// the shards at a time, so every shard once in this period.
pub const SWEEP_PERIOD_MS: Millis = 60 * 60 * 1000;

/// The pause between passes of an invocation that keeps draining.
pub const DRAIN_PAUSE_MS: Millis = 1_000;

/// Which shards a run reads from the ledger's open index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sweep {
    /// Every shard of the run: Redis has no record of a sweep (first use, or it lost its data).
    All,
    /// One shard, its turn in the hourly rotation.
    Shard(u32),
    /// None this run.
    Nothing,
}

impl Sweep {
    fn covers(self, shard: u32) -> bool {
        match self {
            Sweep::All => true,
            Sweep::Shard(swept) => swept == shard,
            Sweep::Nothing => false,
        }
    }
}

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
/// `{"release": ["<packet id>", …]}` takes packets out of quarantine first (an operator who
/// explained them), and the run settles them again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettleRequest {
    /// First and last shard to settle.
    #[serde(default)]
    pub shards: Option<[u32; 2]>,
    /// Packets to take out of quarantine before the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub release: Vec<PacketId>,
}

/// How many quarantined packets a summary lists.
pub const QUARANTINE_LISTED: usize = 100;

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
    /// Packets re-synced in Redis from the ledger after the two disagreed.
    pub resynced: u32,
    /// Grabs Redis acknowledged and the ledger refused whose users hold another share instead.
    #[serde(default)]
    pub regranted: u32,
    /// Grabs Redis acknowledged and the ledger refused, with no share left to give instead.
    #[serde(default)]
    pub revoked: u32,
    /// Packets set aside for inspection: ledger record missing, or books that do not balance.
    pub quarantined: u32,
    /// Packets whose grabs wait for the replicas to acknowledge them (`GRAB_WAIT_REPLICAS`).
    pub deferred: u32,
    /// Packets skipped because of their own data (corrupt, or refused by DynamoDB; ERROR lines).
    pub failed: u32,
    /// The packets counted in `failed`.
    #[serde(default)]
    pub failed_packets: Vec<String>,
    /// True when the run stopped before its deadline with packets left for the next run.
    pub stopped_early: bool,
    /// Shards whose open packets this run read from the ledger (the recovery sweep).
    #[serde(default)]
    pub swept_shards: u32,
    /// Passes over the shards (more than one when the invocation keeps draining).
    #[serde(default)]
    pub passes: u32,
    /// Packets taken out of quarantine: by the request, or by the recovery sweep to be tried again.
    #[serde(default)]
    pub released: u32,
    /// The packets in quarantine after the run (the oldest [`QUARANTINE_LISTED`]), for operators.
    #[serde(default)]
    pub in_quarantine: Vec<PacketId>,
}

impl SettleSummary {
    /// Adds a later pass's summary to this one.
    fn add_pass(&mut self, pass: SettleSummary) {
        self.packets += pass.packets;
        self.absorb(&pass);
        self.failed += pass.failed;
        self.failed_packets.extend(pass.failed_packets);
        self.stopped_early = pass.stopped_early;
        self.swept_shards += pass.swept_shards;
        self.passes += pass.passes;
        self.released += pass.released;
    }

    fn absorb(&mut self, packet: &SettleSummary) {
        self.grabs_persisted += packet.grabs_persisted;
        self.finalised += packet.finalised;
        self.refunded_cents += packet.refunded_cents;
        self.mismatches += packet.mismatches;
        self.restored += packet.restored;
        self.resynced += packet.resynced;
        self.regranted += packet.regranted;
        self.revoked += packet.revoked;
        self.quarantined += packet.quarantined;
        self.deferred += packet.deferred;
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

/// The settle engine, on the live store's settle queue and the ledger (the ports; the
/// deployed pair is `adapters::DeployedSettler`).
pub struct Settler<S, L> {
    store: Arc<S>,
    ledger: L,
    clock: Arc<dyn Clock>,
    crash_at: Option<FaultPoint>,
    drain_ms: Millis,
}

/// Where Redis and the ledger stand after settle compared a packet's grabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agreement {
    /// They agree: settle goes on with the packet.
    Agreed,
    /// They disagreed and Redis now holds the ledger's state: settle looks at the packet again.
    Resynced,
    /// Not now: a later pass goes on (replicas behind, a re-sync raced, or nothing left to do).
    Later,
}

/// How many times finalisation re-reads the ledger while grabs race its refund claims.
const FINALISE_ATTEMPTS: u32 = 3;

impl<S: SettleQueue, L: SettleLedger> Settler<S, L> {
    /// A settler with the system clock.
    pub fn new(store: Arc<S>, ledger: L) -> Self {
        Settler { store, ledger, clock: Arc::new(SystemClock), crash_at: None, drain_ms: 0 }
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
        let until = SystemClock.now_ms().saturating_add(self.drain_ms);
        Some(deadline_ms.map_or(until, |deadline| until.min(deadline - DEADLINE_MARGIN_MS)))
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
    /// `deadline_ms` (epoch ms, real time) is within [`DEADLINE_MARGIN_MS`]. A run that stopped
    /// early resumes at the shard it stopped in; the run that covers the last shard also drains
    /// the shards of a larger `SETTLE_SHARDS` used before.
    pub async fn run(
        &self,
        shards: RangeInclusive<u32>,
        deadline_ms: Option<Millis>,
    ) -> Result<SettleSummary, SettleError> {
        let range = [*shards.start(), *shards.end()];
        let mut summary = SettleSummary { shards: range, passes: 1, ..SettleSummary::default() };
        let now_ms = self.clock.now_ms();
        let planned = async { Ok::<_, ApiError>((self.plan(range).await?, self.sweep_plan(range, now_ms).await?)) };
        let ((order, earlier_layouts), sweep) = match planned.await {
            Ok(plan) => plan,
            Err(error) => return Err(SettleError::Unavailable { error, summary: Box::new(summary) }),
        };
        // A sweep reads the ledger's open index under every SETTLE_SHARDS value settle ran with:
        // packets sent under a larger one sit in partitions this layout does not name.
        let widest = match sweep {
            Sweep::Nothing => 0,
            _ => match self.ledger.settle_layouts(self.store.settle_shards()).await {
                Ok(layouts) => layouts.into_iter().max().unwrap_or(0),
                Err(error) => return Err(SettleError::Unavailable { error, summary: Box::new(summary) }),
            },
        };
        // Every shard's work first (a few commands per shard, whatever is open), then all of it
        // PACKETS_IN_FLIGHT at a time, in shard order from where the last run stopped.
        let mut drained_extra_shards = true;
        let mut work: Vec<(u32, PacketId)> = Vec::new();
        for &shard in &order {
            let swept = sweep.covers(shard) && shard <= range[1];
            summary.swept_shards += u32::from(swept);
            let packets = match self.packets_in(shard, now_ms, swept.then_some(widest), &mut summary).await {
                Ok(packets) => packets,
                Err(error) => return Err(SettleError::Unavailable { error, summary: Box::new(summary) }),
            };
            if shard > range[1] && !packets.is_empty() {
                drained_extra_shards = false;
            }
            work.extend(packets.into_iter().map(|id| (shard, id)));
        }
        // Once a store fails, no new packet starts, but those in flight finish: their writes
        // are idempotent, and what they record is not left for the next run.
        let halted = AtomicBool::new(false);
        let mut failure: Option<ApiError> = None;
        let mut resume: Option<(usize, u32)> = None;
        let runs = work.into_iter().enumerate().map(|(position, (shard, id))| {
            let halted = &halted;
            async move { (position, shard, self.settle_before(id, shard, deadline_ms, halted).await) }
        });
        let mut settled = stream::iter(runs).buffer_unordered(PACKETS_IN_FLIGHT);
        while let Some((position, shard, (id, outcome))) = settled.next().await {
            let Some((delta, result)) = outcome else {
                if failure.is_none() && resume.is_none_or(|(first, _)| position < first) {
                    resume = Some((position, shard));
                }
                continue;
            };
            summary.packets += 1;
            summary.absorb(&delta);
            match result {
                Ok(()) => {}
                Err(Stop::Crash(point)) => return Err(SettleError::Crashed(point)),
                Err(Stop::Api(ApiError::Internal(detail))) => {
                    summary.failed += 1;
                    summary.failed_packets.push(id.to_string());
                    tracing::error!(packet_id = %id, detail, "settle skipped a packet it cannot settle; the run goes on");
                }
                Err(Stop::Api(error)) => {
                    tracing::error!(packet_id = %id, %error, "settle stopping: a store is unreachable");
                    halted.store(true, Ordering::Relaxed);
                    failure.get_or_insert(error);
                }
            }
        }
        drop(settled);
        if let Some(error) = failure {
            return Err(SettleError::Unavailable { error, summary: Box::new(summary) });
        }
        if let Some((_, shard)) = resume {
            summary.stopped_early = true;
            let resume = shard.min(range[1]);
            if let Err(error) = self.store.set_resume_shard(range, Some(resume)).await {
                return Err(SettleError::Unavailable { error, summary: Box::new(summary) });
            }
            tracing::warn!(?summary, resume, "settle stopping before its deadline; the next run resumes here");
            return Ok(summary);
        }
        let finished = async {
            self.store.set_resume_shard(range, None).await?;
            self.sweep_done(range, sweep, now_ms).await?;
            if drained_extra_shards {
                for layout in earlier_layouts {
                    self.store.forget_settle_layout(layout).await?;
                }
            }
            Ok::<(), ApiError>(())
        };
        if let Err(error) = finished.await {
            return Err(SettleError::Unavailable { error, summary: Box::new(summary) });
        }
        if summary.failed > 0 {
            tracing::error!(?summary, "settle run complete with packets it could not settle");
        } else {
            tracing::info!(?summary, "settle run complete");
        }
        Ok(summary)
    }

    /// Runs passes over `shards` until `until_ms` (epoch ms, real time) is near, pausing
    /// [`DRAIN_PAUSE_MS`] between them, so grabs reach the ledger within seconds although the
    /// schedule fires once a minute; a single pass when `until_ms` is `None`. Stops at the
    /// first pass that fails or stops early.
    pub async fn drain(
        &self,
        shards: RangeInclusive<u32>,
        deadline_ms: Option<Millis>,
        until_ms: Option<Millis>,
    ) -> Result<SettleSummary, SettleError> {
        let mut total = self.run(shards.clone(), deadline_ms).await?;
        while let Some(until) = until_ms {
            let pass_started = SystemClock.now_ms();
            if total.stopped_early || pass_started + DRAIN_PAUSE_MS >= until {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(DRAIN_PAUSE_MS as u64)).await;
            total.add_pass(self.run(shards.clone(), deadline_ms).await?);
        }
        Ok(total)
    }

    /// Settles one packet unless `deadline_ms` is too near or the run is `halted`: `None` then.
    async fn settle_before(
        &self,
        id: PacketId,
        shard: u32,
        deadline_ms: Option<Millis>,
        halted: &AtomicBool,
    ) -> (PacketId, Option<(SettleSummary, Result<(), Stop>)>) {
        let near_deadline = deadline_ms.is_some_and(|deadline| SystemClock.now_ms() + DEADLINE_MARGIN_MS >= deadline);
        if near_deadline || halted.load(Ordering::Relaxed) {
            return (id, None);
        }
        let mut delta = SettleSummary::default();
        let mut result = self.settle_packet(&id, shard, &mut delta).await;
        if result.is_ok() {
            result = self.store.settled_pass(&id, shard).await.map_err(Stop::from);
        }
        (id, Some((delta, result)))
    }

    /// The shards of this run in order (from where an earlier run stopped, wrapping round), plus,
    /// for the run covering the last shard, the shards of larger `SETTLE_SHARDS` values used
    /// before (whose packets no other run visits), and those earlier values.
    async fn plan(&self, range: [u32; 2]) -> Result<(Vec<u32>, Vec<u32>), ApiError> {
        let [from, to] = range;
        let start = self.store.resume_shard(range).await?.filter(|shard| (from..=to).contains(shard)).unwrap_or(from);
        let mut order: Vec<u32> = (start..=to).chain(from..start).collect();
        let configured = self.store.settle_shards();
        let mut earlier = Vec::new();
        if to == configured - 1 {
            earlier = self.store.settle_layouts().await?.into_iter().filter(|&count| count > configured).collect();
            let widest = earlier.iter().copied().max().unwrap_or(configured);
            order.extend(configured..widest);
        }
        Ok((order, earlier))
    }

    /// The packets of `shard` with work: grabs not yet persisted or due at `now_ms` (Redis's
    /// queues), plus, when the shard is swept (`swept_to`: the widest `SETTLE_SHARDS` settle ran
    /// with), every packet the ledger holds open in it or in the shards of a larger earlier
    /// layout that fold into it (the ledger survives a Redis loss), and the shard's quarantined
    /// packets, tried again (one the ledger explains by now leaves quarantine by itself). An
    /// idle open packet costs nothing.
    async fn packets_in(
        &self,
        shard: u32,
        now_ms: Millis,
        swept_to: Option<u32>,
        summary: &mut SettleSummary,
    ) -> Result<BTreeSet<PacketId>, ApiError> {
        let mut packets: BTreeSet<PacketId> = self.store.packets_with_work(shard, now_ms).await?.into_iter().collect();
        if let Some(widest) = swept_to {
            let shards = self.store.settle_shards();
            // This shard, and the shards of a larger earlier layout that fold into it.
            for earlier in (shard..widest.max(shard + 1)).step_by(shards as usize) {
                packets.extend(self.ledger.open_packets(earlier).await?);
            }
            for (id, _) in self.store.quarantined(usize::MAX).await? {
                if id.settle_shard(shards) == shard && self.store.release(&id).await? {
                    summary.released += 1;
                    packets.insert(id);
                }
            }
        }
        Ok(packets)
    }

    /// Takes `ids` out of quarantine (an operator explained them); the next pass settles them
    /// again. Returns how many were in quarantine.
    pub async fn release(&self, ids: &[PacketId]) -> Result<u32, ApiError> {
        let mut released = 0;
        for id in ids {
            released += u32::from(self.store.release(id).await?);
        }
        Ok(released)
    }

    /// The packets in quarantine, oldest first (at most [`QUARANTINE_LISTED`]).
    pub async fn quarantined(&self) -> Result<Vec<PacketId>, ApiError> {
        Ok(self.store.quarantined(QUARANTINE_LISTED).await?.into_iter().map(|(id, _)| id).collect())
    }

    /// Which shards of `range` this run sweeps: all when Redis has no record of a sweep (first
    /// use, or Redis lost its data), else the next shard once its turn has come.
    async fn sweep_plan(&self, range: [u32; 2], now_ms: Millis) -> Result<Sweep, ApiError> {
        Ok(match self.store.sweep_state(range).await? {
            None => Sweep::All,
            Some((shard, due_ms)) if now_ms >= due_ms => Sweep::Shard(shard.clamp(range[0], range[1])),
            Some(_) => Sweep::Nothing,
        })
    }

    /// Records a completed sweep: the next shard of the rotation and when it is due.
    async fn sweep_done(&self, range: [u32; 2], sweep: Sweep, now_ms: Millis) -> Result<(), ApiError> {
        let shards = Millis::from(range[1] - range[0] + 1);
        let every_ms = SWEEP_PERIOD_MS / shards;
        let next = match sweep {
            Sweep::All => range[0],
            Sweep::Shard(shard) if shard >= range[1] => range[0],
            Sweep::Shard(shard) => shard + 1,
            Sweep::Nothing => return Ok(()),
        };
        self.store.set_sweep_state(range, next, now_ms + every_ms).await
    }

    fn checkpoint(&self, point: FaultPoint) -> Result<(), Stop> {
        if self.crash_at == Some(point) {
            return Err(Stop::Crash(point));
        }
        Ok(())
    }

    async fn settle_packet(&self, id: &PacketId, shard: u32, summary: &mut SettleSummary) -> Result<(), Stop> {
        // A second round only after a re-sync made Redis agree with the ledger.
        for _ in 0..2 {
            let live = match self.store.snapshot(id).await? {
                // A re-sync that stopped half-way (a crash, a failover): finish it.
                Some(live) if live.frozen => match self.resync(id, shard, summary).await? {
                    Agreement::Resynced => continue,
                    _ => return Ok(()),
                },
                Some(live) => live,
                None => match self.restore(id, shard, summary).await? {
                    Some(live) => live,
                    None => return Ok(()),
                },
            };
            let shares = live.packet.shares();
            match self.persist(&live, &shares, shard, summary).await? {
                Agreement::Agreed => {}
                Agreement::Resynced => continue,
                Agreement::Later => return Ok(()),
            }
            if self.store.close(id, self.clock.now_ms()).await? != CloseOutcome::Closed {
                return Ok(());
            }
            self.checkpoint(FaultPoint::AfterClose)?;
            // The replicas hold the close before any share is claimed for the refund.
            if !self.store.replicas_hold(id).await? {
                summary.deferred += 1;
                return Ok(());
            }
            let Some(live) = self.store.snapshot(id).await? else { return Ok(()) };
            match self.persist(&live, &shares, shard, summary).await? {
                Agreement::Agreed => {}
                Agreement::Resynced => continue,
                Agreement::Later => return Ok(()),
            }
            self.checkpoint(FaultPoint::BeforeFinalise)?;
            return self.finalise(&live.packet, &shares, shard, summary).await;
        }
        Ok(())
    }

    /// Records the grabs the ledger has not confirmed, then advances the persisted mark. Grabs
    /// the replicas do not hold yet wait for a later run. A grab the ledger refuses (or whose
    /// amount is not its share's) is reported and the packet re-synced from the ledger.
    async fn persist(
        &self,
        live: &LivePacket,
        shares: &[Cents],
        shard: u32,
        summary: &mut SettleSummary,
    ) -> Result<Agreement, Stop> {
        let id = &live.packet.id;
        let pending = live.pending();
        if pending.is_empty() {
            return Ok(Agreement::Agreed);
        }
        if !self.store.replicas_hold(id).await? {
            summary.deferred += 1;
            return Ok(Agreement::Later);
        }
        let mut valid: Vec<LoggedGrab> = Vec::with_capacity(pending.len());
        let mut invalid: Vec<Mismatch> = Vec::new();
        for grab in pending {
            match check_against_shares(grab, shares) {
                Ok(()) => valid.push(grab.clone()),
                Err(mismatch) => invalid.push(mismatch),
            }
        }
        let refused = self.ledger.record_grabs(&live.packet, &valid).await?;
        summary.grabs_persisted += (valid.len() - refused.len()) as u64;
        self.checkpoint(FaultPoint::AfterGrabItems)?;
        if refused.is_empty() && invalid.is_empty() {
            if let Some(last) = live.grabs.last() {
                self.store.mark_persisted(id, live.grabs.len(), last).await?;
            }
            return Ok(Agreement::Agreed);
        }
        for mismatch in &invalid {
            self.report(id, summary, &format!("Redis holds a grab the ledger cannot take: {mismatch}"));
        }
        for refusal in &refused {
            self.report(id, summary, &format!("the ledger refused a grab Redis acknowledged: {refusal}"));
        }
        self.resync(id, shard, summary).await
    }

    /// Re-syncs a packet in Redis from the ledger after the two disagreed, destroying nothing:
    /// 1. freezes it in Redis under a token of this re-sync (no fresh grab until the replace)
    ///    and reads its whole log at that instant;
    /// 2. records every grab of that log the ledger will take;
    /// 3. remedies each casualty, a grab Redis acknowledged and the ledger refused: its user keeps
    ///    the share the ledger pays them, or gets the packet's next unclaimed share, or, with none
    ///    left, the grab is revoked; each recorded once, with its event;
    /// 4. replaces Redis's copy with the ledger's, only while this re-sync's freeze stands (a
    ///    failover that lost the freeze, or another run's re-sync, makes it wait for a later pass).
    ///
    /// A packet the ledger finalised is replaced closed, then retired.
    async fn resync(&self, id: &PacketId, shard: u32, summary: &mut SettleSummary) -> Result<Agreement, Stop> {
        let token = PacketId::random().to_string();
        let Frozen::Log { grabs: log, partial } = self.store.freeze(id, &token).await? else {
            return Ok(Agreement::Later);
        };
        let Some(mut recorded) = self.ledger.ledger_packet(id).await? else {
            self.quarantine(id, shard, summary, "the ledger has no record of this packet").await?;
            return Ok(Agreement::Later);
        };
        if !self.store.replicas_hold(id).await? {
            summary.deferred += 1;
            return Ok(Agreement::Later);
        }
        let packet = recorded.packet.clone();
        let shares = packet.shares();
        let unrecorded: Vec<LoggedGrab> = log
            .iter()
            .filter(|grab| !recorded.claims.iter().any(|claim| claim.holds(grab)))
            .filter(|grab| check_against_shares(grab, &shares).is_ok())
            .cloned()
            .collect();
        if !unrecorded.is_empty() {
            let refused = self.ledger.record_grabs(&packet, &unrecorded).await?;
            summary.grabs_persisted += (unrecorded.len() - refused.len()) as u64;
            recorded = self.read_ledger(id).await?;
        }
        let now_ms = self.clock.now_ms();
        let mut casualties = plan_recovery(&recorded, &log, now_ms);
        for _ in 0..FINALISE_ATTEMPTS {
            let fresh = fresh_grants(&casualties);
            if fresh.is_empty() {
                break;
            }
            // A grant another run made first is refused here: the next plan sees it.
            self.ledger.record_grabs(&packet, &fresh).await?;
            recorded = self.read_ledger(id).await?;
            casualties = plan_recovery(&recorded, &log, now_ms);
        }
        if !fresh_grants(&casualties).is_empty() {
            tracing::warn!(packet_id = %id, "shares kept racing this re-sync's grants; the next pass goes on");
            return Ok(Agreement::Later);
        }
        for casualty in &casualties {
            self.ledger.record_casualty(&packet, casualty, now_ms).await?;
            let acknowledged = &casualty.acknowledged;
            match &casualty.remedy {
                Remedy::Regranted { holds, .. } => {
                    summary.regranted += 1;
                    tracing::warn!(packet_id = %id, user = %acknowledged.user, acknowledged_seq = acknowledged.seq, acknowledged_cents = acknowledged.amount_cents, holds_seq = holds.seq, holds_cents = holds.amount_cents, "GrabRegranted: a grab the ledger refused, its user holds another share instead");
                }
                Remedy::Revoked => {
                    summary.revoked += 1;
                    tracing::warn!(packet_id = %id, user = %acknowledged.user, acknowledged_seq = acknowledged.seq, acknowledged_cents = acknowledged.amount_cents, "GrabRevoked: a grab the ledger refused, with no share left to give instead");
                }
            }
        }
        let finalised = recorded.status != PacketStatus::Open;
        let closed = finalised || recorded.refund_claimed();
        let pool = if closed { Vec::new() } else { recorded.pool() };
        let cancelled = recorded.cancelled_at_ms.is_some();
        let grabs = recorded.grabs_to_reload();
        if !self.store.resync(&packet, cancelled, closed, &grabs, &pool, &token).await? {
            tracing::warn!(packet_id = %id, "the re-sync's freeze is gone (a failover, or another run's re-sync); the next pass goes on");
            return Ok(Agreement::Later);
        }
        summary.resynced += 1;
        tracing::warn!(packet_id = %id, partial, grabs_on_record = grabs.len(), shares_left = pool.len(), casualties = casualties.len(), "re-synced a packet in Redis from the ledger");
        if finalised {
            self.store.retire(id, shard, self.clock.now_ms()).await?;
            return Ok(Agreement::Later);
        }
        Ok(Agreement::Resynced)
    }

    /// The ledger's packet `id`, which settle knows exists.
    async fn read_ledger(&self, id: &PacketId) -> Result<LedgerPacket, Stop> {
        self.ledger
            .ledger_packet(id)
            .await?
            .ok_or_else(|| Stop::Api(ApiError::Internal(format!("packet {id} vanished from the ledger"))))
    }

    /// Finalises a closed packet from the ledger's own records: completes grabs whose claim is
    /// written but not their item, claims every unclaimed share for the refund, then one
    /// conditional transaction writes the refund; then reconciles and retires.
    async fn finalise(
        &self,
        packet: &Packet,
        shares: &[Cents],
        shard: u32,
        summary: &mut SettleSummary,
    ) -> Result<(), Stop> {
        let id = &packet.id;
        let mut attempt = 0;
        let recorded = loop {
            let Some(recorded) = self.ledger.ledger_packet(id).await? else {
                return self.quarantine(id, shard, summary, "the ledger has no record of this packet").await;
            };
            if recorded.status != PacketStatus::Open {
                break recorded;
            }
            let incomplete = recorded.incomplete_claims();
            let unclaimed: Vec<(u32, Cents)> =
                recorded.unclaimed_shares().into_iter().map(|seq| (seq, shares[seq as usize - 1])).collect();
            if incomplete.is_empty() && unclaimed.is_empty() {
                break recorded;
            }
            attempt += 1;
            if attempt > FINALISE_ATTEMPTS {
                return self.quarantine(id, shard, summary, "grabs kept racing the refund's claims").await;
            }
            for grab in &incomplete {
                if self.ledger.put_grab_item(packet, grab).await? {
                    tracing::warn!(packet_id = %id, user = %grab.user, seq = grab.seq, "a share claimed by a user paid another share goes to the refund");
                }
            }
            let raced = self.ledger.claim_for_refund(packet, &unclaimed).await?;
            if !raced.is_empty() {
                tracing::warn!(packet_id = %id, ?raced, "shares claimed by grabs while finalising; reading the ledger again");
            }
        };
        if recorded.status == PacketStatus::Open {
            let cancelled = recorded.cancelled_at_ms.is_some();
            let result = match finalise_from_ledger(
                packet.total_cents,
                packet.count,
                &recorded.claims,
                &recorded.grabs,
                cancelled,
            ) {
                Ok(result) => result,
                Err(mismatch) => return self.quarantine(id, shard, summary, &mismatch.to_string()).await,
            };
            if self.ledger.finalise(packet, &result, self.clock.now_ms()).await? {
                summary.finalised += 1;
                summary.refunded_cents += result.refund_cents;
                tracing::info!(packet_id = %id, status = result.status.as_str(), refund_cents = result.refund_cents, "finalised");
            }
        }
        self.checkpoint(FaultPoint::AfterFinalise)?;
        let Some(recorded) = self.ledger.ledger_packet(id).await? else {
            return self.quarantine(id, shard, summary, "the ledger has no record of this packet").await;
        };
        match books(&recorded) {
            Ok(()) => self.store.retire(id, shard, self.clock.now_ms()).await?,
            Err(mismatch) => self.quarantine(id, shard, summary, &mismatch.to_string()).await?,
        }
        Ok(())
    }

    /// Reloads a packet Redis lost from the ledger, if the ledger still has it open. A packet
    /// the ledger already claimed for its refund is finalised from the ledger alone.
    async fn restore(
        &self,
        id: &PacketId,
        shard: u32,
        summary: &mut SettleSummary,
    ) -> Result<Option<LivePacket>, Stop> {
        let Some(recorded) = self.ledger.ledger_packet(id).await? else {
            self.quarantine(id, shard, summary, "indexed for settle, yet neither Redis nor the ledger holds it")
                .await?;
            return Ok(None);
        };
        if recorded.status == PacketStatus::Open && recorded.refund_claimed() {
            let shares = recorded.packet.shares();
            self.finalise(&recorded.packet, &shares, shard, summary).await?;
            return Ok(None);
        }
        match reload_from_ledger(self.store.as_ref(), &recorded).await? {
            None => {
                self.store.retire(id, shard, self.clock.now_ms()).await?;
                return Ok(None);
            }
            // Redis lost the packet's record but not its log (or holds a re-sync's freeze):
            // the log may hold grabs the ledger lacks, so only a re-sync may replace it.
            Some(Restored::Partial | Restored::AlreadyHeld) => {
                return Ok(match self.resync(id, shard, summary).await? {
                    Agreement::Resynced => self.store.snapshot(id).await?,
                    _ => None,
                });
            }
            Some(Restored::Loaded) => {}
        }
        summary.restored += 1;
        tracing::warn!(packet_id = %id, grabs_on_record = recorded.grabs.len(), shares_left = recorded.pool().len(), "restored a packet Redis had lost, from the ledger");
        Ok(self.store.snapshot(id).await?)
    }

    /// Logs a mismatch at ERROR with [`RECONCILIATION_MISMATCH`] and counts it.
    fn report(&self, id: &PacketId, summary: &mut SettleSummary, what: &str) {
        summary.mismatches += 1;
        tracing::error!(marker = RECONCILIATION_MISMATCH, packet_id = %id, mismatch = what, "{RECONCILIATION_MISMATCH} {id}: {what}");
    }

    /// Reports a packet settle cannot balance and sets it aside: out of the settle index, into
    /// the quarantine index, its Redis keys kept for inspection.
    async fn quarantine(&self, id: &PacketId, shard: u32, summary: &mut SettleSummary, what: &str) -> Result<(), Stop> {
        self.report(id, summary, what);
        self.store.quarantine(id, shard, self.clock.now_ms()).await?;
        summary.quarantined += 1;
        Ok(())
    }
}

/// The shares a recovery plan grants now (settle records them).
fn fresh_grants(casualties: &[Casualty]) -> Vec<LoggedGrab> {
    casualties
        .iter()
        .filter_map(|casualty| match &casualty.remedy {
            Remedy::Regranted { holds, fresh: true } => Some(holds.clone()),
            _ => None,
        })
        .collect()
}

/// A finalised packet's books in the ledger: grabs + refund == total, grabs <= count, each grab
/// holding its share's claim, and the packet's refund equal to its refund item.
fn books(recorded: &LedgerPacket) -> Result<(), Mismatch> {
    let amounts: Vec<Cents> = recorded.grabs.iter().map(|grab| grab.amount_cents).collect();
    let refund = recorded.refund_item_cents.unwrap_or(0);
    reconcile(recorded.packet.total_cents, recorded.packet.count, &amounts, refund)?;
    if recorded.refund_cents != Some(refund) {
        return Err(Mismatch(format!("packet records refund {:?}, refund item says {refund}", recorded.refund_cents)));
    }
    if let Some(grab) = recorded.grabs.iter().find(|grab| !recorded.claims.iter().any(|claim| claim.holds(grab))) {
        return Err(Mismatch(format!("grab item of {} (share {}) holds no claim on its share", grab.user, grab.seq)));
    }
    Ok(())
}
