//! Settle and query, through the real handlers, against the Redis (single node or cluster) and
//! DynamoDB Local that `make test` starts. Each test runs under a Redis key prefix and a DynamoDB
//! table of its own, with its own clock, so settle runs in one test never touch another's packets.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::support::reasons::{grab_telling_why, is_machine_timeout};
use crate::support::stack::Stack;
use rand::{Rng, SeedableRng};
use red_packets::adapters::DynamoLedger;
use red_packets::domain::{PacketId, PacketStatus};
use red_packets::settle::{FaultPoint, SettleError, Settler};
use serde_json::{json, Value};

/// The grabs each packet acknowledged: packet -> user -> amount.
type Acknowledged = HashMap<String, HashMap<String, u64>>;

/// Records a 200 grab answer; every answer to the same user on the same packet must name the
/// same amount.
fn acknowledge(acknowledged: &mut Acknowledged, id: &str, user: &str, status: u16, body: &Value) {
    if status == 200 {
        let amount = body["amount_cents"].as_u64().unwrap();
        let previous = acknowledged.entry(id.to_owned()).or_default().insert(user.to_owned(), amount);
        if let Some(previous) = previous {
            assert_eq!(previous, amount, "{user} was told two amounts for {id}");
        }
    }
}

/// Grabs in flight at once in the storm.
const IN_FLIGHT: usize = 48;

/// Money conservation under a random storm: random kinds, rules, amounts and counts;
/// concurrent grabs; packets expiring mid-storm; settle runs interleaved with the grabs and
/// with each other, any of which may stop early when the ledger answers too slowly (the next
/// continues). Afterwards every packet balances and every acknowledged grab is recorded once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn money_is_conserved_under_a_random_storm() {
    let stack = Arc::new(Stack::new("storm").await);
    let mut rng = rand::rngs::StdRng::seed_from_u64(20_261_121);
    let mut packets = Vec::new();
    for _ in 0..30 {
        let count = rng.random_range(1..=20u64);
        let body = match rng.random_range(0..3) {
            0 => json!({ "kind": "fixed", "count": count, "total_cents": count * rng.random_range(1..=200u64) }),
            1 => json!({ "split": "line_cut", "count": count, "total_cents": rng.random_range(count..=20_000) }),
            _ => json!({ "count": count, "total_cents": rng.random_range(count..=20_000) }),
        };
        let mut body = body;
        body["expires_in_seconds"] = json!(rng.random_range(60..=600u64));
        packets.push(stack.send("sender", body).await);
    }

    let mut acknowledged = Acknowledged::new();
    let mut machine_timeouts = 0;
    // 48 grabs in flight at once, as many callers of one instance: 600 at once queue behind one
    // another in the process's one connection, and on a busy machine wait past any deadline.
    let in_flight = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
    for wave in 0..2 {
        let mut grabs = Vec::new();
        for _ in 0..600 {
            let stack = stack.clone();
            let in_flight = in_flight.clone();
            let id = packets[rng.random_range(0..packets.len())].clone();
            let user = format!("user-{}", rng.random_range(0..150));
            grabs.push(tokio::spawn(async move {
                // A 503 is a defect unless the machine caused it (a timeout, twice): then the
                // user taps again, as a client honouring Retry-After would, before the books
                // are checked (its first call may have taken a share, which the tap finds).
                let _permit = in_flight.acquire_owned().await.expect("the semaphore stays open");
                let mut timeouts = 0;
                for _ in 0..20 {
                    let (status, body, reason) = grab_telling_why(&stack, &id, &user).await;
                    if status == 503 && reason.as_deref().is_some_and(is_machine_timeout) {
                        timeouts += 1;
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                    assert!(matches!(status, 200 | 409 | 410), "{status} {body} {reason:?}");
                    return (id, user, status, body, timeouts);
                }
                panic!("{user} on {id}: 20 timeouts in a row");
            }));
        }
        let settles: Vec<_> = (0..3)
            .map(|_| {
                let stack = stack.clone();
                tokio::spawn(async move {
                    for _ in 0..3 {
                        stack.settle_or_stop().await;
                    }
                })
            })
            .collect();
        let mut fresh_grabs: HashMap<(String, String), u32> = HashMap::new();
        for grab in grabs {
            let (id, user, status, body, timeouts) = grab.await.unwrap();
            machine_timeouts += timeouts;
            if body["already_grabbed"] == false {
                *fresh_grabs.entry((id.clone(), user.clone())).or_default() += 1;
            }
            acknowledge(&mut acknowledged, &id, &user, status, &body);
        }
        assert!(fresh_grabs.values().all(|&n| n == 1), "nobody grabs the same packet twice");
        for settle in settles {
            settle.await.unwrap();
        }
        if wave == 0 {
            stack.clock.advance(300_000); // packets of up to 5 minutes expire mid-storm
        }
    }

    eprintln!("figure: storm, 1,200 grabs: {machine_timeouts} answered 503 after two timeouts, then tapped again");
    assert!(machine_timeouts <= 12, "at most 1 in 100 grabs times out twice: {machine_timeouts}");
    stack.clock.advance(3_600_000);
    stack.settle_through(5).await;
    let last = stack.settle_through(5).await;
    assert_eq!((last.finalised, last.mismatches), (0, 0), "everything was finalised once, and balances");
    let none = HashMap::new();
    for id in &packets {
        stack.assert_settled_books(id, acknowledged.get(id).unwrap_or(&none)).await;
    }
}

