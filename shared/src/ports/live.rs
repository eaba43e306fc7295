//! The live store's port (Redis): loads, grabs, snapshots, cancels.

use super::*;

/// What the live store answered for one grab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveAnswer {
    /// Decided by the live store.
    Decided(GrabOutcome),
    /// The live store does not hold the packet: the ledger decides, as of `now_ms` (the clock
    /// reading the live store judged the grab at).
    NotHeld {
        /// The grab's instant.
        now_ms: Millis,
        /// This caller holds the id's lookup: it reports what the ledger said with
        /// [`LiveStore::ledger_said`], for the callers waiting on it.
        holds_lookup: bool,
    },
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

    /// One grab attempt decided at `clock`'s now on a packet the live store holds: atomic, at
    /// most one share per user, only for the packet's recipients and with its passphrase. A
    /// packet it does not hold is `NotHeld`: one caller at a time per id is told to ask the
    /// ledger (`holds_lookup`), the others wait for its verdict. The use case is
    /// [`crate::packets::grab`].
    fn try_grab(
        &self,
        packet: &PacketId,
        attempt: &GrabAttempt,
        clock: &dyn Clock,
    ) -> impl Future<Output = Result<LiveAnswer, StoreError>> + Send;

    /// [`LiveStore::try_grab`] for the same request once more, after the ledger was asked (and
    /// the packet perhaps reloaded): a store that counts grabs against a rate (the grab rate
    /// across packets) does not count this one again.
    fn try_grab_again(
        &self,
        packet: &PacketId,
        attempt: &GrabAttempt,
        clock: &dyn Clock,
    ) -> impl Future<Output = Result<LiveAnswer, StoreError>> + Send {
        self.try_grab(packet, attempt, clock)
    }

    /// What the ledger said of `packet`, reported by the caller that held its lookup:
    /// `Some(true)` recorded, `Some(false)` absent, `None` it could not be asked (the lookup is
    /// released so the next grab asks again).
    fn ledger_said(
        &self,
        packet: &PacketId,
        recorded: Option<bool>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

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

    fn try_grab(
        &self,
        packet: &PacketId,
        attempt: &GrabAttempt,
        clock: &dyn Clock,
    ) -> impl Future<Output = Result<LiveAnswer, StoreError>> + Send {
        (**self).try_grab(packet, attempt, clock)
    }

    fn try_grab_again(
        &self,
        packet: &PacketId,
        attempt: &GrabAttempt,
        clock: &dyn Clock,
    ) -> impl Future<Output = Result<LiveAnswer, StoreError>> + Send {
        (**self).try_grab_again(packet, attempt, clock)
    }

    fn ledger_said(
        &self,
        packet: &PacketId,
        recorded: Option<bool>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        (**self).ledger_said(packet, recorded)
    }

    fn cancel(&self, id: &PacketId, now_ms: Millis) -> impl Future<Output = Result<CancelOutcome, StoreError>> + Send {
        (**self).cancel(id, now_ms)
    }
}
