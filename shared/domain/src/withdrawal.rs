//! Money out: a user's withdrawal to the payments system, in two phases. The request debits the
//! balance into a pending withdrawal (refused when the balance is short); the payments system
//! then says it was paid (the money has left) or failed (the money goes back to the balance),
//! once, by the withdrawal's id. Pure: the ledger writes each step with its condition.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ids::{IdempotencyKey, UserId};
use super::invalid::Invalid;
use super::money::Cents;
use super::reference::reference_ok;
use crate::clock::{parse_rfc3339, Millis};

/// Most a single withdrawal may take out: 1,000,000.00 in cents, as much as a top-up may bring in.
pub const MAX_WITHDRAWAL_CENTS: Cents = 100_000_000;

/// How long a withdrawal may stay pending before reconciliation reports it overdue (the
/// `WithdrawalsOverdue` metric and its alarm): a day, the payments system's own promise.
pub const OVERDUE_AFTER_MS: Millis = 24 * 60 * 60 * 1000;

/// True when a withdrawal pending since `pending_since_ms` is overdue at `now_ms`: pending
/// longer than [`OVERDUE_AFTER_MS`]. The one rule the console's queue, a withdrawal's page and
/// reconciliation's `WithdrawalsOverdue` share.
pub fn overdue(pending_since_ms: Millis, now_ms: Millis) -> bool {
    pending_since_ms < now_ms - OVERDUE_AFTER_MS
}

/// `POST /me/withdrawals`'s body, validated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WithdrawalRequest {
    /// How much, 1..=[`MAX_WITHDRAWAL_CENTS`].
    pub amount_cents: Cents,
    /// Where to: the payments system's token for a bank card or account the user bound there
    /// (1..=64 of `[A-Za-z0-9_.:-]`); this service never sees the account itself.
    pub destination: String,
}

impl WithdrawalRequest {
    /// Checks the amount and the destination.
    pub fn validate(&self) -> Result<(), Invalid> {
        if !(1..=MAX_WITHDRAWAL_CENTS).contains(&self.amount_cents) {
            return Err(Invalid::field("amount_cents", format!("amount_cents must be 1..={MAX_WITHDRAWAL_CENTS}")));
        }
        if !reference_ok(&self.destination) {
            return Err(Invalid::field("destination", "destination must be 1..=64 of [A-Za-z0-9_.:-]"));
        }
        Ok(())
    }

    /// The withdrawal this request asks for, as `user`'s `id` at `requested_at`: pending.
    pub fn pending(&self, id: &str, user: &UserId, requested_at: String) -> Withdrawal {
        Withdrawal {
            withdrawal_id: id.to_owned(),
            user: user.clone(),
            amount_cents: self.amount_cents,
            destination: self.destination.clone(),
            status: WithdrawalStatus::Pending,
            requested_at,
            resolved_at: None,
            reference: None,
        }
    }

    /// Whether `earlier`, the withdrawal this request's id already names, is this same request
    /// by `user`: a retry, answered with it; anything else reuses the idempotency key.
    pub fn is_retry_of(&self, earlier: &Withdrawal, user: &UserId) -> bool {
        earlier.user == *user && earlier.amount_cents == self.amount_cents && earlier.destination == self.destination
    }
}

/// A withdrawal's id: `wd-` and 32 hex digits of SHA-256 over its user and idempotency key, so
/// a retry with the same key names the same withdrawal (and its write's condition refuses a
/// second), and a send with the same key is not confused with it.
pub fn withdrawal_id(user: &UserId, key: &IdempotencyKey) -> String {
    let digest = Sha256::new().chain_update(b"withdrawal\n").chain_update(user.as_str()).chain_update(b"\n");
    let digest = digest.chain_update(key.as_str()).finalize();
    format!("wd-{}", hex::encode(&digest[..16]))
}

