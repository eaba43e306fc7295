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
    /// `sent` or `received`, as the API names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Sent => "sent",
            Role::Received => "received",
        }
    }

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
    /// The version of the caller's entries the page was read at, when the ledger keeps one and
    /// the page can change in no other way ([`HistoryPage::settled`]): what a poll's tag is
    /// computed from. Not in the answer.
    #[serde(skip)]
    pub version: Option<String>,
}

impl HistoryPage {
    /// True when nothing on the page can change but by a new entry: every packet on it is
    /// finished, expired or cancelled (an entry's amounts and times are written once). A page
    /// with an open packet changes when that packet settles, which no version of the caller's
    /// own entries counts.
    pub fn settled(&self) -> bool {
        self.items.iter().all(|item| item.status.is_final())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(status: PacketStatus) -> HistoryItem {
        HistoryItem {
            packet_id: PacketId::random(),
            sender: UserId::from_claim("alice").unwrap(),
            total_cents: 300,
            count: 3,
            status,
            created_at: "2026-12-07T08:00:00.000Z".into(),
            amount_cents: None,
            grabbed_at: None,
            revoked_cents: None,
        }
    }

    #[test]
    fn a_page_is_settled_when_every_packet_on_it_is_final() {
        let page = |statuses: &[PacketStatus]| HistoryPage {
            items: statuses.iter().map(|status| entry(*status)).collect(),
            next_cursor: None,
            version: None,
        };
        assert!(page(&[]).settled());
        assert!(page(&[PacketStatus::Finished, PacketStatus::Expired, PacketStatus::Cancelled]).settled());
        assert!(!page(&[PacketStatus::Finished, PacketStatus::Open]).settled());
    }
}
