//! A fleet's own faults, through the real handlers. On a Redis Cluster of the test's own: a hot
//! packet's slot moved to another shard while users grab it (online resharding), and a shard's
//! primary killed mid-flood and its replica promoted. On DynamoDB: throttling injected under the
//! SDK (support/throttled.rs) on settle's writes, a send's transaction and a grab's read of the
//! ledger. What a user sees (a slower grab, never an error where none is needed) and what the
//! ledger keeps (every acknowledged grab, every cent once) are the assertions; the windows,
//! counts and latencies are printed as `figure:` lines, which RELIABILITY.md carries.
//!
//! A 503 is told by the reason its log line gives (captured per grab, `support::reasons`): a redirection,
//! `TRYAGAIN` or a migrating slot reaching a user is a defect, never allowed; a timeout the machine
//! caused (a busy CI machine stalls a process for longer than the grab's limit, twice in a row,
//! since the grab path asks a timed-out call again once) is counted, bounded and reported.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::cluster::{Migration, OwnCluster};
use crate::support::reasons::{grab_telling_why, is_machine_timeout};
use crate::support::stack::Stack;
use crate::support::throttled::{Rule, Throttler};
use red_packets::domain::Funds;
use red_packets::Config;
use serde_json::{json, Value};

/// A grab's deadline in these tests: `REDIS_TIMEOUT_MS`'s default, as deployed.
const DEADLINE: Duration = Duration::from_millis(500);
/// Concurrent callers, each grabbing in a loop with a pause between its grabs.
const CALLERS: usize = 24;
const PAUSE: Duration = Duration::from_millis(150);
const PACKETS: usize = 6;
/// Grabs a packet is left short of its shares, so none sells out mid-test.
const SPARE_SHARES: u32 = 10;
const DAY_MS: i64 = 24 * 3_600_000;

/// One grab as its caller saw it, and the reason its log line gave for a 503.
struct Answer {
    packet: usize,
    user: String,
    status: u16,
    body: Value,
    started: Instant,
    took: Duration,
    reason: Option<String>,
}

impl Answer {
    /// A 503 the machine caused: Redis gave no answer within the grab's limit (the store's own
    /// bound, or the client's response timeout), twice.
    fn timed_out(&self) -> bool {
        self.status == 503 && self.reason.as_deref().is_some_and(is_machine_timeout)
    }
}

/// The 503s among `answers` that no timeout of the machine explains (none is allowed), after
/// checking that those it explains stay within one in a hundred grabs (and at most 3 in all
/// for floods under 300), printed as a figure.
fn unexplained_unavailable<'a>(name: &str, answers: &'a [Answer]) -> Vec<&'a Answer> {
    let timed_out = answers.iter().filter(|answer| answer.timed_out()).count();
    eprintln!("figure: {name}: {timed_out} of {} grabs answered 503 after two timeouts in a row", answers.len());
    assert!(
        timed_out <= (answers.len() / 100).max(3),
        "{name}: {timed_out} of {} grabs timed out twice: more than a busy machine explains",
        answers.len()
    );
    answers.iter().filter(|answer| answer.status == 503 && !answer.timed_out()).collect()
}

fn cluster_config(cluster: &OwnCluster) -> Config {
    let mut config = Config::from_env().expect("configuration");
    config.redis.url = cluster.url();
    config.redis.cluster = true;
    config.redis.timeout = DEADLINE;
    config.limits.max_count = 1_000;
    config.limits.max_total_cents = 100_000;
    config
}

/// `PACKETS` packets of `shares` shares, each grabbed once already (its log exists).
async fn hot_packets(stack: &Stack, shares: u32) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..PACKETS {
        let id = stack.send("brand", json!({ "total_cents": 100_000, "count": shares })).await;
        let (status, body) = stack.grab(&id, "first").await;
        assert_eq!(status, 200, "{body}");
        ids.push(id);
    }
    ids
}

/// `CALLERS` callers grab `ids` round the packets until `stop`, each user once, leaving each
/// packet [`SPARE_SHARES`] of its `shares`; every answer.
fn flood(
    stack: &Arc<Stack>,
    ids: &[String],
    shares: u32,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<Vec<Answer>>> {
    let budgets: Arc<Vec<AtomicU32>> = Arc::new((0..ids.len()).map(|_| AtomicU32::new(1)).collect());
    (0..CALLERS)
        .map(|caller| {
            let (stack, ids, stop, budgets) = (stack.clone(), ids.to_vec(), stop.clone(), budgets.clone());
            tokio::spawn(async move {
                let mut answers = Vec::new();
                for n in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let packet = (caller + n) % ids.len();
                    if budgets[packet].fetch_add(1, Ordering::SeqCst) >= shares - SPARE_SHARES {
                        tokio::time::sleep(PAUSE).await;
                        continue;
                    }
                    let user = format!("caller-{caller}-{n}");
                    let started = Instant::now();
                    let (status, body, reason) = grab_telling_why(&stack, &ids[packet], &user).await;
                    let took = started.elapsed();
                    answers.push(Answer { packet, user, status, body, started, took, reason });
                    tokio::time::sleep(PAUSE).await;
                }
                answers
            })
        })
        .collect()
}

