//! The hot packet, through the real grab handler on a Redis of the test's own (so its command
//! counts are this test's alone) and DynamoDB Local: 20,000 users on one 100-share packet, where
//! every grab after the instance saw it sell out skips the script; a campaign packet whose
//! concurrent grabs go to Redis in coalesced batches; and floods of grabs on ids Redis does not
//! hold, counting the ledger reads they cost.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::{grab_request, send_packet, OwnRedis};
use futures::future::join_all;
use grab::GrabService;
use local::LocalAuthorizer;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::clock::{Clock, Millis};
use red_packets::domain::grab::GrabAttempt;
use red_packets::domain::history::{HistoryPage, Role};
use red_packets::domain::ledger::LedgerPacket;
use red_packets::domain::risk::{Hold, HoldRequest, HoldResult, LiftRequest};
use red_packets::domain::wallet::WalletPage;
use red_packets::domain::{GrabOutcome, Packet, PacketId, UserId};
use red_packets::ports::{Holds, IdempotencyClaim, Ledger, LiveStore, PageRequest, Recorded, StoreError};
use red_packets::Config;
use red_packets_testkit::ManualClock;
use serde_json::Value;

/// The real ledger, counting packet reads; it can be told to fail the next read as an
/// unreachable DynamoDB would. Clones share the counter and the switch.
#[derive(Clone)]
struct CountingLedger {
    inner: DynamoLedger,
    packet_reads: Arc<AtomicUsize>,
    fail_next_read: Arc<AtomicBool>,
}

impl CountingLedger {
    fn reads(&self) -> usize {
        self.packet_reads.load(Ordering::SeqCst)
    }
}

impl Ledger for CountingLedger {
    fn currency(&self) -> red_packets::domain::Currency {
        self.inner.currency()
    }

    async fn record_packet(&self, packet: &Packet, claim: Option<&IdempotencyClaim>) -> Result<Recorded, StoreError> {
        self.inner.record_packet(packet, claim).await
    }

    async fn cancel(&self, id: &PacketId, sender: &UserId, now_ms: i64) -> Result<(), StoreError> {
        self.inner.cancel(id, sender, now_ms).await
    }

    async fn ledger_packet(&self, id: &PacketId) -> Result<Option<LedgerPacket>, StoreError> {
        self.packet_reads.fetch_add(1, Ordering::SeqCst);
        if self.fail_next_read.swap(false, Ordering::SeqCst) {
            return Err(StoreError::dynamodb_unavailable("injected: DynamoDB unreachable"));
        }
        self.inner.ledger_packet(id).await
    }

    async fn history(&self, user: &UserId, role: Role, page: PageRequest<'_>) -> Result<HistoryPage, StoreError> {
        self.inner.history(user, role, page).await
    }

    async fn wallet(&self, user: &UserId, page: PageRequest<'_>) -> Result<WalletPage, StoreError> {
        self.inner.wallet(user, page).await
    }
}

impl Holds for CountingLedger {
    async fn place_hold(&self, request: &HoldRequest, now_ms: i64) -> Result<HoldResult, StoreError> {
        self.inner.place_hold(request, now_ms).await
    }

    async fn lift_hold(&self, request: &LiftRequest, now_ms: i64) -> Result<HoldResult, StoreError> {
        self.inner.lift_hold(request, now_ms).await
    }

    async fn holds_version(&self) -> Result<u64, StoreError> {
        self.inner.holds_version().await
    }

    async fn holds(&self) -> Result<Vec<Hold>, StoreError> {
        self.inner.holds().await
    }
}

fn config(redis: &OwnRedis) -> Config {
    let mut config = redis.config();
    // A table of its own: settle restores every packet the ledger holds open into its Redis.
    config.table_name = format!("RedPackets-hot-{}", &PacketId::random().as_str()[..8]);
    // 256 grabs in flight on a loaded 2-core machine: 503s are the faults tests' subject.
    config.redis.timeout = Duration::from_secs(5);
    config
}

async fn grab<L: Ledger + Holds>(service: &GrabService<Arc<RedisStore>, L>, id: &str, user: &str) -> (u16, Value) {
    let response = grab::handle(service, grab_request(id, user)).await.unwrap();
    (response.status().as_u16(), serde_json::from_slice(response.body().as_ref()).unwrap())
}

