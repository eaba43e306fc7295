//! Events from the ledger: DynamoDB Local's stream of a test's own table, read after a top-up,
//! a send, grabs, a cancel and settle runs (one of them repeated), passed through the events
//! Pipe of `template.yaml` as EventBridge would apply it (its filters, its input template):
//! exactly one event per movement and per lifecycle step, each with a distinct stable id, each
//! valid against its JSON Schema in `events/schemas/`.

mod support;

use std::collections::{BTreeMap, HashSet};

use aws_sdk_dynamodbstreams::types::{AttributeValue, ShardIteratorType};
use red_packets::domain::adjustment::{AdjustmentApproval, AdjustmentProposal, Direction};
use red_packets::domain::books::LedgerItem;
use red_packets::domain::wallet::TopUp;
use red_packets::domain::withdrawal::{WithdrawalResolution, WithdrawalStatus};
use red_packets::domain::{Funds, UserId};
use red_packets::ports::{Adjustments, Wallets, Withdrawals};
use red_packets::{Clock, Config};
use serde_json::{json, Map, Value};
use support::stack::Stack;

/// The events Pipe's filter patterns, input template and detail-type path, from template.yaml.
struct Pipe {
    patterns: Vec<Value>,
    input_template: String,
    detail_type_path: String,
}

fn pipe_of_template() -> Pipe {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml");
    let template: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let pipe = &template["Resources"]["EventsPipe"]["Properties"];
    let patterns = pipe["SourceParameters"]["FilterCriteria"]["Filters"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|filter| serde_json::from_str(filter["Pattern"].as_str().unwrap()).unwrap())
        .collect();
    // `!Sub [text, {Exponent: !FindInMap …}]`: the stack's currency, here the default's.
    let serde_yaml::Value::Tagged(sub) = &pipe["TargetParameters"]["InputTemplate"] else {
        panic!("the input template is a !Sub naming the stack's currency")
    };
    let text = sub.value[0].as_str().unwrap();
    let currency = red_packets::domain::Currency::default();
    let exponent = template["Mappings"]["Currencies"][currency.code()]["Exponent"].as_u64().unwrap();
    assert_eq!(exponent, u64::from(currency.exponent()));
    let input_template = text.replace("${Currency}", currency.code()).replace("${Exponent}", &exponent.to_string());
    Pipe {
        patterns,
        input_template,
        detail_type_path: pipe["TargetParameters"]["EventBridgeEventBusParameters"]["DetailType"]
            .as_str()
            .unwrap()
            .to_owned(),
    }
}

/// EventBridge's event-pattern matching, as far as the Pipe's filters use it: nested objects,
/// lists of allowed values, and `{"exists": bool}`.
fn matches(pattern: &Value, event: &Value) -> bool {
    match pattern {
        Value::Object(fields) => fields.iter().all(|(name, inner)| {
            let value = event.get(name);
            match inner {
                Value::Array(allowed) => allowed.iter().any(|allowed| match allowed {
                    Value::Object(rule) if rule.contains_key("exists") => {
                        rule["exists"].as_bool() == Some(value.is_some())
                    }
                    literal => value == Some(literal),
                }),
                nested => value.is_some_and(|value| matches(nested, value)),
            }
        }),
        _ => false,
    }
}

/// The value at a `$.a.b.c` path.
fn at_path<'a>(record: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches("$.").split('.').try_fold(record, |value, key| value.get(key))
}

/// The Pipe's input transformer: each `<$.path>` replaced by the string at that path.
fn transform(template: &str, record: &Value) -> Value {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("<$.") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('>').unwrap() + start;
        let value = at_path(record, &rest[start + 1..end]).and_then(Value::as_str).unwrap_or_default();
        out.push_str(&value.replace('\\', "\\\\").replace('"', "\\\""));
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    serde_json::from_str(&out).unwrap_or_else(|error| panic!("the input template builds JSON: {error}: {out}"))
}

/// A stream image in DynamoDB JSON, as the Pipe sees it.
fn dynamodb_json(value: &AttributeValue) -> Value {
    match value {
        AttributeValue::S(s) => json!({ "S": s }),
        AttributeValue::N(n) => json!({ "N": n }),
        AttributeValue::Bool(b) => json!({ "BOOL": b }),
        AttributeValue::Null(_) => json!({ "NULL": true }),
        AttributeValue::M(map) => json!({ "M": image(map) }),
        AttributeValue::L(list) => json!({ "L": list.iter().map(dynamodb_json).collect::<Vec<_>>() }),
        AttributeValue::Ss(strings) => json!({ "SS": strings }),
        AttributeValue::Ns(numbers) => json!({ "NS": numbers }),
        other => json!({ "unsupported": format!("{other:?}") }),
    }
}

fn image(map: &std::collections::HashMap<String, AttributeValue>) -> Value {
    Value::Object(map.iter().map(|(name, value)| (name.clone(), dynamodb_json(value))).collect::<Map<_, _>>())
}

