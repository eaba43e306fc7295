//! Money safety on the paths a deployment meets (DESIGN invariants 7 and 9): a send replayed
//! after its packet settled, a failover that hands shares out again after settle persisted
//! them, a full Redis, a poison packet, a ledger record that vanished, a restore long after the
//! packet expired. Real handlers, real Redis, DynamoDB Local; each test on a stack of its own.

use std::collections::HashMap;
use std::sync::Arc;

use crate::support::stack::Stack;
use crate::support::OwnRedis;
use aws_sdk_dynamodb::types::AttributeValue;
use red_packets::adapters::RedisStore;
use red_packets::domain::ledger::ShareHolder;
use red_packets::domain::{EventType, Funds, PacketId, PacketStatus, TopUp, UserId};
use red_packets::funds::{reconcile, Cutoff};
use red_packets::ports::{SettleCursor, Wallets};
use red_packets::settle::Settler;
use red_packets::Clock;
use serde_json::{json, Value};

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// Removes every key of a packet, as their expiry would.
async fn expire_keys(stack: &Stack, id: &str) {
    let store = stack.store();
    let mut conn = store.connection().await.unwrap();
    let keys = store.keys(&PacketId::parse(id).unwrap());
    for key in [keys.packet, keys.pool, keys.grabs, keys.lookup] {
        let _: () = redis::cmd("DEL").arg(key).query_async(&mut conn).await.unwrap();
    }
}

async fn redis_holds(store: &RedisStore, id: &str) -> bool {
    store.snapshot(&PacketId::parse(id).unwrap()).await.unwrap().is_some()
}

/// Grab items of a packet as (user, amount, seq).
async fn grab_items(stack: &Stack, id: &str) -> Vec<(String, u64, u32)> {
    let recorded = stack.recorded(id).await;
    recorded.grabs.iter().map(|grab| (grab.user.to_string(), grab.amount_cents, grab.seq)).collect()
}

/// The reproduction: a keyed send, every share grabbed, settled, the keys gone, then
/// the same send again. The replay answers the settled packet; no grab succeeds on it; the
/// ledger's grabs are untouched. Then the same for a packet that expired with shares left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_replayed_after_settle_never_reopens_the_packet() {
    let stack = Stack::new("replay").await;
    let body = json!({ "total_cents": 900, "count": 3, "expires_in_seconds": 60 });

    let (status, sent) = stack.send_keyed("alice", &body, "new-year").await;
    assert_eq!(status, 201, "{sent}");
    let id = sent["packet_id"].as_str().unwrap().to_owned();
    let mut paid = HashMap::new();
    for user in ["bob", "carol", "dave"] {
        let (status, grab) = stack.grab(&id, user).await;
        assert_eq!(status, 200, "{grab}");
        paid.insert(user.to_owned(), grab["amount_cents"].as_u64().unwrap());
    }
    assert_eq!(stack.settle().await.finalised, 1);
    let before = grab_items(&stack, &id).await;
    expire_keys(&stack, &id).await;

    let (status, replay) = stack.send_keyed("alice", &body, "new-year").await;
    assert_eq!(status, 201, "{replay}");
    assert_eq!(replay["packet_id"], id.as_str());
    assert_eq!((replay["status"].as_str(), replay["settled"].as_bool()), (Some("finished"), Some(true)), "{replay}");
    assert_eq!(replay["remaining_count"], 0);
    assert!(!redis_holds(&stack.store(), &id).await, "a settled packet is never reloaded into Redis");

    let (status, again) = stack.grab(&id, "bob").await;
    assert_eq!((status, again["already_grabbed"].as_bool()), (200, Some(true)), "{again}");
    assert_eq!(again["amount_cents"].as_u64(), Some(paid["bob"]));
    let (status, stranger) = stack.grab(&id, "erin").await;
    assert_eq!((status, stranger["error"]["code"].as_str()), (409, Some("sold_out")), "{stranger}");
    stack.settle().await;
    assert_eq!(grab_items(&stack, &id).await, before, "no grab item changed");
    stack.assert_settled_books(&id, &paid).await;
    eprintln!(
        "figure: replay after settle: answered {} settled, Redis not reloaded, bob's repeat {} cents (as paid), a stranger 409, {} grab items unchanged",
        replay["status"], paid["bob"], before.len()
    );

    // Expired with shares left: the replay answers it expired, grabs stay closed, one refund.
    let (_, sent) = stack.send_keyed("alice", &body, "lantern").await;
    let id = sent["packet_id"].as_str().unwrap().to_owned();
    let (_, grab) = stack.grab(&id, "bob").await;
    let paid = HashMap::from([("bob".to_owned(), grab["amount_cents"].as_u64().unwrap())]);
    stack.clock.advance(61_000);
    let summary = stack.settle().await;
    assert_eq!((summary.finalised, summary.mismatches), (1, 0), "{summary:?}");
    expire_keys(&stack, &id).await;
    let (status, replay) = stack.send_keyed("alice", &body, "lantern").await;
    assert_eq!((status, replay["status"].as_str()), (201, Some("expired")), "{replay}");
    assert!(!redis_holds(&stack.store(), &id).await);
    let (status, late) = stack.grab(&id, "erin").await;
    assert_eq!((status, late["error"]["code"].as_str()), (410, Some("expired")), "{late}");
    assert_eq!(stack.settle().await.finalised, 0, "nothing to refund twice");
    let recorded = stack.assert_settled_books(&id, &paid).await;
    assert_eq!(recorded.refund_cents, Some(900 - paid["bob"]));
}