/// `INFO commandstats` as command -> (calls, failed or rejected calls).
async fn command_calls(store: &RedisStore) -> HashMap<String, (u64, u64)> {
    let mut conn = store.connection().await.unwrap();
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut conn).await.unwrap();
    let mut calls = HashMap::new();
    for line in info.lines() {
        let Some((name, fields)) = line.strip_prefix("cmdstat_").and_then(|line| line.split_once(':')) else {
            continue;
        };
        let field = |wanted: &str| -> u64 {
            fields.split(',').find_map(|pair| pair.strip_prefix(wanted)?.strip_prefix('=')?.parse().ok()).unwrap_or(0)
        };
        calls.insert(name.to_owned(), (field("calls"), field("failed_calls") + field("rejected_calls")));
    }
    calls
}

/// How many times a grab script ran, how many of those runs were coalesced batches, and how
/// many grabs took the fast path (its `HMGET` alone). Every user here is new to an open
/// packet: `grab.lua` reads with one `HMGET` and no `LINDEX`, `grab_many.lua` with two `HMGET`s
/// (the packet's fields, the users') and one `LINDEX` (the pool's head: how many shares are left).
async fn script_runs_and_fast_paths(store: &RedisStore) -> (u64, u64, u64) {
    let calls = command_calls(store).await;
    let count = |name: &str| calls.get(name).copied().unwrap_or_default();
    let (evalsha, evalsha_failed) = count("evalsha");
    // A NOSCRIPT answer fails the EVALSHA; the EVAL that follows runs the script.
    let script_runs = evalsha - evalsha_failed + count("eval").0;
    let batches = count("lindex").0;
    (script_runs, batches, count("hmget").0.saturating_sub(script_runs + batches))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn once_sold_out_a_hot_packet_is_answered_without_the_grab_script() {
    const USERS: usize = 20_000;
    const CONCURRENCY: usize = 256;
    let redis = OwnRedis::start_with("everysec");
    let config = config(&redis);
    let functions = Arc::new(local::functions(&config, LocalAuthorizer::new("hot")).await.unwrap());
    let id = send_packet(&functions, 10_000, 100).await;
    let store = RedisStore::new(&config);
    let mut conn = store.connection().await.unwrap();
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut conn).await.unwrap();

    let workers = (0..CONCURRENCY).map(|worker| {
        let (functions, id) = (functions.clone(), id.clone());
        tokio::spawn(async move {
            let mut answers = Vec::new();
            for user in (worker..USERS).step_by(CONCURRENCY) {
                let user = format!("hot-u{user}");
                let (status, body) = grab(&functions.grab, &id, &user).await;
                answers.push((user, status, body["amount_cents"].as_u64()));
            }
            answers
        })
    });
    let answers: Vec<(String, u16, Option<u64>)> =
        join_all(workers).await.into_iter().flat_map(|worker| worker.unwrap()).collect();
    let winners: Vec<(String, u64)> = answers
        .iter()
        .filter(|(_, status, _)| *status == 200)
        .map(|(user, _, amount)| (user.clone(), amount.unwrap()))
        .collect();
    let sold_out = answers.iter().filter(|(_, status, _)| *status == 409).count();
    assert_eq!((winners.len(), sold_out), (100, USERS - 100), "every grab is a share or a 409");
    assert_eq!(winners.iter().map(|(_, amount)| amount).sum::<u64>(), 10_000);

    let (script_runs, batches, fast_paths) = script_runs_and_fast_paths(&store).await;
    let scripted = USERS as u64 - fast_paths;
    eprintln!(
        "figure: hot packet, {USERS} users at concurrency {CONCURRENCY} on 100 shares: {scripted} grabs decided by {script_runs} grab-script runs ({batches} of them coalesced batches), {fast_paths} grabs answered by the sold-out fast path"
    );
    assert!(
        scripted <= (100 + CONCURRENCY) as u64,
        "only the 100 winners and the grabs already in flight when the packet sold out run the script: {scripted}"
    );
    assert!(script_runs <= scripted, "a script run decides one grab or a batch: {script_runs} runs, {scripted} grabs");

    // The fast path still knows the winners: a repeat grab returns the same share, without the script.
    for (user, amount) in &winners {
        let (status, body) = grab(&functions.grab, &id, user).await;
        assert_eq!(
            (status, body["amount_cents"].as_u64(), body["already_grabbed"].as_bool()),
            (200, Some(*amount), Some(true))
        );
        assert_eq!(body["remaining_count"], 0);
    }
    let after = script_runs_and_fast_paths(&store).await;
    assert_eq!(after, (script_runs, batches, fast_paths + 100));
}

