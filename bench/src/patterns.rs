//! What pattern detection costs (`make bench-controls`, beside the grab path's controls): chats
//! of ordinary traffic sent, grabbed and settled through the real handlers, the ledger's events
//! read from DynamoDB Local's stream through template.yaml's Pipe and the risk rule's pattern,
//! each delivered to the risk function's handler in turn. Per event type: the handler's time
//! (against DynamoDB Local on this machine, not AWS) and the write units it sent, counted from its
//! requests ([`WriteUnitMeter`]: an update at one unit, as the meter counts it).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use lambda_http::Request;
use local::pipe::{bus_event, rule_detail_types, Pipe, StreamReader};
use local::write_meter::WriteUnitMeter;
use local::LocalAuthorizer;
use red_packets::adapters::DynamoLedger;
use red_packets::domain::patterns::RiskRules;
use red_packets::domain::Funds;
use red_packets::{Config, SystemClock};
use red_packets_testkit::events;
use serde::Serialize;
use serde_json::{json, Value};

use crate::stats::{summarize, RunStats};

const SEND_EVENT: &str = include_str!("../../events/send.json");

/// Chats, packets a chat, members a chat, shares a packet.
const CHATS: usize = 20;
const PACKETS_PER_CHAT: usize = 10;
const MEMBERS: usize = 8;
const SHARES: usize = 5;

/// One event type's cost to the risk function.
#[derive(Debug, Clone, Serialize)]
pub struct EventCost {
    /// `PacketSent`, `GrabRecorded` or `PacketFinished`.
    pub detail_type: String,
    /// The handler's time per event.
    #[serde(flatten)]
    pub stats: RunStats,
    /// Write units the handler sent per event.
    pub write_units_per_event: f64,
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct PatternsRun {
    /// Chats, packets, grabs.
    pub chats: usize,
    pub packets: usize,
    pub grabs: usize,
    /// Flags the ordinary traffic raised under the default rules (all false positives), by rule.
    pub flags: BTreeMap<&'static str, usize>,
    /// The same traffic's chain flags with chains of three handoffs instead of the default's.
    pub chain_flags_at_three_links: usize,
    /// Each event type the rule delivers, under the default rules.
    pub events: Vec<EventCost>,
}

/// The default rules' run, and the chain flags of the same traffic at three links.
pub async fn measure(config: &Config) -> PatternsRun {
    let mut run = measure_with(config, RiskRules::default()).await;
    let three = measure_with(config, RiskRules { chain_links: 3, ..RiskRules::default() }).await;
    run.chain_flags_at_three_links = three.flags.get("chain").copied().unwrap_or(0);
    run
}

fn send_request(sender: &str, chat: &str, key: &str) -> Request {
    let mut event: Value = serde_json::from_str(SEND_EVENT).expect("send.json");
    events::set_header(&mut event, "Idempotency-Key", Some(key));
    events::set_caller(&mut event, Some(sender));
    events::set_body(&mut event, &json!({ "total_cents": 500, "count": SHARES, "chat_id": chat }).to_string());
    events::to_request(&event).expect("event")
}

/// Ordinary traffic in [`CHATS`] chats, then every event through the risk function under `rules`.
/// Each chat's eight members take turns sending 5.00 in five shares, the next five members
/// grabbing: the next sender grabbed first, least or most lucky by chance (one in five each).
async fn measure_with(config: &Config, rules: RiskRules) -> PatternsRun {
    let mut config = config.clone();
    config.funds = Funds::None;
    config.risk_rules = rules;
    let run = format!("{}-{}", std::process::id(), rules.chain_links);
    config.table_name = format!("{}-patterns-{run}", config.table_name);
    config.redis.key_prefix = format!("bench-patterns-{run}");
    let functions = local::functions(&config, LocalAuthorizer::new("bench")).await.expect("the stack's services");
    let client = DynamoLedger::client_from_env().expect("a DynamoDB client");
    let mut stream = StreamReader::enable(&client, &config.table_name).await.expect("the table's stream");
    let meter = WriteUnitMeter::default();
    let watch = risk::Watch::new(DynamoLedger::new(meter.install(&client), &config), &config, SystemClock);

    let mut grabs = 0;
    for chat in 0..CHATS {
        let members: Vec<String> = (0..MEMBERS).map(|member| format!("chat{chat}-member{member}")).collect();
        for packet in 0..PACKETS_PER_CHAT {
            let sender = &members[packet % MEMBERS];
            let key = format!("patterns-{chat}-{packet}");
            let sent = send::handle(&functions.send, send_request(sender, &format!("chat-{chat}"), &key)).await;
            let body: Value = serde_json::from_slice(sent.expect("send").body()).expect("JSON");
            let id = body["packet_id"].as_str().expect("a packet id").to_owned();
            // The five members after the sender grab, in turn.
            for offset in 1..=SHARES {
                let grabber = &members[(packet + offset) % MEMBERS];
                let answer = grab::handle(&functions.grab, crate::grab_path::request(&id, grabber)).await;
                assert_eq!(answer.expect("grab").status().as_u16(), 200);
                grabs += 1;
            }
        }
    }
    let event = lambda_runtime::LambdaEvent::new(Value::Null, lambda_runtime::Context::default());
    settle::handle(&functions.settler, event).await.expect("settle");

    let (pipe, detail_types) = (Pipe::of_template(), rule_detail_types("RiskFunction"));
    let records = stream.read_new().await.expect("the stream");
    let delivered: Vec<(String, Value)> = records
        .iter()
        .filter_map(|record| pipe.publish(record))
        .filter(|(detail_type, _)| detail_types.contains(detail_type))
        .collect();
    let mut by_type: BTreeMap<String, (Histogram<u64>, u64, Duration)> = BTreeMap::new();
    let mut flags: BTreeMap<&'static str, usize> = BTreeMap::new();
    for (detail_type, detail) in delivered {
        let before = meter.grand_total();
        let started = Instant::now();
        let invocation = lambda_runtime::LambdaEvent::new(bus_event(&detail_type, &detail), Default::default());
        for flag in risk::handle(&watch, invocation).await.expect("the risk function").flags {
            *flags.entry(flag.rule.as_str()).or_default() += 1;
        }
        let elapsed = started.elapsed();
        let (histogram, units, total) =
            by_type.entry(detail_type).or_insert_with(|| (Histogram::new(3).expect("a histogram"), 0, Duration::ZERO));
        histogram.record(elapsed.as_micros() as u64).expect("a latency");
        *units += meter.grand_total() - before;
        *total += elapsed;
    }
    let events = by_type
        .into_iter()
        .map(|(detail_type, (histogram, units, total))| EventCost {
            write_units_per_event: units as f64 / histogram.len() as f64,
            stats: summarize(&histogram, total),
            detail_type,
        })
        .collect();
    PatternsRun { chats: CHATS, packets: CHATS * PACKETS_PER_CHAT, grabs, flags, chain_flags_at_three_links: 0, events }
}
