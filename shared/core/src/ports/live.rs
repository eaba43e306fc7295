//! The live store's port (Redis): loads, grabs, snapshots, cancels.

use super::*;

/// What the live store answered for one grab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveAnswer {
    /// Decided by the live store.
    Decided(GrabOutcome),
    /// The live store does not hold the packet: the ledger decides, as of `now_ms` (the clock
    /// reading the live store judged the grab at), from its record of it (`None`: the ledger has
    /// no such packet either), which the store read through the call's ledger.
    NotHeld {
        /// The grab's instant.
        now_ms: Millis,
        /// The ledger's record of the packet.
        recorded: Option<Box<LedgerPacket>>,
    },
}

/// What one grab attempt is judged with, besides the attempt: the clock, the ledger the live
/// store asks about a packet it does not hold, and whether this is the request's call again
/// (after the ledger was asked and the packet perhaps reloaded: a store counting grabs against a
/// rate counts a request once).
pub struct GrabCall<'a, L> {
    /// Now.
    pub clock: &'a dyn Clock,
    /// The ledger.
    pub ledger: &'a L,
    /// The request's call again.
    pub again: bool,
}

/// The live, atomic side of packets (Redis).
pub trait LiveStore: Send + Sync {
    /// Makes `packet` grabbable with `shares`, and indexes it for settle. Idempotent: loading a
    /// packet already loaded changes nothing and is not an error.
    fn load(&self, packet: &Packet, shares: &[Cents]) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Loads `image`, a packet the ledger holds open, with the grabs the ledger already has and
    /// the shares still to hand out. Changes nothing when the live store holds anything of the
    /// packet.
    fn restore(&self, image: PacketImage<'_>) -> impl Future<Output = Result<Restored, StoreError>> + Send;

    /// The packet's meta and whole grab log at one instant; `None` when Redis does not hold it.
    fn snapshot(&self, id: &PacketId) -> impl Future<Output = Result<Option<LivePacket>, StoreError>> + Send;

    /// One grab attempt decided at the call's now on a packet the live store holds: atomic, at
    /// most one share per user, only for the packet's recipients and with its passphrase. A
    /// packet it does not hold is `NotHeld` with the ledger's record of it: one caller at a time
    /// per id asks the ledger, and the store keeps its verdict a while for the others, who wait
    /// for it (the lookup lease, the store's own). The use case is [`crate::packets::grab`].
    fn try_grab<L: Ledger>(
        &self,
        packet: &PacketId,
        attempt: &GrabAttempt,
        call: GrabCall<'_, L>,
    ) -> impl Future<Output = Result<LiveAnswer, StoreError>> + Send;

    /// Closes an open packet to grabs as cancelled at `now_ms`, and marks it for settle, which
    /// refunds the rest. Idempotent.
    fn cancel(&self, id: &PacketId, now_ms: Millis) -> impl Future<Output = Result<CancelOutcome, StoreError>> + Send;
}

/// What restoring a packet into the live store came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restored {
    /// Loaded now.
    Loaded,
    /// The live store held it already: nothing changed.
    AlreadyHeld,
    /// The live store lost part of it (its record, not its log): nothing changed; only settle's
    /// re-sync, which records the log's grabs first, may replace it.
    Partial,
}

/// What freezing a packet for a re-sync found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frozen {
    /// The live store holds nothing of the packet.
    Missing,
    /// Frozen: closed to fresh grabs until the re-sync's replace (or the next freeze).
    Log {
        /// Every grab the live store holds, read at the instant of the freeze, in grab order.
        grabs: Vec<LoggedGrab>,
        /// True when the packet's record was gone while its shares or log were not.
        partial: bool,
    },
}

impl<T: LiveStore> LiveStore for std::sync::Arc<T> {
    fn load(&self, packet: &Packet, shares: &[Cents]) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).load(packet, shares)
    }

    fn restore(&self, image: PacketImage<'_>) -> impl Future<Output = Result<Restored, StoreError>> + Send {
        (**self).restore(image)
    }

    fn snapshot(&self, id: &PacketId) -> impl Future<Output = Result<Option<LivePacket>, StoreError>> + Send {
        (**self).snapshot(id)
    }

    fn try_grab<L: Ledger>(
        &self,
        packet: &PacketId,
        attempt: &GrabAttempt,
        call: GrabCall<'_, L>,
    ) -> impl Future<Output = Result<LiveAnswer, StoreError>> + Send {
        (**self).try_grab(packet, attempt, call)
    }

    fn cancel(&self, id: &PacketId, now_ms: Millis) -> impl Future<Output = Result<CancelOutcome, StoreError>> + Send {
        (**self).cancel(id, now_ms)
    }
}