/// A campaign packet: 2,000 shares, 2,000 users at concurrency 256 through the grab handler of
/// one execution environment, every grab fresh and all on one key. Concurrent grabs go to Redis
/// together (`grab_many.lua`): each user gets one share, the shares add up, and the script runs
/// fewer times than there are grabs; the same environment without coalescing runs it once a grab.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_campaign_packet_grabbed_at_once_goes_to_redis_in_batches() {
    const SHARES: usize = 2_000;
    const CONCURRENCY: usize = 256;
    let redis = OwnRedis::start_with("everysec");
    let mut config = config(&redis);
    config.limits.max_count = SHARES as u32;
    config.limits.max_total_cents = 100 * SHARES as u64;
    let functions = Arc::new(local::functions(&config, LocalAuthorizer::new("campaign")).await.unwrap());
    let single = Arc::new(GrabService::new(
        Arc::new(RedisStore::new(&config).without_coalescing()),
        DynamoLedger::new(DynamoLedger::client_from_env().unwrap(), &config),
        &config,
    ));
    let store = RedisStore::new(&config);
    let mut conn = store.connection().await.unwrap();
    let mut runs_per_grab = Vec::new();
    for coalesced in [true, false] {
        let id = send_packet(&functions, 100 * SHARES as u64, SHARES as u32).await;
        let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut conn).await.unwrap();
        let workers = (0..CONCURRENCY).map(|worker| {
            let (functions, single, id) = (functions.clone(), single.clone(), id.clone());
            tokio::spawn(async move {
                let mut answers = Vec::new();
                for user in (worker..SHARES).step_by(CONCURRENCY) {
                    let user = format!("campaign-u{user}");
                    let (status, body) = if coalesced {
                        grab(&functions.grab, &id, &user).await
                    } else {
                        grab(&single, &id, &user).await
                    };
                    answers.push((status, body["amount_cents"].as_u64(), body["already_grabbed"].as_bool()));
                }
                answers
            })
        });
        let answers: Vec<_> = join_all(workers).await.into_iter().flat_map(|worker| worker.unwrap()).collect();
        assert!(answers.iter().all(|(status, _, already)| *status == 200 && *already == Some(false)), "{answers:?}");
        assert_eq!(answers.iter().map(|(_, amount, _)| amount.unwrap()).sum::<u64>(), 100 * SHARES as u64);
        let (script_runs, batches, fast_paths) = script_runs_and_fast_paths(&store).await;
        assert_eq!(fast_paths, 0, "every grab decided by a script");
        assert_eq!(batches > 0, coalesced, "batches only with coalescing: {batches}");
        runs_per_grab.push(script_runs as f64 / SHARES as f64);
        let snapshot = store.snapshot(&PacketId::parse(&id).unwrap()).await.unwrap().unwrap();
        assert_eq!(snapshot.grabs.len(), SHARES, "one logged grab per user");
    }
    eprintln!(
        "figure: campaign packet, {SHARES} users at concurrency {CONCURRENCY}: grab-script runs per grab, coalesced {:.3}, single {:.3}",
        runs_per_grab[0], runs_per_grab[1]
    );
    assert!(runs_per_grab[0] < 0.5, "concurrent grabs of one packet share script calls: {runs_per_grab:?}");
    assert_eq!(runs_per_grab[1], 1.0, "without coalescing, one call a grab");
}