/// The `q`-quantile of `took` among `answers`.
fn quantile(answers: &[Answer], q: f64) -> Duration {
    let mut took: Vec<Duration> = answers.iter().map(|answer| answer.took).collect();
    took.sort();
    took[((took.len() - 1) as f64 * q).round() as usize]
}

/// Settles `ids` and checks each against the grabs acknowledged in `answers` (plus `first`'s, and
/// those of the users answered 503, each acknowledged by their retry): every acknowledged grab
/// is recorded with its amount, nothing else, grabs + refund = total.
async fn assert_nothing_lost(stack: &Stack, ids: &[String], answers: &[Answer]) {
    let mut acknowledged: Vec<HashMap<String, u64>> = vec![HashMap::new(); ids.len()];
    // A user answered 503 taps again, as the client does: a script call whose answer was lost
    // may have run (the share is theirs, answered now as already grabbed), or not (a fresh grab).
    for answer in answers.iter().filter(|answer| answer.status == 503) {
        let (status, body) = stack.grab(&ids[answer.packet], &answer.user).await;
        assert_eq!(status, 200, "{}'s retry after a 503: {body}", answer.user);
        acknowledged[answer.packet].insert(answer.user.clone(), body["amount_cents"].as_u64().unwrap());
    }
    stack.clock.advance(DAY_MS + 60_000);
    stack.settle_through(10).await;
    for (packet, id) in ids.iter().enumerate() {
        let recorded = stack.recorded(id).await;
        let first = recorded.grabs.iter().find(|grab| grab.user.as_str() == "first").map(|grab| grab.amount_cents);
        acknowledged[packet].insert("first".into(), first.expect("the first grab is recorded"));
    }
    for answer in answers.iter().filter(|answer| answer.status == 200) {
        assert_eq!(answer.body["already_grabbed"], false, "{}", answer.body);
        acknowledged[answer.packet].insert(answer.user.clone(), answer.body["amount_cents"].as_u64().unwrap());
    }
    for (id, acknowledged) in ids.iter().zip(&acknowledged) {
        stack.assert_settled_books(id, acknowledged).await;
    }
}

/// Each of six hot packets' slots moved to another master while 24 callers grab them, none
/// selling out (a sold-out packet's pool key is gone, see DESIGN.md's Redis section): with
/// windows of `ASK` of 0.2 s and of 1 s around one `MIGRATE` of all the slot's keys, no grab
/// answers 503 and every acknowledged grab is settled with its amount. With the keys moved one
/// at a time, 0.3 s apart, a grab may answer 503 only if it was under way while its packet's
/// keys were split between the two masters (a multi-key script gets `TRYAGAIN` then, by the
/// cluster's rules, until the last key has moved).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grabs_ride_through_a_slot_migration() {
    let cluster = OwnCluster::start(3, 0).await;
    // Packets large enough that none sells out while its slot moves (settle's time grows with
    // the shares, so each plan's are sized to its flood).
    let plans = [
        ("windows of 0.2 s", Migration::Whole { window: Duration::from_millis(200) }, 150),
        ("windows of 1 s", Migration::Whole { window: Duration::from_secs(1) }, 400),
        ("keys one at a time, 0.3 s apart", Migration::KeyByKey { gap: Duration::from_millis(300) }, 200),
    ];
    for (name, how, shares) in plans {
        let stack = Arc::new(Stack::keeping_deadline("migration", cluster_config(&cluster)).await);
        let ids = hot_packets(&stack, shares).await;
        let stop = Arc::new(AtomicBool::new(false));
        let callers = flood(&stack, &ids, shares, &stop);
        let mut splits = Vec::new();
        for id in &ids {
            let moved = cluster.move_slot(cluster.slot_of(&format!("{{{id}}}")).await, how).await;
            splits.push(moved.split);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        stop.store(true, Ordering::SeqCst);
        let mut answers = Vec::new();
        for caller in callers {
            answers.extend(caller.await.unwrap());
        }

        let unavailable: Vec<&Answer> = answers.iter().filter(|answer| answer.status == 503).collect();
        eprintln!(
            "figure: slot migration, {name}: {} grabs during {} slot moves, {} answered 503; p50 {:?}, p99 {:?}, max {:?}",
            answers.len(),
            ids.len(),
            unavailable.len(),
            quantile(&answers, 0.5),
            quantile(&answers, 0.99),
            quantile(&answers, 1.0),
        );
        for answer in &answers {
            assert!(matches!(answer.status, 200 | 503), "{name}: {} {}", answer.status, answer.body);
        }
        match how {
            Migration::Whole { .. } => {
                let unexplained = unexplained_unavailable(name, &answers);
                let first = unexplained.first().map(|answer| (&answer.reason, answer.body.to_string()));
                assert!(
                    unexplained.is_empty(),
                    "{name}: {} grabs answered 503 for a reason other than a timeout, the first {first:?}",
                    unexplained.len()
                );
            }
            Migration::KeyByKey { .. } => {
                for answer in &unavailable {
                    let (from, to) = splits[answer.packet].expect("the packet's keys were split");
                    let ended = answer.started + answer.took;
                    assert!(
                        answer.started <= to && ended >= from,
                        "{name}: a 503 outside its packet's split: {}",
                        answer.body
                    );
                }
            }
        }
        assert!(answers.iter().filter(|answer| answer.status == 200).count() > 100, "{name}: the flood grabbed");
        if let Migration::Whole { window } = how {
            edges_ride_through(&cluster, &stack, name, window).await;
        }
        assert_nothing_lost(&stack, &ids, &answers).await;
    }
}

