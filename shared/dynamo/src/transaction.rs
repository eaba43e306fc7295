//! The ledger's transactions with every item named ([`Write`]), so that a cancellation is read
//! by what refused it, never by where that item happened to sit in the list.

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{CancellationReason, TransactWriteItem};

use super::client;
use super::table::DynamoLedger;
use red_packets_core::ports::{StoreError, WRITES_LAND_WITHIN};

/// How many times a transaction cancelled only by a concurrent transaction on one of its items
/// (`TransactionConflict`: a sender's daily counter, a hot wallet) is tried.
const CONFLICT_ATTEMPTS: u32 = 8;

/// What reconciliation allows for the difference between two hosts' clocks.
const CLOCK_ALLOWANCE_SECS: u64 = 10;

// The ledger's promise that reconciliation relies on ([`WRITES_LAND_WITHIN`]): every attempt of
// [`CONFLICT_ATTEMPTS`] is bounded by the client's operation timeout ([`client::OPERATION_TIMEOUT`],
// itself covering the SDK's own retry), plus the pauses between them (under 50 ms each), plus a
// margin for the clocks of the writers and of reconciliation (Lambda's are kept by the Amazon
// Time Sync Service).
const _: () = assert!(
    client::OPERATION_TIMEOUT.as_secs() * CONFLICT_ATTEMPTS as u64 + 1 + CLOCK_ALLOWANCE_SECS
        <= WRITES_LAND_WITHIN.as_secs()
);

/// What an item of a ledger transaction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Write {
    /// A sender's daily counter (the limits are its condition).
    DailyCounter,
    /// A send's idempotency claim.
    IdempotencyClaim,
    /// A packet's own item (new, or finalised under the condition that it is open).
    Packet,
    /// A wallet's balance (a debit's condition is that it covers the amount).
    Balance,
    /// A wallet movement, new only: a grab's credit, a refund's, a top-up's, a send's debit, …
    Movement,
    /// A withdrawal's debit movement taking its resolution's state (it must exist).
    DebitState,
    /// A top-up's record, one per payment reference (a chargeback marks it, once).
    Topup,
    /// A withdrawal (new for its id; resolved only while pending).
    Withdrawal,
    /// An overdue withdrawal's order sent again (new only: once an hour).
    Resent,
    /// An adjustment (new for its reference; applied only while proposed, by another operator).
    Adjustment,
    /// An entry of the audit trail (unconditional: the action's own item makes it once).
    Audit,
    /// A packet's refund item.
    Refund,
    /// An account hold (placed unless the same is in force; lifted only while in force).
    Hold,
    /// The holds' version (unconditional: the hold's own condition makes the step once).
    HoldsVersion,
    /// A risk flag (resolved only while open).
    Flag,
    /// A casualty of a failover (new only).
    Casualty,
    /// The mark of an event the hourly view counted (new only: an event counts once).
    CountedMark,
    /// An hour's figures in the hourly view (unconditional: the mark's condition makes it once).
    HourFigures,
}

/// A transaction being built: its items, each named.
#[derive(Debug, Clone, Default)]
pub(super) struct Transaction {
    items: Vec<(Write, TransactWriteItem)>,
}

impl Transaction {
    /// Adds `item`, named `write`.
    pub(super) fn push(&mut self, write: Write, item: TransactWriteItem) {
        self.items.push((write, item));
    }

    /// The items, in order, as DynamoDB takes them.
    fn items(&self) -> Vec<TransactWriteItem> {
        self.items.iter().map(|(_, item)| item.clone()).collect()
    }
}

impl Extend<(Write, TransactWriteItem)> for Transaction {
    fn extend<I: IntoIterator<Item = (Write, TransactWriteItem)>>(&mut self, items: I) {
        self.items.extend(items);
    }
}

impl FromIterator<(Write, TransactWriteItem)> for Transaction {
    fn from_iter<I: IntoIterator<Item = (Write, TransactWriteItem)>>(items: I) -> Self {
        Transaction { items: items.into_iter().collect() }
    }
}

/// A transaction that failed: DynamoDB's error, and the names of its items.
#[derive(Debug)]
pub(super) struct Failed {
    /// DynamoDB's error.
    pub(super) error: SdkError<TransactWriteItemsError, HttpResponse>,
    names: Vec<Write>,
}

impl Failed {
    /// Why DynamoDB cancelled it, one reason per item; `None` for any other failure.
    fn reasons(&self) -> Option<&[CancellationReason]> {
        cancellation_reasons(&self.error)
    }

    /// True when DynamoDB cancelled it (a condition, a conflict), rather than failing to answer.
    pub(super) fn cancelled(&self) -> bool {
        self.reasons().is_some()
    }

    /// True when a condition of any of its items refused it.
    pub(super) fn condition_failed(&self) -> bool {
        self.reasons().is_some_and(|reasons| reasons.iter().any(is_condition))
    }

    /// The reason of the first item named `write` whose condition refused it (carrying the
    /// item as it was, when the item asked for it).
    pub(super) fn refused_by(&self, write: Write) -> Option<&CancellationReason> {
        let reasons = self.reasons()?;
        self.names.iter().zip(reasons).find(|(name, reason)| **name == write && is_condition(reason)).map(|(_, r)| r)
    }
}

/// Why a cancelled transaction was cancelled, one reason per item in order; `None` for any
/// other error.
fn cancellation_reasons<R>(error: &SdkError<TransactWriteItemsError, R>) -> Option<&[CancellationReason]> {
    match error.as_service_error() {
        Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) => {
            Some(cancelled.cancellation_reasons())
        }
        _ => None,
    }
}

fn is_condition(reason: &CancellationReason) -> bool {
    reason.code() == Some("ConditionalCheckFailed")
}

impl DynamoLedger {
    /// Runs a transaction, trying it again (after a short, growing, jittered pause) while it is
    /// cancelled only because a concurrent transaction held one of its items; a failed
    /// condition or any other error is returned at once, as `Ok(Err(failed))`. `Err` only when
    /// the ledger has no client to send it with.
    pub(super) async fn transact(&self, transaction: Transaction) -> Result<Result<(), Failed>, StoreError> {
        let client = self.client()?;
        let items = transaction.items();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let written = client.transact_write_items().set_transact_items(Some(items.clone())).send().await;
            let Err(error) = written else { return Ok(Ok(())) };
            let conflict_only = cancellation_reasons(&error).is_some_and(|reasons| {
                !reasons.iter().any(is_condition)
                    && reasons.iter().any(|reason| reason.code() == Some("TransactionConflict"))
            });
            if !conflict_only || attempt >= CONFLICT_ATTEMPTS {
                return Ok(Err(Failed { error, names: transaction.items.iter().map(|(name, _)| *name).collect() }));
            }
            let pause = 5 * u64::from(attempt) + rand::random_range(0..10);
            tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
        }
    }
}
