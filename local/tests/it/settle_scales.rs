//! Settle's cost follows the work, not the open packets: a run over idle packets issues the same
//! Redis commands and DynamoDB requests whether 10 or 1,010 packets are open; a grab whose mark
//! for settle was lost is persisted by its packet's expiry at the latest; a Redis that lost its
//! data is restored from the ledger by the recovery sweep, and nobody grabs twice; a grab
//! reaches its grabber's history within seconds while an invocation drains. Real handlers, real
//! Redis, DynamoDB Local.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::stack::{reply, request, Stack};
use crate::support::OwnRedis;
use futures::stream::{self, StreamExt};
use local::probe::{costs, RequestCounter};
use red_packets::adapters::DeployedSettler;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::settle::{SettleSummary, Settler};
use serde_json::{json, Value};

/// A settler of `stack` whose DynamoDB requests `counter` counts.
fn counted_settler(stack: &Stack, counter: &RequestCounter) -> DeployedSettler {
    let counted = counter.on(&DynamoLedger::client_from_env().expect("a DynamoDB client"));
    Settler::new(Arc::new(stack.store()), DynamoLedger::new(counted, &stack.config)).with_clock(stack.clock.clone())
}

/// One run's Redis commands and DynamoDB requests.
async fn measured_run(
    settler: &DeployedSettler,
    store: &RedisStore,
    counter: &RequestCounter,
) -> (SettleSummary, u64, u64) {
    let (summary, commands, requests) = costs(store, counter, settler.run(0..=15, None)).await;
    (summary.expect("settle run"), commands, requests)
}

async fn send_many(stack: &Stack, count: usize) -> Vec<String> {
    let body = json!({ "total_cents": 500, "count": 5, "expires_in_seconds": 3_600 });
    stream::iter(0..count)
        .map(|n| {
            let body = body.clone();
            async move { stack.send_keyed(&format!("sender-{}", n % 50), &body, &format!("idle-{n}")).await }
        })
        .buffer_unordered(16)
        .map(|(status, packet)| {
            assert_eq!(status, 201, "{packet}");
            packet["packet_id"].as_str().unwrap().to_owned()
        })
        .collect()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_costs_the_same_whether_ten_or_a_thousand_packets_lie_idle() {
    let own = OwnRedis::start_with("everysec");
    let stack = Stack::with_config("idle", own.config()).await;
    let counter = RequestCounter::default();
    let settler = counted_settler(&stack, &counter);
    let store = stack.store();
    let few = send_many(&stack, 10).await;
    // The first run sweeps the ledger (Redis has no record of a sweep yet); later ones do not.
    let first = settler.run(0..=15, None).await.unwrap();
    assert_eq!(first.swept_shards, 16, "{first:?}");

    let (idle_few, commands_few, requests_few) = measured_run(&settler, &store, &counter).await;
    send_many(&stack, 1_000).await;
    let (idle_many, commands_many, requests_many) = measured_run(&settler, &store, &counter).await;
    println!("figure: an idle run with 10 open packets: {commands_few} Redis commands, {requests_few} DynamoDB requests; with 1,010: {commands_many}, {requests_many}");
    assert_eq!((idle_few.packets, idle_many.packets), (0, 0), "idle packets are not visited");
    assert_eq!(commands_few, commands_many, "Redis commands per idle run do not grow with open packets");
    assert_eq!((requests_few, requests_many), (0, 0), "an idle run reads nothing from DynamoDB");

    // Work costs in proportion to itself: five grabs on five packets, five packets visited.
    for id in few.iter().take(5) {
        assert_eq!(stack.grab(id, "bob").await.0, 200);
    }
    let (busy, commands_busy, requests_busy) = measured_run(&settler, &store, &counter).await;
    println!("figure: a run persisting 5 grabs on 5 of 1,010 open packets: {commands_busy} Redis commands, {requests_busy} DynamoDB requests");
    assert_eq!((busy.packets, busy.grabs_persisted), (5, 5), "{busy:?}");
    assert_eq!(requests_busy, 10, "two conditional writes per grab, nothing else");
}

/// The grab script ran and answered 200, but the mark for settle never landed (the process
/// died between the two, say): the packet's expiry brings settle to it, the grab is persisted
/// and the refund is right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grab_whose_mark_was_lost_is_persisted_by_its_packets_expiry() {
    let stack = Stack::new("lost-mark").await;
    let id = stack.send("alice", json!({ "total_cents": 900, "count": 3, "expires_in_seconds": 60 })).await;
    assert_eq!(stack.settle().await.swept_shards, 16);
    let unmarked = grab::GrabService::new(stack.store().without_settle_marks(), stack.ledger.clone(), &stack.config);
    let mut event: Value = serde_json::from_str(include_str!("../../../events/grab.json")).unwrap();
    red_packets_testkit::events::set_packet_id(&mut event, &id);
    red_packets_testkit::events::set_caller(&mut event, Some("bob"));
    let (status, grabbed) = reply(grab::handle(&unmarked, request(&event)).await).await;
    assert_eq!(status, 200, "{grabbed}");

    let before_expiry = stack.settle().await;
    assert_eq!((before_expiry.packets, before_expiry.grabs_persisted), (0, 0), "unmarked: {before_expiry:?}");
    stack.clock.advance(61_000);
    let at_expiry = stack.settle().await;
    assert_eq!((at_expiry.grabs_persisted, at_expiry.finalised), (1, 1), "{at_expiry:?}");
    let paid = HashMap::from([("bob".to_owned(), grabbed["amount_cents"].as_u64().unwrap())]);
    let recorded = stack.assert_settled_books(&id, &paid).await;
    assert_eq!(recorded.refund_item_cents, Some(900 - paid["bob"]));
}