/// The two packets whose keys a grab script might not find in a migrating slot, each grabbed
/// by 24 users at once half-way through its slot's first window: one nobody has grabbed yet
/// (its log holds only its head mark), and one sold out, grabbed by an instance that has not
/// seen it sell out (its pool holds only its end marks), so the script runs. Neither answers 503.
async fn edges_ride_through(cluster: &OwnCluster, stack: &Stack, name: &str, window: Duration) {
    let fresh = stack.send("brand", json!({ "total_cents": 10_000, "count": 100 })).await;
    let gone = stack.send("brand", json!({ "total_cents": 300, "count": 3 })).await;
    for user in ["gone-1", "gone-2", "gone-3"] {
        assert_eq!(stack.grab(&gone, user).await.0, 200);
    }
    let another_instance = stack.on_redis(&stack.config.redis.url).await;
    for (id, instance, expected) in [(&fresh, stack, 200), (&gone, &another_instance, 409)] {
        let slot = cluster.slot_of(&format!("{{{id}}}")).await;
        let grabs = async {
            tokio::time::sleep(window / 2).await;
            let users: Vec<String> = (0..CALLERS).map(|n| format!("edge-{n}")).collect();
            futures::future::join_all(users.iter().map(|user| instance.grab(id, user))).await
        };
        let (_, answers) = tokio::join!(cluster.move_slot(slot, Migration::Whole { window }), grabs);
        let statuses: Vec<u16> = answers.iter().map(|(status, _)| *status).collect();
        eprintln!(
            "figure: slot migration, {name}: 24 grabs of a packet {} mid-window: {statuses:?}",
            if expected == 200 { "with no grab yet" } else { "sold out" }
        );
        for (status, body) in &answers {
            assert_eq!(*status, expected, "{name}: {body}");
        }
    }
}

/// Settles `ids` and counts the acknowledged grabs in `answers` (plus `first`'s) the ledger does
/// not hold with their amount; checks grabs + refund = total for each packet either way.
async fn acknowledged_but_not_recorded(stack: &Stack, ids: &[String], answers: &[Answer]) -> usize {
    stack.clock.advance(DAY_MS + 60_000);
    stack.settle_through(10).await;
    let mut missing = 0;
    for (packet, id) in ids.iter().enumerate() {
        let recorded = stack.recorded(id).await;
        assert_ne!(recorded.status, red_packets::domain::PacketStatus::Open, "{id} is finalised");
        let items: HashMap<&str, u64> =
            recorded.grabs.iter().map(|grab| (grab.user.as_str(), grab.amount_cents)).collect();
        let grabbed: u64 = items.values().sum();
        let refund = recorded.refund_item_cents.unwrap_or(0);
        assert_eq!(grabbed + refund, recorded.packet.terms.total_cents, "{id}: grabs + refund == total");
        for answer in answers.iter().filter(|answer| answer.packet == packet && answer.status == 200) {
            if items.get(answer.user.as_str()) != answer.body["amount_cents"].as_u64().as_ref() {
                missing += 1;
            }
        }
    }
    missing
}

