//! The narrow traits the handlers see: what they need of Redis and of DynamoDB, nothing more.

use std::future::Future;

use crate::adapters::dynamo::{HistoryPage, Role};
use crate::adapters::redis_store::LivePacket;
use crate::clock::Millis;
use crate::domain::packet::LedgerPacket;
use crate::domain::{Cents, IdempotencyKey, Packet, PacketId, UserId};
use crate::error::ApiError;

/// The answer of one grab attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrabOutcome {
    /// Redis holds no such packet: ask the ledger.
    NotInRedis,
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

/// The live, atomic side of packets (Redis).
pub trait LiveStore: Send + Sync {
    /// Makes `packet` grabbable with `shares`, and indexes it for settle. Idempotent: loading a
    /// packet already loaded changes nothing and is not an error.
    fn load(&self, packet: &Packet, shares: &[Cents]) -> impl Future<Output = Result<(), ApiError>> + Send;

    /// The packet's meta and whole grab log at one instant; `None` when Redis does not hold it.
    fn snapshot(&self, id: &PacketId) -> impl Future<Output = Result<Option<LivePacket>, ApiError>> + Send;

    /// Remembers for a while that the ledger has no packet `id`.
    fn mark_missing(&self, id: &PacketId) -> impl Future<Output = Result<(), ApiError>> + Send;

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

    fn snapshot(&self, id: &PacketId) -> impl Future<Output = Result<Option<LivePacket>, ApiError>> + Send {
        (**self).snapshot(id)
    }

    fn mark_missing(&self, id: &PacketId) -> impl Future<Output = Result<(), ApiError>> + Send {
        (**self).mark_missing(id)
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
