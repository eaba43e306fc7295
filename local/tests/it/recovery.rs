//! Recovery never destroys (DESIGN invariant 10): when Redis and the ledger disagree after a
//! failover, a re-grab, a re-sync or a settle crash, every grab acknowledged after the point the
//! failover lost keeps its amount and reaches the ledger, the failover's own casualties are
//! re-granted or revoked with an event, and every packet is finalised with exactly one refund.
//!
//! A failover is what a replica that missed the newest writes hands over when promoted: the
//! packet's keys as they were some writes earlier (`DUMP` then, `RESTORE … REPLACE` now). Real
//! handlers, real Redis (or Valkey, one node or a cluster), DynamoDB Local. The randomized test
//! mixes grabs, repeats, cancels, expiries, settle passes (crashed at any fault point, or two at
//! once) and failovers over many seeds; `RECOVERY_SEEDS` sets how many (`make soak` runs more),
//! and a failing seed prints itself with the line that reproduces it.

use std::collections::{BTreeMap, HashMap};

use crate::support::stack::Stack;
use aws_sdk_dynamodb::types::AttributeValue;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use red_packets::adapters::redis::store::RETIRED_KEEP_MS;
use red_packets::domain::{EventType, Funds, PacketId, PacketStatus, TopUp, UserId};
use red_packets::funds::{reconcile, Cutoff};
use red_packets::ports::{SettleIndex, Wallets};
use red_packets::settle::{FaultPoint, SettleRequest};
use red_packets::Clock;
use serde_json::json;

/// The packet's keys as a lagging replica holds them: each key's `DUMP`, `None` where absent.
type KeysSnapshot = Vec<(String, Option<Vec<u8>>)>;

async fn dump_keys(stack: &Stack, id: &str) -> KeysSnapshot {
    let store = stack.store();
    let mut conn = store.connection().await.unwrap();
    let keys = store.keys(&PacketId::parse(id).unwrap());
    let mut snapshot = Vec::new();
    for key in [keys.packet, keys.pool, keys.grabs] {
        let dump: Option<Vec<u8>> = redis::cmd("DUMP").arg(&key).query_async(&mut conn).await.unwrap();
        snapshot.push((key, dump));
    }
    snapshot
}

/// A failover to a replica that holds `snapshot`: every key put back as it was then.
async fn fail_over_to(stack: &Stack, snapshot: &KeysSnapshot) {
    let store = stack.store();
    let mut conn = store.connection().await.unwrap();
    for (key, dump) in snapshot {
        let _: () = redis::cmd("DEL").arg(key).query_async(&mut conn).await.unwrap();
        if let Some(dump) = dump {
            let _: () = redis::cmd("RESTORE").arg(key).arg(0).arg(dump).query_async(&mut conn).await.unwrap();
        }
    }
}

async fn wallet_stack(name: &str, senders: &[&str]) -> Stack {
    let mut config = red_packets::Config::from_env().expect("configuration");
    config.funds = Funds::Wallet;
    let stack = Stack::with_config(name, config).await;
    for sender in senders {
        let funding = TopUp {
            user: UserId::from_claim(sender).unwrap(),
            amount_cents: 10_000_000,
            reference: format!("fund-{sender}"),
        };
        stack.ledger.top_up(&funding, stack.clock.now_ms()).await.unwrap();
    }
    stack
}

/// Settles until the packet is finalised (a few passes, past its expiry of at most 10 minutes).
async fn settle_out(stack: &Stack, id: &str) {
    stack.clock.advance(601_000);
    let mut summaries = Vec::new();
    for _ in 0..6 {
        summaries.push(stack.settle().await);
        if stack.recorded(id).await.status != PacketStatus::Open {
            return;
        }
    }
    let live = stack.store().snapshot(&PacketId::parse(id).unwrap()).await.unwrap();
    panic!("{id} is still open after six settle passes past its expiry: {summaries:?}, Redis holds {live:?}");
}