/// A cluster with replicas; the primary serving the hottest packet is killed (SIGKILL) while 24
/// callers grab; the cluster promotes the replica holding the most of its writes (the others
/// barred from taking over, as a managed failover picks the replica of least lag). A grab answers
/// 503 only around the failover: from the kill until the slot is served again (a primary holds
/// it, and with `WAIT` a replica is online to acknowledge). With `GRAB_WAIT_REPLICAS=1` (two
/// replicas a shard, so the promoted primary still has one to wait for) no acknowledged grab is
/// lost; with one replica and no wait, the figure says how many were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grabs_ride_through_a_primary_failover() {
    for wait_for_replica in [true, false] {
        let cluster = OwnCluster::start(3, if wait_for_replica { 2 } else { 1 }).await;
        let mut config = cluster_config(&cluster);
        if wait_for_replica {
            config.grab_wait =
                Some(red_packets::config::ReplicaWait { replicas: 1, timeout: Duration::from_millis(400) });
        }
        let mut cluster = cluster;
        let stack = Arc::new(Stack::keeping_deadline("failover", config).await);
        let ids = hot_packets(&stack, 300).await;
        let stop = Arc::new(AtomicBool::new(false));
        let callers = flood(&stack, &ids, 300, &stop);
        tokio::time::sleep(Duration::from_millis(800)).await;

        let slot = cluster.slot_of(&format!("{{{}}}", ids[0])).await;
        let shard = cluster.owner_of(slot).await;
        let killed = Instant::now();
        let killed_port = cluster.masters[shard].port;
        cluster.masters[shard].kill();
        let offsets = cluster.only_the_freshest_replicas_may_take_over(killed_port).await;
        // Served again: a primary holds the slot, and with `WAIT` a replica acknowledges it.
        let mut promoted = None;
        for _ in 0..400 {
            if let Some(primary) = cluster.primary_of(slot).await {
                if !wait_for_replica || cluster.has_a_replica_online(primary).await {
                    promoted = Some(Instant::now());
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let promoted = promoted.expect("the slot was served again within 8 s");
        eprintln!("figure: failover, the killed primary's replicas at offsets {offsets:?} (port, offset)");
        tokio::time::sleep(Duration::from_secs(2)).await;
        stop.store(true, Ordering::SeqCst);
        let mut answers = Vec::new();
        for caller in callers {
            answers.extend(caller.await.unwrap());
        }

        let unavailable: Vec<&Answer> = answers.iter().filter(|answer| answer.status == 503).collect();
        let last_unavailable = unavailable.iter().map(|answer| answer.started + answer.took).max();
        let after: Vec<&&Answer> = unavailable.iter().filter(|answer| answer.started > promoted).collect();
        let after_promotion = after.len();
        let mut reasons: HashMap<&str, usize> = HashMap::new();
        for answer in &after {
            *reasons.entry(answer.reason.as_deref().unwrap_or("none logged")).or_default() += 1;
        }
        eprintln!("figure: failover, 503s begun after the promotion, by reason: {reasons:?}");
        let lost = acknowledged_but_not_recorded(&stack, &ids, &answers).await;
        eprintln!(
            "figure: failover, GRAB_WAIT_REPLICAS={}: {} grabs, {} answered 503 ({} begun after the promotion); the replica promoted {:?} after the kill, the last 503 ended {:?} after it; p99 {:?}; {lost} acknowledged grabs lost",
            u8::from(wait_for_replica),
            answers.len(),
            unavailable.len(),
            after_promotion,
            promoted - killed,
            last_unavailable.map(|last| last.saturating_duration_since(killed)),
            quantile(&answers, 0.99),
        );
        for answer in &answers {
            assert!(matches!(answer.status, 200 | 503), "{} {}", answer.status, answer.body);
        }
        // Begun once a primary held the slot again, a grab answers; only the machine's own
        // stalls (no answer within the limit, twice) are counted apart, and bounded.
        let unexplained_after = after.iter().filter(|answer| !answer.timed_out()).count();
        assert_eq!(unexplained_after, 0, "a grab begun once a primary held the slot again answered 503: {reasons:?}");
        assert!(
            after_promotion <= (answers.len() / 100).max(3),
            "{after_promotion} timed out twice after the promotion"
        );
        assert!(answers.iter().filter(|answer| answer.status == 200 && answer.started > promoted).count() > 20);
        if wait_for_replica {
            assert_eq!(lost, 0, "with replica acknowledgement no acknowledged grab is lost in a failover");
        }
        drop(cluster);
    }
}

/// The process's metric recorder, installed once (as each function's `main` does), so a test
/// can read what the functions counted.
fn recorder() -> &'static metrics_cloudwatch_embedded::Collector {
    static RECORDER: std::sync::OnceLock<&'static metrics_cloudwatch_embedded::Collector> = std::sync::OnceLock::new();
    RECORDER.get_or_init(|| red_packets::telemetry::metrics("fleet").expect("the recorder installs"))
}

/// `DynamoThrottles` counted since the recorder's last flush.
fn throttles_counted() -> u64 {
    red_packets_testkit::telemetry::flushed(recorder())
        .iter()
        .filter_map(|document| document["DynamoThrottles"].as_u64())
        .sum()
}

/// A stack with the wallet whose functions reach DynamoDB through `throttler`.
async fn throttled_stack(name: &str, throttler: &Arc<Throttler>) -> Stack {
    let mut config = Config::from_env().expect("configuration");
    config.funds = Funds::Wallet;
    config.redis.timeout = Duration::from_secs(5);
    let client = red_packets::adapters::DynamoLedger::client_from_env().expect("a DynamoDB client");
    Stack::through(name, config, throttler.wrap(client)).await
}

/// Settle under throttling: a quarter of every write settle makes throttled, and half of those
/// to one packet's partition. Settle slows (its runs stop early and the next goes on, its pace
/// halving for the hot partition) but never loses or pays twice: every acknowledged grab is
/// recorded and credited once, the sender refunded once, and `DynamoThrottles` counts what the
/// functions met.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_slows_under_throttling_and_pays_every_cent_once() {
    let counted_before = throttles_counted();
    let throttler = Throttler::new(Vec::new());
    let stack = throttled_stack("throttled-settle", &throttler).await;
    stack.top_up("brand", 10_000).await;
    let hot = stack.send("brand", json!({ "total_cents": 3_000, "count": 30 })).await;
    let cold = stack.send("brand", json!({ "total_cents": 2_000, "count": 20 })).await;
    let mut acknowledged = [HashMap::new(), HashMap::new()];
    for (n, (id, grabs)) in [(&hot, 25), (&cold, 12)].into_iter().enumerate() {
        for user in 0..grabs {
            let user = format!("fan-{user}");
            let (status, body) = stack.grab(id, &user).await;
            assert_eq!(status, 200, "{body}");
            acknowledged[n].insert(user, body["amount_cents"].as_u64().unwrap());
        }
    }
    let rules = ["PutItem", "UpdateItem", "TransactWriteItems", "BatchWriteItem", "DeleteItem"]
        .into_iter()
        .map(|operation| Rule { operation, partition: String::new(), per_mille: 250, first: u64::MAX })
        .chain([Rule { operation: "PutItem", partition: format!("PKT#{hot}"), per_mille: 500, first: u64::MAX }])
        .collect::<Vec<_>>();
    throttler.start(rules);
    stack.clock.advance(DAY_MS + 60_000);
    let mut runs = 0;
    let finalised = |recorded: &red_packets::domain::ledger::LedgerPacket| {
        recorded.status != red_packets::domain::PacketStatus::Open
    };
    while runs < 40 {
        runs += 1;
        let _ = stack.settle_or_stop().await;
        if finalised(&stack.recorded(&hot).await) && finalised(&stack.recorded(&cold).await) {
            break;
        }
    }
    let throttled = throttler.throttled.load(Ordering::SeqCst);
    throttler.stop();
    stack.settle().await;
    let counted = throttles_counted() - counted_before;
    eprintln!(
        "figure: throttling, settle: {} of {} matching writes answered ThrottlingException; both packets finalised in {runs} settle runs; DynamoThrottles counted {counted}",
        throttled,
        throttler.matched.load(Ordering::SeqCst),
    );
    assert!(throttled > 10, "the fault was met: {throttled}");
    assert!(counted >= throttled, "every throttled answer counted: {counted} of {throttled}");
    let mut refunds = 0;
    for (id, acknowledged) in [&hot, &cold].into_iter().zip(&acknowledged) {
        refunds += stack.assert_settled_books(id, acknowledged).await.refund_cents.unwrap();
    }
    for (user, amount) in
        acknowledged.iter().flatten().fold(HashMap::<&String, u64>::new(), |mut sums, (user, amount)| {
            *sums.entry(user).or_default() += amount;
            sums
        })
    {
        assert_eq!(stack.balance(user).await, amount, "{user} credited once with what they grabbed");
    }
    assert_eq!(stack.balance("brand").await, 10_000 - 5_000 + refunds, "the sender refunded once");
}

