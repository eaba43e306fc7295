//! One packet's pass, a state machine over the two stores: persist its grabs; close it once
//! finished, expired or cancelled; re-sync Redis from the ledger where they disagree; restore
//! it when Redis lost it; finalise it with its refund, exactly once; quarantine it when its
//! books cannot balance.

use super::FaultPoint;
use super::{SettleSummary, Settler, Stop, DEADLINE_MARGIN_MS, RECONCILIATION_MISMATCH};
use crate::clock::{Clock, Millis};
use crate::domain::grab::LoggedGrab;
use crate::domain::ledger::LedgerPacket;
use crate::domain::recovery::{plan_recovery, Casualty, Remedy};
use crate::domain::settlement::{check_against_shares, finalise_from_ledger, reconcile, Mismatch};
use crate::domain::{Cents, LivePacket, Packet, PacketId, PacketStatus};
use crate::markers::{GRAB_REVOKED, PACKET_QUARANTINED};
use crate::packets::reload_from_ledger;
use crate::ports::{CloseOutcome, Frozen, PacketImage, Restored, SettleIndex, SettleLedger, StoreError};

/// Stops the pass at `$point` when a test asked settle to crash there (`Settler::crashing_at`).
macro_rules! fault_point {
    ($pass:expr, $point:ident) => {
        $pass.checkpoint(FaultPoint::$point)?
    };
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

/// Grabs one step of a persist records before it advances the persisted mark: a pass stopped
/// part-way (its invocation's deadline, a crash) has at most this many to write again, and a
/// campaign's packet of 100,000 grabs, written in the partition's pace over minutes, is
/// persisted across invocations, each going on from the last one's mark.
pub(super) const PERSIST_CHUNK: usize = 1_000;

/// One packet's pass through settle: the packet, its shard, the two stores, and what the pass
/// did (its own counts, which the run absorbs).
pub(super) struct PacketPass<'a, S, L> {
    store: &'a S,
    ledger: &'a L,
    clock: &'a dyn Clock,
    crash_at: Option<FaultPoint>,
    id: &'a PacketId,
    shard: u32,
    /// The run's deadline on the wall clock: a persist stops between chunks near it.
    deadline_ms: Option<Millis>,
    wall: &'a dyn Clock,
    summary: SettleSummary,
}

impl<S: SettleIndex, L: SettleLedger> Settler<S, L> {
    /// The pass of packet `id` of `shard`, in a run that ends at `deadline_ms` (wall clock).
    pub(super) fn pass<'a>(
        &'a self,
        id: &'a PacketId,
        shard: u32,
        deadline_ms: Option<Millis>,
    ) -> PacketPass<'a, S, L> {
        PacketPass {
            store: self.store.as_ref(),
            ledger: &self.ledger,
            clock: self.clock.as_ref(),
            crash_at: self.crash_at,
            id,
            shard,
            deadline_ms,
            wall: self.wall.as_ref(),
            summary: SettleSummary::default(),
        }
    }
}