/// Redis lost everything (flushed, or replaced by an empty node): the first run finds no record
/// of a sweep, reads every shard's open packets from the ledger and restores them with their
/// grabs; the earlier grabbers are answered their shares, nobody gets two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_that_lost_its_data_is_restored_by_the_sweep_and_nobody_grabs_twice() {
    let stack = Stack::new("flushed").await;
    let mut ids = Vec::new();
    let mut paid: HashMap<String, HashMap<String, u64>> = HashMap::new();
    for _ in 0..3 {
        let id = stack.send("alice", json!({ "total_cents": 1_000, "count": 4, "expires_in_seconds": 600 })).await;
        let (status, grab) = stack.grab(&id, "bob").await;
        assert_eq!(status, 200);
        paid.entry(id.clone()).or_default().insert("bob".into(), grab["amount_cents"].as_u64().unwrap());
        ids.push(id);
    }
    assert_eq!(stack.settle().await.grabs_persisted, 3);
    let all: Vec<&str> = ids.iter().map(String::as_str).collect();
    stack.empty_redis(&all).await;

    let recovery = stack.settle().await;
    assert_eq!((recovery.swept_shards, recovery.restored), (16, 3), "{recovery:?}");
    for id in &ids {
        let (status, again) = stack.grab(id, "bob").await;
        assert_eq!((status, again["already_grabbed"].as_bool()), (200, Some(true)), "{again}");
        assert_eq!(again["amount_cents"].as_u64(), Some(paid[id]["bob"]), "bob's share, not a new one");
        let (status, carol) = stack.grab(id, "carol").await;
        assert_eq!(status, 200, "{carol}");
        paid.get_mut(id).unwrap().insert("carol".into(), carol["amount_cents"].as_u64().unwrap());
    }
    stack.clock.advance(601_000);
    assert_eq!(stack.settle().await.finalised, 3);
    for id in &ids {
        stack.assert_settled_books(id, &paid[id]).await;
    }
}

/// Freshness: while an invocation drains (a pass a second), the time from a grab's 200 to the
/// grab in its grabber's `received` history. Printed, not asserted (speed is the benchmarks'
/// and the soak's business); each grab must get there, within a generous bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grab_reaches_its_grabbers_history_within_seconds_while_settle_drains() {
    let stack = Arc::new(Stack::new("fresh").await);
    let id = stack.send("alice", json!({ "total_cents": 2_000, "count": 20, "expires_in_seconds": 600 })).await;
    stack.settle().await;
    let draining = tokio::spawn({
        let stack = stack.clone();
        async move {
            let settler = stack.settler(None).draining_for(Duration::from_secs(30));
            settler.drain(0..=15, None, settler.drain_until(None)).await
        }
    });
    let mut delays = Vec::new();
    for n in 0..10 {
        let user = format!("fresh-{n}");
        assert_eq!(stack.grab(&id, &user).await.0, 200);
        let granted = Instant::now();
        loop {
            let (status, page) = stack.history(&user, "role=received").await;
            assert_eq!(status, 200);
            if page["items"].as_array().is_some_and(|items| !items.is_empty()) {
                break;
            }
            assert!(granted.elapsed() < Duration::from_secs(20), "{user}'s grab never reached the history");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        delays.push(granted.elapsed());
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    draining.abort();
    delays.sort();
    println!("figure: grab -> history while draining, 10 grabs: p50 {:?}, max {:?}", delays[5], delays[9]);
}
