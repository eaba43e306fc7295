//! Money out and corrections, each in its own partition: a withdrawal (`WITHDRAWAL#<id>`), keyed
//! by the id its user's idempotency key makes, so a retry is refused by the write itself; an
//! adjustment (`ADJUSTMENT#<reference>`), one per case reference; and the audit trail of who
//! resolved, proposed, approved or released what (`AUDIT#<day>#<shard>`).

use serde::{Deserialize, Serialize};

use red_packets_core::clock::Millis;
use red_packets_core::domain::adjustment::{Adjustment, AdjustmentProposal, AdjustmentStatus};
use red_packets_core::domain::audit::{audit_shard, AuditEntry};
use red_packets_core::domain::wallet::LedgerEvent;
use red_packets_core::domain::withdrawal::Withdrawal;

use super::{history_pk, Queue};

/// The prefix of a withdrawal's partition (`WITHDRAWAL#<id>`).
pub const WITHDRAWAL_PREFIX: &str = "WITHDRAWAL#";
/// Sort key of a withdrawal.
pub const WITHDRAWAL: &str = "WITHDRAWAL";
/// The prefix of an adjustment's partition (`ADJUSTMENT#<reference>`).
pub const ADJUSTMENT_PREFIX: &str = "ADJUSTMENT#";
/// Sort key of an adjustment.
pub const ADJUSTMENT: &str = "ADJUSTMENT";

/// The prefix of a resent order's sort key in its withdrawal's partition (`RESENT#<hour>`).
pub const RESENT_PREFIX: &str = "RESENT#";

/// `WITHDRAWAL#<id>`.
pub fn withdrawal_pk(id: &str) -> String {
    format!("{WITHDRAWAL_PREFIX}{id}")
}

/// `ADJUSTMENT#<reference>`.
pub fn adjustment_pk(reference: &str) -> String {
    format!("{ADJUSTMENT_PREFIX}{reference}")
}

/// An overdue withdrawal's order sent to the payments system again (`WITHDRAWAL#<id>` /
/// `RESENT#<hour since the epoch>`): new only, so once an hour, beside a condition check that the
/// withdrawal is pending and its audit entry. It carries the withdrawal's `WithdrawalRequested`
/// event as it was written (its same id): the Pipe publishes a new item's event, so the payments
/// system hears the same order again. The books read none of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResentItem {
    pub pk: String,
    pub sk: String,
    pub withdrawal_id: String,
    /// When (RFC 3339).
    pub at: String,
    /// Who sent it again, and why.
    pub operator: String,
    pub reason: String,
    /// The withdrawal's own event, unchanged.
    pub event: LedgerEvent,
}

/// A withdrawal (`WITHDRAWAL#<id>` / `WITHDRAWAL`): written with its debit, resolved once (its
/// condition: `status = pending`). Its attributes are the withdrawal's own and what the ledger
/// keeps beside them. Its event is `WithdrawalRequested` when written, then `WithdrawalPaid` or
/// `WithdrawalFailed`: the Pipe publishes both steps.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WithdrawalItem {
    pub pk: String,
    pub sk: String,
    #[serde(flatten)]
    pub withdrawal: Withdrawal,
    /// The debit movement's sort key: the resolution writes the withdrawal's state onto it.
    pub movement_sk: String,
    /// The request's write stamp (with its debit).
    pub written_at_ms: Millis,
    /// The resolution's write stamp (with the return of a failed one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at_ms: Option<Millis>,
    pub event: LedgerEvent,
    /// [`Queue::PendingWithdrawals`] while pending; the resolution removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_pk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_sk: Option<String>,
}

/// An adjustment (`ADJUSTMENT#<reference>` / `ADJUSTMENT`): proposed once per reference, applied
/// once, by another operator (its condition: `status = proposed AND proposer <> :approver`). Its
/// attributes are the adjustment's own and what the ledger keeps beside them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdjustmentItem {
    pub pk: String,
    pub sk: String,
    #[serde(flatten)]
    pub adjustment: Adjustment,
    /// The approval's write stamp (with its movement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_at_ms: Option<Millis>,
    /// [`Queue::PendingAdjustments`] while proposed; approving or closing it removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_pk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_sk: Option<String>,
}

impl AdjustmentItem {
    /// The item of `proposal`, proposed at `proposed_at`.
    pub fn proposed(proposal: &AdjustmentProposal, proposed_at: String) -> Self {
        AdjustmentItem {
            pk: adjustment_pk(&proposal.reference),
            sk: ADJUSTMENT.into(),
            written_at_ms: None,
            history_pk: Some(Queue::PendingAdjustments.pk()),
            history_sk: Some(Queue::sk(&proposed_at, &proposal.reference)),
            adjustment: Adjustment {
                proposal: proposal.clone(),
                status: AdjustmentStatus::Proposed,
                proposed_at,
                approver: None,
                approved_at: None,
                closed_by: None,
                closed_at: None,
                close_reason: None,
            },
        }
    }
}

/// The prefix of a day's audit trail partitions (`AUDIT#<business day>#<shard>`).
pub const AUDIT_PREFIX: &str = "AUDIT#";

/// `AUDIT#<day>#<shard>`: one of the [`AUDIT_SHARDS`](red_packets_core::domain::audit::AUDIT_SHARDS)
/// partitions of business day `day`'s trail.
pub fn audit_pk(day: &str, shard: u32) -> String {
    format!("{AUDIT_PREFIX}{day}#{shard:02}")
}

/// One entry of the audit trail (`AUDIT#<day>#<shard>` / `<at>#<action>#<subject>`), written in
/// the same transaction as the action it records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AuditItem {
    pub pk: String,
    pub sk: String,
    #[serde(flatten)]
    pub entry: AuditEntry,
    /// `USER#<user>` when the entry concerns a user: their page reads their entries through the
    /// history index (sort key `AUDIT#<at>#<action>#<subject>`), every day's together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_pk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_sk: Option<String>,
}

/// The history index's sort key prefix of a user's audit entries.
pub const USER_AUDIT_PREFIX: &str = "AUDIT#";

impl AuditItem {
    /// The item of `entry`, on its business day `day`.
    pub fn new(entry: AuditEntry, day: &str) -> Self {
        let sk = format!("{}#{}#{}", entry.at, entry.action.as_str(), entry.subject);
        AuditItem {
            pk: audit_pk(day, audit_shard(&entry.subject)),
            history_pk: entry.user.as_ref().map(history_pk),
            history_sk: entry.user.as_ref().map(|_| format!("{USER_AUDIT_PREFIX}{sk}")),
            sk,
            entry,
        }
    }
}