/// A primary and its replica; the replica stops receiving the primary's writes, the primary
/// hands out shares and settle persists them, then the primary dies and the replica, promoted
/// without them, hands the same shares to others. The ledger refuses every such grab (never two
/// users for a share, never a changed amount, never more than the total), settle reports the
/// mismatch and re-syncs the packet from the ledger, and the books balance at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_after_settle_never_pays_a_share_twice() {
    let mut primary = OwnRedis::start();
    let replica = OwnRedis::replica_of(&primary);
    // With the wallet on, so that invariant 8 is checked through the failover too.
    let mut config = primary.config();
    config.funds = Funds::Wallet;
    let stack = Stack::with_config("failover", config).await;
    let funding =
        TopUp { user: UserId::from_claim("alice").unwrap(), amount_cents: 1_000, reference: "failover".into() };
    stack.ledger.top_up(&funding, stack.clock.now_ms()).await.unwrap();
    let id = stack.send("alice", json!({ "total_cents": 1_000, "count": 4, "expires_in_seconds": 60 })).await;
    let mut replica_config = replica.config();
    replica_config.redis.key_prefix = stack.config.redis.key_prefix.clone();
    let replica_store = RedisStore::new(&replica_config);
    // A replica still taking its first copy from the primary may answer late or `LOADING`: until
    // it holds the packet, an answer of either kind is "not yet".
    for _ in 0..500 {
        if replica_store.snapshot(&PacketId::parse(&id).unwrap()).await.is_ok_and(|held| held.is_some()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(redis_holds(&replica_store, &id).await, "the replica has the packet");

    // The replica stops receiving the primary's writes, as a lagging replica has not received
    // them when its primary dies (detached here so that the loss is certain, not a race).
    let mut conn = replica_store.connection().await.unwrap();
    let _: () = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query_async(&mut conn).await.unwrap();
    let mut paid = HashMap::new();
    for user in ["bob", "carol"] {
        let (status, grab) = stack.grab(&id, user).await;
        assert_eq!(status, 200, "{grab}");
        paid.insert(user.to_owned(), grab["amount_cents"].as_u64().unwrap());
    }
    assert_eq!(stack.settle().await.grabs_persisted, 2);
    primary.kill();

    let promoted = stack.on_redis(&format!("redis://127.0.0.1:{}", replica.port())).await;
    for user in ["dave", "erin"] {
        let (status, grab) = promoted.grab(&id, user).await;
        assert_eq!(status, 200, "the promoted replica hands shares 1 and 2 out again: {grab}");
    }
    let summary = promoted.settle().await;
    assert_eq!((summary.mismatches, summary.resynced, summary.regranted), (2, 1, 2), "{summary:?}");
    assert_eq!(summary.finalised, 1, "every share held once re-synced: finished in the same pass");
    eprintln!(
        "figure: failover after settle: 2 shares handed out again by the promoted replica, {} grabs refused by the ledger (RECONCILIATION_MISMATCH), {} regranted the next unclaimed shares, {} packet re-synced",
        summary.mismatches, summary.regranted, summary.resynced
    );
    let recorded = promoted.recorded(&id).await;
    let holders: Vec<(u32, String)> = recorded
        .claims
        .iter()
        .filter_map(|claim| match &claim.holder {
            ShareHolder::Grabber { user, .. } => Some((claim.seq, user.to_string())),
            ShareHolder::Refund => None,
        })
        .collect();
    let expected: Vec<(u32, String)> = [(1, "bob"), (2, "carol"), (3, "dave"), (4, "erin")]
        .iter()
        .map(|(seq, user)| (*seq, user.to_string()))
        .collect();
    assert_eq!(holders, expected, "one user per share: dave and erin hold shares 3 and 4 instead of 1 and 2");

    // Re-synced: bob's share answers again; dave and erin hold their new shares, and say so.
    let (status, bob) = promoted.grab(&id, "bob").await;
    assert_eq!((status, bob["amount_cents"].as_u64()), (200, Some(paid["bob"])), "{bob}");
    for user in ["dave", "erin"] {
        let (status, grab) = promoted.grab(&id, user).await;
        assert_eq!((status, grab["already_grabbed"].as_bool()), (200, Some(true)), "{grab}");
        paid.insert(user.to_owned(), grab["amount_cents"].as_u64().unwrap());
    }
    let casualties = promoted.ledger.casualties(&PacketId::parse(&id).unwrap()).await.unwrap();
    assert_eq!(casualties.len(), 2, "each casualty recorded once, with its GrabRegranted event");
    assert!(casualties.iter().all(|casualty| casualty.event_type == EventType::GrabRegranted), "{casualties:?}");
    let summary = promoted.settle().await;
    assert_eq!((summary.finalised, summary.mismatches), (0, 0), "nothing left to do: {summary:?}");
    let recorded = promoted.assert_settled_books(&id, &paid).await;
    assert_eq!(recorded.status, PacketStatus::Finished);
    // The grabs the ledger refused were never credited: each grabber holds the share it kept.
    let books = reconcile(&promoted.ledger, Cutoff::quiet(), 1).await.unwrap();
    assert!(books.balanced(), "{:?}", books.differences);
    for (user, amount) in &paid {
        assert_eq!(promoted.ledger.balance(&UserId::from_claim(user).unwrap()).await.unwrap(), *amount, "{user}");
    }
}

/// A Redis at its memory limit with `noeviction`: grabs and sends answer 503, and every grab
/// acknowledged before is in the ledger after settle, also while Redis still refuses writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_redis_answers_503_and_loses_no_acknowledged_grab() {
    let redis = OwnRedis::start();
    let stack = Stack::with_config("full", redis.config()).await;
    let id = stack.send("alice", json!({ "total_cents": 5_000, "count": 50, "expires_in_seconds": 60 })).await;
    let mut paid = HashMap::new();
    for n in 0..10 {
        let user = format!("early-{n}");
        let (status, grab) = stack.grab(&id, &user).await;
        assert_eq!(status, 200);
        paid.insert(user, grab["amount_cents"].as_u64().unwrap());
    }
    let mut conn = stack.store().connection().await.unwrap();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg("1").query_async(&mut conn).await.unwrap();

    let started = std::time::Instant::now();
    let (status, full) = stack.grab(&id, "late").await;
    let grab_ms = started.elapsed().as_millis();
    assert_eq!((status, full["error"]["code"].as_str()), (503, Some("unavailable")), "{full}");
    let (status, repeat) = stack.grab(&id, "early-3").await;
    assert_eq!(
        (status, repeat["already_grabbed"].as_bool(), repeat["amount_cents"].as_u64()),
        (200, Some(true), paid.get("early-3").copied()),
        "a full Redis refuses the script, and the repeat is answered from a read: {repeat}"
    );

    // Settle still records the grabs; it cannot move the persisted mark, so the run stops.
    let settled =
        settle::handle(&stack.functions.settler, lambda_runtime::LambdaEvent::new(Value::Null, Default::default()))
            .await;
    assert!(settled.is_err(), "a Redis that refuses writes ends the run");
    let recorded: HashMap<String, u64> =
        grab_items(&stack, &id).await.into_iter().map(|(user, amount, _)| (user, amount)).collect();
    assert_eq!(recorded, paid, "every acknowledged grab is in the ledger");
    let started = std::time::Instant::now();
    let (status, _) = stack.send_keyed("alice", &json!({ "total_cents": 100, "count": 1 }), "full-cache").await;
    assert_eq!(status, 201, "a send the ledger recorded is done; its first grab loads it into Redis");
    eprintln!(
        "figure: full Redis (noeviction): grab 503 in {grab_ms} ms, send 201 (recorded, loaded by its first grab) in {} ms; {} acknowledged grabs, {} in the ledger after a run that ended on OOM",
        started.elapsed().as_millis(), paid.len(), recorded.len()
    );

    let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg("0").query_async(&mut conn).await.unwrap();
    stack.clock.advance(DAY_MS);
    let summary = stack.settle().await;
    assert_eq!((summary.finalised, summary.restored), (2, 1), "{summary:?}");
    stack.assert_settled_books(&id, &paid).await;
}

