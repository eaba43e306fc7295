//! The ledger's items, as `serde_dynamo` reads and writes them, one file per kind: `packet`
//! (a packet's own item and refund), `grab` (grab items, share claims, casualties), `wallet`
//! (balances, movements, top-ups), `corrections` (withdrawals, adjustments), `hold` (account
//! holds) and `send` (idempotency claims, daily counters).
//!
//! | item | PK | SK | history GSI (`history_pk`, `history_sk`) | open GSI (`open_shard`, `expires_at`) |
//! |---|---|---|---|---|
//! | packet | `PKT#<id>` | `META` | `USER#<sender>`, `SENT#<created_at>#<id>` | `OPEN#<shard>#<id's last hex digit>` while open |
//! | grab (`FUNDS=none`) | `PKT#<id>` | `GRAB#<user>` | `USER#<user>`, `RECV#<grabbed_at>#<id>` | |
//! | share claim | `PKT#<id>` | `SHARE#<seq, 5 digits>` | | |
//! | refund | `PKT#<id>` | `REFUND` | | |
//! | idempotency | `IDEM#<sender>#<key>` | `IDEM` | | |
//! | daily sends | `LIMIT#<sender>#<UTC day>` | `LIMIT` | | |
//! | balance | `WALLET#<user>` | `BALANCE` | | |
//! | movement | `WALLET#<user>` | `MOVE#<at>#<kind>#<packet id or reference>` | | |
//! | grab credit (the wallet) | `WALLET#<user>` | `MOVE#<packet's created_at>#grab#<id>` | | |
//! | top-up | `TOPUP#<reference>` | `TOPUP` | | |
//! | withdrawal | `WITHDRAWAL#<id>` | `WITHDRAWAL` | | |
//! | a withdrawal's order sent again | `WITHDRAWAL#<id>` | `RESENT#<hour>` | | |
//! | adjustment | `ADJUSTMENT#<reference>` | `ADJUSTMENT` | | |
//! | audit entry | `AUDIT#<business day>#<shard, 2 digits>` | `<at>#<action>#<subject>` | | |
//! | account hold in force | `HOLDS` | `USER#<user>` | | |
//! | the holds' version | `HOLDS` | `VERSION` | | |
//! | a chat's log (risk rules) | `RISK#CHAT#<chat>` | `LOG` | | |
//! | a user's chats of a day | `RISK#CHATS#<business day>#<user>` | `COUNT` | | |
//! | two users' flow in a window | `RISK#PAIR#<first>#<second>` | `W#<window>` | | |
//! | a risk flag | `RISK#FLAGS` | `FLAG#<id>` | | |
//!
//! Items that publish an event carry it in their `event` attribute (a map: `event_id`, `type`,
//! `packet_id`, `user`, `amount_cents`, `occurred_at`, `reference`, `proposed_by`,
//! `approved_by`, `chat_id`): the packet item when recorded (`PacketSent`) and when finalised
//! (`PacketFinished` / `PacketExpired` / `PacketCancelled`), the withdrawal when asked for
//! (`WithdrawalRequested`) and when resolved (`WithdrawalPaid` / `WithdrawalFailed`),
//! each grab item, the refund item and each movement (a grab's credit: `GrabRecorded`, since
//! with the wallet the credit is the grab's record), and each risk flag (`RiskFlagged`). The EventBridge Pipe of `template.yaml`
//! reads them from the table's stream.

mod corrections;
mod grab;
mod hold;
mod packet;
mod risk;
mod send;
mod wallet;

use red_packets_core::clock::{Clock, Millis};
use red_packets_core::domain::UserId;

pub use corrections::{
    adjustment_pk, audit_pk, withdrawal_pk, AdjustmentItem, AuditItem, ResentItem, WithdrawalItem, ADJUSTMENT,
    ADJUSTMENT_PREFIX, RESENT_PREFIX, USER_AUDIT_PREFIX, WITHDRAWAL, WITHDRAWAL_PREFIX,
};
pub use grab::{share_sk, CasualtyItem, GrabItem, ShareItem, CASUALTY_PREFIX, GRAB_PREFIX, SHARE_PREFIX};
pub use hold::{hold_sk, HoldItem, HOLDS_PK, HOLDS_VERSION, HOLD_PREFIX};
pub use packet::{open_partitions, packet_pk, PacketItem, RefundItem, META, PACKET_PREFIX, REFUND};
pub use risk::{
    chat_count_pk, chat_log_pk, flag_sk, pair_pk, ChatLogItem, FlagItem, FlagMentionItem, FLAGS_PK, USER_FLAG_PREFIX,
};
pub use send::{daily_limit_pk, idempotency_pk, DailySendsItem, IdempotencyItem, IDEM, LIMIT};
pub use wallet::{
    grab_movement_sk, topup_pk, wallet_pk, BalanceItem, MovementItem, NewMovement, TopupItem, BALANCE, MOVE_PREFIX,
    TOPUP, TOPUP_PREFIX, WALLET_PREFIX,
};

/// A money write's own time: the wall clock when the write is issued, the same for every
/// item of one transaction (a send, a grab's credit, a finalisation, a top-up). Reconciliation
/// reads the ledger up to a cut-off behind the longest a write can take to land
/// ([`red_packets_core::ports::WRITES_LAND_WITHIN`]), so an item stamped before it is committed, with its whole
/// transaction. The wall clock, not the domain clock: the cut-off is compared with real time.
pub fn write_stamp() -> Millis {
    red_packets_core::clock::SystemClock.now_ms()
}

/// The operators' work queues, kept in the history index beside the users' histories: an item
/// carries `history_pk` = its queue while it waits for an operator, and the write that takes it
/// out of the queue removes (or moves) it, so a page of a queue reads only what waits in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    /// Adjustments still proposed.
    PendingAdjustments,
    /// Withdrawals the payments system has not resolved.
    PendingWithdrawals,
    /// Risk flags of one status.
    Flags(red_packets_core::domain::patterns::FlagStatus),
}

impl Queue {
    /// `QUEUE#adjustments`, `QUEUE#withdrawals` or `QUEUE#flags#<status>`: the history index's
    /// partition of the queue (no user's, which are `USER#<user>`).
    pub fn pk(self) -> String {
        match self {
            Queue::PendingAdjustments => "QUEUE#adjustments".into(),
            Queue::PendingWithdrawals => "QUEUE#withdrawals".into(),
            Queue::Flags(status) => format!("QUEUE#flags#{}", status.as_str()),
        }
    }

    /// `<at>#<id>`: a queue is read oldest first.
    pub fn sk(at: &str, id: &str) -> String {
        format!("{at}#{id}")
    }
}

/// `USER#<user>`, the history GSI's partition.
pub fn history_pk(user: &UserId) -> String {
    format!("USER#{user}")
}

/// The item listing every `SETTLE_SHARDS` value settle ran with (`SETTLE#LAYOUTS` / `LAYOUTS`).
pub const SETTLE_LAYOUTS_PK: &str = "SETTLE#LAYOUTS";
/// Its sort key.
pub const SETTLE_LAYOUTS_SK: &str = "LAYOUTS";