/// The first reproduction: bob grabs and settle records it; a failover loses bob's
/// grab in Redis; bob taps again and gets the same share at another time. That is the same
/// grab: the packet finalises with its refund paid once, nothing quarantined.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_grab_after_a_failover_is_the_same_grab_and_the_refund_is_paid() {
    let stack = wallet_stack("regrab", &["alice"]).await;
    let id = stack.send("alice", json!({ "total_cents": 1_000, "count": 4, "expires_in_seconds": 60 })).await;
    let before = dump_keys(&stack, &id).await;
    let (status, first) = stack.grab(&id, "bob").await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(stack.settle().await.grabs_persisted, 1);
    fail_over_to(&stack, &before).await;

    stack.clock.advance(1_500);
    let (status, again) = stack.grab(&id, "bob").await;
    assert_eq!((status, again["already_grabbed"].as_bool()), (200, Some(false)), "Redis lost bob's grab: {again}");
    assert_eq!(again["amount_cents"], first["amount_cents"], "the same share, the same amount");

    settle_out(&stack, &id).await;
    let summary = stack.settle().await;
    assert_eq!((summary.quarantined, summary.mismatches), (0, 0), "{summary:?}");
    let paid = HashMap::from([("bob".to_owned(), first["amount_cents"].as_u64().unwrap())]);
    let recorded = stack.assert_settled_books(&id, &paid).await;
    assert_eq!(recorded.refund_cents, Some(1_000 - paid["bob"]), "the sender's refund is paid");
    assert_eq!(recorded.grabs[0].at_ms, stack.recorded(&id).await.grabs[0].at_ms);
    let books = reconcile(&stack.ledger, Cutoff::quiet(), 1).await.unwrap();
    assert!(books.balanced(), "{:?}", books.differences);
}

