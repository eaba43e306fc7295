//! Corrections: an adjustment credits or debits one wallet, with a reason and a reference. One
//! operator proposes it; it moves money only when a *different* operator approves it, and both
//! are named on the ledger's record and on the movement's event. A chargeback (a top-up the
//! card network reversed) is a debit that names the top-up it reverses: at most once per top-up,
//! for no more than it, from the wallet it credited.
//!
//! **No balance goes below zero**, a chargeback's included: a debit the balance does not cover
//! is refused and stays proposed, to be approved again once the balance covers it; finance
//! recovers a shortfall outside the wallet. Every check that can refuse here (balances, sums,
//! the statement's opening) can then keep its unsigned figures, and a user never sees a debt.
//! Pure: the ledger enforces each rule in the condition of the write that applies it.

use serde::{Deserialize, Serialize};

use super::ids::UserId;
use super::invalid::Invalid;
use super::money::Cents;
use super::reference::reference_ok;
use super::wallet::MAX_TOPUP_CENTS;

/// Most one adjustment may move: as much as a top-up.
pub const MAX_ADJUSTMENT_CENTS: Cents = MAX_TOPUP_CENTS;

/// Which way an adjustment moves money.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Into the wallet (compensation: a revoked grab's user made whole).
    Credit,
    /// Out of it (a correction, a chargeback).
    Debit,
}

/// An operator's proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdjustmentProposal {
    /// The case it settles (a support ticket, a chargeback notice): one adjustment per reference.
    pub reference: String,
    /// Whose wallet.
    pub user: UserId,
    /// Credit or debit.
    pub direction: Direction,
    /// How much, 1..=[`MAX_ADJUSTMENT_CENTS`].
    pub amount_cents: Cents,
    /// Why, for the audit trail (1..=500 characters).
    pub reason: String,
    /// Who proposes it: the signed-in operator's verified subject (1..=256 of
    /// `[A-Za-z0-9_.:@/+=,-]`).
    pub proposer: String,
    /// A chargeback: the reference of the top-up it reverses (a debit, at most its amount).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chargeback_of: Option<String>,
}

/// The one reference no proposal may take: `GET /ops/v1/adjustments/pending` is the list of
/// the pending proposals, so an adjustment under it could never be read by its reference.
pub const LISTED_PENDING: &str = "pending";

/// Most characters a reason may have.
pub const MAX_REASON_CHARS: usize = 500;

/// True for an operator's identity: 1..=256 of `[A-Za-z0-9_.:@/+=,-]`, an IAM ARN's characters
/// (`arn:aws:sts::123456789012:assumed-role/operators/anna@example.com`) or a plain name.
pub fn operator_ok(name: &str) -> bool {
    (1..=256).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.:@/+=,-".contains(&b))
}

impl AdjustmentProposal {
    /// Checks every field, and that a chargeback is a debit.
    pub fn validate(&self) -> Result<(), Invalid> {
        if !reference_ok(&self.reference) {
            return Err(Invalid::field("reference", "reference must be 1..=64 of [A-Za-z0-9_.:-]"));
        }
        if self.reference == LISTED_PENDING {
            return Err(Invalid::field("reference", "reference must not be \"pending\", the list's name"));
        }
        if !(1..=MAX_ADJUSTMENT_CENTS).contains(&self.amount_cents) {
            return Err(Invalid::field("amount_cents", format!("amount_cents must be 1..={MAX_ADJUSTMENT_CENTS}")));
        }
        let reason = self.reason.trim();
        if reason.is_empty() || self.reason.chars().count() > MAX_REASON_CHARS {
            return Err(Invalid::field("reason", format!("reason must be 1..={MAX_REASON_CHARS} characters")));
        }
        if !operator_ok(&self.proposer) {
            return Err(Invalid::field("proposer", "proposer must be 1..=256 of [A-Za-z0-9_.:@/+=,-]"));
        }
        if let Some(topup) = &self.chargeback_of {
            if !reference_ok(topup) {
                return Err(Invalid::field("chargeback_of", "chargeback_of must be a top-up's reference"));
            }
            if self.direction != Direction::Debit {
                return Err(Invalid::field("direction", "a chargeback is a debit"));
            }
        }
        Ok(())
    }
}

