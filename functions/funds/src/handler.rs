//! A top-up, a withdrawal's resolution, an adjustment's proposal or approval, a reconciliation
//! or a report, by payload. A failure's `errorType` names what went wrong
//! (`InvalidFundsRequest` for a payload or a top-up that cannot be applied, `StoreUnavailable`,
//! `LedgerCorrupt` for a record that cannot be read or breaks an invariant),
//! never a Rust type name, so the payments system can tell its mistake from a retryable fault.

use lambda_runtime::{Diagnostic, LambdaEvent};
use red_packets::domain::{Currency, Invalid};
use red_packets::funds::{run, FundsEntry, FundsError, FundsRequest, FundsResponse};
use red_packets::ports::{Adjustments, AuditTrail, Books, Flags, Holds, ReportSink, StoreError, Wallets, Withdrawals};
use red_packets::Clock;
use serde_json::Value;

/// Why an invocation failed.
#[derive(Debug, thiserror::Error)]
pub enum FundsFailure {
    /// The payload is not a request this function knows.
    #[error("invalid funds payload: {0}")]
    InvalidRequest(serde_json::Error),
    /// The request itself cannot be carried out (a bad amount, a reference reused).
    #[error("{field}: {message}")]
    Refused {
        /// The field at fault.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// DynamoDB could not be reached: the same request may succeed later.
    #[error("{0}")]
    Unavailable(String),
    /// A record the request reads is corrupt or breaks an invariant, or DynamoDB refused a write
    /// for reasons of its own: nothing was applied, and a retry meets the same record. Page someone.
    #[error("{0}")]
    Internal(String),
}

impl From<FundsError> for FundsFailure {
    fn from(error: FundsError) -> Self {
        match error {
            FundsError::Invalid(Invalid { field, message })
            | FundsError::Store(StoreError::Invalid(Invalid { field, message })) => {
                FundsFailure::Refused { field: field.unwrap_or_default(), message }
            }
            FundsError::Store(StoreError::Conflict(conflict)) => {
                FundsFailure::Refused { field: "funds".into(), message: conflict.to_string() }
            }
            FundsError::Store(error @ (StoreError::Corrupt(_) | StoreError::Rejected(_))) => {
                FundsFailure::Internal(error.to_string())
            }
            FundsError::Store(error) => FundsFailure::Unavailable(error.to_string()),
        }
    }
}

/// A failure as the operators' API answers it: the field at fault (400), the ledger unreachable
/// (503) or corrupt (500).
impl From<FundsFailure> for red_packets::ApiError {
    fn from(failure: FundsFailure) -> Self {
        use red_packets::ApiError;
        match failure {
            FundsFailure::InvalidRequest(error) => ApiError::invalid("body", error.to_string()),
            FundsFailure::Refused { field, message } => ApiError::InvalidRequest { field: Some(field), message },
            FundsFailure::Unavailable(detail) => ApiError::Unavailable { dependency: "dynamodb", detail },
            FundsFailure::Internal(detail) => ApiError::Internal(detail),
        }
    }
}

impl From<FundsFailure> for Diagnostic {
    fn from(failure: FundsFailure) -> Self {
        let error_type = match &failure {
            FundsFailure::InvalidRequest(_) | FundsFailure::Refused { .. } => "InvalidFundsRequest",
            FundsFailure::Unavailable(_) => "StoreUnavailable",
            FundsFailure::Internal(_) => "LedgerCorrupt",
        };
        Diagnostic { error_type: error_type.into(), error_message: failure.to_string() }
    }
}

/// What an invocation answers: the request's own answer under its payload's key, and the
/// currency its amounts are minor units of (`{"topup": {…}, "currency": {"code": "CNY", "exponent": 2}}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FundsAnswer {
    /// The request's answer.
    pub response: FundsResponse,
    /// The stack's currency.
    pub currency: Currency,
}

/// The answer's object with `currency` beside its key. Through a JSON value, not
/// `#[serde(flatten)]`: serde buffers a flattened field in a form without 128-bit integers, and
/// the books' sums are `i128`.
impl serde::Serialize for FundsAnswer {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let mut answer = serde_json::to_value(&self.response).map_err(S::Error::custom)?;
        if let Some(fields) = answer.as_object_mut() {
            fields.insert("currency".into(), serde_json::to_value(self.currency).map_err(S::Error::custom)?);
        }
        answer.serialize(serializer)
    }
}