/// A coalesced batch runs at one instant, the latest of its grabs' clock readings, so no grab is
/// judged before its own: on a packet whose deadline is T, 300 concurrent grabs through one
/// store, every other one reading T - 1 and the rest T. None that read T gets a share (a batch
/// at its earliest reading would pay them), each that got one was recorded before T, and the
/// grabs went to Redis in batches (fewer script runs than grabs); a grab reading T - 1 alone
/// afterwards is paid.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_grab_in_a_batch_is_judged_before_its_own_clock_reading() {
    const GRABS: usize = 300;
    let redis = OwnRedis::start();
    let mut config = config(&redis);
    config.limits.max_count = GRABS as u32;
    config.limits.max_total_cents = 100 * GRABS as u64;
    let functions = local::functions(&config, LocalAuthorizer::new("deadline")).await.unwrap();
    let id = PacketId::parse(&send_packet(&functions, 100 * GRABS as u64, GRABS as u32).await).unwrap();
    let store = Arc::new(RedisStore::new(&config));
    let deadline = store.snapshot(&id).await.unwrap().unwrap().packet.expires_at_ms;
    let clock_at = |ms: Millis| {
        let clock = ManualClock::starting_now();
        clock.advance(ms - clock.now_ms());
        Arc::new(clock)
    };
    let (before, at) = (clock_at(deadline - 1), clock_at(deadline));
    let ledger = DynamoLedger::new(DynamoLedger::client_from_env().unwrap(), &config);
    let grabs = (0..GRABS).map(|n| {
        let (store, ledger, id) = (store.clone(), ledger.clone(), id.clone());
        let clock = if n % 2 == 0 { before.clone() } else { at.clone() };
        tokio::spawn(async move {
            let attempt = GrabAttempt::by(UserId::from_claim(&format!("deadline-u{n}")).unwrap());
            (clock.now_ms(), red_packets::packets::grab(&store, &ledger, &id, &attempt, clock.as_ref()).await.unwrap())
        })
    });
    let outcomes: Vec<(Millis, GrabOutcome)> = join_all(grabs).await.into_iter().map(|grab| grab.unwrap()).collect();
    for (read, outcome) in &outcomes {
        match outcome {
            GrabOutcome::Grabbed { grabbed_at_ms, .. } => {
                assert!(*read < deadline && *grabbed_at_ms < deadline, "read {read}, {outcome:?}, deadline {deadline}")
            }
            GrabOutcome::Expired => {}
            other => panic!("read {read}: {other:?}"),
        }
    }
    let (script_runs, _, _) = script_runs_and_fast_paths(&store).await;
    assert!(script_runs < GRABS as u64, "grabs went to Redis in batches: {script_runs} script runs");
    let alone = GrabAttempt::by(UserId::from_claim("deadline-alone").unwrap());
    let paid_alone = red_packets::packets::grab(&store, &ledger, &id, &alone, before.as_ref()).await.unwrap();
    assert!(matches!(paid_alone, GrabOutcome::Grabbed { .. }), "a grab reading T - 1 alone is paid: {paid_alone:?}");
    let refused_early = outcomes.iter().filter(|(read, outcome)| *read < deadline && *outcome == GrabOutcome::Expired);
    eprintln!(
        "figure: {GRABS} grabs at the deadline, half reading 1 ms before it: {} paid, {} of those reading before it refused in a batch with later readings, {script_runs} script runs",
        outcomes.iter().filter(|(_, outcome)| matches!(outcome, GrabOutcome::Grabbed { .. })).count(),
        refused_early.count()
    );
}

/// `instances` grab services (as many Lambda instances: each its own Redis connection and
/// memo) sharing one counting ledger.
async fn instances(
    config: &Config,
    instances: usize,
) -> (CountingLedger, Vec<Arc<GrabService<Arc<RedisStore>, CountingLedger>>>) {
    let inner = DynamoLedger::new(DynamoLedger::client_from_env().expect("a DynamoDB client"), config);
    inner.ensure_table().await.expect("DynamoDB Local is reachable");
    let ledger = CountingLedger { inner, packet_reads: Arc::default(), fail_next_read: Arc::default() };
    let services = (0..instances)
        .map(|_| Arc::new(GrabService::new(Arc::new(RedisStore::new(config)), ledger.clone(), config)))
        .collect();
    (ledger, services)
}

