//! The funds handler on DynamoDB Local, with the sample events: a top-up applied once, the
//! books as of the daily cut-off, the sample statement and trial balance, and the caller's
//! mistakes (`make test` provides DynamoDB Local).

use funds::handle;
use funds::ops_api::{handle_api, OpsApi};
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

    // The sample adjustment through the operators' API: proposed by anna's verified token,
    // approved by ben's; anna's own approval refused, whatever the body says.
    let proposed = operator(&ledger, PROPOSE_EVENT, None).await;
    assert_eq!(proposed.0, 200, "{}", proposed.1);
    assert_eq!(proposed.1["adjustment"]["status"], json!("proposed"));
    assert_eq!(proposed.1["adjustment"]["proposer"], json!("anna@example.com"), "the token's subject");
    let own = operator(&ledger, APPROVE_EVENT, Some(("anna@example.com", "[support finance]"))).await;
    assert_eq!((own.0, own.1["error"]["field"].as_str()), (400, Some("approver")), "{}", own.1);
    let approved = operator(&ledger, APPROVE_EVENT, None).await;
    assert_eq!(approved.0, 200, "{}", approved.1);
    assert_eq!(approved.1["applied"], json!(true));
    assert_eq!(approved.1["balance_cents"], json!(120), "bob made whole");
    assert_eq!(approved.1["adjustment"]["approver"], json!("ben@example.com"));
}

/// The operators' API (the operator binary's handler) on `event` (a sample), by another operator
/// (`sub`, roles claim) when given.
async fn operator(ledger: &DynamoLedger, event: &str, by: Option<(&str, &str)>) -> (u16, Value) {
    let mut event: Value = serde_json::from_str(event).unwrap();
    if let Some((sub, roles)) = by {
        event["requestContext"]["authorizer"]["jwt"]["claims"] = json!({ "sub": sub, "cognito:groups": roles });
    }
    let config = Config::from_env().unwrap();
    let reports = red_packets::adapters::ReportDirectory::new(std::env::temp_dir().join("funds-handler-reports"));
    let live = red_packets::adapters::RedisStore::new(&config);
    let api = OpsApi { ledger, live: &live, reports: &reports, roles_claim: "cognito:groups" };
    let request = red_packets_testkit::events::to_request(&event).unwrap();
    let response = handle_api(&api, &SystemClock, &request).await;
    (response.status().as_u16(), serde_json::from_slice(response.body().as_ref()).unwrap())
}

/// The operators' API takes its operator from the verified token alone: none is a 401, a body
/// naming a proposer a 400 naming it, a role the route does not take a 403 naming the roles it
/// does, and a route key it does not have a 404.
#[tokio::test]
async fn the_operators_api_takes_its_operator_from_the_token_alone() {
    let ledger = ledger().await;
    let mut unsigned: Value = serde_json::from_str(PROPOSE_EVENT).unwrap();
    unsigned["requestContext"]["authorizer"] = json!(null);
    let (status, body) = operator(&ledger, &unsigned.to_string(), None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (401, Some("unauthorized")), "{body}");
    let mut forged: Value = serde_json::from_str(PROPOSE_EVENT).unwrap();
    let mut proposal: Value = serde_json::from_str(forged["body"].as_str().unwrap()).unwrap();
    proposal["proposer"] = json!("ben@example.com");
    red_packets_testkit::events::set_body(&mut forged, &proposal.to_string());
    let (status, body) = operator(&ledger, &forged.to_string(), None).await;
    assert_eq!((status, body["error"]["field"].as_str()), (400, Some("proposer")), "{body}");
    let (status, body) = operator(&ledger, APPROVE_EVENT, Some(("sam@example.com", "[support]"))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (403, Some("forbidden")), "{body}");
    assert_eq!(body["error"]["roles"], json!(["finance", "admin"]), "{body}");
    let mut elsewhere: Value = serde_json::from_str(APPROVE_EVENT).unwrap();
    red_packets_testkit::events::set_route(&mut elsewhere, "POST /packets", &[]);
    let (status, body) = operator(&ledger, &elsewhere.to_string(), None).await;
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("not_found")), "{body}");
}

/// The payments system's entry point never takes an adjustment, nor the operators' requests a
/// top-up or a withdrawal's word: each is refused before the ledger is touched.
#[tokio::test]
async fn each_entry_point_refuses_the_other_callers_requests() {
    let ledger = ledger().await;
    let reports = red_packets::adapters::ReportDirectory::new(std::env::temp_dir().join("funds-handler-reports"));
    let at = |entry: FundsEntry, payload: Value| {
        let event = LambdaEvent::new(payload, Context::default());
        let (ledger, reports) = (&ledger, &reports);
        async move { handle(ledger, &SystemClock, reports, entry, event).await.map_err(Diagnostic::from) }
    };
    let proposal = json!({ "propose_adjustment": {
        "reference": "entry-1", "user": "bob", "direction": "credit", "amount_cents": 1, "reason": "r", "proposer": "anna" } });
    let refused = at(FundsEntry::Payments, proposal.clone()).await.unwrap_err();
    assert_eq!(refused.error_type, "InvalidFundsRequest");
    assert!(
        refused.error_message.starts_with("propose_adjustment: not taken by this entry point (payments)"),
        "{}",
        refused.error_message
    );
    let refused = at(FundsEntry::Operator, serde_json::from_str(TOPUP_EVENT).unwrap()).await.unwrap_err();
    assert!(
        refused.error_message.starts_with("topup: not taken by this entry point (operator)"),
        "{}",
        refused.error_message
    );
    assert!(at(FundsEntry::Operator, serde_json::from_str(WITHDRAWAL_PAID_EVENT).unwrap()).await.is_err());
    assert_eq!(
        ledger.balance(&red_packets::domain::UserId::from_claim("alice").unwrap()).await.unwrap(),
        0,
        "nothing moved"
    );
    assert!(at(FundsEntry::Operator, proposal).await.is_ok(), "the operators' own request");
    assert!(
        at(FundsEntry::Payments, serde_json::from_str(TOPUP_EVENT).unwrap()).await.is_ok(),
        "the payments system's own"
    );
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
