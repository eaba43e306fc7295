//! The money side of operations: the payments system's top-ups and its word on withdrawals,
//! operators' adjustments (proposed by one, approved by another), and the reconciliation of
//! the whole ledger (invariants 8 and 9) with its reports, as the `funds` function and
//! `local topup` / `local reconcile` run them. The use cases are in [`commands`].

use serde::{Deserialize, Serialize};

use crate::clock::{parse_rfc3339, rfc3339, Clock, Millis, SystemClock};
use crate::domain::adjustment::{AdjustmentApproval, AdjustmentClosing, AdjustmentProposal, AdjustmentResult};
use crate::domain::audit::AuditEntry;
use crate::domain::books::{combine, BooksError, BooksFold, Part, Reconciliation, Reread};
use crate::domain::day::DayRange;
use crate::domain::patterns::{FlagAssignment, FlagResolution, FlagResolved, FlagStatus, ListFlags, RiskFlag};
use crate::domain::risk::{Hold, HoldRequest, HoldResult, LiftRequest};
use crate::domain::statements::{Statement, TrialBalance};
use crate::domain::wallet::{TopUp, TopUpResult};
use crate::domain::withdrawal::{ResolutionResult, Withdrawal, WithdrawalResolution, WithdrawalStatus};
use crate::domain::{BusinessDay, Invalid, UserId};
use crate::markers::RECONCILIATION_MISMATCH;
use crate::ports::{
    Adjustments, AuditTrail, Books, Flags, Holds, PageRequest, QueuePage, ReportSink, StoreError, Wallets, Withdrawals,
    WRITES_LAND_WITHIN,
};

mod commands;

pub use commands::run;

/// Why a funds request failed: the request itself (a bad day, a cut-off too late, a top-up the
/// rules refuse), or the ledger.
#[derive(Debug, thiserror::Error)]
pub enum FundsError {
    /// The request breaks a rule, named by its field.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The ledger failed (a top-up reference reused with another amount is its `Invalid`).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A sum of the books past its type: the records' fault, so corrupt, naming the item.
impl From<BooksError> for StoreError {
    fn from(error: BooksError) -> Self {
        StoreError::Corrupt(format!("books: {error}"))
    }
}

/// What the `funds` function is asked to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FundsRequest {
    /// Credit a user from the payments system, once per reference.
    Topup(TopUp),
    /// The payments system paid a withdrawal out (`{"withdrawal_paid": {"withdrawal_id": "wd-…", "reference": "payout-1"}}`).
    WithdrawalPaid(WithdrawalResolution),
    /// The payments system could not: the money goes back to the wallet.
    WithdrawalFailed(WithdrawalResolution),
    /// The payments system reads a withdrawal it was told of (`WithdrawalRequested`) to pay it
    /// out: its user, amount, destination and state (`{"withdrawal": {"withdrawal_id": "wd-…"}}`).
    Withdrawal(WithdrawalLookup),
    /// An operator proposes an adjustment (it moves no money yet).
    ProposeAdjustment(AdjustmentProposal),
    /// Another operator approves it: it moves the money.
    ApproveAdjustment(AdjustmentApproval),
    /// Another operator rejects it, or its proposer withdraws it: it never moves money
    /// (`{"close_adjustment": {"reference": "case-17", "how": "reject", "operator": "…", "reason": "…"}}`).
    CloseAdjustment(AdjustmentClosing),
    /// Check that the books balance (the daily schedule's payload is `{"reconcile": {}}`).
    Reconcile(ReconcileOptions),
    /// Write a day's trial balance (`{"trial_balance": {"day": "2026-11-23"}}`; default: yesterday).
    TrialBalance(DayReport),
    /// Write one user's statement of a day (`{"statement": {"user": "alice", "day": "2026-11-23"}}`).
    Statement(StatementRequest),
    /// Read back a business day's audit trail (`{"audit": {"day": "2026-11-23"}}`): every
    /// release, adjustment step, withdrawal resolution and hold, who did it, when and why.
    Audit(AuditDay),
    /// An operator holds an account from sending, grabbing or both
    /// (`{"place_hold": {"user": "mallory", "scope": "grab", "reason": "…"}}`).
    PlaceHold(HoldRequest),
    /// An operator lifts a hold (`{"lift_hold": {"user": "mallory", "reason": "…"}}`).
    LiftHold(LiftRequest),
    /// The holds in force (`{"holds": {}}`).
    Holds(ListHolds),
    /// A page of the risk rules' flags of one status (`{"flags": {"status": "open"}}`; default open).
    Flags(ListFlags),
    /// An operator assigns an open flag
    /// (`{"assign_flag": {"flag_id": "chain-…", "assignee": "rita", "operator": "rita"}}`).
    AssignFlag(FlagAssignment),
    /// An operator resolves a flag
    /// (`{"resolve_flag": {"flag_id": "chain-…", "outcome": "dismissed", "note": "…"}}`).
    ResolveFlag(FlagResolution),
}

