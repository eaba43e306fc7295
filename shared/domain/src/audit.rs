//! The operators' audit trail: every action a person or the payments system takes on money or
//! packets outside the ordinary flow (a packet released from quarantine, an adjustment proposed
//! or approved, a withdrawal resolved), with who took it, when and why, kept by business day and
//! read back by day. Each entry is written in the same write as the action it records, so there
//! is no action without its entry, and no entry for an action refused.

use serde::{Deserialize, Serialize};

use super::ids::UserId;
use super::money::Cents;
use sha2::{Digest, Sha256};

use super::adjustment::operator_ok;
use super::invalid::Invalid;
use super::withdrawal::{Withdrawal, WithdrawalResolution, WithdrawalStatus};

/// What was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditAction {
    /// An operator took a packet out of quarantine (subject: the packet id).
    PacketReleased,
    /// An operator proposed an adjustment (subject: its reference).
    AdjustmentProposed,
    /// Another operator approved it (subject: its reference).
    AdjustmentApproved,
    /// Another operator rejected it (subject: its reference).
    AdjustmentRejected,
    /// Its proposer withdrew it (subject: its reference).
    AdjustmentWithdrawn,
    /// The payments system paid a withdrawal out (subject: its id).
    WithdrawalPaid,
    /// The payments system failed it (subject: its id).
    WithdrawalFailed,
    /// An operator sent an overdue withdrawal's order to the payments system again (subject: its
    /// id).
    WithdrawalResent,
    /// An operator held an account (subject: the user; reason: `<scope>: <why>`).
    HoldPlaced,
    /// An operator lifted a hold (subject: the user).
    HoldLifted,
    /// An operator assigned a risk flag (subject: its id; reason: `to <assignee>`).
    FlagAssigned,
    /// An operator resolved a risk flag (subject: its id; reason: `<outcome>: <why>`).
    FlagResolved,
}

impl AuditAction {
    /// The action's name, as entries and keys spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditAction::PacketReleased => "packet_released",
            AuditAction::AdjustmentProposed => "adjustment_proposed",
            AuditAction::AdjustmentApproved => "adjustment_approved",
            AuditAction::AdjustmentRejected => "adjustment_rejected",
            AuditAction::AdjustmentWithdrawn => "adjustment_withdrawn",
            AuditAction::WithdrawalPaid => "withdrawal_paid",
            AuditAction::WithdrawalFailed => "withdrawal_failed",
            AuditAction::WithdrawalResent => "withdrawal_resent",
            AuditAction::HoldPlaced => "hold_placed",
            AuditAction::HoldLifted => "hold_lifted",
            AuditAction::FlagAssigned => "flag_assigned",
            AuditAction::FlagResolved => "flag_resolved",
        }
    }
}

/// Who resolves withdrawals, as entries name them: the payments system's entry point.
pub const PAYMENTS_SYSTEM: &str = "payments-system";

/// One entry of the trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// When (RFC 3339).
    pub at: String,
    /// What was done.
    pub action: AuditAction,
    /// To what: a packet id, an adjustment's reference, a withdrawal's id.
    pub subject: String,
    /// Who did it: an operator's name, or [`PAYMENTS_SYSTEM`].
    pub actor: String,
    /// Why: the operator's reason, or the payments system's reference.
    pub reason: String,
    /// The user the step concerns, where it concerns one (a hold's, an adjustment's, a
    /// withdrawal's): their page lists it (`red_packets::ports::AuditTrail::audit_of_user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<UserId>,
    /// What the step concerns, each fact apart, for a reader to word in its own language
    /// (`reason` says it in English for engineers); empty on entries written before.
    #[serde(default, skip_serializing_if = "AuditFacts::is_empty")]
    pub facts: AuditFacts,
}