/// Where a withdrawal stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WithdrawalStatus {
    /// Debited from the balance; the payments system has not said yet.
    Pending,
    /// The payments system paid it out: the money has left.
    Paid,
    /// The payments system could not pay it: the money went back to the balance.
    Failed,
}

impl WithdrawalStatus {
    /// `pending`, `paid` or `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            WithdrawalStatus::Pending => "pending",
            WithdrawalStatus::Paid => "paid",
            WithdrawalStatus::Failed => "failed",
        }
    }
}

/// A withdrawal, as its owner and the payments system see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Withdrawal {
    /// `wd-…`: what the payments system resolves it by.
    pub withdrawal_id: String,
    /// Whose.
    pub user: UserId,
    /// How much.
    pub amount_cents: Cents,
    /// Where to.
    pub destination: String,
    /// Where it stands.
    pub status: WithdrawalStatus,
    /// When it was asked for (RFC 3339).
    pub requested_at: String,
    /// When the payments system resolved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<String>,
    /// The payments system's reference of the payout (or of its failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

impl Withdrawal {
    /// This withdrawal resolved as `outcome` by the payments system's `reference` at `at`.
    pub fn resolve(&mut self, outcome: WithdrawalStatus, reference: &str, at: String) {
        self.status = outcome;
        self.resolved_at = Some(at);
        self.reference = Some(reference.to_owned());
    }

    /// True when it is still pending and [`overdue`] at `now_ms` (a `requested_at` that does not
    /// parse is never overdue: nothing this ledger wrote).
    pub fn is_overdue_at(&self, now_ms: Millis) -> bool {
        self.status == WithdrawalStatus::Pending
            && parse_rfc3339(&self.requested_at).is_some_and(|since| overdue(since, now_ms))
    }
}

/// What asking for a withdrawal came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WithdrawalReceipt {
    /// The withdrawal as it is now (a retry answers it, resolved or not).
    #[serde(flatten)]
    pub withdrawal: Withdrawal,
    /// False for a retry of one already made.
    pub created: bool,
    /// The user's balance now.
    pub balance_cents: Cents,
}

/// The payments system's word on a withdrawal (`withdrawal_paid` or `withdrawal_failed`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WithdrawalResolution {
    /// Which withdrawal (`wd-…`, from its `WithdrawalRequested` event).
    pub withdrawal_id: String,
    /// The payments system's own reference of the payout or of its failure.
    pub reference: String,
}

impl WithdrawalResolution {
    /// Checks the id and the reference.
    pub fn validate(&self) -> Result<(), Invalid> {
        let id_ok = self.withdrawal_id.strip_prefix("wd-").is_some_and(|hex| {
            hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        if !id_ok {
            return Err(Invalid::field("withdrawal_id", "withdrawal_id must be wd- and 32 hex digits"));
        }
        if !reference_ok(&self.reference) {
            return Err(Invalid::field("reference", "reference must be 1..=64 of [A-Za-z0-9_.:-]"));
        }
        Ok(())
    }

    /// Whether this word, as `outcome`, applies to `withdrawal` as it stands
    /// ([`resolution_allowed`]): `Ok(true)` to apply it, `Ok(false)` for a second delivery of the
    /// one applied, an error for a contradiction.
    pub fn applies_to(&self, withdrawal: &Withdrawal, outcome: WithdrawalStatus) -> Result<bool, Invalid> {
        resolution_allowed(withdrawal.status, withdrawal.reference.as_deref(), outcome, &self.reference)
    }
}

/// What a resolution came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolutionResult {
    /// False when this resolution was applied before (nothing changed now).
    pub applied: bool,
    /// The withdrawal as it is now.
    pub withdrawal: Withdrawal,
}

/// How often an operator may send an overdue withdrawal's order to the payments system again:
/// once in each hour of the clock (UTC), so a second click in the same hour changes nothing.
pub const RESEND_EVERY_MS: Millis = 60 * 60 * 1000;

/// What sending a withdrawal's order again came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResendResult {
    /// False when its order was sent again earlier in the same hour (nothing published now).
    pub changed: bool,
    /// The withdrawal as it is now (pending).
    pub withdrawal: Withdrawal,
    /// The hour's slot ([`resend_slot`]) the resend took, or found taken.
    pub slot: i64,
}

