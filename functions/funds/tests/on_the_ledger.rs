//! The funds handler on DynamoDB Local, with the sample events: a top-up applied once, the
//! books as of the daily cut-off, the sample statement and trial balance, and the caller's
//! mistakes (`make test` provides DynamoDB Local).

use funds::handle;
use lambda_runtime::{Diagnostic, LambdaEvent};
use red_packets::Clock;
use serde_json::Value;

use lambda_runtime::Context;
use red_packets::adapters::DynamoLedger;
use red_packets::domain::{Funds, PacketId};
use red_packets::funds::FundsEntry;
use red_packets::{Config, SystemClock};
use serde_json::json;

const TOPUP_EVENT: &str = include_str!("../../../events/topup.json");
const RECONCILE_EVENT: &str = include_str!("../../../events/reconcile.json");
const STATEMENT_EVENT: &str = include_str!("../../../events/statement.json");
const TRIAL_BALANCE_EVENT: &str = include_str!("../../../events/trial-balance.json");
const WITHDRAWAL_PAID_EVENT: &str = include_str!("../../../events/withdrawal-paid.json");
const WITHDRAWAL_FAILED_EVENT: &str = include_str!("../../../events/withdrawal-failed.json");
const PROPOSE_EVENT: &str = include_str!("../../../events/adjustment-propose.json");
const APPROVE_EVENT: &str = include_str!("../../../events/adjustment-approve.json");

async fn ledger() -> DynamoLedger {
    let mut config = Config::from_env().unwrap();
    config.funds = Funds::Wallet;
    config.table_name = format!("RedPackets-funds-{}", &PacketId::random().as_str()[..8]);
    let ledger = DynamoLedger::new(DynamoLedger::client_from_env().expect("a DynamoDB client"), &config);
    ledger.ensure_table().await.expect("DynamoDB Local (make test) is reachable");
    ledger
}

async fn call(ledger: &DynamoLedger, payload: Value) -> Result<Value, Diagnostic> {
    let event = LambdaEvent::new(payload, Context::default());
    let reports = red_packets::adapters::ReportDirectory::new(std::env::temp_dir().join("funds-handler-reports"));
    handle(ledger, &SystemClock, &reports, FundsEntry::All, event)
        .await
        .map(|response| serde_json::to_value(response).unwrap())
        .map_err(Diagnostic::from)
}

#[tokio::test]
async fn the_sample_top_up_applies_once_and_the_books_balance() {
    let ledger = ledger().await;
    let payload: Value = serde_json::from_str(TOPUP_EVENT).unwrap();
    let first = call(&ledger, payload.clone()).await.unwrap();
    assert_eq!(first["topup"], json!({"applied": true, "balance_cents": 50000}));
    let again = call(&ledger, payload.clone()).await.unwrap();
    assert_eq!(again["topup"], json!({"applied": false, "balance_cents": 50000}), "one reference, one credit");

    let mut reused = payload.clone();
    reused["topup"]["amount_cents"] = json!(1);
    let refused = call(&ledger, reused).await.unwrap_err();
    assert_eq!(refused.error_type, "InvalidFundsRequest");
    assert!(refused.error_message.starts_with("reference:"), "{}", refused.error_message);

    // The daily run's cut-off is behind the longest a write can take to land: the top-up
    // just applied is after it, on both sides (its record and its credit), so the books
    // balance without it.
    let reconciled = call(&ledger, serde_json::from_str(RECONCILE_EVENT).unwrap()).await.unwrap();
    assert_eq!(reconciled["reconcile"]["topups_cents"], json!(0), "{reconciled}");
    assert_eq!(reconciled["reconcile"]["balances_cents"], json!(0));
    assert_eq!(reconciled["reconcile"]["differences"], json!([]));
    let too_late = call(&ledger, json!({"reconcile": {"as_of": red_packets::clock::rfc3339(SystemClock.now_ms())}}));
    let refused = too_late.await.unwrap_err();
    assert!(refused.error_message.starts_with("as_of:"), "{}", refused.error_message);

    // The sample report requests: each written as JSON lines and CSV.
    let statement = call(&ledger, serde_json::from_str(STATEMENT_EVENT).unwrap()).await.unwrap();
    assert_eq!(statement["statement"]["report"]["user"], json!("alice"), "{statement}");
    assert_eq!(statement["statement"]["written"].as_array().map(Vec::len), Some(2), "{statement}");
    let trial = call(&ledger, serde_json::from_str(TRIAL_BALANCE_EVENT).unwrap()).await.unwrap();
    assert_eq!(trial["trial_balance"]["report"]["balanced"], json!(true), "{trial}");
    let not_a_day = call(&ledger, json!({"statement": {"user": "alice", "day": "yesterday"}})).await.unwrap_err();
    assert!(not_a_day.error_message.starts_with("day:"), "{}", not_a_day.error_message);
}