impl<S: SettleIndex, L: SettleLedger> PacketPass<'_, S, L> {
    /// Runs the pass; returns what it did, and how it ended.
    pub(super) async fn run(mut self) -> (SettleSummary, Result<(), Stop>) {
        let result = self.settle().await;
        (self.summary, result)
    }

    /// Stops here when a test asked settle to crash at `point`.
    fn checkpoint(&self, point: FaultPoint) -> Result<(), Stop> {
        if self.crash_at == Some(point) {
            return Err(Stop::Crash(point));
        }
        Ok(())
    }

    /// Restores the packet or finishes a re-sync when needed, persists its grabs, and once it
    /// is closed, finalises it.
    async fn settle(&mut self) -> Result<(), Stop> {
        let id = self.id;
        // A second round only after a re-sync made Redis agree with the ledger.
        for _ in 0..2 {
            let live = match self.store.snapshot(id).await? {
                // A re-sync that stopped half-way (a crash, a failover): finish it.
                Some(live) if live.frozen => match self.resync().await? {
                    Agreement::Resynced => continue,
                    _ => return Ok(()),
                },
                Some(live) => live,
                None => match self.restore().await? {
                    Some(live) => live,
                    None => return Ok(()),
                },
            };
            let shares = live.packet.shares();
            match self.persist(&live, &shares).await? {
                Agreement::Agreed => {}
                Agreement::Resynced => continue,
                Agreement::Later => return Ok(()),
            }
            if self.store.close(id, self.clock.now_ms()).await? != CloseOutcome::Closed {
                return Ok(());
            }
            fault_point!(self, AfterClose);
            // The replicas hold the close before any share is claimed for the refund.
            if !self.store.replicas_hold(id).await? {
                self.summary.deferred += 1;
                return Ok(());
            }
            let Some(live) = self.store.snapshot(id).await? else { return Ok(()) };
            match self.persist(&live, &shares).await? {
                Agreement::Agreed => {}
                Agreement::Resynced => continue,
                Agreement::Later => return Ok(()),
            }
            fault_point!(self, BeforeFinalise);
            return self.finalise(&live.packet, &shares).await;
        }
        Ok(())
    }

    /// Records the grabs the ledger has not confirmed, [`PERSIST_CHUNK`] at a time, advancing
    /// the persisted mark after each chunk; near the run's deadline it stops between chunks, and
    /// a later pass goes on from the mark. Grabs the replicas do not hold yet wait for a later
    /// run. A grab the ledger refuses (or whose amount is not its share's) is reported and the
    /// packet re-synced from the ledger.
    async fn persist(&mut self, live: &LivePacket, shares: &[Cents]) -> Result<Agreement, Stop> {
        let id = &live.packet.id;
        let pending = live.pending();
        let Some(oldest) = pending.first() else { return Ok(Agreement::Agreed) };
        let lag_ms = u64::try_from(self.clock.now_ms() - oldest.at_ms).unwrap_or(0);
        self.summary.lag_ms = self.summary.lag_ms.max(lag_ms);
        if !self.store.replicas_hold(id).await? {
            self.summary.deferred += 1;
            return Ok(Agreement::Later);
        }
        let mut confirmed = live.grabs.len() - pending.len();
        for chunk in pending.chunks(PERSIST_CHUNK) {
            if confirmed > live.grabs.len() - pending.len() && self.near_deadline() {
                return Ok(Agreement::Later);
            }
            let mut valid: Vec<LoggedGrab> = Vec::with_capacity(chunk.len());
            let mut invalid: Vec<Mismatch> = Vec::new();
            for grab in chunk {
                match check_against_shares(grab, shares) {
                    Ok(()) => valid.push(grab.clone()),
                    Err(mismatch) => invalid.push(mismatch),
                }
            }
            let refused = self.ledger.record_grabs(&live.packet, &valid).await?;
            self.summary.grabs_persisted += (valid.len() - refused.len()) as u64;
            fault_point!(self, AfterGrabItems);
            if !refused.is_empty() || !invalid.is_empty() {
                for mismatch in &invalid {
                    self.report(&format!("Redis holds a grab the ledger cannot take: {mismatch}"));
                }
                for refusal in &refused {
                    self.report(&format!("the ledger refused a grab Redis acknowledged: {refusal}"));
                }
                return self.resync().await;
            }
            confirmed += chunk.len();
            if let Some(last) = chunk.last() {
                self.store.mark_persisted(id, confirmed, last).await?;
            }
        }
        Ok(Agreement::Agreed)
    }

    /// True within [`DEADLINE_MARGIN_MS`] of the run's deadline.
    fn near_deadline(&self) -> bool {
        self.deadline_ms.is_some_and(|deadline| self.wall.now_ms() + DEADLINE_MARGIN_MS >= deadline)
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
    async fn resync(&mut self) -> Result<Agreement, Stop> {
        let id = self.id;
        let token = PacketId::random().to_string();
        let Frozen::Log { grabs: log, partial } = self.store.freeze(id, &token).await? else {
            return Ok(Agreement::Later);
        };
        let Some(mut recorded) = self.ledger.ledger_packet(id).await? else {
            self.quarantine("the ledger has no record of this packet").await?;
            return Ok(Agreement::Later);
        };
        if !self.store.replicas_hold(id).await? {
            self.summary.deferred += 1;
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
            for (n, chunk) in unrecorded.chunks(PERSIST_CHUNK).enumerate() {
                // Frozen still, the packet is re-synced on from here by the next pass.
                if n > 0 && self.near_deadline() {
                    return Ok(Agreement::Later);
                }
                let refused = self.ledger.record_grabs(&packet, chunk).await?;
                self.summary.grabs_persisted += (chunk.len() - refused.len()) as u64;
            }
            recorded = self.read_ledger().await?;
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
            recorded = self.read_ledger().await?;
            casualties = plan_recovery(&recorded, &log, now_ms);
        }
        if !fresh_grants(&casualties).is_empty() {
            tracing::warn!(packet_id = %id, "shares kept racing this re-sync's grants; the next pass goes on");
            return Ok(Agreement::Later);
        }
        self.record_casualties(&packet, &casualties, now_ms).await?;
        let finalised = recorded.status != PacketStatus::Open;
        let closed = finalised || recorded.refund_claimed();
        let pool = if closed { Vec::new() } else { recorded.pool() };
        let cancelled = recorded.cancelled_at_ms.is_some();
        let grabs = recorded.grabs_to_reload();
        let image = PacketImage { packet: &packet, cancelled, closed, grabs: &grabs, pool: &pool };
        if !self.store.resync(image, &token).await? {
            tracing::warn!(packet_id = %id, "the re-sync's freeze is gone (a failover, or another run's re-sync); the next pass goes on");
            return Ok(Agreement::Later);
        }
        self.summary.resynced += 1;
        tracing::warn!(packet_id = %id, partial, grabs_on_record = grabs.len(), shares_left = pool.len(), casualties = casualties.len(), "re-synced a packet in Redis from the ledger");
        if finalised {
            self.store.retire(id, self.shard, self.clock.now_ms()).await?;
            return Ok(Agreement::Later);
        }
        Ok(Agreement::Resynced)
    }

    /// Records each casualty of a re-sync once, with its event, and counts and logs its remedy.
    async fn record_casualties(
        &mut self,
        packet: &Packet,
        casualties: &[Casualty],
        now_ms: Millis,
    ) -> Result<(), Stop> {
        let id = self.id;
        for casualty in casualties {
            self.ledger.record_casualty(packet, casualty, now_ms).await?;
            let acknowledged = &casualty.acknowledged;
            match &casualty.remedy {
                Remedy::Regranted { holds, .. } => {
                    self.summary.regranted += 1;
                    tracing::warn!(packet_id = %id, user = %acknowledged.user, acknowledged_seq = acknowledged.seq, acknowledged_cents = acknowledged.amount_cents, holds_seq = holds.seq, holds_cents = holds.amount_cents, "GrabRegranted: a grab the ledger refused, its user holds another share instead");
                }
                Remedy::Revoked => {
                    self.summary.revoked += 1;
                    tracing::warn!(marker = GRAB_REVOKED, packet_id = %id, user = %acknowledged.user, acknowledged_seq = acknowledged.seq, acknowledged_cents = acknowledged.amount_cents, "{GRAB_REVOKED} GrabRevoked: a grab the ledger refused, with no share left to give instead");
                }
            }
        }
        Ok(())
    }

    /// The ledger's packet `id`, which settle knows exists.
    async fn read_ledger(&self) -> Result<LedgerPacket, Stop> {
        let id = self.id;
        self.ledger
            .ledger_packet(id)
            .await?
            .ok_or_else(|| Stop::Store(StoreError::Corrupt(format!("packet {id} vanished from the ledger"))))
    }

    /// Finalises a closed packet from the ledger's own records: completes grabs whose claim is
    /// written but not their item, claims every unclaimed share for the refund, then one
    /// conditional transaction writes the refund; then reconciles and retires.
    async fn finalise(&mut self, packet: &Packet, shares: &[Cents]) -> Result<(), Stop> {
        let id = &packet.id;
        let mut attempt = 0;
        let recorded = loop {
            let Some(recorded) = self.ledger.ledger_packet(id).await? else {
                return self.quarantine("the ledger has no record of this packet").await;
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
                return self.quarantine("grabs kept racing the refund's claims").await;
            }
            for grab in &incomplete {
                if self.ledger.put_grab_item(packet, grab).await? {
                    tracing::warn!(packet_id = %id, user = %grab.user, seq = grab.seq, "a share claimed by a user paid another share goes to the refund");
                }
            }
            let mut raced = Vec::new();
            for (n, chunk) in unclaimed.chunks(PERSIST_CHUNK).enumerate() {
                // An expired campaign's refund claims most of its shares, in the partition's
                // pace: the next run finalises on from what the ledger holds by then.
                if n > 0 && self.near_deadline() {
                    return Ok(());
                }
                raced.extend(self.ledger.claim_for_refund(packet, chunk).await?);
            }
            if !raced.is_empty() {
                tracing::warn!(packet_id = %id, ?raced, "shares claimed by grabs while finalising; reading the ledger again");
            }
        };
        if recorded.status == PacketStatus::Open {
            let cancelled = recorded.cancelled_at_ms.is_some();
            let result = match finalise_from_ledger(
                packet.terms.total_cents,
                packet.terms.count,
                &recorded.claims,
                &recorded.grabs,
                cancelled,
            ) {
                Ok(result) => result,
                Err(mismatch) => return self.quarantine(&mismatch.to_string()).await,
            };
            if self.ledger.finalise(packet, &result, self.clock.now_ms()).await? {
                self.summary.finalised += 1;
                self.summary.refunded_cents += result.refund_cents;
                tracing::info!(packet_id = %id, status = result.status.as_str(), refund_cents = result.refund_cents, "finalised");
            }
        }
        fault_point!(self, AfterFinalise);
        let Some(recorded) = self.ledger.ledger_packet(id).await? else {
            return self.quarantine("the ledger has no record of this packet").await;
        };
        match books(&recorded) {
            Ok(()) => self.store.retire(id, self.shard, self.clock.now_ms()).await?,
            Err(mismatch) => self.quarantine(&mismatch.to_string()).await?,
        }
        Ok(())
    }

    /// Reloads a packet Redis lost from the ledger, if the ledger still has it open. A packet
    /// the ledger already claimed for its refund is finalised from the ledger alone.
    async fn restore(&mut self) -> Result<Option<LivePacket>, Stop> {
        let id = self.id;
        let Some(recorded) = self.ledger.ledger_packet(id).await? else {
            self.quarantine("indexed for settle, yet neither Redis nor the ledger holds it").await?;
            return Ok(None);
        };
        if recorded.status == PacketStatus::Open && recorded.refund_claimed() {
            let shares = recorded.packet.shares();
            self.finalise(&recorded.packet, &shares).await?;
            return Ok(None);
        }
        match reload_from_ledger(self.store, &recorded).await? {
            None => {
                self.store.retire(id, self.shard, self.clock.now_ms()).await?;
                return Ok(None);
            }
            // Redis lost the packet's record but not its log (or holds a re-sync's freeze):
            // the log may hold grabs the ledger lacks, so only a re-sync may replace it.
            Some(Restored::Partial | Restored::AlreadyHeld) => {
                return Ok(match self.resync().await? {
                    Agreement::Resynced => self.store.snapshot(id).await?,
                    _ => None,
                });
            }
            Some(Restored::Loaded) => {}
        }
        self.summary.restored += 1;
        tracing::warn!(packet_id = %id, grabs_on_record = recorded.grabs.len(), shares_left = recorded.pool().len(), "restored a packet Redis had lost, from the ledger");
        Ok(self.store.snapshot(id).await?)
    }

    /// Logs a mismatch at ERROR with [`RECONCILIATION_MISMATCH`] and counts it.
    fn report(&mut self, what: &str) {
        let id = self.id;
        self.summary.mismatches += 1;
        tracing::error!(marker = RECONCILIATION_MISMATCH, packet_id = %id, mismatch = what, "{RECONCILIATION_MISMATCH} {id}: {what}");
    }

    /// Reports a packet settle cannot balance and sets it aside: out of the settle index, into
    /// the quarantine index, its Redis keys kept for inspection.
    async fn quarantine(&mut self, what: &str) -> Result<(), Stop> {
        self.report(what);
        let id = self.id;
        tracing::error!(marker = PACKET_QUARANTINED, packet_id = %id, "{PACKET_QUARANTINED} {id}: set aside for an operator, closed to grabs, its keys kept");
        self.store.quarantine(self.id, self.shard, self.clock.now_ms()).await?;
        self.summary.quarantined += 1;
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
    reconcile(recorded.packet.terms.total_cents, recorded.packet.terms.count, &amounts, refund)?;
    if recorded.refund_cents != Some(refund) {
        return Err(Mismatch(format!("packet records refund {:?}, refund item says {refund}", recorded.refund_cents)));
    }
    if let Some(grab) = recorded.grabs.iter().find(|grab| !recorded.claims.iter().any(|claim| claim.holds(grab))) {
        return Err(Mismatch(format!("grab item of {} (share {}) holds no claim on its share", grab.user, grab.seq)));
    }
    Ok(())
}