/// One packet whose Redis log is corrupt among 50 good ones: the 50 settle in the same run, and
/// the summary names the bad one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poison_packet_never_stops_settle() {
    let stack = Arc::new(Stack::new("poison").await);
    let mut good = Vec::new();
    for _ in 0..50 {
        let id = stack.send("alice", json!({ "total_cents": 200, "count": 2, "expires_in_seconds": 60 })).await;
        assert_eq!(stack.grab(&id, "bob").await.0, 200);
        good.push(id);
    }
    let poison = stack.send("alice", json!({ "total_cents": 200, "count": 2, "expires_in_seconds": 60 })).await;
    assert_eq!(stack.grab(&poison, "bob").await.0, 200);
    let store = stack.store();
    let mut conn = store.connection().await.unwrap();
    let log = store.keys(&PacketId::parse(&poison).unwrap()).grabs;
    let _: () = redis::cmd("LSET").arg(&log).arg(0).arg("{not a grab").query_async(&mut conn).await.unwrap();

    stack.clock.advance(61_000);
    let started = std::time::Instant::now();
    let summary = stack.settle().await;
    eprintln!(
        "figure: poison among 50: one run finalised {}, skipped {} ({:?}), in {} ms",
        summary.finalised,
        summary.failed,
        summary.failed_packets,
        started.elapsed().as_millis()
    );
    assert_eq!(summary.finalised, 50, "{summary:?}");
    assert_eq!((summary.failed, summary.failed_packets.clone()), (1, vec![poison.clone()]), "{summary:?}");
    for id in &good {
        assert_ne!(stack.recorded(id).await.status, PacketStatus::Open, "{id} settled");
    }
    assert_eq!(stack.recorded(&poison).await.status, PacketStatus::Open, "the poison packet is left for an operator");
}