/// The second reproduction: a failover hands share 1, which the ledger gave to b, to c;
/// settle's next pass re-syncs the packet while users keep grabbing. No grab acknowledged after
/// the failover loses its share: each keeps its amount in the ledger, and c, the failover's own
/// casualty, is re-granted the next unclaimed share with a `GrabRegranted` event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_sync_under_live_grabs_keeps_every_grab_acknowledged_meanwhile() {
    let stack = std::sync::Arc::new(wallet_stack("resync-live", &["alice"]).await);
    let mut packets = Vec::new();
    for _ in 0..4 {
        packets
            .push(stack.send("alice", json!({ "total_cents": 10_000, "count": 100, "expires_in_seconds": 600 })).await);
    }
    let mut acknowledged: HashMap<(String, String), u64> = HashMap::new();
    let mut before = Vec::new();
    for id in &packets {
        before.push(dump_keys(&stack, id).await);
        let (status, b) = stack.grab(id, "b").await;
        assert_eq!(status, 200, "{b}");
        acknowledged.insert((id.clone(), "b".into()), b["amount_cents"].as_u64().unwrap());
    }
    assert_eq!(stack.settle().await.grabs_persisted, 4);
    for (id, before) in packets.iter().zip(&before) {
        fail_over_to(&stack, before).await;
        let (status, c) = stack.grab(id, "c").await;
        assert_eq!(status, 200, "the promoted replica hands share 1 out again: {c}");
    }

    // Grabbers keep grabbing every packet while settle re-syncs them, pass after pass: the
    // passes start once the grabbers are well under way.
    let grabbed = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let grabbers: Vec<_> = (0..4)
        .map(|worker| {
            let stack = stack.clone();
            let packets = packets.clone();
            let grabbed = grabbed.clone();
            tokio::spawn(async move {
                let mut answers = Vec::new();
                for n in 0..20 {
                    let user = format!("u{worker}-{n}");
                    for id in &packets {
                        let (status, answer) = stack.grab(id, &user).await;
                        if status == 200 && answer["already_grabbed"] == false {
                            answers.push((id.clone(), user.clone(), answer["amount_cents"].as_u64().unwrap()));
                            grabbed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        // About 33 grabs a second per packet, as in the issue: the grabbing
                        // outlasts several settle passes and their re-syncs.
                        tokio::time::sleep(std::time::Duration::from_millis(7)).await;
                    }
                }
                answers
            })
        })
        .collect();
    let settling = {
        let stack = stack.clone();
        let grabbed = grabbed.clone();
        tokio::spawn(async move {
            while grabbed.load(std::sync::atomic::Ordering::Relaxed) < 24 {
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            let mut summary = red_packets::settle::SettleSummary::default();
            for _ in 0..6 {
                let pass = stack.settle().await;
                summary.regranted += pass.regranted;
                summary.resynced += pass.resynced;
            }
            summary
        })
    };
    for grabber in grabbers {
        for (id, user, amount) in grabber.await.unwrap() {
            acknowledged.insert((id, user), amount);
        }
    }
    let summary = settling.await.unwrap();
    assert!(summary.resynced >= 4, "each packet re-synced at least once: {summary:?}");
    for id in &packets {
        settle_out(&stack, id).await;
        let recorded = stack.recorded(id).await;
        let events = stack.ledger.casualties(&PacketId::parse(id).unwrap()).await.unwrap();
        let c_event = events.iter().find(|event| event.user.as_str() == "c").expect("c's casualty is recorded");
        assert_eq!(c_event.event_type, EventType::GrabRegranted, "share 100 of 100 is never reached here");
        for grab in &recorded.grabs {
            if let Some(amount) = acknowledged.get(&(id.clone(), grab.user.to_string())) {
                assert_eq!(grab.amount_cents, *amount, "{id}: {} keeps the amount acknowledged", grab.user);
            }
        }
        let paid: u64 = recorded.grabs.iter().map(|grab| grab.amount_cents).sum();
        assert_eq!(paid + recorded.refund_item_cents.unwrap_or(0), 10_000, "{id}: grabs + refund == total");
    }
    let mut lost = Vec::new();
    for id in &packets {
        let recorded = stack.recorded(id).await;
        for ((packet, user), amount) in &acknowledged {
            if packet == id && !recorded.grabs.iter().any(|grab| grab.user.as_str() == user) {
                lost.push((user.clone(), *amount));
            }
        }
    }
    assert!(lost.is_empty(), "every grab acknowledged after the failover reached the ledger: {lost:?}");
    eprintln!(
        "figure: re-sync under live grabs: {} grabs acknowledged over 4 packets, 0 lost, {} re-syncs, {} casualties re-granted",
        acknowledged.len(),
        summary.resynced,
        summary.regranted
    );
    let books = reconcile(&stack.ledger, Cutoff::quiet(), 1).await.unwrap();
    assert!(books.balanced(), "{:?}", books.differences);
}

/// With every share taken in the ledger, a failover's casualty has no share to be given: the
/// grab is revoked, never credited, with a `GrabRevoked` event and a line in the user's history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_casualty_with_no_share_left_is_revoked_with_an_event_and_a_history_line() {
    let stack = wallet_stack("revoke", &["alice"]).await;
    let id = stack.send("alice", json!({ "total_cents": 300, "count": 2, "expires_in_seconds": 60 })).await;
    let before = dump_keys(&stack, &id).await;
    for user in ["bob", "carol"] {
        assert_eq!(stack.grab(&id, user).await.0, 200);
    }
    assert_eq!(stack.settle().await.finalised, 1);
    fail_over_to(&stack, &before).await;
    // A grab function started after the failover (an instance that saw the packet sell out
    // before answers from its memo instead).
    let stack = stack.on_redis(&stack.config.redis.url).await;
    let (status, dave) = stack.grab(&id, "dave").await;
    assert_eq!(status, 200, "{dave}");
    let summary = stack.settle().await;
    assert_eq!((summary.revoked, summary.regranted), (1, 0), "{summary:?}");
    let events = stack.ledger.casualties(&PacketId::parse(&id).unwrap()).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!((events[0].event_type, events[0].user.as_str()), (EventType::GrabRevoked, "dave"));
    assert_eq!(Some(events[0].amount_cents), dave["amount_cents"].as_u64());
    let (status, history) = stack.history("dave", "role=received").await;
    assert_eq!(status, 200, "{history}");
    assert_eq!(history["items"][0]["revoked_cents"], dave["amount_cents"], "{history}");
    assert_eq!(stack.ledger.balance(&UserId::from_claim("dave").unwrap()).await.unwrap(), 0, "never credited");
    let (status, again) = stack.grab(&id, "dave").await;
    assert_eq!(status, 409, "the packet is finished: {again}");
    let books = reconcile(&stack.ledger, Cutoff::quiet(), 1).await.unwrap();
    assert!(books.balanced(), "{:?}", books.differences);
}

