//! Settle's ports: the live store's settle index and cursor, and the ledger's settle side.

use super::*;

/// The live store's index of packets for settle, and what settle does to each packet there:
/// which packets have work, closing, progress marks, re-sync, retirement and quarantine. Shards
/// split the open packets so that several settle invocations share them.
pub trait SettleIndex: LiveStore {
    /// How many shards index open packets (`SETTLE_SHARDS`).
    fn settle_shards(&self) -> u32;

    /// The packets of `shard` with work: grabs not yet persisted, or due at `now_ms` (expired),
    /// and retired packets whose keys a failover brought back after they should have lapsed.
    fn packets_with_work(
        &self,
        shard: u32,
        now_ms: Millis,
    ) -> impl Future<Output = Result<Vec<PacketId>, StoreError>> + Send;

    /// After settle's pass over `id`: clears its mark, and marks it again if grabs made since
    /// are not persisted.
    fn settled_pass(&self, id: &PacketId, shard: u32) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Closes the packet to grabs if it is finished or expired at `now_ms` (a cancelled packet
    /// is closed already).
    fn close(&self, id: &PacketId, now_ms: Millis) -> impl Future<Output = Result<CloseOutcome, StoreError>> + Send;

    /// True when the replicas hold every write made to `id` so far (always, without replicas
    /// to wait for): only such grabs are persisted, so a failover cannot take one back.
    fn replicas_hold(&self, id: &PacketId) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Records that the first `confirmed` grabs of `id`'s log are in the ledger.
    /// Nothing changes unless `last` is still the `confirmed`-th grab of the log (a failover may
    /// have put other grabs in those places).
    fn mark_persisted(
        &self,
        id: &PacketId,
        confirmed: usize,
        last: &LoggedGrab,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Closes packet `id` to fresh grabs for a re-sync under `token`, and reads its whole grab
    /// log at that instant.
    fn freeze(&self, id: &PacketId, token: &str) -> impl Future<Output = Result<Frozen, StoreError>> + Send;

    /// Replaces what the live store holds of a packet with the ledger's state (`image`), if and
    /// only if the freeze under `token` still stands. False when it does not (a failover lost
    /// it, or another re-sync froze the packet since): nothing changed.
    fn resync(&self, image: PacketImage<'_>, token: &str) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// After the ledger was restored from a backup: every packet of `shard` Redis still holds
    /// (indexed, or retired with its keys not yet lapsed) is to be settled again from its first
    /// grab: its persisted mark back to 0, marked dirty, indexed by its expiry, its keys kept.
    /// The ledger's conditional writes take what it lacks and refuse what it holds. How many.
    fn replay_held(&self, shard: u32) -> impl Future<Output = Result<u32, StoreError>> + Send;

    /// Takes a finalised packet out of `shard`'s work and lets its keys lapse shortly; once they
    /// should have lapsed (after `now_ms`), settle looks once more, in case a failover brought
    /// them back (see [`SettleIndex::packets_with_work`]).
    fn retire(&self, id: &PacketId, shard: u32, now_ms: Millis) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Sets a packet whose books cannot balance aside for an operator, out of `shard`, closed
    /// to grabs.
    fn quarantine(
        &self,
        id: &PacketId,
        shard: u32,
        now_ms: Millis,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The packets in quarantine, oldest first, with when each was set aside (at most `limit`).
    fn quarantined(&self, limit: usize) -> impl Future<Output = Result<Vec<(PacketId, Millis)>, StoreError>> + Send;

    /// Takes packet `id` out of quarantine and puts it back in settle's work (due now); false
    /// when it was not in quarantine. Settle then finalises it, or quarantines it again when the
    /// ledger still does not explain it.
    fn release(&self, id: &PacketId) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

/// Where settle's runs stand, kept in the live store: where a run over a range of shards
/// resumes, the recovery sweep's rotation, and the earlier shard layouts still to drain. A range
/// is `[first, last]` shard.
pub trait SettleCursor: Send + Sync {
    /// Where a run over `range` that stopped early left off.
    fn resume_shard(&self, range: [u32; 2]) -> impl Future<Output = Result<Option<u32>, StoreError>> + Send;

    /// Records where the next run over `range` starts (`None` after a complete run).
    fn set_resume_shard(
        &self,
        range: [u32; 2],
        shard: Option<u32>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The recovery sweep's next shard for `range` and when it is due; `None` when the live
    /// store has no record of it (never swept, or it lost its data).
    fn sweep_state(&self, range: [u32; 2]) -> impl Future<Output = Result<Option<(u32, Millis)>, StoreError>> + Send;

    /// Records the recovery sweep's next shard for `range` and when it is due.
    fn set_sweep_state(
        &self,
        range: [u32; 2],
        next_shard: u32,
        due_ms: Millis,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Every `SETTLE_SHARDS` value packets were indexed under since its shards last drained.
    fn settle_layouts(&self) -> impl Future<Output = Result<Vec<u32>, StoreError>> + Send;

    /// Forgets an earlier `SETTLE_SHARDS` value once its extra shards are empty.
    fn forget_settle_layout(&self, shards: u32) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// The settle side of the ledger: recording grabs under conditions, and finalising.
pub trait SettleLedger: Ledger + AuditTrail {
    /// The packets of `shard` the ledger holds open (the recovery sweep).
    fn open_packets(&self, shard: u32) -> impl Future<Output = Result<Vec<PacketId>, StoreError>> + Send;

    /// Records grabs, each claiming its share then writing its grab item under conditions that
    /// refuse paying a share or a user twice. Returns the grabs refused.
    fn record_grabs(
        &self,
        packet: &Packet,
        grabs: &[LoggedGrab],
    ) -> impl Future<Output = Result<Vec<Refusal>, StoreError>> + Send;

    /// Writes the grab item of a grab whose share claim is written; true when the ledger
    /// refused it (the user already holds a grab item for another share or amount).
    fn put_grab_item(
        &self,
        packet: &Packet,
        grab: &LoggedGrab,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Records that settle runs with `current` shards (`SETTLE_SHARDS`) and returns every value
    /// recorded so far: the open index's partitions of a larger earlier value are swept too.
    fn settle_layouts(&self, current: u32) -> impl Future<Output = Result<Vec<u32>, StoreError>> + Send;

    /// Records a casualty of a disagreement between the live store and the ledger, once, with
    /// its event (`GrabRegranted` / `GrabRevoked`).
    fn record_casualty(
        &self,
        packet: &Packet,
        casualty: &Casualty,
        now_ms: Millis,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Claims `shares` (seq, amount) for the refund; returns the seqs a grab claimed first.
    fn claim_for_refund(
        &self,
        packet: &Packet,
        shares: &[(u32, Cents)],
    ) -> impl Future<Output = Result<Vec<u32>, StoreError>> + Send;

    /// Writes the refund and closes the packet in one transaction; false when it was finalised already.
    fn finalise(
        &self,
        packet: &Packet,
        result: &Finalisation,
        now_ms: Millis,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}