impl AuditEntry {
    /// The payments system's word `resolution` resolving `withdrawal` as `outcome` at `at`, with
    /// the payout's reference and amount.
    pub fn withdrawal_resolved(
        resolution: &WithdrawalResolution,
        withdrawal: &Withdrawal,
        outcome: WithdrawalStatus,
        at: String,
    ) -> AuditEntry {
        let action = if outcome == WithdrawalStatus::Failed {
            AuditAction::WithdrawalFailed
        } else {
            AuditAction::WithdrawalPaid
        };
        AuditEntry {
            at,
            action,
            subject: resolution.withdrawal_id.clone(),
            actor: PAYMENTS_SYSTEM.into(),
            reason: format!("payout {} for {} of {}", resolution.reference, withdrawal.amount_cents, withdrawal.user),
            user: Some(withdrawal.user.clone()),
            facts: AuditFacts {
                amount_cents: Some(withdrawal.amount_cents),
                reference: Some(resolution.reference.clone()),
                ..AuditFacts::default()
            },
        }
    }
}

/// What an audit entry concerns besides who and when: the money, an adjustment's direction, a
/// hold's scope and end, a flag's outcome or assignee, the payments system's reference or the
/// top-up a chargeback reverses, and the person's own words. Each absent where it does not apply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditFacts {
    /// The money the step concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount_cents: Option<Cents>,
    /// An adjustment's direction: `credit` or `debit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
    /// A hold's scope: `grab`, `send`, `money_out` or `all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Until when a hold holds (RFC 3339); none for a hold until lifted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// A flag's outcome: `confirmed` or `dismissed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Whom a flag was assigned to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    /// The payments system's reference of a payout, or the top-up a chargeback reverses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The person's own words: an operator's reason or note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub words: Option<String>,
}

impl AuditFacts {
    /// True when it holds no fact.
    pub fn is_empty(&self) -> bool {
        *self == AuditFacts::default()
    }

    /// Only the person's `words`.
    pub fn words(words: &str) -> Self {
        AuditFacts { words: Some(words.to_owned()), ..AuditFacts::default() }
    }
}

/// Who acts, and why: what an operator gives with a release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attribution {
    /// The operator's identity (1..=256 of `[A-Za-z0-9_.:@/+=,-]`).
    pub operator: String,
    /// Why (1..=500 characters).
    pub reason: String,
}

impl Attribution {
    /// Checks the operator's name and the reason.
    pub fn validate(&self) -> Result<(), Invalid> {
        if !operator_ok(&self.operator) {
            return Err(Invalid::field("operator", "operator must be 1..=256 of [A-Za-z0-9_.:@/+=,-]"));
        }
        if self.reason.trim().is_empty() || self.reason.chars().count() > 500 {
            return Err(Invalid::field("reason", "reason must be 1..=500 characters"));
        }
        Ok(())
    }
}

/// How many partitions one day's trail is spread over: withdrawals are resolved at the payments
/// system's pace, which one partition key's write limit must not cap.
pub const AUDIT_SHARDS: u32 = 16;

/// The shard of the day's trail an entry about `subject` goes to: the first byte of its SHA-256,
/// modulo [`AUDIT_SHARDS`], the same on every host.
pub fn audit_shard(subject: &str) -> u32 {
    u32::from(Sha256::digest(subject.as_bytes())[0]) % AUDIT_SHARDS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attribution_names_an_operator_and_a_reason() {
        let attribution =
            |operator: &str, reason: &str| Attribution { operator: operator.into(), reason: reason.into() };
        assert!(attribution("ops.anna", "explained: a grab the failover lost").validate().is_ok());
        assert_eq!(attribution("", "x").validate().unwrap_err().field.as_deref(), Some("operator"));
        assert_eq!(attribution("anna", " ").validate().unwrap_err().field.as_deref(), Some("reason"));
    }

    #[test]
    fn a_subjects_shard_is_stable_and_the_shards_are_all_used() {
        assert_eq!(audit_shard("case-1"), audit_shard("case-1"));
        let used: std::collections::BTreeSet<u32> = (0..400).map(|n| audit_shard(&format!("wd-{n}"))).collect();
        assert_eq!(used.len(), AUDIT_SHARDS as usize, "{used:?}");
        assert_eq!(AuditAction::WithdrawalPaid.as_str(), serde_json::to_value(AuditAction::WithdrawalPaid).unwrap());
    }
}