/// Redis lost a packet's record but not its log (the hash gone, the pool and log not): a
/// restore must not load shares again beside the old ones; settle records the log's grabs,
/// then replaces the packet whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_packet_whose_record_alone_was_lost_is_re_synced_not_loaded_twice() {
    let stack = wallet_stack("partial", &["alice"]).await;
    let id = stack.send("alice", json!({ "total_cents": 1_000, "count": 5, "expires_in_seconds": 60 })).await;
    let mut paid = HashMap::new();
    for user in ["bob", "carol"] {
        let (_, grab) = stack.grab(&id, user).await;
        paid.insert(user.to_owned(), grab["amount_cents"].as_u64().unwrap());
    }
    let store = stack.store();
    let keys = store.keys(&PacketId::parse(&id).unwrap());
    let mut conn = store.connection().await.unwrap();
    let _: () = redis::cmd("DEL").arg(&keys.packet).query_async(&mut conn).await.unwrap();
    let started = std::time::Instant::now();
    let (status, erin) = stack.grab(&id, "erin").await;
    assert_eq!(status, 503, "a grab waits for settle's re-sync, never loads the packet beside its log: {erin}");
    assert!(started.elapsed() < std::time::Duration::from_secs(3), "promptly: {:?}", started.elapsed());
    let summary = stack.settle().await;
    assert_eq!((summary.grabs_persisted, summary.resynced), (2, 1), "{summary:?}");
    let pool: u32 = redis::cmd("LLEN").arg(&keys.pool).query_async(&mut conn).await.unwrap();
    assert_eq!(pool, 3 + 2, "three shares left, none twice, then the pool's two end marks");
    let (status, bob) = stack.grab(&id, "bob").await;
    assert_eq!((status, bob["already_grabbed"].as_bool()), (200, Some(true)), "{bob}");
    let (_, dave) = stack.grab(&id, "dave").await;
    paid.insert("dave".into(), dave["amount_cents"].as_u64().unwrap());
    settle_out(&stack, &id).await;
    stack.assert_settled_books(&id, &paid).await;
}

/// A re-sync of a packet the ledger already finalised closes it before retiring it; a
/// quarantined packet is closed too: neither acknowledges a grab after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finalised_or_quarantined_packet_takes_no_grab_after_a_re_sync() {
    let stack = wallet_stack("closed-after", &["alice"]).await;
    let id = stack.send("alice", json!({ "total_cents": 400, "count": 2, "expires_in_seconds": 60 })).await;
    let before = dump_keys(&stack, &id).await;
    stack.grab(&id, "bob").await;
    stack.grab(&id, "carol").await;
    assert_eq!(stack.settle().await.finalised, 1);
    // Retired keys linger a while; a failover brings back the packet open, before the grabs.
    fail_over_to(&stack, &before).await;
    let stack = stack.on_redis(&stack.config.redis.url).await;
    let (status, _) = stack.grab(&id, "dave").await;
    assert_eq!(status, 200, "the stale replica acknowledges dave");
    let summary = stack.settle().await;
    assert_eq!(summary.revoked, 1, "{summary:?}");
    let (status, erin) = stack.grab(&id, "erin").await;
    assert_ne!(status, 200, "a packet the ledger finalised takes no grab after its re-sync: {erin}");

    // A packet settle sets aside while it is still open is closed to grabs.
    let odd = stack.send("alice", json!({ "total_cents": 400, "count": 4, "expires_in_seconds": 60 })).await;
    stack.grab(&odd, "bob").await;
    let odd_id = PacketId::parse(&odd).unwrap();
    let shard = odd_id.settle_shard(stack.config.settle_shards);
    stack.store().quarantine(&odd_id, shard, stack.clock.now_ms()).await.unwrap();
    let (status, answer) = stack.grab(&odd, "frank").await;
    assert_ne!(status, 200, "a quarantined packet takes no grab: {answer}");
    let (status, bob) = stack.grab(&odd, "bob").await;
    assert_eq!((status, bob["already_grabbed"].as_bool()), (200, Some(true)), "bob's grab still answers: {bob}");
}