/// A send whose transaction DynamoDB throttles past the SDK's retry answers 503 and takes
/// nothing; the app's retry with the same `Idempotency-Key` sends one packet, paid once. Then
/// ten sends with a third of their transactions throttled, each retried until it is sent: ten
/// packets, ten debits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_send_is_retried_into_one_packet_paid_once() {
    let throttler = Throttler::new(vec![Rule {
        operation: "TransactWriteItems",
        partition: String::new(),
        per_mille: 1_000,
        first: 2,
    }]);
    let stack = throttled_stack("throttled-send", &throttler).await;
    stack.top_up("brand", 20_000).await;
    let body = json!({ "total_cents": 1_000, "count": 5 });
    let (status, refused) = stack.send_keyed("brand", &body, "campaign-1").await;
    assert_eq!((status, refused["error"]["code"].as_str()), (503, Some("unavailable")), "{refused}");
    assert_eq!(stack.balance("brand").await, 20_000, "a refused send takes nothing");
    let (status, sent) = stack.send_keyed("brand", &body, "campaign-1").await;
    assert_eq!(status, 201, "{sent}");
    let (status, again) = stack.send_keyed("brand", &body, "campaign-1").await;
    assert_eq!((status, &again["packet_id"]), (201, &sent["packet_id"]), "a replay answers the same packet");
    assert_eq!(stack.balance("brand").await, 19_000, "paid once");

    throttler.stop();
    throttler.start(vec![Rule {
        operation: "TransactWriteItems",
        partition: String::new(),
        per_mille: 333,
        first: u64::MAX,
    }]);
    let (mut packets, mut unavailable) = (std::collections::HashSet::new(), 0);
    for send in 0..10 {
        let key = format!("burst-{send}");
        loop {
            let (status, answer) = stack.send_keyed("brand", &body, &key).await;
            match status {
                201 => {
                    packets.insert(answer["packet_id"].as_str().unwrap().to_owned());
                    break;
                }
                503 => unavailable += 1,
                _ => panic!("{status} {answer}"),
            }
        }
    }
    eprintln!(
        "figure: throttling, sends: a third of transactions throttled; 10 sends took {unavailable} retries after a 503, {} throttled answers in all",
        throttler.throttled.load(Ordering::SeqCst)
    );
    assert_eq!(packets.len(), 10);
    assert_eq!(stack.balance("brand").await, 19_000 - 10 * 1_000, "ten packets, ten debits");
}

