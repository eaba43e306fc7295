//! What the books read: one ledger item ([`LedgerItem`]) and one wallet movement
//! ([`MovementRecord`]), as far as reconciliation goes.

use crate::adjustment::Direction;
use crate::clock::Millis;
use crate::ids::{PacketId, UserId};
use crate::money::Cents;
use crate::packet::PacketStatus;
use crate::wallet::MovementKind;
use crate::withdrawal::WithdrawalStatus;

/// One movement as the ledger holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovementRecord {
    /// Whose wallet.
    pub user: UserId,
    /// What moved it.
    pub kind: MovementKind,
    /// How much (positive).
    pub amount_cents: Cents,
    /// The packet, for a send, grab or refund.
    pub packet_id: Option<PacketId>,
    /// The top-up's reference, the withdrawal's id or the adjustment's reference.
    pub reference: Option<String>,
    /// Its transaction's write stamp (0 for items written before stamps).
    pub written_at_ms: Millis,
    /// Its sort key, to name it.
    pub key: String,
    /// Whether it carries the event the Pipe publishes.
    pub has_event: bool,
}

/// One ledger item, as far as the books go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerItem {
    /// A wallet's balance.
    Balance {
        /// Whose.
        user: UserId,
        /// The balance.
        balance_cents: Cents,
    },
    /// A movement of a wallet.
    Movement(MovementRecord),
    /// A top-up applied.
    Topup {
        /// The payments system's reference.
        reference: String,
        /// Whose wallet.
        user: UserId,
        /// How much.
        amount_cents: Cents,
        /// Its write stamp.
        written_at_ms: Millis,
    },
    /// A withdrawal's record.
    Withdrawal {
        /// Its id (`wd-…`).
        id: String,
        /// Whose wallet.
        user: UserId,
        /// How much.
        amount_cents: Cents,
        /// Where it stands now.
        status: WithdrawalStatus,
        /// The request's write stamp (with its debit).
        written_at_ms: Millis,
        /// The resolution's write stamp, once paid or failed.
        resolved_at_ms: Option<Millis>,
    },
    /// An adjustment's record.
    Adjustment {
        /// Its reference.
        reference: String,
        /// Whose wallet.
        user: UserId,
        /// Credit or debit.
        direction: Direction,
        /// How much.
        amount_cents: Cents,
        /// The approval's write stamp (with its movement); `None` while it is only proposed.
        applied_at_ms: Option<Millis>,
    },
    /// A packet's record.
    Packet {
        /// Which.
        id: PacketId,
        /// Who sent it.
        sender: UserId,
        /// Its total.
        total_cents: Cents,
        /// Its status now.
        status: PacketStatus,
        /// The send's write stamp.
        written_at_ms: Millis,
        /// The finalisation's write stamp, once finalised.
        settled_at_ms: Option<Millis>,
    },
    /// A grab item.
    Grab {
        /// Of which packet.
        packet_id: PacketId,
        /// Who.
        user: UserId,
        /// Which share.
        seq: u32,
        /// How much.
        amount_cents: Cents,
        /// Its write stamp (with its credit).
        written_at_ms: Millis,
    },
    /// A share's claim: by a grabber, or (no user) by the refund.
    Claim {
        /// Of which packet.
        packet_id: PacketId,
        /// Which share.
        seq: u32,
        /// Its amount.
        amount_cents: Cents,
        /// The grabber; `None` for the refund.
        user: Option<UserId>,
    },
    /// A packet's refund item.
    Refund {
        /// Of which packet.
        packet_id: PacketId,
        /// How much.
        amount_cents: Cents,
        /// The finalisation's write stamp.
        written_at_ms: Millis,
    },
}