/// An operator's approval of a proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdjustmentApproval {
    /// The proposal's reference.
    pub reference: String,
    /// Who approves it: never its proposer.
    pub approver: String,
}

impl AdjustmentApproval {
    /// Checks the reference and the approver's name.
    pub fn validate(&self) -> Result<(), Invalid> {
        if !reference_ok(&self.reference) {
            return Err(Invalid::field("reference", "reference must be 1..=64 of [A-Za-z0-9_.:-]"));
        }
        if !operator_ok(&self.approver) {
            return Err(Invalid::field("approver", "approver must be 1..=256 of [A-Za-z0-9_.:@/+=,-]"));
        }
        Ok(())
    }
}

/// The four-eyes rule: a proposal's approver is another operator.
pub fn may_approve(proposer: &str, approver: &str) -> Result<(), Invalid> {
    if proposer == approver {
        return Err(Invalid::field(
            "approver",
            "the proposer of an adjustment cannot approve it: another operator must",
        ));
    }
    Ok(())
}

/// Where an adjustment stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AdjustmentStatus {
    /// Proposed, waiting for another operator.
    Proposed,
    /// Approved: its movement is in the wallet.
    Applied,
    /// Rejected by another operator: it never moves money.
    Rejected,
    /// Withdrawn by its proposer: it never moves money.
    Withdrawn,
}

impl AdjustmentStatus {
    /// `proposed`, `applied`, `rejected` or `withdrawn`.
    pub fn as_str(self) -> &'static str {
        match self {
            AdjustmentStatus::Proposed => "proposed",
            AdjustmentStatus::Applied => "applied",
            AdjustmentStatus::Rejected => "rejected",
            AdjustmentStatus::Withdrawn => "withdrawn",
        }
    }
}

/// How a proposal is closed without moving money.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Closing {
    /// Another operator refuses it (the four-eyes rule's other answer).
    Reject,
    /// Its proposer takes it back.
    Withdraw,
}

impl Closing {
    /// The status it leaves the adjustment in.
    pub fn status(self) -> AdjustmentStatus {
        match self {
            Closing::Reject => AdjustmentStatus::Rejected,
            Closing::Withdraw => AdjustmentStatus::Withdrawn,
        }
    }
}

/// An operator closing a proposal: rejecting another's, or withdrawing their own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdjustmentClosing {
    /// The proposal's reference.
    pub reference: String,
    /// Reject or withdraw.
    pub how: Closing,
    /// Who closes it: for a rejection never its proposer, for a withdrawal only its proposer.
    pub operator: String,
    /// Why, for the audit trail (1..=500 characters).
    pub reason: String,
}

impl AdjustmentClosing {
    /// Checks the reference, the operator's name and the reason.
    pub fn validate(&self) -> Result<(), Invalid> {
        if !reference_ok(&self.reference) {
            return Err(Invalid::field("reference", "reference must be 1..=64 of [A-Za-z0-9_.:-]"));
        }
        if !operator_ok(&self.operator) {
            return Err(Invalid::field("operator", "operator must be 1..=256 of [A-Za-z0-9_.:@/+=,-]"));
        }
        if self.reason.trim().is_empty() || self.reason.chars().count() > MAX_REASON_CHARS {
            return Err(Invalid::field("reason", format!("reason must be 1..={MAX_REASON_CHARS} characters")));
        }
        Ok(())
    }
}

/// Who may close a proposal: another operator rejects it, its proposer withdraws it.
pub fn may_close(proposer: &str, closing: &AdjustmentClosing) -> Result<(), Invalid> {
    match closing.how {
        Closing::Reject if proposer == closing.operator => Err(Invalid::field(
            "operator",
            "the proposer of an adjustment cannot reject it: they withdraw it, or another operator rejects it",
        )),
        Closing::Withdraw if proposer != closing.operator => {
            Err(Invalid::field("operator", "only the proposer of an adjustment may withdraw it"))
        }
        _ => Ok(()),
    }
}