/// The Lambda handler of entry point `entry`: a request the entry point does not take is
/// refused before anything is read (`InvalidFundsRequest`, naming the payload's key).
pub async fn handle<L: Wallets + Withdrawals + Adjustments + AuditTrail + Books + Holds + Flags, R: ReportSink>(
    ledger: &L,
    clock: &dyn Clock,
    reports: &R,
    entry: FundsEntry,
    event: LambdaEvent<Value>,
) -> Result<FundsAnswer, FundsFailure> {
    let request: FundsRequest = serde_json::from_value(event.payload).map_err(FundsFailure::InvalidRequest)?;
    entry.admits(&request).map_err(FundsError::Invalid)?;
    let response = carry_out(ledger, clock, reports, &request).await?;
    Ok(FundsAnswer { response, currency: ledger.currency() })
}

/// Carries out `request` ([`run`]) and records its figures as metrics: what both the payload
/// handler and the operators' API do with a typed request.
pub async fn carry_out<L, R>(
    ledger: &L,
    clock: &dyn Clock,
    reports: &R,
    request: &FundsRequest,
) -> Result<FundsResponse, FundsFailure>
where
    L: Wallets + Withdrawals + Adjustments + AuditTrail + Books + Holds + Flags,
    R: ReportSink,
{
    let response = run(ledger, clock, reports, request).await?;
    record(request, &response);
    Ok(response)
}