/// A quarantined packet is listed in every settle summary; once the ledger explains it, the
/// hourly sweep takes it out and settles it by itself, and an operator's `{"release": [id]}`
/// does the same at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quarantined_packet_is_listed_and_leaves_once_the_ledger_explains_it() {
    let stack = wallet_stack("quarantine-ops", &["alice"]).await;
    let client = red_packets::adapters::DynamoLedger::client_from_env().expect("a DynamoDB client");
    let mut packets = Vec::new();
    let mut records = Vec::new();
    for _ in 0..2 {
        let id = stack.send("alice", json!({ "total_cents": 300, "count": 3, "expires_in_seconds": 60 })).await;
        assert_eq!(stack.grab(&id, "bob").await.0, 200);
        let key = |id: &str| {
            std::collections::HashMap::from([
                ("pk".to_owned(), AttributeValue::S(format!("PKT#{id}"))),
                ("sk".to_owned(), AttributeValue::S("META".into())),
            ])
        };
        let table = &stack.config.table_name;
        let meta = client.get_item().table_name(table).set_key(Some(key(&id))).send().await.unwrap();
        records.push(meta.item.unwrap());
        client.delete_item().table_name(table).set_key(Some(key(&id))).send().await.unwrap();
        packets.push(id);
    }
    stack.clock.advance(61_000);
    let summary = stack.settle().await;
    assert_eq!(summary.quarantined, 2, "{summary:?}");
    // Reconciliation reports the grabs of packets without a record (with the wallet, their
    // shares' claims stand for them); it never aborts, and says each difference once.
    let books = reconcile(&stack.ledger, Cutoff::quiet(), 1).await.expect("a report, not an abort");
    for id in &packets {
        let named = books
            .differences
            .iter()
            .any(|d| d.subject == format!("packet:{id}") && d.what.contains("share claim of bob"));
        assert!(named, "{id}: {:?}", books.differences);
    }
    let mut once = books.differences.clone();
    once.dedup();
    assert_eq!(once, books.differences, "no difference reported twice");
    let listed: Vec<String> = summary.in_quarantine.iter().map(|id| id.to_string()).collect();
    assert_eq!(listed.len(), 2, "both listed for operators: {listed:?}");
    assert!(packets.iter().all(|id| listed.contains(id)));

    // The records come back (a restored table, say): explained.
    for record in records {
        client.put_item().table_name(&stack.config.table_name).set_item(Some(record)).send().await.unwrap();
    }
    let unattributed = settle::handle(
        &stack.functions.settler,
        lambda_runtime::LambdaEvent::new(json!({ "release": [packets[0]] }), Default::default()),
    )
    .await
    .unwrap_err();
    assert!(unattributed.to_string().starts_with("operator:"), "a release names its operator: {unattributed}");
    let release = json!({ "release": [packets[0]], "operator": "ops.anna", "reason": "records restored" });
    let summary = stack.settle_with(release).await;
    assert_eq!((summary.released, summary.finalised), (1, 1), "the operator's release: {summary:?}");
    let day = red_packets::ports::Books::business_day(&stack.ledger).day_of(stack.clock.now_ms());
    let trail = red_packets::ports::AuditTrail::audit_of_day(&stack.ledger, &day).await.unwrap();
    let entry =
        trail.iter().find(|entry| entry.subject == packets[0]).expect("the release is in the day's audit trail");
    assert_eq!((entry.actor.as_str(), entry.reason.as_str()), ("ops.anna", "records restored"));
    assert_eq!(entry.action, red_packets::domain::audit::AuditAction::PacketReleased);
    assert_eq!(summary.in_quarantine.len(), 1, "{summary:?}");
    // The sweep (a shard at a time, every shard hourly) takes the other one out by itself.
    let (mut released, mut finalised, mut sweeps) = (0, 0, 0);
    while released == 0 && sweeps < 17 {
        stack.clock.advance(red_packets::settle::SWEEP_PERIOD_MS / 16 + 1_000);
        let summary = stack.settle().await;
        (released, finalised, sweeps) = (summary.released, summary.finalised, sweeps + 1);
    }
    assert_eq!((released, finalised), (1, 1), "the sweep's release, within the hour");
    assert!(stack.settle().await.in_quarantine.is_empty());
    for id in &packets {
        assert_eq!(stack.recorded(id).await.refund_cents, Some(300 - stack.recorded(id).await.grabs[0].amount_cents));
    }
}

/// `SETTLE_SHARDS` lowered (16 to 4) while Redis lost its data: the recovery sweep still finds
/// the packets sent under the old layout, whose open-index partitions the new one does not name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lowered_settle_shards_still_sweeps_the_packets_of_the_old_layout() {
    let stack = wallet_stack("lowered-shards", &["alice"]).await;
    let mut packets = Vec::new();
    while packets.len() < 3 {
        let id = stack.send("alice", json!({ "total_cents": 200, "count": 2, "expires_in_seconds": 60 })).await;
        if PacketId::parse(&id).unwrap().settle_shard(16) >= 4 {
            packets.push(id);
        }
    }
    assert_eq!(stack.settle().await.swept_shards, 16, "a first run sweeps every shard (and records the layout)");
    let ids: Vec<&str> = packets.iter().map(String::as_str).collect();
    stack.empty_redis(&ids).await;
    let lowered = stack.with_settle_shards(4).await;
    lowered.clock.advance(61_000);
    lowered.settle().await;
    for id in &packets {
        assert_eq!(lowered.recorded(id).await.refund_cents, Some(200), "{id} of the old layout is found and refunded");
    }
}