/// The holds in force: no options.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListHolds {}

impl FundsRequest {
    /// The payload's key, as serde names the variant (`topup`, `withdrawal_paid`,
    /// `propose_adjustment`, …): a command is named once, by its variant.
    pub fn key(&self) -> String {
        let named = serde_json::to_value(self).ok().and_then(|payload| match payload {
            serde_json::Value::Object(fields) => fields.into_iter().next().map(|(key, _)| key),
            _ => None,
        });
        named.unwrap_or_default()
    }
}

/// The day of a trial balance.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DayReport {
    /// The business day, `YYYY-MM-DD`; default: the day before today (in the business time zone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub day: Option<String>,
}

/// Which withdrawal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WithdrawalLookup {
    /// Its id (`wd-…`).
    pub withdrawal_id: String,
}

/// Which day's audit trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditDay {
    /// The business day, `YYYY-MM-DD`.
    pub day: String,
}

/// Whose statement, of which day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatementRequest {
    /// The wallet's owner.
    pub user: UserId,
    /// The business day, `YYYY-MM-DD`.
    pub day: String,
}

/// Options of a reconciliation run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconcileOptions {
    /// The cut-off (RFC 3339): the books as of then. Default: now less
    /// [`WRITES_LAND_WITHIN`], the latest cut-off no write can still be landing behind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
    /// Passes over the ledger, each keeping a share of the accounts: memory divides by it, reads
    /// multiply (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passes: Option<u32>,
}

/// Which requests an entry point of the funds function takes: each is a binary of its own in
/// the template, with its own invokers. `funds` (`FundsFunction`) takes the payments system's
/// requests (money in, its word on withdrawals), the daily jobs and statements, never an
/// adjustment; the operators' requests (adjustments, holds, flags, the audit trail) are the
/// operators' API's (`operator`, `OperatorFunction`), which builds each from its route.
/// Locally one process takes everything (`local funds`, the tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FundsEntry {
    /// Every request (`make run`, the tests).
    All,
    /// The payments system's requests and the jobs: never an adjustment.
    Payments,
    /// Operators' adjustments, holds and flags, and the audit trail.
    Operator,
}

impl FundsEntry {
    /// `all`, `payments` or `operator`.
    pub fn as_str(self) -> &'static str {
        match self {
            FundsEntry::All => "all",
            FundsEntry::Payments => "payments",
            FundsEntry::Operator => "operator",
        }
    }

    /// The shipped binary that runs this entry point (template.yaml's `BuildProperties.Binary`):
    /// `funds` or `operator`; `All` ships in none.
    pub fn binary(self) -> Option<&'static str> {
        match self {
            FundsEntry::All => None,
            FundsEntry::Payments => Some("funds"),
            FundsEntry::Operator => Some("operator"),
        }
    }

    /// The shipped entry point whose callers make `request`: the operators' for what it admits
    /// (adjustments, holds, flags, the audit trail), the payments system's for the rest. What
    /// runs a request locally in one process (`make funds`, the tests) runs it as that entry
    /// point, so its calls are the ones that binary's role must allow.
    pub fn serving(request: &FundsRequest) -> FundsEntry {
        if FundsEntry::Operator.admits(request).is_ok() {
            FundsEntry::Operator
        } else {
            FundsEntry::Payments
        }
    }

    /// Whether this entry point takes `request`, or why not (naming the request's key).
    pub fn admits(self, request: &FundsRequest) -> Result<(), Invalid> {
        let adjustment = matches!(
            request,
            FundsRequest::ProposeAdjustment(_)
                | FundsRequest::ApproveAdjustment(_)
                | FundsRequest::CloseAdjustment(_)
                | FundsRequest::AssignFlag(_)
                | FundsRequest::PlaceHold(_)
                | FundsRequest::LiftHold(_)
                | FundsRequest::ResolveFlag(_)
        );
        let read_only = matches!(request, FundsRequest::Audit(_) | FundsRequest::Holds(_) | FundsRequest::Flags(_));
        let refused = match self {
            FundsEntry::All => None,
            FundsEntry::Payments => adjustment.then_some("operators' adjustments go to OperatorFunction"),
            FundsEntry::Operator => {
                (!adjustment && !read_only).then_some("it takes operators' adjustments and the audit trail only")
            }
        };
        match refused {
            None => Ok(()),
            Some(why) => {
                Err(Invalid::field(request.key(), format!("not taken by this entry point ({}): {why}", self.as_str())))
            }
        }
    }
}