/// An adjustment as the ledger holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Adjustment {
    /// What was proposed.
    #[serde(flatten)]
    pub proposal: AdjustmentProposal,
    /// Where it stands.
    pub status: AdjustmentStatus,
    /// When it was proposed (RFC 3339).
    pub proposed_at: String,
    /// Who approved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    /// When (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_at: Option<String>,
    /// Who rejected or withdrew it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_by: Option<String>,
    /// When (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<String>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_reason: Option<String>,
}

/// What a proposal or an approval came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdjustmentResult {
    /// False when this proposal or approval was made before (nothing changed now).
    pub applied: bool,
    /// The adjustment as it is now.
    pub adjustment: Adjustment,
    /// The wallet's balance now.
    pub balance_cents: Cents,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proposal() -> AdjustmentProposal {
        AdjustmentProposal {
            reference: "case-1".into(),
            user: UserId::from_claim("bob").unwrap(),
            direction: Direction::Credit,
            amount_cents: 120,
            reason: "revoked grab of packet 0f".into(),
            proposer: "ops.anna@example".into(),
            chargeback_of: None,
        }
    }

    #[test]
    fn proposals_name_what_is_wrong() {
        assert!(proposal().validate().is_ok());
        let field = |p: AdjustmentProposal| p.validate().unwrap_err().field.unwrap();
        assert_eq!(field(AdjustmentProposal { reference: "a b".into(), ..proposal() }), "reference");
        assert_eq!(field(AdjustmentProposal { reference: "pending".into(), ..proposal() }), "reference");
        assert_eq!(field(AdjustmentProposal { amount_cents: 0, ..proposal() }), "amount_cents");
        assert_eq!(field(AdjustmentProposal { amount_cents: MAX_ADJUSTMENT_CENTS + 1, ..proposal() }), "amount_cents");
        assert_eq!(field(AdjustmentProposal { reason: "  ".into(), ..proposal() }), "reason");
        assert_eq!(field(AdjustmentProposal { reason: "x".repeat(501), ..proposal() }), "reason");
        assert_eq!(field(AdjustmentProposal { proposer: "".into(), ..proposal() }), "proposer");
        let credit_back = AdjustmentProposal { chargeback_of: Some("pay-1".into()), ..proposal() };
        assert_eq!(field(credit_back), "direction", "a chargeback credits nobody");
        let chargeback =
            AdjustmentProposal { chargeback_of: Some("pay-1".into()), direction: Direction::Debit, ..proposal() };
        assert!(chargeback.validate().is_ok());
    }

    #[test]
    fn another_operator_rejects_and_only_the_proposer_withdraws() {
        let closing = |how, operator: &str| AdjustmentClosing {
            reference: "case-1".into(),
            how,
            operator: operator.into(),
            reason: "duplicate of case-0".into(),
        };
        assert!(may_close("anna", &closing(Closing::Reject, "fred")).is_ok());
        assert_eq!(may_close("anna", &closing(Closing::Reject, "anna")).unwrap_err().field.unwrap(), "operator");
        assert!(may_close("anna", &closing(Closing::Withdraw, "anna")).is_ok());
        assert_eq!(may_close("anna", &closing(Closing::Withdraw, "fred")).unwrap_err().field.unwrap(), "operator");
        let no_reason = AdjustmentClosing { reason: " ".into(), ..closing(Closing::Reject, "fred") };
        assert_eq!(no_reason.validate().unwrap_err().field.unwrap(), "reason");
        assert_eq!(Closing::Withdraw.status(), AdjustmentStatus::Withdrawn);
    }

    #[test]
    fn the_proposer_never_approves_their_own() {
        assert_eq!(may_approve("anna", "anna").unwrap_err().field.as_deref(), Some("approver"));
        assert!(may_approve("anna", "ben").is_ok());
        let approval = |approver: &str| AdjustmentApproval { reference: "case-1".into(), approver: approver.into() };
        assert!(approval("ben").validate().is_ok());
        assert_eq!(approval("").validate().unwrap_err().field.as_deref(), Some("approver"));
    }
}