/// A grab of a packet Redis lost reads the ledger (a query of its partition); throttled past the
/// SDK's retry, it answers
/// 503 (never 500, never a refusal), and the user's next tap loads the packet and grabs it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_ledger_read_on_the_grab_path_is_a_503_then_a_grab() {
    let throttler = Throttler::new(Vec::new());
    let stack = throttled_stack("throttled-grab", &throttler).await;
    stack.top_up("brand", 5_000).await;
    let id = stack.send("brand", json!({ "total_cents": 1_000, "count": 4 })).await;
    stack.empty_redis(&[&id]).await;
    throttler.start(vec![Rule { operation: "Query", partition: format!("PKT#{id}"), per_mille: 1_000, first: 2 }]);
    let (status, refused) = stack.grab(&id, "bob").await;
    assert_eq!((status, refused["error"]["code"].as_str()), (503, Some("unavailable")), "{refused}");
    let (status, grabbed) = stack.grab(&id, "bob").await;
    assert_eq!(status, 200, "{grabbed}");
    let (status, again) = stack.grab(&id, "bob").await;
    assert_eq!((status, &again["amount_cents"]), (200, &grabbed["amount_cents"]));
    stack.clock.advance(DAY_MS + 60_000);
    stack.settle().await;
    let amount = grabbed["amount_cents"].as_u64().unwrap();
    stack.assert_settled_books(&id, &HashMap::from([("bob".to_owned(), amount)])).await;
    assert_eq!(stack.balance("bob").await, amount);
}

/// Every item of `stack`'s table, as a restore to this moment would bring it back.
async fn table_now(stack: &Stack) -> Vec<red_packets::adapters::RawItem> {
    let mut items = Vec::new();
    stack.ledger.export_items(|item| items.push(item)).await.expect("the table scans");
    items
}

/// A table named `name` holding exactly `items`: DynamoDB Local has no point-in-time restore,
/// so the drill writes the restore point's items into a new table, which is what a restore
/// makes (its indexes too: `ensure_table` creates them).
async fn restored_table(stack: &Stack, name: &str, items: Vec<red_packets::adapters::RawItem>) {
    let mut config = stack.config.clone();
    config.table_name = name.to_owned();
    let client = red_packets::adapters::DynamoLedger::client_from_env().unwrap();
    red_packets::adapters::DynamoLedger::new(client.clone(), &config).ensure_table().await.unwrap();
    for item in items {
        let item: HashMap<String, aws_sdk_dynamodb::types::AttributeValue> =
            item.into_iter().map(|(name, value)| (name, value.into())).collect();
        client.put_item().table_name(name).set_item(Some(item)).send().await.expect("a restored item");
    }
}