/// Every grab of `users` on every one of `ids`, all at once, spread over `services`.
async fn flood(
    services: &[Arc<GrabService<Arc<RedisStore>, CountingLedger>>],
    ids: &[String],
    users: &[String],
) -> Vec<(String, String, u16, Value)> {
    let mut grabs = Vec::new();
    for (n, (id, user)) in ids.iter().flat_map(|id| users.iter().map(move |user| (id, user))).enumerate() {
        let (service, id, user) = (services[n % services.len()].clone(), id.clone(), user.clone());
        grabs.push(tokio::spawn(async move {
            let (status, body) = grab(&service, &id, &user).await;
            (id, user, status, body)
        }));
    }
    join_all(grabs).await.into_iter().map(|grab| grab.unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flood_of_grabs_on_unknown_ids_reads_the_ledger_once_per_id_per_window() {
    let redis = OwnRedis::start_with("everysec");
    let config = config(&redis);
    let (ledger, services) = instances(&config, 4).await;
    let ids: Vec<String> = (0..20).map(|_| PacketId::random().to_string()).collect();
    let users: Vec<String> = (0..100).map(|n| format!("flood-u{n}")).collect();

    let answers = flood(&services, &ids, &users).await;
    assert!(answers.iter().all(|(_, _, status, _)| *status == 404), "every grab on an unknown id is a 404");
    assert_eq!(ledger.reads(), ids.len(), "2,000 concurrent grabs on 20 unknown ids over 4 instances: one read per id");

    // The window lapses (Redis forgets the verdicts): the next flood costs one more read per id.
    let store = RedisStore::new(&config);
    let mut conn = store.connection().await.unwrap();
    for id in &ids {
        let _: () = redis::cmd("DEL")
            .arg(store.keys(&PacketId::parse(id).unwrap()).lookup)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let answers = flood(&services, &ids, &users[..50]).await;
    assert!(answers.iter().all(|(_, _, status, _)| *status == 404));
    assert_eq!(ledger.reads(), 2 * ids.len());

    // A lookup that fails answers 503 and releases its lease: the next grab asks again.
    let unlucky = PacketId::random();
    ledger.fail_next_read.store(true, Ordering::SeqCst);
    let (status, body) = grab(&services[0], unlucky.as_str(), "flood-u0").await;
    assert_eq!((status, body["error"]["code"].as_str()), (503, Some("unavailable")));
    let lease: Option<String> =
        redis::cmd("GET").arg(store.keys(&unlucky).lookup).query_async(&mut conn).await.unwrap();
    assert_eq!(lease, None, "a failed lookup leaves no lease behind");
    assert_eq!(grab(&services[1], unlucky.as_str(), "flood-u1").await.0, 404);
    assert_eq!(ledger.reads(), 2 * ids.len() + 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flood_on_a_settled_packet_redis_forgot_is_answered_from_the_ledger() {
    let redis = OwnRedis::start_with("everysec");
    let config = config(&redis);
    let functions = local::functions(&config, LocalAuthorizer::new("hot")).await.unwrap();
    let id = send_packet(&functions, 300, 2).await;
    let mut shares = HashMap::new();
    for user in ["flood-u0", "flood-u1"] {
        let (status, body) = grab(&functions.grab, &id, user).await;
        assert_eq!(status, 200);
        shares.insert(user.to_owned(), body["amount_cents"].as_u64().unwrap());
    }
    let event = lambda_runtime::LambdaEvent::new(Value::Null, lambda_runtime::Context::default());
    let summary = settle::handle(&functions.settler, event).await.unwrap();
    assert_eq!(summary.finalised, 1);
    let mut conn = RedisStore::new(&config).connection().await.unwrap();
    let _: () = redis::cmd("FLUSHALL").query_async(&mut conn).await.unwrap();

    let (ledger, services) = instances(&config, 4).await;
    let users: Vec<String> = (0..100).map(|n| format!("flood-u{n}")).collect();
    for (_, user, status, body) in flood(&services, std::slice::from_ref(&id), &users).await {
        match shares.get(&user) {
            Some(amount) => assert_eq!((status, body["amount_cents"].as_u64()), (200, Some(*amount)), "{user}"),
            None => assert_eq!((status, body["error"]["code"].as_str()), (409, Some("sold_out")), "{user}"),
        }
    }
    assert!(ledger.reads() >= 1 && ledger.reads() <= users.len());
}