/// A crash at each step of settle, then a normal run: nothing lost, nothing doubled, one refund.
#[tokio::test]
async fn a_crash_at_any_step_of_settle_loses_and_doubles_nothing() {
    for (n, point) in FaultPoint::ALL.into_iter().enumerate() {
        let stack = Stack::new(&format!("crash-{n}")).await;
        let expiring = stack.send("alice", json!({ "total_cents": 1_000, "count": 5, "expires_in_seconds": 60 })).await;
        let finished = stack.send("alice", json!({ "total_cents": 300, "count": 2 })).await;
        let mut acknowledged = Acknowledged::new();
        for (id, users) in [(&expiring, &["bob", "carol", "dave"][..]), (&finished, &["bob", "erin"][..])] {
            for user in users {
                let (status, body) = stack.grab(id, user).await;
                assert_eq!(status, 200);
                acknowledge(&mut acknowledged, id, user, status, &body);
            }
        }
        stack.clock.advance(60_000);

        let crashed = stack.settler(Some(point)).run(0..=15, None).await;
        assert!(matches!(crashed, Err(SettleError::Crashed(at)) if at == point), "{point:?}: {crashed:?}");
        let first = stack.settle().await;
        let second = stack.settle().await;

        // The crashed run may have finalised the expiring packet, or had its refund transaction
        // in flight when another packet crashed (DynamoDB applies a request the client dropped):
        // the next run pays the refund or finds it paid, never both; the books below hold one.
        let expected_refund = 1_000 - acknowledged[&expiring].values().sum::<u64>();
        assert!(
            [0, expected_refund].contains(&first.refunded_cents),
            "{point:?}: the refund is paid exactly once: {first:?}"
        );
        assert_eq!((second.finalised, second.refunded_cents, second.mismatches), (0, 0, 0), "{point:?}");
        let expired = stack.assert_settled_books(&expiring, &acknowledged[&expiring]).await;
        assert_eq!((expired.status, expired.refund_item_cents), (PacketStatus::Expired, Some(expected_refund)));
        let done = stack.assert_settled_books(&finished, &acknowledged[&finished]).await;
        assert_eq!((done.status, done.refund_item_cents), (PacketStatus::Finished, None));

        let (status, body) = stack.grab(&expiring, "frank").await;
        assert_eq!(
            (point, status, body["error"]["code"].as_str()),
            (point, 410, Some("expired")),
            "no grab after close"
        );
    }
}

/// Two settle runs in parallel over the same shards: one refund per packet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_settle_runs_refund_each_packet_once() {
    let stack = Stack::new("parallel").await;
    let mut expected_refunds = 0;
    let mut ids = Vec::new();
    for n in 0..12u64 {
        let id = stack.send("alice", json!({ "total_cents": 500 + n, "count": 4, "expires_in_seconds": 60 })).await;
        let (_, body) = stack.grab(&id, "bob").await;
        expected_refunds += 500 + n - body["amount_cents"].as_u64().unwrap();
        ids.push(id);
    }
    let early = stack.settle().await;
    assert_eq!((early.finalised, early.refunded_cents), (0, 0), "no refund before expiry");
    stack.clock.advance(61_000);
    let (a, b) = (stack.settler(None), stack.settler(None));
    let (left, right) = tokio::join!(a.run(0..=15, None), b.run(0..=15, None));
    let (left, right) = (left.unwrap(), right.unwrap());
    assert_eq!(left.finalised + right.finalised, 12, "each packet finalised by exactly one run");
    assert_eq!(left.refunded_cents + right.refunded_cents, expected_refunds, "refunded exactly once");
    for id in &ids {
        let recorded = stack.recorded(id).await;
        assert_eq!(recorded.refund_item_cents, recorded.refund_cents);
    }
}