/// A packet Redis holds whose ledger record vanished (a restarted in-memory DynamoDB Local,
/// say): settle reports `RECONCILIATION_MISMATCH` and quarantines it, keys kept, never retires
/// it quietly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packet_whose_ledger_record_vanished_is_reported_and_kept() {
    let stack = Stack::new("vanished").await;
    let id = stack.send("alice", json!({ "total_cents": 300, "count": 3, "expires_in_seconds": 60 })).await;
    assert_eq!(stack.grab(&id, "bob").await.0, 200);
    let client = red_packets::adapters::DynamoLedger::client_from_env().expect("a DynamoDB client");
    client
        .delete_item()
        .table_name(&stack.config.table_name)
        .key("pk", AttributeValue::S(format!("PKT#{id}")))
        .key("sk", AttributeValue::S("META".into()))
        .send()
        .await
        .unwrap();
    stack.clock.advance(61_000);
    let summary = stack.settle().await;
    assert_eq!((summary.mismatches, summary.quarantined, summary.finalised), (1, 1, 0), "{summary:?}");

    let store = stack.store();
    let mut conn = store.connection().await.unwrap();
    let keys = store.keys(&PacketId::parse(&id).unwrap());
    let ttl: i64 = redis::cmd("PTTL").arg(&keys.packet).query_async(&mut conn).await.unwrap();
    assert_eq!(ttl, -1, "the packet's keys are kept for inspection");
    let quarantined: Option<f64> =
        redis::cmd("ZSCORE").arg(store.quarantine_key()).arg(&id).query_async(&mut conn).await.unwrap();
    assert!(quarantined.is_some(), "{id} is in the quarantine index");
    let again = stack.settle().await;
    assert_eq!(again.packets, 0, "a quarantined packet costs later runs nothing");
}