/// One acknowledged answer to a client: who, how much, fresh or a repeat, and when (the
/// schedule's step).
#[derive(Debug, Clone)]
struct Answer {
    step: usize,
    user: String,
    amount: u64,
    fresh: bool,
}

/// The holds a schedule placed and lifted, each user's steps in order: when (the stack's clock)
/// and whether it was a placing.
#[derive(Default)]
struct HoldSteps(HashMap<String, Vec<(i64, bool)>>);

impl HoldSteps {
    /// Whether `user` is surely held at `at_ms`: a hold placed at least `bound_ms` before, and
    /// no lift since (within the bound either answer is right).
    fn surely_held(&self, user: &str, at_ms: i64, bound_ms: i64) -> bool {
        self.last_before(user, at_ms).is_some_and(|(since, placed)| placed && at_ms - since >= bound_ms)
    }

    /// Whether `user` is surely free at `at_ms`: never held, or lifted at least `bound_ms` before.
    fn surely_free(&self, user: &str, at_ms: i64, bound_ms: i64) -> bool {
        self.last_before(user, at_ms).is_none_or(|(since, placed)| !placed && at_ms - since >= bound_ms)
    }

    fn last_before(&self, user: &str, at_ms: i64) -> Option<(i64, bool)> {
        self.0.get(user)?.iter().rev().find(|(at, _)| *at <= at_ms).copied()
    }
}

impl Answer {
    /// The answer a grab by `user` at `step` acknowledged, if it did (a 200).
    fn to(step: usize, user: &str, status: u16, answer: &serde_json::Value) -> Option<Answer> {
        (status == 200).then(|| Answer {
            step,
            user: user.to_owned(),
            amount: answer["amount_cents"].as_u64().unwrap_or(0),
            fresh: answer["already_grabbed"] == false,
        })
    }
}