/// Redis emptied mid-packet: settle restores it from the ledger; the remaining shares are
/// grabbable, earlier grabbers cannot grab again, and no share is paid twice.
#[tokio::test]
async fn a_packet_redis_lost_is_restored_and_pays_no_share_twice() {
    let stack = Stack::new("restore").await;
    let id = stack.send("alice", json!({ "total_cents": 10_000, "count": 10, "expires_in_seconds": 600 })).await;
    let mut acknowledged = Acknowledged::new();
    for user in ["u0", "u1", "u2", "u3"] {
        let (status, body) = stack.grab(&id, user).await;
        acknowledge(&mut acknowledged, &id, user, status, &body);
    }
    assert_eq!(stack.settle().await.grabs_persisted, 4);

    stack.empty_redis(&[&id]).await;
    let (status, body) = stack.grab(&id, "u4").await;
    assert_eq!(status, 200, "an open packet Redis lost is loaded from the ledger by the grab that missed it: {body}");
    acknowledge(&mut acknowledged, &id, "u4", status, &body);
    assert_eq!(body["amount_cents"].as_u64(), Some(stack.recorded(&id).await.packet.shares()[4]), "share 5 next");
    for user in ["u0", "u3"] {
        let (status, body) = stack.grab(&id, user).await;
        assert_eq!((status, body["already_grabbed"].as_bool()), (200, Some(true)));
        assert_eq!(body["amount_cents"].as_u64(), Some(acknowledged[&id][user]));
    }
    for n in 5..10 {
        let user = format!("u{n}");
        let (status, body) = stack.grab(&id, &user).await;
        assert_eq!(status, 200, "{body}");
        acknowledge(&mut acknowledged, &id, &user, status, &body);
    }
    let (status, _) = stack.grab(&id, "u10").await;
    assert_eq!(status, 409, "exactly the shares not yet taken were restored");
    assert_eq!(acknowledged[&id].values().sum::<u64>(), 10_000, "no share paid twice");

    stack.settle().await;
    let recorded = stack.assert_settled_books(&id, &acknowledged[&id]).await;
    assert_eq!(recorded.status, PacketStatus::Finished);
}

/// History: the sender sees a packet at once, a grabber once settle recorded the grab, nobody
/// sees anyone else's; cursors page and belong to their owner.
#[tokio::test]
async fn history_shows_each_user_only_their_own_packets() {
    let stack = Stack::new("history").await;
    let mut sent = Vec::new();
    for n in 0..3u64 {
        sent.push(stack.send("alice", json!({ "total_cents": 100 + n, "count": 2 })).await);
        stack.clock.advance(5);
    }
    let (status, page) = stack.history("alice", "role=sent&limit=2").await;
    assert_eq!(status, 200);
    let first: Vec<&str> = page["items"].as_array().unwrap().iter().map(|i| i["packet_id"].as_str().unwrap()).collect();
    assert_eq!(first, [sent[2].as_str(), sent[1].as_str()], "newest first, at once");
    let cursor = page["next_cursor"].as_str().expect("a second page").to_owned();
    let (_, second) = stack.history("alice", &format!("role=sent&limit=2&cursor={cursor}")).await;
    assert_eq!(second["items"][0]["packet_id"], sent[0].as_str());
    let (status, stolen) = stack.history("mallory", &format!("role=sent&cursor={cursor}")).await;
    assert_eq!((status, stolen["error"]["field"].as_str()), (400, Some("cursor")), "a cursor is its owner's");

    let (_, grabbed) = stack.grab(&sent[0], "bob").await;
    let (_, before) = stack.history("bob", "role=received").await;
    assert_eq!(before["items"], json!([]), "received packets appear once settle recorded the grab");
    stack.settle().await;
    let (_, after) = stack.history("bob", "role=received").await;
    assert_eq!(after["items"][0]["packet_id"], sent[0].as_str());
    assert_eq!(after["items"][0]["amount_cents"], grabbed["amount_cents"]);
    assert_eq!(after["items"][0]["sender"], "alice");

    for (user, role) in [("carol", "sent"), ("carol", "received"), ("bob", "sent"), ("alice", "received")] {
        let (_, page) = stack.history(user, &format!("role={role}")).await;
        assert_eq!(page["items"], json!([]), "{user} sees no one else's {role} packets");
    }
}