/// Where reconciliation cuts the ledger off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cutoff {
    /// Money written after this is left out.
    pub as_of_ms: Millis,
    /// The longest a write can take to land after its stamp.
    pub landing_ms: Millis,
}

impl Cutoff {
    /// On a running ledger: as of `as_of_ms` (at most now less [`WRITES_LAND_WITHIN`]).
    pub fn live(as_of_ms: Millis) -> Self {
        Cutoff { as_of_ms, landing_ms: WRITES_LAND_WITHIN.as_millis() as Millis }
    }

    /// On a ledger nothing is writing to (tests, after the traffic stopped): everything up to now.
    pub fn quiet() -> Self {
        Cutoff { as_of_ms: SystemClock.now_ms(), landing_ms: 0 }
    }

    /// The latest cut-off at `now_ms` that no write can still be landing behind.
    pub fn latest_ms(now_ms: Millis) -> Millis {
        now_ms - WRITES_LAND_WITHIN.as_millis() as Millis
    }

    /// The cut-off `options` ask for, at `now_ms`: never later than a live one.
    pub fn from_options(options: &ReconcileOptions, now_ms: Millis) -> Result<Self, Invalid> {
        let latest = Cutoff::latest_ms(now_ms);
        let as_of_ms = match &options.as_of {
            None => latest,
            Some(text) => {
                let at = parse_rfc3339(text).ok_or_else(|| Invalid::field("as_of", "not an RFC 3339 time"))?;
                if at > latest {
                    let what = format!("later than {}: writes may still be landing behind it", rfc3339(latest));
                    return Err(Invalid::field("as_of", what));
                }
                at
            }
        };
        Ok(Cutoff::live(as_of_ms))
    }
}

/// What the `funds` function answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FundsResponse {
    /// The top-up's outcome.
    Topup(TopUpResult),
    /// A withdrawal's resolution.
    Withdrawal(ResolutionResult),
    /// A withdrawal as it is now (`{"withdrawal_found": {…}}`).
    WithdrawalFound(Withdrawal),
    /// An adjustment proposed or approved.
    Adjustment(AdjustmentResult),
    /// A hold placed or lifted.
    Hold(HoldResult),
    /// The holds in force.
    Holds(Vec<Hold>),
    /// The flags asked for.
    Flags(QueuePage<RiskFlag>),
    /// A flag resolved.
    FlagResolved(FlagResolved),
    /// What reconciliation found.
    Reconcile(Reconciliation),
    /// The trial balance, and where its JSON lines and CSV were written.
    TrialBalance {
        /// The report.
        report: TrialBalance,
        /// Its files.
        written: Vec<String>,
    },
    /// The statement, and where its JSON lines and CSV were written.
    Statement {
        /// The report.
        report: Statement,
        /// Its files.
        written: Vec<String>,
    },
    /// A day's audit trail, in time order.
    Audit {
        /// The business day.
        day: String,
        /// Its entries.
        entries: Vec<AuditEntry>,
    },
}

const DAY_MS: Millis = 24 * 60 * 60 * 1000;

/// The cut-offs of `day`'s opening (its start) and closing (its end, or now less
/// [`WRITES_LAND_WITHIN`] while it is not over); a day that has not begun is [`Invalid`].
pub fn day_cutoffs(days: BusinessDay, day: &str, now_ms: Millis) -> Result<(Cutoff, Cutoff), Invalid> {
    let (start, end) = bounds(days, day)?;
    let latest = Cutoff::latest_ms(now_ms);
    if start - 1 > latest {
        return Err(Invalid::field("day", "has not begun (or began less than a minute ago)"));
    }
    Ok((Cutoff::live(start - 1), Cutoff::live((end - 1).min(latest))))
}

