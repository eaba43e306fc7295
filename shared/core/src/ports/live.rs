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

    /// One page of the packet read at one instant ([`LivePage`]): the `len` grabs from position
    /// `from` (1 for the first, in grab order) and, when `also` is not 0, the grab at that
    /// position; `None` when the store does not hold it. This default reads the whole packet;
    /// Redis reads the page alone.
    fn page(
        &self,
        id: &PacketId,
        from: u32,
        len: u32,
        also: u32,
    ) -> impl Future<Output = Result<Option<LivePage>, StoreError>> + Send {
        async move { Ok(self.snapshot(id).await?.map(|live| LivePage::of(&live, from, len, also))) }
    }

    /// The packet's version ([`LiveVersion`]) in one read; `None` when the store does not hold
    /// it. This default reads the whole packet; Redis reads two fields of its hash (one `HMGET`).
    fn version(&self, id: &PacketId) -> impl Future<Output = Result<Option<LiveVersion>, StoreError>> + Send {
        async move { Ok(self.snapshot(id).await?.map(|live| LivePage::of(&live, 1, 0, 0).version)) }
    }
}

/// A packet's version as the live store holds it: what changes with every grab, close, cancel,
/// freeze and re-sync of it. Two reads with the same version saw the same packet, but for the
/// time: whether it has expired by now is the reader's to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveVersion {
    /// Until when it takes grabs (its expiry) while it is open; `None` once closed, cancelled
    /// or frozen for a re-sync.
    pub open_until_ms: Option<Millis>,
    /// The store's own words for its state: its close or cancel mark and its latest grab.
    pub stamp: String,
}

/// One page of a packet as the live store holds it, read at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivePage {
    /// The packet as sent.
    pub packet: Packet,
    /// False once closed to grabs.
    pub open: bool,
    /// True once the sender cancelled it.
    pub cancelled: bool,
    /// Shares left.
    pub remaining_count: u32,
    /// The seq of the next share handed out (the pool's head), when one is left.
    pub next_share: Option<u32>,
    /// How many grabs it has in all.
    pub grab_count: u32,
    /// The page's grabs, in grab order.
    pub grabs: Vec<LoggedGrab>,
    /// The grab at the position asked for besides the page, when asked and there is one.
    pub also: Option<LoggedGrab>,
    /// Its version at that instant.
    pub version: LiveVersion,
}

impl LivePage {
    /// The page of `live` from `from`, `len` long, and its grab at `also` (0: none).
    pub fn of(live: &LivePacket, from: u32, len: u32, also: u32) -> Self {
        let at = |position: u32| live.grabs.get(position.checked_sub(1)? as usize).cloned();
        let start = (from.max(1) - 1) as usize;
        let grabs = live.grabs.iter().skip(start).take(len as usize).cloned().collect();
        let taken: std::collections::BTreeSet<u32> = live.grabs.iter().map(|grab| grab.seq).collect();
        let next_share = (live.remaining_count > 0)
            .then(|| (1..=live.packet.terms.count).find(|seq| !taken.contains(seq)))
            .flatten();
        let mark = match (live.open && !live.frozen, live.cancelled) {
            (true, _) => "open",
            (false, true) => "cancelled",
            (false, false) if live.frozen => "frozen",
            _ => "closed",
        };
        let last =
            live.grabs.last().map(|grab| format!("{}:{}:{}:{}", grab.seq, grab.amount_cents, grab.at_ms, grab.user));
        LivePage {
            packet: live.packet.clone(),
            open: live.open && !live.frozen,
            cancelled: live.cancelled,
            remaining_count: live.remaining_count,
            next_share,
            grab_count: live.grabs.len() as u32,
            grabs,
            also: if also == 0 { None } else { at(also) },
            version: LiveVersion {
                open_until_ms: (live.open && !live.frozen).then_some(live.packet.expires_at_ms),
                stamp: format!("{mark}|{}|{}", live.grabs.len(), last.unwrap_or_default()),
            },
        }
    }
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

    fn page(
        &self,
        id: &PacketId,
        from: u32,
        len: u32,
        also: u32,
    ) -> impl Future<Output = Result<Option<LivePage>, StoreError>> + Send {
        (**self).page(id, from, len, also)
    }

    fn version(&self, id: &PacketId) -> impl Future<Output = Result<Option<LiveVersion>, StoreError>> + Send {
        (**self).version(id)
    }
}