/// The packet view: live while open; settled with best luck and refund from the ledger; the
/// grab fallback answers from the ledger once Redis no longer holds the packet.
#[tokio::test]
async fn packet_views_and_the_grab_fallback() {
    let stack = Stack::new("views").await;
    let finished = stack.send("alice", json!({ "total_cents": 1_000, "count": 3, "greeting": "恭喜发财" })).await;
    let expiring = stack.send("alice", json!({ "total_cents": 1_000, "count": 3, "expires_in_seconds": 60 })).await;
    let mut amounts = Vec::new();
    for user in ["bob", "carol", "dave"] {
        amounts.push(stack.grab(&finished, user).await.1["amount_cents"].as_u64().unwrap());
    }
    let (_, expiring_grab) = stack.grab(&expiring, "bob").await;

    let (status, live) = stack.view(&expiring, "erin").await;
    assert_eq!(status, 200);
    assert_eq!(
        (live["status"].as_str(), live["settled"].as_bool(), live["remaining_count"].as_u64()),
        (Some("open"), Some(false), Some(2))
    );
    assert_eq!(live["grabs"][0]["user"], "bob");
    let (_, done) = stack.view(&finished, "erin").await;
    assert_eq!(done["status"], "finished");
    let best = *amounts.iter().max().unwrap();
    let best_user = ["bob", "carol", "dave"][amounts.iter().position(|&a| a == best).unwrap()];
    assert_eq!(done["best_luck"], json!({ "user": best_user, "amount_cents": best }));

    stack.clock.advance(61_000);
    stack.settle().await;
    let (_, settled) = stack.view(&finished, "erin").await;
    assert_eq!((settled["settled"].as_bool(), settled["refund_cents"].as_u64()), (Some(true), Some(0)));
    assert_eq!(settled["best_luck"]["amount_cents"].as_u64(), Some(best));
    assert_eq!(settled["greeting"], "恭喜发财");
    let (_, expired) = stack.view(&expiring, "erin").await;
    assert_eq!(expired["status"], "expired");
    assert_eq!(expired["best_luck"], Value::Null);
    assert_eq!(expired["refund_cents"].as_u64(), Some(1_000 - expiring_grab["amount_cents"].as_u64().unwrap()));

    // Redis forgets both packets: grabs are answered from the ledger.
    stack.empty_redis(&[&finished, &expiring]).await;
    let (status, again) = stack.grab(&finished, "carol").await;
    assert_eq!(
        (status, again["already_grabbed"].as_bool(), again["amount_cents"].as_u64()),
        (200, Some(true), Some(amounts[1]))
    );
    assert_eq!(stack.grab(&finished, "zoe").await.0, 409);
    assert_eq!(stack.grab(&expiring, "zoe").await.0, 410);
    let (_, from_ledger) = stack.view(&finished, "erin").await;
    assert_eq!(from_ledger["grabs"].as_array().unwrap().len(), 3);

    let unknown = PacketId::random();
    assert_eq!(stack.grab(unknown.as_str(), "zoe").await.0, 404);
    let mut conn = stack.store().connection().await.unwrap();
    let verdict: Option<String> =
        redis::cmd("GET").arg(stack.store().keys(&unknown).lookup).query_async(&mut conn).await.unwrap();
    assert_eq!(
        verdict.as_deref(),
        Some("absent"),
        "an unknown id is remembered, so the next grab on it stops at Redis"
    );
    assert_eq!(stack.view(unknown.as_str(), "zoe").await.0, 404);
}

/// DynamoDB unreachable during settle: the run fails cleanly, the pending grabs stay in Redis,
/// and the next run completes: nothing lost, nothing doubled, one refund.
#[tokio::test]
async fn a_settle_run_that_cannot_reach_dynamodb_fails_cleanly_and_the_next_completes() {
    let stack = Stack::new("dynamo-down").await;
    let id = stack.send("alice", json!({ "total_cents": 1_000, "count": 4, "expires_in_seconds": 60 })).await;
    let mut acknowledged = Acknowledged::new();
    for user in ["bob", "carol"] {
        let (status, body) = stack.grab(&id, user).await;
        acknowledge(&mut acknowledged, &id, user, status, &body);
    }
    stack.clock.advance(61_000);

    let reachable = DynamoLedger::client_from_env().expect("a DynamoDB client");
    let unreachable =
        aws_sdk_dynamodb::Client::from_conf(reachable.config().to_builder().endpoint_url("http://127.0.0.1:1").build());
    let store = Arc::new(stack.store());
    let broken =
        Settler::new(store.clone(), DynamoLedger::new(unreachable, &stack.config)).with_clock(stack.clock.clone());
    let failed = broken.run(0..=15, None).await;
    assert!(matches!(failed, Err(SettleError::Unavailable { .. })), "{failed:?}");
    let live = store.snapshot(&PacketId::parse(&id).unwrap()).await.unwrap().expect("still in Redis");
    assert_eq!(live.pending().len(), 2, "the grabs wait in Redis for the next run");

    let summary = stack.settle().await;
    assert_eq!((summary.grabs_persisted, summary.finalised), (2, 1));
    let recorded = stack.assert_settled_books(&id, &acknowledged[&id]).await;
    assert_eq!(recorded.refund_item_cents, Some(1_000 - acknowledged[&id].values().sum::<u64>()));
    assert_eq!(stack.settle().await.refunded_cents, 0, "refunded once");
}
