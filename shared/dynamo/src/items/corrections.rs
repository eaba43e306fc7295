//! Money out and corrections, each in its own partition: a withdrawal (`WITHDRAWAL#<id>`), keyed
//! by the id its user's idempotency key makes, so a retry is refused by the write itself; an
//! adjustment (`ADJUSTMENT#<reference>`), one per case reference; and the audit trail of who
//! resolved, proposed, approved or released what (`AUDIT#<day>#<shard>`).

use serde::{Deserialize, Serialize};

use red_packets_core::clock::Millis;
use red_packets_core::domain::adjustment::{Adjustment, AdjustmentProposal, AdjustmentStatus, Direction};
use red_packets_core::domain::audit::{audit_shard, AuditEntry};
use red_packets_core::domain::wallet::LedgerEvent;
use red_packets_core::domain::withdrawal::{Withdrawal, WithdrawalStatus};
use red_packets_core::domain::{Cents, UserId};

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
/// condition: `status = pending`). Its event is `WithdrawalRequested` when written, then
/// `WithdrawalPaid` or `WithdrawalFailed`: the Pipe publishes both steps.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WithdrawalItem {
    pub pk: String,
    pub sk: String,
    pub withdrawal_id: String,
    pub user: UserId,
    pub amount_cents: Cents,
    pub destination: String,
    pub status: WithdrawalStatus,
    pub requested_at: String,
    /// The debit movement's sort key: the resolution writes the withdrawal's state onto it.
    pub movement_sk: String,
    /// The request's write stamp (with its debit).
    pub written_at_ms: Millis,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<String>,
    /// The resolution's write stamp (with the return of a failed one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at_ms: Option<Millis>,
    /// The payments system's reference of its resolution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    pub event: LedgerEvent,
    /// [`Queue::PendingWithdrawals`] while pending; the resolution removes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_pk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_sk: Option<String>,
}

impl WithdrawalItem {
    /// The withdrawal as its owner and the payments system see it.
    pub fn withdrawal(&self) -> Withdrawal {
        Withdrawal {
            withdrawal_id: self.withdrawal_id.clone(),
            user: self.user.clone(),
            amount_cents: self.amount_cents,
            destination: self.destination.clone(),
            status: self.status,
            requested_at: self.requested_at.clone(),
            resolved_at: self.resolved_at.clone(),
            reference: self.reference.clone(),
        }
    }
}

/// An adjustment (`ADJUSTMENT#<reference>` / `ADJUSTMENT`): proposed once per reference, applied
/// once, by another operator (its condition: `status = proposed AND proposer <> :approver`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdjustmentItem {
    pub pk: String,
    pub sk: String,
    pub reference: String,
    pub user: UserId,
    pub direction: Direction,
    pub amount_cents: Cents,
    pub reason: String,
    pub proposer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chargeback_of: Option<String>,
    pub status: AdjustmentStatus,
    pub proposed_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_at: Option<String>,
    /// The approval's write stamp (with its movement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_at_ms: Option<Millis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_reason: Option<String>,
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
            reference: proposal.reference.clone(),
            user: proposal.user.clone(),
            direction: proposal.direction,
            amount_cents: proposal.amount_cents,
            reason: proposal.reason.clone(),
            proposer: proposal.proposer.clone(),
            chargeback_of: proposal.chargeback_of.clone(),
            status: AdjustmentStatus::Proposed,
            approver: None,
            approved_at: None,
            written_at_ms: None,
            closed_by: None,
            closed_at: None,
            close_reason: None,
            history_pk: Some(Queue::PendingAdjustments.pk()),
            history_sk: Some(Queue::sk(&proposed_at, &proposal.reference)),
            proposed_at,
        }
    }

    /// What was proposed.
    pub fn proposal(&self) -> AdjustmentProposal {
        AdjustmentProposal {
            reference: self.reference.clone(),
            user: self.user.clone(),
            direction: self.direction,
            amount_cents: self.amount_cents,
            reason: self.reason.clone(),
            proposer: self.proposer.clone(),
            chargeback_of: self.chargeback_of.clone(),
        }
    }

    /// The adjustment as the ledger holds it.
    pub fn adjustment(&self) -> Adjustment {
        Adjustment {
            proposal: self.proposal(),
            status: self.status,
            proposed_at: self.proposed_at.clone(),
            approver: self.approver.clone(),
            approved_at: self.approved_at.clone(),
            closed_by: self.closed_by.clone(),
            closed_at: self.closed_at.clone(),
            close_reason: self.close_reason.clone(),
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