/// One schedule of the randomized fault test, from `seed`; the failures it found, empty when
/// every check held.
async fn run_schedule(stack: &Stack, seed: u64) -> Vec<String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let count = rng.random_range(2..=6u32);
    let total = u64::from(count) * rng.random_range(10..=60u64);
    // Three schedules in ten are a campaign's: the packet opens up to 40 s after its send.
    let opens_at_ms = rng.random_bool(0.3).then(|| stack.clock.now_ms() + rng.random_range(1..=40_000i64));
    let mut body = json!({ "total_cents": total, "count": count, "expires_in_seconds": 60 });
    if let Some(opens_at_ms) = opens_at_ms {
        body["opens_at"] = json!(red_packets::clock::rfc3339(opens_at_ms));
    }
    let id = stack.send("alice", body).await;
    let users: Vec<String> = (0..count + 3).map(|n| format!("s{seed}-u{n}")).collect();
    let mut snapshots: Vec<KeysSnapshot> = Vec::new();
    // Each failover: the step it happened at, and the step whose state it restored.
    let mut failovers: Vec<(usize, usize)> = Vec::new();
    let mut answers: Vec<Answer> = Vec::new();
    let mut trace: Vec<String> = Vec::new();
    // Holds in the mix: who was held and freed when, and every grab's time and answer.
    let mut holds = HoldSteps::default();
    let mut grabbed_at: Vec<(i64, String, u16, String)> = Vec::new();
    let steps = rng.random_range(12..=30usize);
    for step in 0..steps {
        snapshots.push(dump_keys(stack, &id).await);
        match rng.random_range(0..100u32) {
            0..=54 => {
                let user = &users[rng.random_range(0..users.len())];
                let (status, answer) = stack.grab(&id, user).await;
                trace.push(format!("{step}: grab {user} -> {status} {}", answer["amount_cents"]));
                let code = answer["error"]["code"].as_str().unwrap_or_default().to_owned();
                grabbed_at.push((stack.clock.now_ms(), user.clone(), status, code));
                answers.extend(Answer::to(step, user, status, &answer));
            }
            55..=69 => {
                let crash = rng.random_bool(0.3).then(|| FaultPoint::ALL[rng.random_range(0..FaultPoint::ALL.len())]);
                let twice = rng.random_bool(0.2);
                trace.push(format!("{step}: settle crash={crash:?} twice={twice}"));
                let settler = stack.settler(crash);
                let shards = settler.shards_of(&SettleRequest::default());
                if twice {
                    let other = stack.settler(None);
                    let _ = tokio::join!(settler.run(shards.clone(), None), other.run(shards, None));
                } else {
                    let _ = settler.run(shards, None).await;
                }
            }
            70..=81 if step >= 2 => {
                let back = rng.random_range(1..=3usize).min(snapshots.len() - 1);
                let restored = snapshots.len() - 1 - back;
                trace.push(format!("{step}: failover to the state before step {restored}"));
                fail_over_to(stack, &snapshots[restored]).await;
                failovers.push((step, restored));
            }
            82..=84 => {
                // A settle pass while three users grab: a re-sync meets grabs in flight.
                let grabbing: Vec<String> = (0..3).map(|_| users[rng.random_range(0..users.len())].clone()).collect();
                let delays: Vec<u64> = grabbing.iter().map(|_| rng.random_range(0..60u64)).collect();
                trace.push(format!("{step}: settle while {grabbing:?} grab (after {delays:?} ms)"));
                let settler = stack.settler(None);
                let shards = settler.shards_of(&SettleRequest::default());
                let packet = id.as_str();
                let grabs = futures::future::join_all(grabbing.iter().zip(&delays).map(|(user, &delay)| async move {
                    tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
                    stack.grab(packet, user).await
                }));
                let (_, answered) = tokio::join!(settler.run(shards, None), grabs);
                for (user, (status, answer)) in grabbing.iter().zip(answered) {
                    trace.push(format!("{step}:   grab {user} -> {status} {}", answer["amount_cents"]));
                    answers.extend(Answer::to(step, user, status, &answer));
                }
            }
            85..=86 => {
                trace.push(format!("{step}: cancel"));
                stack.cancel(&id, "alice").await;
            }
            87..=91 => {
                trace.push(format!("{step}: clock +30 s"));
                stack.clock.advance(30_000);
            }
            92..=94 => {
                // An operator holds a user from grabbing, or lifts a hold placed earlier.
                let user = &users[rng.random_range(0..users.len())];
                let place = !holds.0.get(user).and_then(|steps| steps.last()).is_some_and(|(_, placed)| *placed);
                let (route, body) = if place {
                    ("POST /ops/v1/users/{user}/hold", json!({ "scope": "grab", "reason": format!("seed {seed}") }))
                } else {
                    ("POST /ops/v1/users/{user}/hold/lift", json!({ "reason": format!("seed {seed}") }))
                };
                let (status, answer) = stack.ops("risk-desk", route, &[("user", user)], Some(&body)).await;
                trace.push(format!("{step}: {} {user} -> {status}", if place { "hold" } else { "lift" }));
                if status == 200 {
                    holds.0.entry(user.clone()).or_default().push((stack.clock.now_ms(), place));
                } else {
                    trace.push(format!("{step}:   {answer}"));
                }
            }
            _ => {
                trace.push(format!("{step}: clock +1 s"));
                stack.clock.advance(1_000);
            }
        }
    }
    stack.clock.advance(120_000);
    let mut finalised = false;
    for _ in 0..6 {
        stack.settle().await;
        if stack.recorded(&id).await.status != PacketStatus::Open {
            finalised = true;
            break;
        }
    }
    // Past the retired keys' lapse: a packet a failover brought back is looked at once more.
    stack.clock.advance(RETIRED_KEEP_MS + 120_000);
    stack.settle().await;
    let recorded = stack.recorded(&id).await;
    let casualties = stack.ledger.casualties(&PacketId::parse(&id).unwrap()).await.unwrap();
    let mut failures = Vec::new();
    if !finalised {
        failures.push("the packet is not finalised after six passes past its expiry".to_owned());
    }
    // No share paid twice: one grab item per user, one per share, never over the total.
    let mut by_seq = BTreeMap::new();
    for grab in &recorded.grabs {
        if by_seq.insert(grab.seq, grab.user.to_string()).is_some() {
            failures.push(format!("share {} paid twice", grab.seq));
        }
    }
    if let Some(early) =
        recorded.grabs.iter().find(|grab| opens_at_ms.is_some_and(|opens_at_ms| grab.at_ms < opens_at_ms))
    {
        failures.push(format!("{} grabbed at {} ms, before the opening at {opens_at_ms:?}", early.user, early.at_ms));
    }
    let paid: u64 = recorded.grabs.iter().map(|grab| grab.amount_cents).sum();
    let refund = recorded.refund_item_cents.unwrap_or(0);
    if paid + refund != total || recorded.refund_cents != Some(refund) {
        failures
            .push(format!("grabs {paid} + refund {refund} (recorded {:?}) != total {total}", recorded.refund_cents));
    }
    let ledger_amount: HashMap<&str, u64> =
        recorded.grabs.iter().map(|grab| (grab.user.as_str(), grab.amount_cents)).collect();
    let event_of = |user: &str| casualties.iter().find(|event| event.user.as_str() == user);
    for answer in answers.iter().filter(|answer| answer.fresh) {
        // Lost by a failover that restored a state from before it, after it.
        let lost = failovers.iter().any(|&(at, restored)| at > answer.step && restored <= answer.step);
        let held = ledger_amount.get(answer.user.as_str()).copied();
        match (held, event_of(&answer.user)) {
            (Some(amount), _) if amount == answer.amount => {}
            // Another share instead: a re-grant, with its event carrying the share held now.
            (Some(amount), Some(event))
                if event.event_type == EventType::GrabRegranted && event.amount_cents == amount => {}
            (None, Some(event)) if event.event_type == EventType::GrabRevoked => {}
            (None, None) if lost => {}
            // A user the ledger pays for an earlier grab that a failover lost, acknowledged again.
            (Some(_), None)
                if lost
                    || answers.iter().any(|earlier| {
                        earlier.user == answer.user
                            && earlier.step < answer.step
                            && ledger_amount.get(earlier.user.as_str()) == Some(&earlier.amount)
                    }) => {}
            (held, event) => failures.push(format!(
                "{} acknowledged {} at step {} (lost by a failover: {lost}); the ledger holds {held:?}, event {:?}",
                answer.user,
                answer.amount,
                answer.step,
                event.map(|event| (event.event_type, event.amount_cents))
            )),
        }
    }
    // A hold stops its user's grabs within the refresh, and a lift frees them as fast.
    let bound_ms = stack.config.hold_refresh.as_millis() as i64;
    for (at_ms, user, status, code) in &grabbed_at {
        if *status == 200 && holds.surely_held(user, *at_ms, bound_ms) {
            failures.push(format!("{user} grabbed at {at_ms} ms while held past the refresh"));
        }
        if code == "account_held" && holds.surely_free(user, *at_ms, bound_ms) {
            failures.push(format!("{user} refused as held at {at_ms} ms, lifted (or never held) past the refresh"));
        }
    }
    if !failures.is_empty() {
        failures.push(format!(
            "schedule of seed {seed} (packet {id}, {count} shares of {total}, opening at {opens_at_ms:?}):\n  {}",
            trace.join("\n  ")
        ));
    }
    failures
}

