//! What a send writes besides its packet: the sender's idempotency claim (`IDEM#<sender>#<key>`)
//! and their daily counter (`LIMIT#<sender>#<UTC day>`).

use serde::{Deserialize, Serialize};

use red_packets_core::domain::{Cents, PacketId, UserId};
use red_packets_core::ports::IdempotencyClaim;

/// `IDEM#<sender>#<key>`: a sender's claim on one `Idempotency-Key`.
pub fn idempotency_pk(sender: &UserId, claim: &IdempotencyClaim) -> String {
    format!("IDEM#{sender}#{}", claim.key.as_str())
}

/// Sort key of an idempotency claim.
pub const IDEM: &str = "IDEM";

/// The idempotency item (`IDEM#<sender>#<key>` / `IDEM`); DynamoDB's TTL removes it after 24 h.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IdempotencyItem {
    pub pk: String,
    pub sk: String,
    pub request_hash: String,
    pub packet_id: PacketId,
    /// Epoch seconds; the table's TTL attribute.
    pub expires_at_epoch: i64,
}

/// `LIMIT#<sender>#<day>`: one sender's sends on one UTC day, counted in the same transaction
/// that records each packet, under a condition that keeps them within the daily limits.
pub fn daily_limit_pk(sender: &UserId, day: &str) -> String {
    format!("LIMIT#{sender}#{day}")
}

/// Sort key of a daily-sends counter.
pub const LIMIT: &str = "LIMIT";

/// A daily-sends counter as DynamoDB returns it when its condition fails.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DailySendsItem {
    /// Packets recorded that day.
    #[serde(default)]
    pub sends: u32,
    /// Their totals.
    #[serde(default)]
    pub sent_cents: Cents,
}