/// A refund item already in the ledger for a packet still open (a partial write, a hand
/// edit): finalising writes nothing twice, the books say why, and the packet is quarantined
/// while the run goes on with the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refund_already_written_for_an_open_packet_is_quarantined_not_paid_again() {
    let stack = Stack::new("stray-refund").await;
    let odd = stack.send("alice", json!({ "total_cents": 300, "count": 3, "expires_in_seconds": 60 })).await;
    let healthy = stack.send("alice", json!({ "total_cents": 300, "count": 3, "expires_in_seconds": 60 })).await;
    for id in [&odd, &healthy] {
        assert_eq!(stack.grab(id, "bob").await.0, 200);
    }
    let client = red_packets::adapters::DynamoLedger::client_from_env().expect("a DynamoDB client");
    let s = |value: &str| AttributeValue::S(value.to_owned());
    client
        .put_item()
        .table_name(&stack.config.table_name)
        .item("pk", s(&format!("PKT#{odd}")))
        .item("sk", s("REFUND"))
        .item("packet_id", s(&odd))
        .item("sender", s("alice"))
        .item("amount_cents", AttributeValue::N("200".into()))
        .item("refunded_at", s("2026-11-23T00:00:00.000Z"))
        .send()
        .await
        .unwrap();
    stack.clock.advance(61_000);
    let summary = stack.settle().await;
    assert_eq!((summary.finalised, summary.quarantined), (1, 1), "{summary:?}");
    assert_eq!(stack.recorded(&odd).await.status, PacketStatus::Open, "never finalised with a refund paid twice");
    assert_eq!(stack.recorded(&healthy).await.status, PacketStatus::Expired);
}

/// Redis lost a packet and settle restores it days after it expired: it is restored, closed,
/// finalised and refunded once, the refund computed from the ledger's grabs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_long_after_expiry_still_finalises_and_refunds_once() {
    let stack = Stack::new("late-restore").await;
    let id = stack.send("alice", json!({ "total_cents": 1_000, "count": 5, "expires_in_seconds": 60 })).await;
    let (_, grab) = stack.grab(&id, "bob").await;
    let paid = HashMap::from([("bob".to_owned(), grab["amount_cents"].as_u64().unwrap())]);
    assert_eq!(stack.settle().await.grabs_persisted, 1);
    stack.empty_redis(&[&id]).await;
    stack.clock.advance(3 * DAY_MS);

    let summary = stack.settle().await;
    assert_eq!((summary.restored, summary.finalised, summary.mismatches), (1, 1, 0), "{summary:?}");
    assert_eq!(summary.refunded_cents, 1_000 - paid["bob"]);
    assert_eq!(stack.settle().await.finalised, 0, "refunded once");
    stack.assert_settled_books(&id, &paid).await;
}

/// Small ones: a cursor replayed with the other role is 400 `cursor`; a greeting of "" reads
/// back the same from Redis and from the ledger; a smaller `SETTLE_SHARDS` strands no packet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursors_greetings_and_a_changed_shard_count() {
    let stack = Stack::new("small").await;
    let mut ids = Vec::new();
    for _ in 0..12 {
        let id = stack
            .send("alice", json!({ "total_cents": 100, "count": 1, "greeting": "", "expires_in_seconds": 60 }))
            .await;
        ids.push(id);
    }
    let (status, open) = stack.view(&ids[0], "alice").await;
    assert_eq!((status, open["greeting"].as_str()), (200, Some("")), "{open}");

    let (status, page) = stack.history("alice", "role=sent&limit=1").await;
    assert_eq!(status, 200, "{page}");
    let cursor = page["next_cursor"].as_str().expect("more than one page").to_owned();
    let (status, error) = stack.history("alice", &format!("role=received&cursor={cursor}")).await;
    assert_eq!((status, error["error"]["field"].as_str()), (400, Some("cursor")), "{error}");

    // Settle with 4 shards where the packets were indexed under 16.
    let mut narrower = stack.config.clone();
    narrower.settle_shards = 4;
    let ledger = red_packets::adapters::DynamoLedger::new(
        red_packets::adapters::DynamoLedger::client_from_env().expect("a DynamoDB client"),
        &narrower,
    );
    let settler = Settler::new(Arc::new(RedisStore::new(&narrower)), ledger).with_clock(stack.clock.clone());
    stack.clock.advance(61_000);
    let summary = settler.run(settler.shards_of(&Default::default()), None).await.unwrap();
    assert_eq!(summary.finalised, 12, "packets under shards 4..16 are settled too: {summary:?}");
    let (status, settled) = stack.view(&ids[0], "alice").await;
    assert_eq!((status, settled["greeting"].as_str(), settled["settled"].as_bool()), (200, Some(""), Some(true)));
}

