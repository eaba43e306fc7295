//! The narrow traits the handlers and settle see: what they need of the live store (Redis) and
//! of the ledger (DynamoDB), nothing more. The domain knows nothing of these; the adapters
//! implement them; the handlers, `packets`, `funds` and `settle` use them. A port fails with a
//! [`StoreError`], in the stores' terms: the HTTP edge alone turns it into a status code, and
//! settle alone decides from it whether to skip a packet or stop.

use std::future::Future;
use std::time::Duration;

use crate::clock::{Clock, Millis};
use crate::domain::adjustment::{
    Adjustment, AdjustmentApproval, AdjustmentClosing, AdjustmentProposal, AdjustmentResult,
};
use crate::domain::audit::{Attribution, AuditEntry};
use crate::domain::books::{BooksFold, MovementRecord, Reread};
use crate::domain::grab::{GrabAttempt, LoggedGrab};
use crate::domain::history::{HistoryPage, Role};
use crate::domain::ledger::{LedgerPacket, Refusal};
pub use crate::domain::live::{CancelOutcome, CloseOutcome, PacketImage};
use crate::domain::patterns::{
    ChatLog, FlagAssignment, FlagResolution, FlagResolved, FlagStatus, PairFlow, PairGrab, RiskFlag,
};
use crate::domain::recovery::Casualty;
use crate::domain::risk::{Hold, HoldRequest, HoldResult, LiftRequest};
use crate::domain::settlement::Finalisation;
use crate::domain::wallet::{TopUp, TopUpResult, WalletPage};
use crate::domain::withdrawal::{
    ResendResult, ResolutionResult, Withdrawal, WithdrawalReceipt, WithdrawalRequest, WithdrawalResolution,
    WithdrawalStatus,
};
use crate::domain::{
    BusinessDay, Cents, ChatId, Currency, GrabOutcome, IdempotencyKey, Invalid, LivePacket, Packet, PacketId, UserId,
};

/// The longest a ledger write may take to land after its write stamp: the ledger's promise,
/// which reconciliation relies on (nothing stamped before a cut-off this far back is still in
/// flight). The DynamoDB adapter's timeouts and retries are checked against it at compile time.
pub const WRITES_LAND_WITHIN: Duration = Duration::from_secs(51);

/// Why a port's call failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store cannot be reached, or did not answer in time: nothing is known to have
    /// changed, and the same call may succeed later.
    #[error("{store} is unavailable: {detail}")]
    Unavailable {
        /// Which store: "redis", "dynamodb" or "s3".
        store: &'static str,
        /// What went wrong, for the logs.
        detail: String,
    },
    /// The store did not answer in time: what was asked may or may not have happened. Every
    /// write settle makes is conditional, so asking again is safe; settle slows for it (asks
    /// again, fewer at a time) and never stops for it.
    #[error("{store} did not answer in time: {detail}")]
    TimedOut {
        /// Which store: "redis" or "dynamodb".
        store: &'static str,
        /// What went wrong, for the logs.
        detail: String,
    },
    /// A record that cannot be read as the layout says, or that breaks an invariant: the
    /// record's fault, not the store's. Settle skips the packet and names it.
    #[error("corrupt record: {0}")]
    Corrupt(String),
    /// The store refused a write of this record for reasons of its own (too large, invalid),
    /// not a condition of ours. Settle skips the packet and names it.
    #[error("the store refused a write: {0}")]
    Rejected(String),
    /// A condition of the write refused it: the request cannot be carried out as asked.
    #[error(transparent)]
    Conflict(#[from] Conflict),
    /// An argument the store cannot use (a cursor it never issued, a top-up reference used
    /// for another amount), named by its field.
    #[error(transparent)]
    Invalid(#[from] Invalid),
}

impl StoreError {
    /// Redis cannot be reached.
    pub fn redis_unavailable(detail: impl std::fmt::Display) -> Self {
        StoreError::Unavailable { store: "redis", detail: detail.to_string() }
    }

    /// DynamoDB cannot be reached.
    pub fn dynamodb_unavailable(detail: impl std::fmt::Display) -> Self {
        StoreError::Unavailable { store: "dynamodb", detail: detail.to_string() }
    }

    /// An argument the store cannot use.
    pub fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        StoreError::Invalid(Invalid::field(field, message))
    }

    /// True when the store did not answer in time (a slow store, not an unreachable one).
    pub fn timed_out(&self) -> bool {
        matches!(self, StoreError::TimedOut { .. })
    }

    /// True when the failure is the packet's own (its data), so settle skips it and goes on;
    /// false when the store is at fault, so settle stops the run.
    pub fn is_the_records_fault(&self) -> bool {
        matches!(self, StoreError::Corrupt(_) | StoreError::Rejected(_))
    }
}

/// A write the ledger's conditions refused, for a reason the caller can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Conflict {
    /// The packet does not exist.
    #[error("no such packet")]
    NoSuchPacket,
    /// The caller did not send the packet.
    #[error("only the packet's sender may do this")]
    NotTheSender,
    /// The packet is finished, expired or finalised.
    #[error("the packet is no longer open")]
    NotOpen,
    /// An idempotency key reused with another request.
    #[error("the idempotency key was used with another request")]
    IdempotencyKeyReused,
    /// The send would pass one of the sender's daily limits, named.
    #[error("the send would pass the daily limit {0}")]
    LimitExceeded(&'static str),
    /// The sender's balance is below the packet's total.
    #[error("the balance is below the packet's total")]
    InsufficientFunds,
    /// This deployment keeps no wallets (`FUNDS=none`).
    #[error("this deployment keeps no wallets")]
    NoWallets,
}

mod ledger;
mod live;
mod operations;
mod settle;

pub use ledger::{Books, IdempotencyClaim, Ledger, PageRequest, QueuePage, Recorded, SettledPage, Wallets};
pub use live::{Frozen, GrabCall, LiveAnswer, LivePage, LiveStore, LiveVersion, Restored};
pub use operations::{Adjustments, AuditTrail, BusinessHours, Flags, Holds, ReportSink, RiskLedger, Withdrawals};
pub use settle::{SettleCursor, SettleIndex, SettleLedger};