/// The recovery drill of docs/OPERATIONS.md ("Restoring the ledger"): the ledger restored to a
/// point minutes back into a new table while Redis holds what it holds, the stack pointed at
/// it, settle replaying every packet Redis holds, then the restore report and reconciliation.
/// Settle writes back every grab Redis still held (dave's, made after the restore point, in a
/// packet finalised after it and finalised again; erin's, in a packet sent after it); the
/// report lists exactly what the restore lost that Redis could not give back (that packet's
/// record and its sender's debit, a top-up), with ids; nothing is paid twice (no extra item,
/// the refund rewritten once); and reconciliation names the same packet and the books' gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ledger_restored_from_backup_is_replayed_from_redis_and_its_losses_reported() {
    let mut config = Config::from_env().expect("configuration");
    config.funds = Funds::Wallet;
    let live = Stack::with_config("drill", config).await;
    live.top_up("alice", 10_000).await;
    let early = live.send("alice", json!({ "total_cents": 1_000, "count": 5, "expires_in_seconds": 600 })).await;
    let mut grabbed = HashMap::new();
    for user in ["bob", "carol"] {
        let (status, body) = live.grab(&early, user).await;
        assert_eq!(status, 200, "{body}");
        grabbed.insert(user.to_owned(), body["amount_cents"].as_u64().unwrap());
    }
    live.settle().await;

    // The restore point: the table as it is now.
    let restore_point = table_now(&live).await;
    live.clock.advance(60_000);
    let (status, body) = live.grab(&early, "dave").await;
    assert_eq!(status, 200, "{body}");
    grabbed.insert("dave".to_owned(), body["amount_cents"].as_u64().unwrap());
    let late = live.send("alice", json!({ "total_cents": 500, "count": 2 })).await;
    let (status, erin) = live.grab(&late, "erin").await;
    assert_eq!(status, 200, "{erin}");
    live.top_up("frank", 300).await;
    live.clock.advance(10 * 60_000);
    live.settle().await;
    let finalised = live.assert_settled_books(&early, &grabbed).await;
    let refund = finalised.refund_cents.unwrap();

    // The bad day: the ledger is restored to the restore point into a new table, and the
    // stack pointed at it, Redis as it is.
    let restored = format!("{}-restored", live.config.table_name);
    restored_table(&live, &restored, restore_point).await;
    let stack = live.on_table(&restored).await;
    stack.clock.advance(60_000);
    let replay = stack.settle_with(json!({ "replay": true })).await;
    let after = stack.settle().await;
    eprintln!(
        "figure: recovery drill: settle replayed {} packets Redis held; quarantined {:?}",
        replay.replayed, after.in_quarantine
    );
    assert_eq!(replay.replayed, 2, "both packets Redis holds: the one retired after the point, the one open");
    stack.assert_settled_books(&early, &grabbed).await;

    let (findings, bookkeeping) =
        local::restore_report::compare(&stack.config, &live.config.table_name, &restored).await.unwrap();
    for finding in &findings {
        eprintln!("figure: restore report: {}", serde_json::to_string(finding).unwrap());
    }
    let listed: std::collections::BTreeSet<(&str, &str, &str)> =
        findings.iter().map(|f| (f.finding, f.class, f.subject.as_str())).collect();
    let expected: std::collections::BTreeSet<(&str, &str, &str)> = [
        ("lost", "packet", late.as_str()),
        ("lost", "send_debit", "alice"),
        ("changed", "balance", "alice"),
        ("lost", "top_up", "pay-frank"),
        ("lost", "movement", "frank"),
        ("lost", "balance", "frank"),
        ("rewritten", "refund_credit", "alice"),
    ]
    .into_iter()
    .collect();
    assert_eq!(listed, expected, "what the restore lost, and nothing else: {findings:#?}");
    assert!(findings.iter().all(|f| f.finding != "extra"), "nothing paid twice");
    eprintln!("figure: restore report: {} findings, {bookkeeping} bookkeeping items lost", findings.len());
    assert_eq!(
        stack.balance("alice").await,
        10_000 - 1_000 + refund,
        "alice: her first packet and its refund, once; her second packet's debit is reported lost"
    );
    for (user, amount) in &grabbed {
        assert_eq!(stack.balance(user).await, *amount, "{user} paid once");
    }
    let erin = erin["amount_cents"].as_u64().unwrap();
    assert_eq!(stack.balance("erin").await, erin, "erin's grab, which Redis held, is paid once");
    // Reconciliation names the rest: the books are short of the lost send's debit, less the
    // grab of it settle wrote back (erin's, which Redis held), and that grab's packet has no
    // record. Finance re-records both (docs/OPERATIONS.md); nothing else is off.
    let books = red_packets::funds::reconcile(&stack.ledger, red_packets::funds::Cutoff::quiet(), 1).await.unwrap();
    eprintln!("figure: recovery drill: reconciliation of the restored books: {:?}", books.differences);
    let subjects: std::collections::BTreeSet<String> =
        books.differences.iter().map(|difference| difference.subject.clone()).collect();
    assert_eq!(
        subjects,
        ["books".to_owned(), format!("packet:{late}")].into_iter().collect(),
        "{:#?}",
        books.differences
    );
    let short = books.differences.iter().find(|difference| difference.subject == "books").unwrap();
    assert!(short.what.contains(&format!("balances {}", 10_000 + erin)), "{}", short.what);
}

/// A whole number from the environment (the soak's knobs), else `default`.
fn knob(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|value| value.parse().ok()).unwrap_or(default)
}

