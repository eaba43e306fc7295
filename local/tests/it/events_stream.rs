//! Events from the ledger: DynamoDB Local's stream of a test's own table, read after a top-up,
//! a send, grabs, a cancel and settle runs (one of them repeated), passed through the events
//! Pipe of `template.yaml` as EventBridge would apply it (its filters, its input template):
//! exactly one event per movement and per lifecycle step, each with a distinct stable id, each
//! valid against its JSON Schema in `events/schemas/`, a packet's naming its chat.

use std::collections::{BTreeMap, HashSet};

use crate::support::stack::Stack;
use local::pipe::{Pipe, StreamReader};
use red_packets::domain::adjustment::{AdjustmentApproval, AdjustmentProposal, Direction};
use red_packets::domain::books::LedgerItem;
use red_packets::domain::wallet::TopUp;
use red_packets::domain::withdrawal::{WithdrawalResolution, WithdrawalStatus};
use red_packets::domain::{Funds, UserId};
use red_packets::ports::{Adjustments, Wallets, Withdrawals};
use red_packets::{Clock, Config};
use serde_json::{json, Value};

#[tokio::test]
async fn the_ledger_stream_publishes_one_valid_event_per_movement_and_lifecycle_step() {
    let mut config = Config::from_env().expect("configuration");
    config.funds = Funds::Wallet;
    let stack = Stack::with_config("events", config).await;
    // The stream of template.yaml's table (local tables have none: it slows DynamoDB Local).
    let dynamodb = red_packets::adapters::DynamoLedger::client_from_env().unwrap();
    let mut stream = StreamReader::enable(&dynamodb, &stack.config.table_name).await.expect("the stream");
    let alice = UserId::from_claim("alice").unwrap();
    let topup = TopUp { user: alice.clone(), amount_cents: 1_000, reference: "pay-events-1".into() };
    assert!(stack.ledger.top_up(&topup, stack.clock.now_ms()).await.unwrap().applied);
    assert!(!stack.ledger.top_up(&topup, stack.clock.now_ms()).await.unwrap().applied, "a redelivered top-up");
    let finished = stack.send("alice", json!({ "total_cents": 200, "count": 2, "chat_id": "family" })).await;
    let cancelled = stack.send("alice", json!({ "total_cents": 300, "count": 3 })).await;
    let mut last_share = 0;
    for (id, user) in [(&finished, "bob"), (&finished, "carol"), (&cancelled, "bob")] {
        let (status, grab) = stack.grab(id, user).await;
        assert_eq!(status, 200);
        last_share = grab["amount_cents"].as_u64().unwrap();
    }
    assert_eq!(stack.cancel(&cancelled, "alice").await.0, 200);
    stack.settle().await;
    stack.settle().await;
    // Money out: two withdrawals (one paid, one failed: its money returned), each resolution
    // delivered twice; and an adjustment approved by a second operator.
    let mut withdrawals = Vec::new();
    for key in ["events-out-1", "events-out-2"] {
        let (status, receipt) =
            stack.withdraw("alice", &json!({ "amount_cents": 50, "destination": "card-1" }), key).await;
        assert_eq!(status, 201, "{receipt}");
        withdrawals.push(receipt["withdrawal_id"].as_str().unwrap().to_owned());
    }
    for _ in 0..2 {
        for (id, outcome) in withdrawals.iter().zip([WithdrawalStatus::Paid, WithdrawalStatus::Failed]) {
            let resolution = WithdrawalResolution { withdrawal_id: id.clone(), reference: format!("po-{id}") };
            stack.ledger.resolve_withdrawal(&resolution, outcome, stack.clock.now_ms()).await.unwrap();
        }
    }
    let proposal = AdjustmentProposal {
        reference: "events-case-1".into(),
        user: alice.clone(),
        direction: Direction::Credit,
        amount_cents: 7,
        reason: "a revoked grab made whole".into(),
        proposer: "anna".into(),
        chargeback_of: None,
    };
    stack.ledger.propose_adjustment(&proposal, stack.clock.now_ms()).await.unwrap();
    let approval = AdjustmentApproval { reference: "events-case-1".into(), approver: "ben".into() };
    for _ in 0..2 {
        stack.ledger.approve_adjustment(&approval, stack.clock.now_ms()).await.unwrap();
    }

    let pipe = Pipe::of_template();
    let records = stream.read_new().await.expect("the stream's records");
    let published: Vec<(String, Value)> = records.iter().filter_map(|record| pipe.publish(record)).collect();

    let mut by_type: BTreeMap<&str, usize> = BTreeMap::new();
    let mut ids = HashSet::new();
    for (detail_type, detail) in &published {
        *by_type.entry(detail_type.as_str()).or_default() += 1;
        assert_eq!(detail["type"], detail_type.as_str());
        assert!(ids.insert(detail["event_id"].as_str().unwrap().to_owned()), "event ids are distinct: {detail}");
        let validator = crate::support::event_schema(detail_type);
        let errors: Vec<String> = validator.iter_errors(detail).map(|error| error.to_string()).collect();
        assert!(errors.is_empty(), "{detail_type} {detail}: {errors:?}");
    }
    let expected = BTreeMap::from([
        ("PacketSent", 2),
        ("WalletDebited", 2 + 2), // two sends, two withdrawals
        // Each grab's credit is its record: one GrabRecorded, no WalletCredited of its own.
        ("GrabRecorded", 3),
        // The top-up, the cancelled packet's refund, the failed withdrawal's return, the adjustment.
        ("WalletCredited", 1 + 1 + 1 + 1),
        ("PacketFinished", 1),
        ("PacketCancelled", 1),
        ("PacketRefunded", 1),
        ("WithdrawalRequested", 2),
        ("WithdrawalPaid", 1),
        ("WithdrawalFailed", 1),
    ]);
    assert_eq!(by_type, expected, "one event per movement and per lifecycle step, from {} records", records.len());
    let items = stack.ledger.books_items().await.unwrap();
    let movements = items.iter().filter(|item| matches!(item, LedgerItem::Movement(_))).count();
    let moved = by_type["WalletCredited"] + by_type["WalletDebited"] + by_type["GrabRecorded"];
    assert_eq!(moved, movements, "exactly one event per movement");

    let refund = published.iter().find(|(t, _)| t == "PacketRefunded").unwrap();
    assert_eq!(refund.1["amount_cents"], (300 - last_share).to_string(), "what was left of the cancelled packet");
    let cancel = published.iter().find(|(t, _)| t == "PacketCancelled").unwrap();
    assert_eq!(cancel.1["packet_id"], cancelled.as_str());
    let paid = published.iter().find(|(t, _)| t == "WithdrawalPaid").unwrap();
    assert_eq!((&paid.1["reference"], &paid.1["amount_cents"]), (&json!(withdrawals[0]), &json!("50")));
    let adjusted = published.iter().find(|(_, detail)| detail["reference"] == "events-case-1").unwrap();
    assert_eq!((adjusted.1["proposed_by"].as_str(), adjusted.1["approved_by"].as_str()), (Some("anna"), Some("ben")));
    for (_, detail) in &published {
        assert_eq!(
            detail["currency"],
            json!({"code": "CNY", "exponent": 2}),
            "every event names the currency: {detail}"
        );
    }
    for (detail_type, detail) in &published {
        let in_chat = if detail["packet_id"] == finished.as_str() { "family" } else { "" };
        assert_eq!(detail["chat_id"], in_chat, "a packet's events name its chat, others none: {detail_type} {detail}");
    }
    let in_chat = published.iter().filter(|(_, detail)| detail["chat_id"] == "family").count();
    assert_eq!(in_chat, 1 + 1 + 2 + 1, "the chat's packet: sent, its debit, two grabs, finished");
    let topped_up = published.iter().find(|(_, detail)| detail["reference"] == "pay-events-1").unwrap();
    assert_eq!(topped_up.0, "WalletCredited", "a top-up's credit names its reference");
}

