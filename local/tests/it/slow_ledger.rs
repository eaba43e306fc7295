//! A slow ledger, in a process of its own (a suite beside the fleet's, whose floods it would
//! slow): settle's DynamoDB client through a proxy that holds back one answer in eight past the
//! client's attempt timeout (`support/slow_ledger.rs`). Settle slows and never stops for it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::support::slow_ledger::SlowLedger;
use crate::support::stack::Stack;
use red_packets::domain::Funds;
use red_packets::Config;
use serde_json::json;

const DAY_MS: i64 = 24 * 3_600_000;
/// One DynamoDB answer in this many held back: a brownout, not an outage (at one in four, both
/// of a call's attempts are held for one call in sixteen, and a packet's pass, some forty calls,
/// mostly has one: it then waits its turn again).
const HELD_ONE_IN: u64 = 8;

/// Settle under a slow ledger: one DynamoDB answer in eight held back 2.5 s, past the client's
/// 2 s attempt timeout (the write landed; the client never heard). Settle slows (it asks again,
/// fewer packets at a time) and never stops for it: every packet is finalised within 120 s of
/// settle runs (35 s measured on an idle machine), every acknowledged grab recorded and credited once, every sender refunded once,
/// and no run stops on the ledger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_rides_out_a_slow_ledger_and_pays_every_cent_once() {
    let upstream = std::env::var("AWS_ENDPOINT_URL_DYNAMODB").expect("DynamoDB Local's endpoint");
    let slow = SlowLedger::start(&upstream, HELD_ONE_IN, Duration::from_millis(2_500)).await;
    let mut connection = red_packets::adapters::dynamo::client::Connection::from_env();
    connection.endpoint_url = Some(slow.url().to_owned());
    let client = red_packets::adapters::dynamo::client::client(&connection).expect("a DynamoDB client");
    let mut config = Config::from_env().expect("configuration");
    config.funds = Funds::Wallet;
    config.redis.timeout = Duration::from_secs(5);
    let stack = Stack::through("slow-ledger", config, client).await;
    stack.top_up("brand", 10_000).await;
    let mut packets = Vec::new();
    for n in 0..4 {
        let id = stack.send("brand", json!({ "total_cents": 1_000, "count": 20 })).await;
        let mut acknowledged = HashMap::new();
        for user in 0..12 + n {
            let user = format!("fan-{user}");
            let (status, body) = stack.grab(&id, &user).await;
            assert_eq!(status, 200, "{body}");
            acknowledged.insert(user, body["amount_cents"].as_u64().unwrap());
        }
        packets.push((id, acknowledged));
    }
    slow.set_slow(true);
    stack.clock.advance(DAY_MS + 60_000);
    let started = Instant::now();
    let (mut runs, mut stopped, mut slowed) = (0, 0, 0);
    while started.elapsed() < Duration::from_secs(120) {
        runs += 1;
        match stack.settle_or_stop().await {
            Some(summary) => slowed += summary.slowed,
            None => stopped += 1,
        }
        let mut open = 0;
        for (id, _) in &packets {
            open += usize::from(stack.recorded(id).await.status == red_packets::domain::PacketStatus::Open);
        }
        if open == 0 {
            break;
        }
    }
    let took = started.elapsed();
    slow.set_slow(false);
    eprintln!(
        "figure: slow ledger, settle: {} of {} DynamoDB answers held back 2.5 s, {} requests in flight at most; {} packets finalised in {runs} settle runs, {took:?}; packets settled again {slowed} times; runs stopped {stopped}",
        slow.held(),
        slow.seen(),
        slow.peak(),
        packets.len(),
    );
    assert!(slow.held() >= 10, "the fault was met: {} answers held back", slow.held());
    assert_eq!(stopped, 0, "no settle run stopped for a slow ledger");
    let mut refunds = 0;
    let mut credits = HashMap::<&String, u64>::new();
    for (id, acknowledged) in &packets {
        refunds += stack.assert_settled_books(id, acknowledged).await.refund_cents.unwrap();
        for (user, amount) in acknowledged {
            *credits.entry(user).or_default() += amount;
        }
    }
    for (user, amount) in credits {
        assert_eq!(stack.balance(user).await, amount, "{user} credited once with what they grabbed");
    }
    assert_eq!(stack.balance("brand").await, 10_000 - 4_000 + refunds, "the sender refunded once");
}