/// Every record of the table's stream so far, as the Pipe receives them.
async fn stream_records(stack: &Stack) -> Vec<Value> {
    let dynamodb = red_packets::adapters::DynamoLedger::client_from_env().unwrap();
    let table = dynamodb.describe_table().table_name(&stack.config.table_name).send().await.unwrap();
    let stream_arn = table.table.unwrap().latest_stream_arn.expect("the table has a stream");
    let endpoint = std::env::var("AWS_ENDPOINT_URL_DYNAMODB").expect("DynamoDB Local's endpoint");
    let config = aws_sdk_dynamodbstreams::Config::builder()
        .behavior_version_latest()
        .endpoint_url(endpoint)
        .region(aws_sdk_dynamodbstreams::config::Region::new("us-east-1"))
        .credentials_provider(aws_sdk_dynamodbstreams::config::Credentials::new("local", "local", None, None, "test"))
        .build();
    let streams = aws_sdk_dynamodbstreams::Client::from_conf(config);
    let description = streams.describe_stream().stream_arn(&stream_arn).send().await.unwrap();
    let mut records = Vec::new();
    for shard in description.stream_description.unwrap().shards.unwrap_or_default() {
        let mut iterator = streams
            .get_shard_iterator()
            .stream_arn(&stream_arn)
            .shard_id(shard.shard_id.unwrap())
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            .send()
            .await
            .unwrap()
            .shard_iterator;
        for _ in 0..100 {
            let Some(current) = iterator.take() else { break };
            let page = streams.get_records().shard_iterator(current).send().await.unwrap();
            let batch = page.records.unwrap_or_default();
            if batch.is_empty() {
                break;
            }
            for record in batch {
                let change = record.dynamodb.unwrap();
                let mut dynamodb = Map::new();
                if let Some(new) = &change.new_image {
                    dynamodb.insert("NewImage".into(), image(new));
                }
                if let Some(old) = &change.old_image {
                    dynamodb.insert("OldImage".into(), image(old));
                }
                records.push(json!({
                    "eventID": record.event_id,
                    "eventName": record.event_name.unwrap().as_str(),
                    "dynamodb": dynamodb,
                }));
            }
            iterator = page.next_shard_iterator;
        }
    }
    records
}

fn schema(event_type: &str) -> jsonschema::Validator {
    let path = format!("{}/../events/schemas/{event_type}.json", env!("CARGO_MANIFEST_DIR"));
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("a schema per event type")).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

#[tokio::test]
async fn the_ledger_stream_publishes_one_valid_event_per_movement_and_lifecycle_step() {
    let mut config = Config::from_env().expect("configuration");
    config.funds = Funds::Wallet;
    let stack = Stack::with_config("events", config).await;
    // The stream of template.yaml's table (local tables have none: it slows DynamoDB Local).
    let view = aws_sdk_dynamodb::types::StreamSpecification::builder()
        .stream_enabled(true)
        .stream_view_type(aws_sdk_dynamodb::types::StreamViewType::NewAndOldImages)
        .build()
        .unwrap();
    red_packets::adapters::DynamoLedger::client_from_env()
        .unwrap()
        .update_table()
        .table_name(&stack.config.table_name)
        .stream_specification(view)
        .send()
        .await
        .expect("DynamoDB Local enables the stream");
    let alice = UserId::from_claim("alice").unwrap();
    let topup = TopUp { user: alice.clone(), amount_cents: 1_000, reference: "pay-events-1".into() };
    assert!(stack.ledger.top_up(&topup, stack.clock.now_ms()).await.unwrap().applied);
    assert!(!stack.ledger.top_up(&topup, stack.clock.now_ms()).await.unwrap().applied, "a redelivered top-up");
    let finished = stack.send("alice", json!({ "total_cents": 200, "count": 2 })).await;
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

    let pipe = pipe_of_template();
    let records = stream_records(&stack).await;
    let published: Vec<(String, Value)> = records
        .iter()
        .filter(|record| pipe.patterns.iter().any(|pattern| matches(pattern, record)))
        .map(|record| {
            let detail_type = at_path(record, &pipe.detail_type_path).and_then(Value::as_str).unwrap().to_owned();
            (detail_type, transform(&pipe.input_template, record))
        })
        .collect();

    let mut by_type: BTreeMap<&str, usize> = BTreeMap::new();
    let mut ids = HashSet::new();
    for (detail_type, detail) in &published {
        *by_type.entry(detail_type.as_str()).or_default() += 1;
        assert_eq!(detail["type"], detail_type.as_str());
        assert!(ids.insert(detail["event_id"].as_str().unwrap().to_owned()), "event ids are distinct: {detail}");
        let validator = schema(detail_type);
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
    let topped_up = published.iter().find(|(_, detail)| detail["reference"] == "pay-events-1").unwrap();
    assert_eq!(topped_up.0, "WalletCredited", "a top-up's credit names its reference");
}