/// Whether `withdrawal`'s order may be sent to the payments system again at `now_ms`: only while
/// it is pending and overdue (a day without the payments system's word). Resending moves no
/// money: it publishes the same `WithdrawalRequested` event (its same id) once more.
pub fn resend_allowed(withdrawal: &Withdrawal, now_ms: Millis) -> Result<(), Invalid> {
    if withdrawal.status != WithdrawalStatus::Pending {
        let status = withdrawal.status.as_str();
        return Err(Invalid::field("withdrawal_id", format!("the payments system has resolved it: {status}")));
    }
    if !withdrawal.is_overdue_at(now_ms) {
        return Err(Invalid::field("withdrawal_id", "not overdue: pending for less than a day"));
    }
    Ok(())
}

/// The hour a resend at `now_ms` belongs to (hours since the epoch): one resend per slot.
pub fn resend_slot(now_ms: Millis) -> i64 {
    now_ms.div_euclid(RESEND_EVERY_MS)
}

/// Whether a resolution to `outcome` with `reference` may be applied to a withdrawal that is
/// `status` (resolved with `resolved_reference`): `Ok(true)` to apply it, `Ok(false)` for a
/// second delivery of the one applied, an error for a contradiction.
pub fn resolution_allowed(
    status: WithdrawalStatus,
    resolved_reference: Option<&str>,
    outcome: WithdrawalStatus,
    reference: &str,
) -> Result<bool, Invalid> {
    match status {
        WithdrawalStatus::Pending => Ok(true),
        done if done == outcome && resolved_reference == Some(reference) => Ok(false),
        done => Err(Invalid::field(
            "withdrawal_id",
            format!(
                "already {} (reference {}): a withdrawal is resolved once",
                done.as_str(),
                resolved_reference.unwrap_or("none")
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> UserId {
        UserId::from_claim("alice").unwrap()
    }

    #[test]
    fn requests_name_what_is_wrong() {
        let request =
            |amount_cents, destination: &str| WithdrawalRequest { amount_cents, destination: destination.into() };
        assert!(request(1, "card-1").validate().is_ok());
        assert!(request(MAX_WITHDRAWAL_CENTS, "acct:9_x.y").validate().is_ok());
        let field = |r: WithdrawalRequest| r.validate().unwrap_err().field.unwrap();
        assert_eq!(field(request(0, "card-1")), "amount_cents");
        assert_eq!(field(request(MAX_WITHDRAWAL_CENTS + 1, "card-1")), "amount_cents");
        assert_eq!(field(request(5, "")), "destination");
        assert_eq!(field(request(5, "has space")), "destination");
    }

    #[test]
    fn an_id_is_its_user_and_key_and_never_a_sends() {
        let key = IdempotencyKey::parse("k-1").unwrap();
        let id = withdrawal_id(&alice(), &key);
        assert_eq!(id, withdrawal_id(&alice(), &key), "a retry names the same withdrawal");
        assert_ne!(id, withdrawal_id(&UserId::from_claim("bob").unwrap(), &key));
        assert_ne!(id, withdrawal_id(&alice(), &IdempotencyKey::parse("k-2").unwrap()));
        let sample = withdrawal_id(&alice(), &IdempotencyKey::parse("cash-out-2026-11-24").unwrap());
        assert_eq!(
            sample, "wd-f740d5e329027e69e7b9103fc888403b",
            "events/withdraw.json's, as events/withdrawal-paid.json names it"
        );
        let resolution = WithdrawalResolution { withdrawal_id: id.clone(), reference: "payout-1".into() };
        assert!(resolution.validate().is_ok(), "{id}");
        let bad = WithdrawalResolution { withdrawal_id: "wd-xyz".into(), reference: "payout-1".into() };
        assert_eq!(bad.validate().unwrap_err().field.as_deref(), Some("withdrawal_id"));
    }

    /// 2026-12-01T08:00:00Z, when [`requested_at_eight`]'s withdrawal was asked for.
    fn eight() -> Millis {
        crate::clock::parse_rfc3339("2026-12-01T08:00:00Z").unwrap()
    }

    /// Alice's withdrawal of 5.00, asked for at [`eight`], in `status`.
    fn requested_at_eight(status: WithdrawalStatus) -> Withdrawal {
        Withdrawal {
            withdrawal_id: "wd-f740d5e329027e69e7b9103fc888403b".into(),
            user: alice(),
            amount_cents: 500,
            destination: "card-1".into(),
            status,
            requested_at: "2026-12-01T08:00:00Z".into(),
            resolved_at: None,
            reference: None,
        }
    }

    #[test]
    fn a_withdrawal_is_overdue_only_while_pending_past_a_day() {
        let (withdrawal, since) = (requested_at_eight, eight());
        let pending = withdrawal(WithdrawalStatus::Pending);
        assert!(!pending.is_overdue_at(since + OVERDUE_AFTER_MS), "a day exactly is not past it");
        assert!(pending.is_overdue_at(since + OVERDUE_AFTER_MS + 1));
        assert!(!withdrawal(WithdrawalStatus::Paid).is_overdue_at(since + 2 * OVERDUE_AFTER_MS), "resolved");
        assert!(!withdrawal(WithdrawalStatus::Failed).is_overdue_at(since + 2 * OVERDUE_AFTER_MS));
        let unreadable = Withdrawal { requested_at: "yesterday".into(), ..pending };
        assert!(!unreadable.is_overdue_at(since + 2 * OVERDUE_AFTER_MS));
    }

    #[test]
    fn only_an_overdue_pending_withdrawal_is_sent_again_once_an_hour() {
        let (withdrawal, since) = (requested_at_eight, eight());
        let later = since + OVERDUE_AFTER_MS + 1;
        assert!(resend_allowed(&withdrawal(WithdrawalStatus::Pending), later).is_ok());
        let refused = |status, at| resend_allowed(&withdrawal(status), at).unwrap_err().field.unwrap();
        assert_eq!(refused(WithdrawalStatus::Pending, since + OVERDUE_AFTER_MS), "withdrawal_id", "not overdue yet");
        assert_eq!(refused(WithdrawalStatus::Paid, later), "withdrawal_id", "paid");
        assert_eq!(refused(WithdrawalStatus::Failed, later), "withdrawal_id", "failed");
        assert_eq!(resend_slot(later), resend_slot(later + RESEND_EVERY_MS - 1 - later % RESEND_EVERY_MS));
        assert_eq!(resend_slot(later) + 1, resend_slot(later - later % RESEND_EVERY_MS + RESEND_EVERY_MS));
    }

    #[test]
    fn a_withdrawal_is_resolved_once_and_a_second_delivery_changes_nothing() {
        use WithdrawalStatus::*;
        assert_eq!(resolution_allowed(Pending, None, Paid, "p-1"), Ok(true));
        assert_eq!(resolution_allowed(Pending, None, Failed, "p-1"), Ok(true));
        assert_eq!(resolution_allowed(Paid, Some("p-1"), Paid, "p-1"), Ok(false), "the same word twice");
        assert_eq!(resolution_allowed(Failed, Some("p-1"), Failed, "p-1"), Ok(false));
        assert!(resolution_allowed(Paid, Some("p-1"), Failed, "p-1").is_err(), "paid, then failed");
        assert!(resolution_allowed(Failed, Some("p-1"), Paid, "p-2").is_err(), "failed, then paid");
        assert!(resolution_allowed(Paid, Some("p-1"), Paid, "p-2").is_err(), "paid twice, by two payouts");
    }
}