/// A completed request's figures as metrics: each top-up's outcome and credit, each
/// withdrawal's resolution (`Withdrawals`, by `outcome`), each adjustment step (`Adjustments`,
/// by `step`), each hold placed or lifted (`Holds`, by `step`), the differences and overdue withdrawals reconciliation found, and the heartbeat of each completed daily job (`FundsJobsCompleted`,
/// dimension `job`: the payload's key, `reconcile` or `trial_balance`). A job that fails or never
/// runs leaves no heartbeat, and the template's did-not-run alarms fire on its absence.
fn record(request: &FundsRequest, response: &FundsResponse) {
    match (request, response) {
        (FundsRequest::Topup(topup), FundsResponse::Topup(result)) => {
            let outcome = if result.applied { "applied" } else { "replayed" };
            metrics::counter!("Topups", "outcome" => outcome).increment(1);
            if result.applied {
                metrics::counter!("TopupCents").increment(topup.amount_cents);
            }
        }
        (FundsRequest::WithdrawalPaid(_) | FundsRequest::WithdrawalFailed(_), FundsResponse::Withdrawal(result)) => {
            let outcome = if result.applied { result.withdrawal.status.as_str() } else { "replayed" };
            metrics::counter!("Withdrawals", "outcome" => outcome).increment(1);
        }
        (FundsRequest::ProposeAdjustment(_), FundsResponse::Adjustment(_)) => {
            metrics::counter!("Adjustments", "step" => "proposed").increment(1);
        }
        (FundsRequest::ApproveAdjustment(_), FundsResponse::Adjustment(result)) => {
            metrics::counter!("Adjustments", "step" => if result.applied { "applied" } else { "replayed" })
                .increment(1);
        }
        (request, FundsResponse::Hold(result)) if result.changed => {
            metrics::counter!("Holds", "step" => request.key()).increment(1);
        }
        (_, FundsResponse::Reconcile(reconciliation)) => {
            metrics::gauge!("BooksDifferences").set(reconciliation.differences.len() as f64);
            metrics::gauge!("WithdrawalsOverdue").set(reconciliation.overdue_withdrawals.len() as f64);
            metrics::counter!("FundsJobsCompleted", "job" => "reconcile").increment(1);
        }
        (_, FundsResponse::TrialBalance { .. }) => {
            metrics::counter!("FundsJobsCompleted", "job" => "trial_balance").increment(1);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    //! What a failure says to the payments system, without a service; the handler on DynamoDB
    //! Local, with the sample events, is in `tests/on_the_ledger.rs`.

    use super::*;
    use red_packets::domain::wallet::TopUp;
    use red_packets::domain::UserId;
    use serde_json::json;

    #[test]
    fn the_callers_mistakes_and_the_ledgers_faults_have_their_own_error_types() {
        let diagnostic = |failure: FundsFailure| Diagnostic::from(failure);
        let not_json = serde_json::from_value::<FundsRequest>(json!({"withdraw": {}})).unwrap_err();
        assert_eq!(diagnostic(FundsFailure::InvalidRequest(not_json)).error_type, "InvalidFundsRequest");
        let topup = TopUp { user: UserId::from_claim("alice").unwrap(), amount_cents: 0, reference: "pay-0".into() };
        let refused = diagnostic(FundsError::Invalid(topup.validate().unwrap_err()).into());
        assert_eq!(refused.error_type, "InvalidFundsRequest");
        assert!(refused.error_message.starts_with("amount_cents:"), "{}", refused.error_message);
        let reused = diagnostic(FundsError::Store(StoreError::invalid("reference", "used for another amount")).into());
        assert_eq!(reused.error_type, "InvalidFundsRequest");
        assert!(reused.error_message.starts_with("reference:"), "{}", reused.error_message);
        let down = diagnostic(FundsError::Store(StoreError::dynamodb_unavailable("timed out")).into());
        assert_eq!(down.error_type, "StoreUnavailable");
        let corrupt = diagnostic(FundsError::Store(StoreError::Corrupt("a bad item".into())).into());
        assert_eq!(corrupt.error_type, "LedgerCorrupt", "not the caller's mistake, nor a retry's: page someone");
    }

    #[test]
    fn a_sum_of_the_books_past_its_type_is_the_ledgers_fault() {
        use red_packets::domain::books::BooksError;

        let overflow = BooksError::Overflow { subject: "packet:x".into(), item: "y".into(), sum: "paid" };
        let failure = Diagnostic::from(FundsFailure::from(FundsError::Store(overflow.into())));
        assert_eq!(failure.error_type, "LedgerCorrupt", "not the caller's mistake, nor a retry's: page someone");
        assert!(failure.error_message.ends_with("books: packet:x: paid overflows at y"), "{}", failure.error_message);
    }

    /// The only test of this process that installs the metrics recorder (it is global): each
    /// completed daily job beats its heartbeat, in the embedded metric format with the dimension
    /// `job`, the payload's key.
    #[test]
    fn each_completed_daily_job_beats_its_heartbeat_and_overdue_withdrawals_reach_their_alarm() {
        use red_packets::domain::books::Reconciliation;
        use red_packets::domain::statements::TrialBalance;
        use red_packets::funds::{DayReport, ReconcileOptions};

        let collector = red_packets::telemetry::metrics("funds").expect("the first recorder of this process");
        let books = Reconciliation::default();
        // Two withdrawals pending past a day: the gauge `WithdrawalsOverdueAlarm` watches.
        let overdue =
            Reconciliation { overdue_withdrawals: vec!["wd-1".into(), "wd-2".into()], ..Reconciliation::default() };
        record(&FundsRequest::Reconcile(ReconcileOptions::default()), &FundsResponse::Reconcile(overdue));
        let report = TrialBalance::new("2026-11-23", &books, &books, red_packets::domain::Currency::default());
        let trial_balance = FundsResponse::TrialBalance { report, written: Vec::new() };
        record(&FundsRequest::TrialBalance(DayReport::default()), &trial_balance);

        let documents = red_packets_testkit::telemetry::flushed(collector);
        let gauge = documents.iter().find(|document| document["WithdrawalsOverdue"].is_number());
        let gauge = gauge.unwrap_or_else(|| panic!("no WithdrawalsOverdue in {documents:?}"));
        assert_eq!(
            (gauge["WithdrawalsOverdue"].as_f64(), &gauge["Function"]),
            (Some(2.0), &serde_json::json!("funds"))
        );
        let template = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml")).unwrap();
        // The alarm's block: its lines up to the next resource (the next line indented two spaces).
        let after = template.split("\n  WithdrawalsOverdueAlarm:\n").nth(1).expect("the alarm is in the template");
        let alarm: Vec<&str> = after.lines().take_while(|line| line.is_empty() || line.starts_with("   ")).collect();
        let alarm = alarm.join("\n");
        assert!(alarm.contains("MetricName: WithdrawalsOverdue") && alarm.contains("Value: funds"), "{alarm}");
        for job in ["reconcile", "trial_balance"] {
            let beat = red_packets_testkit::telemetry::heartbeat(&documents, ("job", job), "FundsJobsCompleted");
            assert_eq!(beat["FundsJobsCompleted"].as_u64(), Some(1), "{beat}");
            assert_eq!(beat["Function"], "funds");
        }
    }
}