/// Business day `day`'s `[start, end)`, or why it is none.
fn bounds(days: BusinessDay, day: &str) -> Result<(Millis, Millis), Invalid> {
    days.bounds(day).ok_or_else(|| Invalid::field("day", "not a day (YYYY-MM-DD)"))
}

/// The key a report of `day` made at `now_ms` is filed under: `base` once the day is closed (over,
/// and no write can land in it any more: the report is final, filed once and never rewritten);
/// before that, `base` as of the cut-off it was made to, a report of its own.
pub fn report_key(days: BusinessDay, base: &str, day: &str, now_ms: Millis) -> Result<String, Invalid> {
    let (_, end) = bounds(days, day)?;
    let latest = Cutoff::latest_ms(now_ms);
    Ok(if latest >= end - 1 { base.to_owned() } else { format!("{base}.as-of-{}", rfc3339(latest)) })
}

/// `day`'s trial balance: the books as of `opening` and as of `closing`.
pub async fn trial_balance<B: Books>(
    books: &B,
    day: &str,
    opening: Cutoff,
    closing: Cutoff,
) -> Result<TrialBalance, FundsError> {
    let at_start = reconcile(books, opening, 1).await?;
    let at_end = reconcile(books, closing, 1).await?;
    Ok(TrialBalance::new(day, &at_start, &at_end, books.currency()))
}

/// `user`'s statement of `day`, every movement of it the ledger holds.
pub async fn statement<B: Books>(books: &B, user: &UserId, day: &str) -> Result<Statement, FundsError> {
    statement_to(books, user, day, Millis::MAX).await
}

/// `user`'s statement of `day`, its movements booked up to `until_ms` (the cut-off of a day
/// still open).
pub async fn statement_to<B: Books>(
    books: &B,
    user: &UserId,
    day: &str,
    until_ms: Millis,
) -> Result<Statement, FundsError> {
    statement_of_days(books, user, &DayRange::parse(day, None)?, until_ms).await
}

/// `user`'s statement of the business days `days` (one statement from the first day's opening
/// balance to the last day's closing one), its movements booked up to `until_ms`.
pub async fn statement_of_days<B: Books>(
    books: &B,
    user: &UserId,
    days: &DayRange,
    until_ms: Millis,
) -> Result<Statement, FundsError> {
    let (start, end) = bounds(books.business_day(), &days.first())?;
    let end = if days.last() == days.first() { end } else { bounds(books.business_day(), &days.last())?.1 };
    let movements = books.movements_of(user).await?;
    let window = (start, end.min(until_ms.saturating_add(1)));
    Ok(Statement::new(user, &days.first(), window, movements, books.currency()).through(&days.last()))
}

async fn write_report<R: ReportSink>(
    reports: &R,
    key: &str,
    json_lines: String,
    csv: String,
) -> Result<Vec<String>, FundsError> {
    Ok(vec![reports.put(&format!("{key}.jsonl"), json_lines).await?, reports.put(&format!("{key}.csv"), csv).await?])
}

/// The most passes a run may ask for.
pub const MAX_PASSES: u32 = 1_024;