/// `make soak`'s long version of the migration: every slot of the first master (5,461, or
/// `FLEET_SLOTS`) moved to the second one after another, as a rebalance does, while 24 callers
/// grab six packets whose slots are among them. No grab answers 503; nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "make soak: minutes long"]
async fn every_slot_of_a_shard_moves_under_a_flood() {
    let cluster = OwnCluster::start(3, 0).await;
    let stack = Arc::new(Stack::keeping_deadline("reshard", cluster_config(&cluster)).await);
    let mut ids = Vec::new();
    while ids.len() < PACKETS {
        let id = stack.send("brand", json!({ "total_cents": 100_000, "count": 1_000 })).await;
        if cluster.owner_of(cluster.slot_of(&format!("{{{id}}}")).await).await == 0 {
            let (status, body) = stack.grab(&id, "first").await;
            assert_eq!(status, 200, "{body}");
            ids.push(id);
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let callers = flood(&stack, &ids, 1_000, &stop);
    let slots: Vec<u16> = (0..16_384 / 3).take(knob("FLEET_SLOTS", 5_461) as usize).map(|slot| slot as u16).collect();
    let started = Instant::now();
    cluster.move_slots(&slots, 0, 1, Migration::Whole { window: Duration::ZERO }).await;
    let took = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let mut answers = Vec::new();
    for caller in callers {
        answers.extend(caller.await.unwrap());
    }
    let unavailable = answers.iter().filter(|answer| answer.status == 503).count();
    eprintln!(
        "figure: resharding, {} slots moved in {took:?}: {} grabs, {unavailable} answered 503; p50 {:?}, p99 {:?}, max {:?}",
        slots.len(),
        answers.len(),
        quantile(&answers, 0.5),
        quantile(&answers, 0.99),
        quantile(&answers, 1.0),
    );
    assert!(unexplained_unavailable("resharding", &answers).is_empty(), "a 503 other than a timeout");
    assert_nothing_lost(&stack, &ids, &answers).await;
}

/// `make soak`'s long version of the failover: a hot packet's primary killed `FLEET_FAILOVERS`
/// times (default 6), round the shards, during one flood, each time a replica promoted and the
/// killed node restarted (it rejoins as a replica, as ElastiCache replaces a failed node), with
/// `GRAB_WAIT_REPLICAS=1` and two replicas a shard: no acknowledged grab lost, and each
/// failover's window stated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "make soak: minutes long"]
async fn failovers_in_a_row_lose_no_acknowledged_grab() {
    let mut cluster = OwnCluster::start(3, 2).await;
    let mut config = cluster_config(&cluster);
    config.grab_wait = Some(red_packets::config::ReplicaWait { replicas: 1, timeout: Duration::from_millis(400) });
    let stack = Arc::new(Stack::keeping_deadline("failovers", config).await);
    let ids = hot_packets(&stack, 1_000).await;
    let stop = Arc::new(AtomicBool::new(false));
    let callers = flood(&stack, &ids, 1_000, &stop);
    // The slots of packets on each shard: the failovers go round the shards.
    let mut slots = Vec::new();
    for id in &ids {
        let slot = cluster.slot_of(&format!("{{{id}}}")).await;
        let shard = cluster.owner_of(slot).await;
        if !slots.iter().any(|&(_, known)| known == shard) {
            slots.push((slot, shard));
        }
    }
    let mut windows = Vec::new();
    for failover in 0..knob("FLEET_FAILOVERS", 6) as usize {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let slot = slots[failover % slots.len()].0;
        let primary = cluster.primary_of(slot).await.expect("a primary serves the hot slot");
        let killed = Instant::now();
        cluster.node_mut(primary).kill();
        cluster.only_the_freshest_replicas_may_take_over(primary).await;
        let mut promoted = None;
        for _ in 0..750 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            if cluster.primary_of(slot).await.is_some() {
                promoted = Some(killed.elapsed());
                break;
            }
        }
        if promoted.is_none() {
            let node = cluster.masters.iter().chain(&cluster.replicas).find(|node| node.running()).unwrap();
            let nodes: String =
                redis::cmd("CLUSTER").arg("NODES").query_async(&mut node.connection().await).await.unwrap();
            eprintln!("killed {primary}, slot {slot}:\n{nodes}");
        }
        windows.push(
            promoted.unwrap_or_else(|| panic!("failover {}: no replica was promoted within 15 s", windows.len() + 1)),
        );
        cluster.node_mut(primary).spawn();
        cluster.wait_until("the cluster is ok again", |info, _| info.contains("cluster_state:ok")).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.store(true, Ordering::SeqCst);
    let mut answers = Vec::new();
    for caller in callers {
        answers.extend(caller.await.unwrap());
    }
    let unavailable = answers.iter().filter(|answer| answer.status == 503).count();
    let lost = acknowledged_but_not_recorded(&stack, &ids, &answers).await;
    eprintln!(
        "figure: {} failovers in a row, GRAB_WAIT_REPLICAS=1: promotions {windows:?} after each kill; {} grabs, {unavailable} answered 503; {lost} acknowledged grabs lost",
        windows.len(),
        answers.len(),
    );
    assert_eq!(lost, 0, "with replica acknowledgement no acknowledged grab is lost in any failover");
}