/// Many seeds of a schedule of grabs, repeats, cancels, expiries, settle passes (crashed at a
/// random fault point, or two at once), account holds placed and lifted, and failovers that
/// restore the packet's keys to a state a random number of steps earlier. Checked over what the
/// clients were told: no share paid twice; every grab acknowledged after a failover's lost point
/// keeps its amount in the ledger; every casualty re-granted or revoked with its event; every
/// packet finalised with exactly one refund; no grab paid to a user held past the refresh, none
/// refused to one freed past it; the books balance. `RECOVERY_SEEDS` (default 16) and `RECOVERY_SEED_FROM` choose
/// the seeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn randomized_failovers_never_destroy_an_acknowledged_grab() {
    let seeds: u64 = std::env::var("RECOVERY_SEEDS").ok().and_then(|n| n.parse().ok()).unwrap_or(16);
    let from: u64 = std::env::var("RECOVERY_SEED_FROM").ok().and_then(|n| n.parse().ok()).unwrap_or(1);
    let stack = wallet_stack("recovery-fuzz", &["alice"]).await;
    let started = std::time::Instant::now();
    let mut failed = Vec::new();
    for seed in from..from + seeds {
        let failures = run_schedule(&stack, seed).await;
        if !failures.is_empty() {
            eprintln!("seed {seed} failed (reproduce: RECOVERY_SEEDS=1 RECOVERY_SEED_FROM={seed} cargo test -p local --test it recovery::randomized):\n{}", failures.join("\n"));
            failed.push(seed);
        }
    }
    let books = reconcile(&stack.ledger, Cutoff::quiet(), 1).await.unwrap();
    eprintln!(
        "figure: randomized recovery: {seeds} seeds from {from} in {:.1} s, {} failed, books balanced: {}",
        started.elapsed().as_secs_f64(),
        failed.len(),
        books.balanced()
    );
    assert!(failed.is_empty(), "seeds that failed: {failed:?}");
    assert!(books.balanced(), "{:?}", books.differences);
}
