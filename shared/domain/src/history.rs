//! A user's history as the API lists it: which side (sent or received) and one page of packets.

use serde::{Deserialize, Serialize};

use super::ids::{PacketId, UserId};
use super::money::Cents;
use super::packet::PacketStatus;

/// Which side of the caller's packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Packets the caller sent (listed at once).
    Sent,
    /// Packets the caller grabbed from (listed once settle recorded the grab).
    Received,
}

impl Role {
    /// `sent` or `received`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "sent" => Some(Role::Sent),
            "received" => Some(Role::Received),
            _ => None,
        }
    }
}

/// One packet in the caller's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryItem {
    /// The packet.
    pub packet_id: PacketId,
    /// Who sent it.
    pub sender: UserId,
    /// Its whole amount.
    pub total_cents: Cents,
    /// Its shares.
    pub count: u32,
    /// Open, finished or expired.
    pub status: PacketStatus,
    /// When it was sent.
    pub created_at: String,
    /// The caller's share (received only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amount_cents: Option<Cents>,
    /// When the caller grabbed (received only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grabbed_at: Option<String>,
    /// A share the caller was told they grabbed, revoked after a failover handed it to another
    /// with none left to give instead (received only; never credited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_cents: Option<Cents>,
}

/// One page of history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryPage {
    /// Newest first.
    pub items: Vec<HistoryItem>,
    /// Pass back as `cursor` for the next page; `null` on the last.
    pub next_cursor: Option<String>,
}
