//! The narrow traits the handlers see: what they need of Redis and of DynamoDB, nothing more.

use std::future::Future;
use std::time::Duration;

use crate::adapters::dynamo::{HistoryPage, Role};
use crate::adapters::redis_store::LivePacket;
use crate::clock::Millis;
use crate::domain::packet::LedgerPacket;
use crate::domain::settlement::LoggedGrab;
use crate::domain::{Cents, IdempotencyKey, Packet, PacketId, UserId};
use crate::error::ApiError;

/// How long one caller may take to ask the ledger about a packet the live store does not hold;
/// meanwhile every other grab on that id waits for its verdict instead of asking too.
pub const LOOKUP_LEASE: Duration = Duration::from_secs(5);

/// The answer of one grab attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrabOutcome {
    /// The live store holds no such packet: the ledger decides.
    AskLedger(Lookup),
    /// Another caller is asking the ledger about this packet right now: try again shortly.
    LookupPending,
    /// No such packet (the ledger said so lately).
    NotFound,
    /// At or after `expires_at`, with shares left.
    Expired,
    /// This user grabbed before; the amount and time of that grab.
    Already {
        /// The share this user got.
        amount_cents: Cents,
        /// When they got it.
        grabbed_at_ms: Millis,
        /// Shares left now.
        remaining_count: u32,
    },
    /// Every share is taken.
    SoldOut,
    /// A share was taken just now.
    Grabbed {
        /// The share.
        amount_cents: Cents,
        /// Now.
        grabbed_at_ms: Millis,
        /// Shares left after this one.
        remaining_count: u32,
    },
}

impl GrabOutcome {
    /// True when this answer shows every share taken: a sold-out packet stays sold out.
    pub fn sold_out(&self) -> bool {
        match self {
            GrabOutcome::SoldOut => true,
            GrabOutcome::Grabbed { remaining_count, .. } | GrabOutcome::Already { remaining_count, .. } => {
                *remaining_count == 0
            }
            _ => false,
        }
    }
}

/// Why a caller asks the ledger about a packet the live store does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// This caller holds the id's lookup lease: it asks, then records the verdict with
    /// [`LiveStore::settle_lookup`].
    Claimed,
    /// The ledger recorded the packet lately: ask it, nothing to record.
    Recorded,
}

/// What asking the ledger about an id came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupVerdict {
    /// The ledger has no such packet.
    Absent,
    /// The ledger holds the packet.
    Recorded,
    /// The ledger could not be asked: the next caller may ask again.
    Failed,
}

/// The live, atomic side of packets (Redis).
pub trait LiveStore: Send + Sync {
    /// Makes `packet` grabbable with `shares`, and indexes it for settle. Idempotent: loading a
    /// packet already loaded changes nothing and is not an error.
    fn load(&self, packet: &Packet, shares: &[Cents]) -> impl Future<Output = Result<(), ApiError>> + Send;

    /// Loads a packet the ledger holds open, with the grabs the ledger already has and the shares
    /// still to hand out (grab `seq` takes share `seq`, so `shares` is the tail of the packet's
    /// shares). Idempotent, like [`LiveStore::load`].
    fn restore(
        &self,
        packet: &Packet,
        grabs: &[LoggedGrab],
        shares: &[Cents],
    ) -> impl Future<Output = Result<(), ApiError>> + Send;

    /// The packet's meta and whole grab log at one instant; `None` when Redis does not hold it.
    fn snapshot(&self, id: &PacketId) -> impl Future<Output = Result<Option<LivePacket>, ApiError>> + Send;

    /// Records what the ledger said of `id` after a [`Lookup::Claimed`], releasing the lease.
    fn settle_lookup(&self, id: &PacketId, verdict: LookupVerdict)
        -> impl Future<Output = Result<(), ApiError>> + Send;

    /// One grab by `user` at `now_ms`: atomic, at most one share per user.
    fn grab(
        &self,
        packet: &PacketId,
        user: &UserId,
        now_ms: Millis,
    ) -> impl Future<Output = Result<GrabOutcome, ApiError>> + Send;
}

/// A sender's claim on an `Idempotency-Key`: the key and a hash of the validated request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyClaim {
    /// The header's value.
    pub key: IdempotencyKey,
    /// SHA-256 of the validated request, hex.
    pub request_hash: String,
}

/// What recording a new packet came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// The packet is recorded now.
    New,
    /// The same sender, key and body made this packet earlier: use it, make no other.
    Replay(Packet),
}

/// The durable side of packets (DynamoDB).
pub trait Ledger: Send + Sync {
    /// Records a new packet, at most once per id and per idempotency claim. A claim whose key
    /// was used with another body is [`ApiError::IdempotencyKeyReused`].
    fn record_packet(
        &self,
        packet: &Packet,
        claim: Option<&IdempotencyClaim>,
    ) -> impl Future<Output = Result<Recorded, ApiError>> + Send;

    /// Everything the ledger holds of packet `id`: record, grabs, refund.
    fn ledger_packet(&self, id: &PacketId) -> impl Future<Output = Result<Option<LedgerPacket>, ApiError>> + Send;

    /// One page of `user`'s own history in `role`, newest first.
    fn history(
        &self,
        user: &UserId,
        role: Role,
        limit: u32,
        cursor: Option<&str>,
    ) -> impl Future<Output = Result<HistoryPage, ApiError>> + Send;
}

impl<T: LiveStore> LiveStore for std::sync::Arc<T> {
    fn load(&self, packet: &Packet, shares: &[Cents]) -> impl Future<Output = Result<(), ApiError>> + Send {
        (**self).load(packet, shares)
    }

    fn restore(
        &self,
        packet: &Packet,
        grabs: &[LoggedGrab],
        shares: &[Cents],
    ) -> impl Future<Output = Result<(), ApiError>> + Send {
        (**self).restore(packet, grabs, shares)
    }

    fn snapshot(&self, id: &PacketId) -> impl Future<Output = Result<Option<LivePacket>, ApiError>> + Send {
        (**self).snapshot(id)
    }

    fn settle_lookup(
        &self,
        id: &PacketId,
        verdict: LookupVerdict,
    ) -> impl Future<Output = Result<(), ApiError>> + Send {
        (**self).settle_lookup(id, verdict)
    }

    fn grab(
        &self,
        packet: &PacketId,
        user: &UserId,
        now_ms: Millis,
    ) -> impl Future<Output = Result<GrabOutcome, ApiError>> + Send {
        (**self).grab(packet, user, now_ms)
    }
}

impl<T: Ledger> Ledger for std::sync::Arc<T> {
    fn record_packet(
        &self,
        packet: &Packet,
        claim: Option<&IdempotencyClaim>,
    ) -> impl Future<Output = Result<Recorded, ApiError>> + Send {
        (**self).record_packet(packet, claim)
    }

    fn ledger_packet(&self, id: &PacketId) -> impl Future<Output = Result<Option<LedgerPacket>, ApiError>> + Send {
        (**self).ledger_packet(id)
    }

    fn history(
        &self,
        user: &UserId,
        role: Role,
        limit: u32,
        cursor: Option<&str>,
    ) -> impl Future<Output = Result<HistoryPage, ApiError>> + Send {
        (**self).history(user, role, limit, cursor)
    }
}