/// Reconciles the ledger as of `cutoff`, in `passes` passes (see [`crate::domain::books`]).
/// A wallet that looked off while the scan read it is read again exactly before it is
/// reported; one that kept moving through every attempt is logged at WARN and listed in
/// `unchecked_wallets`, never reported as a difference it may not have. Each
/// difference is logged at ERROR with [`RECONCILIATION_MISMATCH`], its class and amounts (the
/// metric filter and alarm of `template.yaml` count them).
pub async fn reconcile<B: Books>(books: &B, cutoff: Cutoff, passes: u32) -> Result<Reconciliation, FundsError> {
    let mut result = Reconciliation::default();
    for index in 0..passes {
        let mut fold = BooksFold::new(cutoff.as_of_ms, cutoff.landing_ms, Part { index, of: passes });
        books.read_into(&mut fold).await?;
        let (mut pass, suspects) = fold.finish().map_err(StoreError::from)?;
        for suspect in suspects {
            let reread = books.wallet_exact(&suspect.user).await?;
            if reread == Reread::KeptMoving {
                tracing::warn!(user = %suspect.user, "wallet kept moving through every re-read: not checked this run");
                pass.unchecked_wallets.push(suspect.user.clone());
            }
            pass.differences.extend(suspect.confirm(reread));
        }
        combine(&mut result, pass, index + 1 == passes).map_err(StoreError::from)?;
    }
    for difference in &result.differences {
        tracing::error!(marker = RECONCILIATION_MISMATCH, subject = %difference.subject, class = ?difference.class, mismatch = %difference.what, "{RECONCILIATION_MISMATCH} {difference}");
    }
    tracing::info!(
        as_of = %result.as_of,
        topups_cents = %result.topups_cents,
        withdrawn_cents = %result.withdrawn_cents,
        pending_withdrawals_cents = %result.pending_withdrawals_cents,
        overdue_withdrawals = result.overdue_withdrawals.len(),
        balances_cents = %result.balances_cents,
        in_open_packets_cents = %result.in_open_packets_cents,
        items = result.items,
        differences = result.differences.len(),
        "reconciled"
    );
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The payments entry point never takes an adjustment; the operators' takes nothing else.
    #[test]
    fn each_entry_point_takes_its_callers_requests() {
        let request = |json: &str| serde_json::from_str::<FundsRequest>(json).unwrap();
        let topup = request(r#"{"topup": {"user": "a", "amount_cents": 1, "reference": "p"}}"#);
        let paid = request(r#"{"withdrawal_paid": {"withdrawal_id": "wd-0", "reference": "p"}}"#);
        let propose = request(
            r#"{"propose_adjustment": {"reference": "c", "user": "a", "direction": "credit", "amount_cents": 1, "reason": "r", "proposer": "o"}}"#,
        );
        let approve = request(r#"{"approve_adjustment": {"reference": "c", "approver": "p"}}"#);
        let jobs = [request(r#"{"reconcile": {}}"#), request(r#"{"trial_balance": {}}"#)];
        let all = [&topup, &paid, &propose, &approve, &jobs[0], &jobs[1]];
        assert!(all.iter().all(|request| FundsEntry::All.admits(request).is_ok()));
        for taken in [&topup, &paid, &jobs[0], &jobs[1]] {
            assert!(FundsEntry::Payments.admits(taken).is_ok(), "{taken:?}");
            let refused = FundsEntry::Operator.admits(taken).unwrap_err();
            assert_eq!(refused.field.as_deref(), Some(taken.key().as_str()));
        }
        for taken in [&propose, &approve] {
            assert!(FundsEntry::Operator.admits(taken).is_ok(), "{taken:?}");
            assert!(FundsEntry::Payments.admits(taken).is_err(), "{taken:?}");
        }
        let audit = request(r#"{"audit": {"day": "2026-11-25"}}"#);
        let served: Vec<_> =
            [&topup, &paid, &propose, &approve, &jobs[0], &audit].map(|r| FundsEntry::serving(r).binary()).into();
        let expected = ["funds", "funds", "operator", "operator", "funds", "operator"].map(Some);
        assert_eq!(served, expected, "each request runs as the binary its callers invoke");
        let refused = FundsEntry::Payments.admits(&propose).unwrap_err();
        assert!(refused.message.contains("OperatorFunction"), "{}", refused.message);
    }

    /// A closed day's report is filed under its day alone, once; an open day's under the
    /// cut-off it was made to, so a later report of the same day is a report of its own.
    #[test]
    fn a_closed_days_report_has_its_days_key_and_an_open_days_its_cut_off() {
        let midnight = parse_rfc3339("2026-11-24T00:00:00Z").unwrap();
        let minute = WRITES_LAND_WITHIN.as_millis() as Millis;
        let utc = BusinessDay::default();
        let key = |now_ms| report_key(utc, "statements/2026-11-23/alice", "2026-11-23", now_ms).unwrap();
        assert_eq!(key(midnight + minute), "statements/2026-11-23/alice");
        assert_eq!(key(midnight + minute - 2), "statements/2026-11-23/alice.as-of-2026-11-23T23:59:59.998Z");
        assert!(report_key(utc, "x", "23 Nov", midnight).is_err());
    }

    /// Books in Shanghai holding alice's movements: a statement and the trial balance's
    /// cut-offs count Shanghai's days, 16:00 to 16:00 UTC.
    struct ShanghaiBooks(Vec<crate::domain::books::MovementRecord>);

    impl Books for ShanghaiBooks {
        async fn read_into(&self, _fold: &mut BooksFold) -> Result<(), StoreError> {
            Ok(())
        }
        async fn wallet_exact(&self, _user: &UserId) -> Result<Reread, StoreError> {
            Err(StoreError::Corrupt("not read here".into()))
        }
        async fn movements_of(&self, _user: &UserId) -> Result<Vec<crate::domain::books::MovementRecord>, StoreError> {
            Ok(self.0.clone())
        }
        fn business_day(&self) -> BusinessDay {
            BusinessDay::parse("Asia/Shanghai").unwrap()
        }
        fn currency(&self) -> crate::domain::Currency {
            crate::domain::Currency::default()
        }
    }

    #[tokio::test]
    async fn a_shanghai_days_statement_and_cut_offs_run_from_four_in_the_afternoon_utc() {
        use crate::domain::wallet::MovementKind;
        let at = |text| parse_rfc3339(text).unwrap();
        let topup = |amount_cents, written_at_ms| crate::domain::books::MovementRecord {
            user: UserId::from_claim("alice").unwrap(),
            kind: MovementKind::Topup,
            amount_cents,
            packet_id: None,
            reference: Some(format!("pay-{written_at_ms}")),
            written_at_ms,
            key: format!("MOVE#{written_at_ms}"),
            has_event: true,
        };
        // 15:30 UTC is the 23rd's evening in Shanghai; 16:30 UTC the 24th's first hour.
        let books = ShanghaiBooks(vec![topup(100, at("2026-11-23T15:30:00Z")), topup(250, at("2026-11-23T16:30:00Z"))]);
        let alice = UserId::from_claim("alice").unwrap();
        let statement = statement(&books, &alice, "2026-11-24").await.unwrap();
        assert_eq!(statement.opening_cents, 100, "the 23rd's top-up opens the 24th");
        assert_eq!(statement.lines.len(), 1, "{statement:?}");
        assert_eq!(statement.closing_cents, 350);
        let (opening, closing) = day_cutoffs(books.business_day(), "2026-11-24", at("2026-11-26T00:00:00Z")).unwrap();
        assert_eq!(
            (opening.as_of_ms, closing.as_of_ms),
            (at("2026-11-23T16:00:00Z") - 1, at("2026-11-24T16:00:00Z") - 1)
        );
        let closed = at("2026-11-24T16:00:00Z") + WRITES_LAND_WITHIN.as_millis() as Millis;
        assert_eq!(
            report_key(books.business_day(), "statements/2026-11-24/alice", "2026-11-24", closed).unwrap(),
            "statements/2026-11-24/alice"
        );
        assert!(report_key(books.business_day(), "k", "2026-11-24", closed - 2).unwrap().starts_with("k.as-of-"));
    }

    #[test]
    fn requests_read_as_the_payments_system_and_the_schedule_send_them() {
        let topup: FundsRequest =
            serde_json::from_str(r#"{"topup": {"user": "alice", "amount_cents": 500, "reference": "pay-1"}}"#).unwrap();
        assert!(matches!(topup, FundsRequest::Topup(TopUp { amount_cents: 500, .. })));
        let reconcile: FundsRequest = serde_json::from_str(r#"{"reconcile": {}}"#).unwrap();
        assert_eq!(reconcile, FundsRequest::Reconcile(ReconcileOptions::default()));
        let options = ReconcileOptions { as_of: Some("2026-11-23T00:00:00Z".into()), passes: None };
        let day_after = parse_rfc3339("2026-11-24T00:00:00Z").unwrap();
        assert_eq!(Cutoff::from_options(&options, day_after).unwrap().as_of_ms, day_after - 24 * 3_600_000);
        let too_late = ReconcileOptions { as_of: Some(rfc3339(day_after - 1_000)), passes: None };
        assert!(Cutoff::from_options(&too_late, day_after).is_err(), "a cut-off writes may still land behind");
        assert!(serde_json::from_str::<FundsRequest>(r#"{"topup": {"user": "a", "amount_cents": 5}}"#).is_err());
        assert!(serde_json::from_str::<FundsRequest>(r#"{"withdraw": {}}"#).is_err());
    }
}