/// With `GRAB_WAIT_REPLICAS=1`, settle persists only grabs the replica holds: while the replica
/// is stopped the packet is deferred and nothing reaches the ledger; once it answers again, the
/// grabs are persisted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_persists_only_grabs_the_replicas_hold() {
    let primary = OwnRedis::start();
    let replica = OwnRedis::replica_of(&primary);
    let mut config = primary.config();
    config.grab_wait =
        Some(red_packets::config::ReplicaWait { replicas: 1, timeout: std::time::Duration::from_millis(300) });
    let stack = Stack::with_config("replica-wait", config).await;
    let id = stack.send("alice", json!({ "total_cents": 500, "count": 5, "expires_in_seconds": 60 })).await;
    let mut grabbed = 0;
    for attempt in 0..50 {
        if stack.grab(&id, "bob").await.0 == 200 {
            grabbed = attempt + 1;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await; // the replica's first sync
    }
    assert!(grabbed > 0, "bob's grab is acknowledged once the replica holds it");

    replica.pause();
    let (status, _) = stack.grab(&id, "carol").await;
    assert_eq!(status, 503, "no replica acknowledges carol's grab");
    let (status, repeat) = stack.grab(&id, "bob").await;
    assert_eq!(status, 503, "a repeat tells bob he holds a share: it waits on the replica too: {repeat}");
    let summary = stack.settle().await;
    assert_eq!((summary.deferred, summary.grabs_persisted), (1, 0), "{summary:?}");
    assert!(stack.recorded(&id).await.grabs.is_empty(), "nothing the replica lacks reaches the ledger");

    replica.resume();
    let mut persisted = 0;
    let started = std::time::Instant::now();
    for run in 1..=50 {
        let summary = stack.settle().await;
        persisted += summary.grabs_persisted;
        if summary.deferred == 0 {
            eprintln!(
                "figure: replica stopped: settle deferred the packet, 0 grabs persisted; resumed: persisted at run {run}, {} ms later",
                started.elapsed().as_millis()
            );
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await; // the replica catching up
    }
    assert_eq!(persisted, 2, "bob's grab and carol's (answered 503, yet made) once the replica holds them");
    assert_eq!(stack.recorded(&id).await.grabs.len(), 2);

    // A cancel's close is replica-acknowledged before the sender hears 200.
    replica.pause();
    let (status, cancel) = stack.cancel(&id, "alice").await;
    assert_eq!(status, 503, "no replica acknowledges the close: {cancel}");
    replica.resume();
    let mut status = 0;
    for _ in 0..50 {
        status = stack.cancel(&id, "alice").await.0;
        if status == 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200, "the retry is acknowledged once the replica answers");
}

/// A run that stops before its deadline records the shard it stopped in; the next run starts
/// there, and a run that completes clears the mark, so the high shards never starve.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stopped_early_resumes_where_it_stopped() {
    let stack = Stack::new("resume").await;
    let mut shards = Vec::new();
    for _ in 0..6 {
        let id = stack.send("alice", json!({ "total_cents": 100, "count": 1, "expires_in_seconds": 60 })).await;
        shards.push(PacketId::parse(&id).unwrap().settle_shard(stack.config.settle_shards));
    }
    let first = *shards.iter().min().unwrap();
    let settler = stack.settler(None);
    let store = stack.store();
    let range = [0, stack.config.settle_shards - 1];
    stack.clock.advance(61_000);

    let past = red_packets::clock::SystemClock.now_ms();
    let stopped = settler.run(0..=range[1], Some(past)).await.unwrap();
    assert!(stopped.stopped_early && stopped.finalised == 0, "{stopped:?}");
    assert_eq!(store.resume_shard(range).await.unwrap(), Some(first), "it stopped in the first shard with work");

    let complete = settler.run(0..=range[1], None).await.unwrap();
    assert_eq!(complete.finalised, 6, "{complete:?}");
    assert_eq!(store.resume_shard(range).await.unwrap(), None, "a complete run clears the mark");
}