/// The sample payment system's word on a withdrawal, and the sample adjustment's two steps.
#[tokio::test]
async fn the_sample_withdrawal_resolutions_and_adjustment_apply_once() {
    use red_packets::domain::withdrawal::WithdrawalRequest;
    use red_packets::domain::UserId;
    use red_packets::ports::Withdrawals;

    let ledger = ledger().await;
    call(&ledger, serde_json::from_str(TOPUP_EVENT).unwrap()).await.unwrap();
    let paid: Value = serde_json::from_str(WITHDRAWAL_PAID_EVENT).unwrap();
    let id = paid["withdrawal_paid"]["withdrawal_id"].as_str().unwrap();
    let request = WithdrawalRequest { amount_cents: 2_000, destination: "card-7731".into() };
    let alice = UserId::from_claim("alice").unwrap();
    ledger.request_withdrawal(&alice, id, &request, SystemClock.now_ms()).await.unwrap();
    let first = call(&ledger, paid.clone()).await.unwrap();
    assert_eq!(first["withdrawal"]["applied"], json!(true), "{first}");
    assert_eq!(first["withdrawal"]["withdrawal"]["status"], json!("paid"));
    assert_eq!(call(&ledger, paid).await.unwrap()["withdrawal"]["applied"], json!(false), "delivered twice, paid once");
    let failed = call(&ledger, serde_json::from_str(WITHDRAWAL_FAILED_EVENT).unwrap()).await.unwrap_err();
    assert_eq!(failed.error_type, "InvalidFundsRequest");
    assert!(failed.error_message.starts_with("withdrawal_id: already paid"), "{}", failed.error_message);

    let proposed = call(&ledger, serde_json::from_str(PROPOSE_EVENT).unwrap()).await.unwrap();
    assert_eq!(proposed["adjustment"]["adjustment"]["status"], json!("proposed"), "{proposed}");
    let approved = call(&ledger, serde_json::from_str(APPROVE_EVENT).unwrap()).await.unwrap();
    assert_eq!(approved["adjustment"]["applied"], json!(true), "{approved}");
    assert_eq!(approved["adjustment"]["balance_cents"], json!(120), "bob made whole");
    let mut own: Value = serde_json::from_str(APPROVE_EVENT).unwrap();
    own["approve_adjustment"]["approver"] = proposed["adjustment"]["adjustment"]["proposer"].clone();
    let refused = call(&ledger, own).await.unwrap_err();
    assert!(refused.error_message.starts_with("approver:"), "{}", refused.error_message);
}

/// The payments system's entry point never takes an adjustment; the operators' never moves
/// money in or resolves a withdrawal: each is refused before the ledger is touched.
#[tokio::test]
async fn each_entry_point_refuses_the_other_callers_requests() {
    let ledger = ledger().await;
    let reports = red_packets::adapters::ReportDirectory::new(std::env::temp_dir().join("funds-handler-reports"));
    let at = |entry: FundsEntry, payload: &str| {
        let event = LambdaEvent::new(serde_json::from_str(payload).unwrap(), Context::default());
        let (ledger, reports) = (&ledger, &reports);
        async move { handle(ledger, &SystemClock, reports, entry, event).await.map_err(Diagnostic::from) }
    };
    let refused = at(FundsEntry::Payments, PROPOSE_EVENT).await.unwrap_err();
    assert_eq!(refused.error_type, "InvalidFundsRequest");
    assert!(
        refused.error_message.starts_with("propose_adjustment: not taken by this entry point (payments)"),
        "{}",
        refused.error_message
    );
    assert!(at(FundsEntry::Payments, APPROVE_EVENT).await.is_err());
    let refused = at(FundsEntry::Operator, TOPUP_EVENT).await.unwrap_err();
    assert!(
        refused.error_message.starts_with("topup: not taken by this entry point (operator)"),
        "{}",
        refused.error_message
    );
    assert!(at(FundsEntry::Operator, WITHDRAWAL_PAID_EVENT).await.is_err());
    assert_eq!(
        ledger.balance(&red_packets::domain::UserId::from_claim("alice").unwrap()).await.unwrap(),
        0,
        "nothing moved"
    );
    assert!(at(FundsEntry::Operator, PROPOSE_EVENT).await.is_ok(), "the operators' own request");
    assert!(at(FundsEntry::Payments, TOPUP_EVENT).await.is_ok(), "the payments system's own request");
}

#[tokio::test]
async fn bad_payloads_are_the_callers_mistake() {
    let ledger = ledger().await;
    for payload in [
        json!({"withdraw": {}}),
        json!({"topup": {"user": "alice", "amount_cents": 0, "reference": "pay-0"}}),
        json!({"topup": {"user": "alice", "amount_cents": 5, "reference": "pay 0"}}),
        json!(null),
    ] {
        let failure = call(&ledger, payload.clone()).await.unwrap_err();
        assert_eq!(failure.error_type, "InvalidFundsRequest", "{payload}");
    }
}

/// The only test of this process that installs the metrics recorder (it is global): every
/// DynamoDB call is counted, a refused condition apart from a ledger that does not answer.
#[tokio::test]
async fn every_dynamodb_call_is_counted_with_its_time_and_failures() {
    use red_packets::adapters::dynamo::client::{client, Connection};

    let collector = red_packets::telemetry::metrics("funds").expect("the first recorder of this process");
    let ledger = ledger().await;
    let payload: Value = serde_json::from_str(TOPUP_EVENT).unwrap();
    call(&ledger, payload.clone()).await.unwrap();
    call(&ledger, payload).await.unwrap();

    let mut nowhere = Connection::from_env();
    nowhere.endpoint_url = Some("http://127.0.0.1:1".into());
    let unreachable = DynamoLedger::new(client(&nowhere).unwrap(), &Config::from_env().unwrap());
    assert!(unreachable.ensure_table().await.is_err(), "nothing listens on port 1");

    let mut written = Vec::new();
    collector.flush(&mut written).unwrap();
    let documents: Vec<Value> =
        String::from_utf8(written).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let total = |metric: &str| documents.iter().filter_map(|document| document[metric].as_u64()).sum::<u64>();
    assert!(total("DynamoCalls") >= 4, "the table, two top-ups and the unreachable call: {documents:?}");
    assert!(total("DynamoErrors") >= 1, "the unreachable endpoint: {documents:?}");
    assert!(total("DynamoRefusals") >= 1, "the replayed top-up's refused condition: {documents:?}");
    assert!(documents.iter().any(|document| document["DynamoCallMilliseconds"].is_number()), "{documents:?}");
}
