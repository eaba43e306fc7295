//! The money side of operations: the payments system's top-ups and the reconciliation of the
//! whole ledger (invariants 8 and 9), as the `funds` function and `local topup` /
//! `local reconcile` run them.

use std::collections::HashSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::adapters::DynamoLedger;
use crate::clock::Clock;
use crate::domain::books::{reconcile_books, Reconciliation};
use crate::domain::wallet::{TopUp, TopUpResult};
use crate::error::ApiError;
use crate::ports::Books;
use crate::settle::RECONCILIATION_MISMATCH;

/// What the `funds` function is asked to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FundsRequest {
    /// Credit a user from the payments system, once per reference.
    Topup(TopUp),
    /// Check that the books balance (the daily schedule's payload is `{"reconcile": {}}`).
    Reconcile(ReconcileOptions),
}

/// Options of a reconciliation run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconcileOptions {}

/// What the `funds` function answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FundsResponse {
    /// The top-up's outcome.
    Topup(TopUpResult),
    /// What reconciliation found.
    Reconcile(Reconciliation),
}

/// How long reconciliation waits before it reads the ledger again to tell a lasting
/// difference from writes that were in flight during the first read.
pub const RECHECK_AFTER: Duration = Duration::from_secs(2);

/// Carries out `request` on `ledger`.
pub async fn run(ledger: &DynamoLedger, clock: &dyn Clock, request: &FundsRequest) -> Result<FundsResponse, ApiError> {
    match request {
        FundsRequest::Topup(topup) => {
            let result = ledger.top_up(topup, clock.now_ms()).await?;
            tracing::info!(user = %topup.user, amount_cents = topup.amount_cents, reference = %topup.reference, applied = result.applied, "top-up");
            Ok(FundsResponse::Topup(result))
        }
        FundsRequest::Reconcile(_) => Ok(FundsResponse::Reconcile(reconcile(ledger, RECHECK_AFTER).await?)),
    }
}

/// Reconciles the whole ledger. A scan is not a snapshot: a settle or a send writing while it
/// reads can make a wallet or a packet look off, so a first read with differences is followed,
/// after `recheck_after`, by a second, and only what differs in both is reported: each
/// difference logged at ERROR with [`RECONCILIATION_MISMATCH`] and its amounts (the metric
/// filter and alarm of `template.yaml` count them).
pub async fn reconcile<B: Books>(books: &B, recheck_after: Duration) -> Result<Reconciliation, ApiError> {
    let first = reconcile_books(&books.ledger_records().await?);
    let result = if first.balanced() {
        first
    } else {
        tokio::time::sleep(recheck_after).await;
        let earlier: HashSet<String> = first.differences.into_iter().map(|d| d.subject).collect();
        let mut second = reconcile_books(&books.ledger_records().await?);
        second.differences.retain(|difference| earlier.contains(&difference.subject));
        second
    };
    for difference in &result.differences {
        tracing::error!(marker = RECONCILIATION_MISMATCH, subject = %difference.subject, mismatch = %difference.what, "{RECONCILIATION_MISMATCH} {difference}");
    }
    tracing::info!(
        topups_cents = %result.topups_cents,
        balances_cents = %result.balances_cents,
        in_open_packets_cents = %result.in_open_packets_cents,
        differences = result.differences.len(),
        "reconciled"
    );
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_as_the_payments_system_and_the_schedule_send_them() {
        let topup: FundsRequest =
            serde_json::from_str(r#"{"topup": {"user": "alice", "amount_cents": 500, "reference": "pay-1"}}"#).unwrap();
        assert!(matches!(topup, FundsRequest::Topup(TopUp { amount_cents: 500, .. })));
        let reconcile: FundsRequest = serde_json::from_str(r#"{"reconcile": {}}"#).unwrap();
        assert_eq!(reconcile, FundsRequest::Reconcile(ReconcileOptions {}));
        assert!(serde_json::from_str::<FundsRequest>(r#"{"topup": {"user": "a", "amount_cents": 5}}"#).is_err());
        assert!(serde_json::from_str::<FundsRequest>(r#"{"withdraw": {}}"#).is_err());
    }
}