/// An overdue withdrawal's order sent again is published again: the same `WithdrawalRequested`
/// event, its same id (a redelivery the payments system applies at most once per withdrawal);
/// the hour's second resend publishes nothing.
#[tokio::test]
async fn a_resent_withdrawal_publishes_its_own_event_again_once_an_hour() {
    use red_packets::domain::audit::Attribution;
    use red_packets::domain::withdrawal::{WithdrawalRequest, OVERDUE_AFTER_MS};
    let mut config = Config::from_env().expect("configuration");
    config.funds = Funds::Wallet;
    let stack = Stack::with_config("resend", config).await;
    let dynamodb = red_packets::adapters::DynamoLedger::client_from_env().unwrap();
    let mut stream = StreamReader::enable(&dynamodb, &stack.config.table_name).await.expect("the stream");
    let dora = UserId::from_claim("dora").unwrap();
    let topup = TopUp { user: dora.clone(), amount_cents: 500, reference: "pay-resend-1".into() };
    assert!(stack.ledger.top_up(&topup, stack.clock.now_ms()).await.unwrap().applied);
    let id = format!("wd-{}", "7".repeat(32));
    let request = WithdrawalRequest { amount_cents: 300, destination: "card-1".into() };
    let day_ago = stack.clock.now_ms() - OVERDUE_AFTER_MS - 60_000;
    stack.ledger.request_withdrawal(&dora, &id, &request, day_ago).await.unwrap();
    let by = Attribution { operator: "fay".into(), reason: "no word for a day".into() };
    let first = stack.ledger.resend_withdrawal(&id, &by, stack.clock.now_ms()).await.unwrap();
    let second = stack.ledger.resend_withdrawal(&id, &by, stack.clock.now_ms()).await.unwrap();
    assert_eq!((first.changed, second.changed), (true, second.slot != first.slot), "once an hour");

    let pipe = Pipe::of_template();
    let records = stream.read_new().await.expect("the stream's records");
    let requested: Vec<Value> = records
        .iter()
        .filter_map(|record| pipe.publish(record))
        .filter(|(detail_type, _)| detail_type == "WithdrawalRequested")
        .map(|(_, detail)| detail)
        .collect();
    assert_eq!(requested.len(), if second.changed { 3 } else { 2 }, "requested, then sent again: {requested:?}");
    assert!(requested.iter().all(|detail| detail == &requested[0]), "the same event each time: {requested:?}");
    assert_eq!(
        (requested[0]["reference"].as_str(), requested[0]["amount_cents"].as_str()),
        (Some(id.as_str()), Some("300"))
    );
    let balance = stack.ledger.balance(&dora).await.unwrap();
    assert_eq!(balance, 200, "no money moved");
}
