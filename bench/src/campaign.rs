//! The campaign packet: 100,000 shares opening at one instant, end to end.
//!
//! - *The flood*: a packet of 100,000 shares, sent (recorded, loaded) ahead and opening 2 s
//!   later; 20,000 users at concurrency 256 wait for the opening and grab through the store as
//!   deployed (the coalescer). Grabs/s over the run, each grab's completion measured from the
//!   opening (p50, p99), Redis CPU per fresh grab. Against the seeds' two-list design on a packet
//!   of the same size, set up ahead and grabbed from an instant 2 s later through the same loop.
//!   Five rounds each, in turn, the median by throughput; the bench process's own CPU per
//!   grab beside Redis's.
//! - *Too early*: `grab.lua` on a packet before its opening against `grab.lua` on a sold-out
//!   packet, 20,000 calls each at concurrency 64, five rounds each in turn: the median Redis CPU
//!   per call.
//! - *The ledger*: one such packet grabbed to its last share by 100,000 users, then settled
//!   through a DynamoDB client whose requests are metered (`local::write_meter`): the seconds
//!   until every grab is in the ledger, against the floor the partition ceiling sets (shares ×
//!   write units per share in the packet's partition ÷ `SETTLE_PARTITION_WRITE_UNITS`), and the
//!   peak write units any partition key got in one second. DynamoDB Local enforces no
//!   per-partition limit and serves a few hundred writes a second on this machine, so the ledger
//!   phase also runs at a ceiling the emulator sustains, where the pace, not the emulator, binds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use local::write_meter::WriteUnitMeter;
use red_packets::adapters::redis::scripts;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::clock::Millis;
use red_packets::domain::grab::GrabAttempt;
use red_packets::domain::{GrabOutcome, Packet, PacketId, PacketKind, PacketSpec, PacketTerms, Seed, UserId};
use red_packets::ports::{Ledger, LiveStore, SettleCursor, SettleIndex, StoreError};
use red_packets::settle::{SettleRequest, Settler};
use red_packets::{packets, Clock, Config, SystemClock};
use serde::Serialize;

use crate::harness;
use crate::seeds::{own_cpu_seconds, redis_cpu_seconds, two_list_work, Work};
use crate::stats::{histogram, median, record};

/// Shares in the campaign's packet.
pub const SHARES: u32 = 100_000;
/// Users in the flood.
pub const USERS: usize = 20_000;
/// Concurrent callers.
pub const CONCURRENCY: usize = 256;
/// Write units per share settle sends to the packet's partition without the wallet: the share's
/// claim and the grab item (`local/tests/it/campaign.rs` counts them).
pub const UNITS_PER_SHARE: f64 = 2.0;
/// Rounds of the too-early and sold-out calls, in turn.
const CPU_ROUNDS: usize = 5;
/// Rounds of each design's flood, in turn: a flood lasts a fraction of a second, so one round
/// moves with whatever else this machine runs at that moment.
const FLOOD_ROUNDS: usize = 5;
/// A ceiling below what DynamoDB Local serves here, where the pace binds.
pub const EMULATOR_CEILING: u32 = 300;
/// Shares of the packet settled at [`EMULATOR_CEILING`].
pub const EMULATOR_SHARES: u32 = 20_000;

/// The flood on one design: grabs/s, completion from the opening, Redis CPU per fresh grab.
#[derive(Debug, Clone, Serialize)]
pub struct Flood {
    /// `ours_coalesced` or `two_list`.
    pub design: &'static str,
    /// Grabs per second, from the opening to the last answer.
    pub grabs_per_s: f64,
    /// Median completion after the opening, microseconds.
    pub p50_from_opening_us: u64,
    /// 99th percentile completion after the opening, microseconds.
    pub p99_from_opening_us: u64,
    /// Redis CPU per fresh grab, microseconds.
    pub redis_cpu_us_per_fresh_grab: f64,
    /// The bench process's CPU per grab (the callers and the design's client side, on the same
    /// two cores as Redis), microseconds.
    pub client_cpu_us_per_grab: f64,
    /// Shares paid (must be [`USERS`]).
    pub grabbed: u64,
}

/// Settling one drained campaign packet.
#[derive(Debug, Clone, Serialize)]
pub struct LedgerPhase {
    /// Shares grabbed and settled.
    pub shares: u32,
    /// `SETTLE_PARTITION_WRITE_UNITS`.
    pub ceiling_units_per_s: u32,
    /// Seconds from settle's start until every grab was in the ledger.
    pub seconds: f64,
    /// Shares × write units per share ÷ ceiling.
    pub floor_seconds: f64,
    /// `seconds / floor_seconds`.
    pub ratio_to_floor: f64,
    /// Write units the packet's partition key got, counted from the requests.
    pub partition_write_units: u64,
    /// The most write units any partition key got in one wall-clock second.
    pub peak_partition_write_units_per_s: u64,
}

/// Everything the campaign bench measured.
#[derive(Debug, Clone, Serialize)]
pub struct CampaignResult {
    /// Each design's median round.
    pub floods: Vec<Flood>,
    /// Redis CPU per `grab.lua` call before the opening, microseconds.
    pub not_open_yet_redis_cpu_us: f64,
    /// Redis CPU per `grab.lua` call on a sold-out packet, microseconds.
    pub sold_out_redis_cpu_us: f64,
    /// The whole packet settled at the default ceiling.
    pub ledger_default: LedgerPhase,
    /// A packet settled at a ceiling the emulator sustains.
    pub ledger_paced: LedgerPhase,
    /// Write units per send by AWS's pricing rules, GSIs included: with the wallet, without.
    pub send_write_units: (f64, f64),
    /// Write units per grab settle persists, by the same rules: with the wallet, without.
    pub grab_write_units: (f64, f64),
}

fn user(n: usize, run: &str) -> UserId {
    UserId::from_claim(&format!("{run}-u{n}")).expect("user")
}

/// A campaign packet of `shares` shares opening `opens_in` from now: recorded in the ledger and
/// loaded into Redis, as a send does.
async fn scheduled(store: &RedisStore, ledger: &DynamoLedger, shares: u32, opens_in: Duration) -> Packet {
    let now = SystemClock.now_ms();
    let spec = PacketSpec {
        opens_at_ms: Some(now + Millis::try_from(opens_in.as_millis()).unwrap_or(Millis::MAX)),
        ..PacketSpec::open_to_all(PacketTerms::new(PacketKind::Lucky, 5 * u64::from(shares), shares), 86_400)
    };
    let packet =
        Packet::new(PacketId::random(), UserId::from_claim("brand").expect("user"), &spec, Seed::random(), now);
    record_retrying(ledger, &packet).await;
    store.load(&packet, &packet.shares()).await.expect("load into Redis");
    packet
}

/// Records `packet` in the ledger, asking again while DynamoDB Local times out under the bench's
/// load (a write that landed before its timeout is found, not written twice).
async fn record_retrying(ledger: &DynamoLedger, packet: &Packet) {
    const ATTEMPTS: u32 = 5;
    for attempt in 1..=ATTEMPTS {
        match ledger.record_packet(packet, None).await {
            Ok(_) => return,
            Err(error @ StoreError::Unavailable { .. }) if attempt < ATTEMPTS => {
                eprintln!("[bench] recording the campaign packet, attempt {attempt}: {error}; asking again");
                tokio::time::sleep(Duration::from_secs(2)).await;
                if ledger.packet(&packet.id).await.ok().flatten().is_some() {
                    return;
                }
            }
            Err(error) => panic!("record the packet: {error}"),
        }
    }
}

/// Ours: a grab of `id` through `store` as deployed (the coalescer), the call the handler makes.
fn ours(store: Arc<RedisStore>, ledger: DynamoLedger, id: PacketId) -> Work {
    Arc::new(move |_packet: usize, user: String| -> BoxFuture<'static, bool> {
        let (store, ledger, id) = (store.clone(), ledger.clone(), id.clone());
        Box::pin(async move {
            let attempt = GrabAttempt::by(UserId::from_claim(&user).expect("user"));
            let outcome = packets::grab(store.as_ref(), &ledger, &id, &attempt, &SystemClock).await.expect("grab");
            matches!(outcome, GrabOutcome::Grabbed { .. })
        })
    })
}

/// `users` users of `run` grab through `work` at [`CONCURRENCY`], all starting at the opening
/// instant `opens_at_ms`; each grab's completion measured from the opening. Both designs go
/// through this one loop.
async fn flood(
    design: &'static str,
    config: &Config,
    opens_at_ms: Millis,
    users: usize,
    run: &str,
    work: Work,
) -> Flood {
    let mut probe = RedisStore::new(config).connection().await.expect("Redis");
    let wait = Duration::from_millis(u64::try_from(opens_at_ms - SystemClock.now_ms()).unwrap_or(0));
    let opening = tokio::time::Instant::now() + wait;
    // Each caller readies its users and its histogram before the opening, so the run measures
    // the grabs, not the harness's own allocations.
    let workers: Vec<_> = (0..CONCURRENCY)
        .map(|worker| {
            let (work, run) = (work.clone(), run.to_owned());
            tokio::spawn(async move {
                let users: Vec<String> =
                    (worker..users).step_by(CONCURRENCY).map(|n| user(n, &run).to_string()).collect();
                let mut completions = histogram();
                let mut grabbed = 0u64;
                tokio::time::sleep_until(opening).await;
                let opening = opening.into_std();
                let mut last = opening;
                for user in users {
                    let paid = work(0, user).await;
                    last = Instant::now();
                    record(&mut completions, last - opening);
                    grabbed += u64::from(paid);
                }
                (completions, grabbed, last)
            })
        })
        .collect();
    tokio::time::sleep_until(opening).await;
    let cpu_before = redis_cpu_seconds(&mut probe).await;
    let client_before = own_cpu_seconds();
    let mut completions = histogram();
    let mut grabbed = 0;
    let mut last = opening.into_std();
    for worker in workers {
        let (worker_completions, worker_grabbed, worker_last) = worker.await.expect("worker");
        completions.add(worker_completions).expect("histograms add");
        grabbed += worker_grabbed;
        last = last.max(worker_last);
    }
    // From the opening to the last answer.
    let elapsed = last - opening.into_std();
    let client = own_cpu_seconds() - client_before;
    let cpu = redis_cpu_seconds(&mut probe).await - cpu_before;
    Flood {
        design,
        grabs_per_s: users as f64 / elapsed.as_secs_f64(),
        p50_from_opening_us: completions.value_at_quantile(0.50),
        p99_from_opening_us: completions.value_at_quantile(0.99),
        redis_cpu_us_per_fresh_grab: cpu * 1e6 / users as f64,
        client_cpu_us_per_grab: client * 1e6 / users as f64,
        grabbed,
    }
}

/// Ours on a scheduled packet of `shares` opening 2 s after it is sent.
async fn ours_flood(
    config: &Config,
    store: &Arc<RedisStore>,
    ledger: &DynamoLedger,
    shares: u32,
    users: usize,
    run: &str,
) -> (Flood, Packet) {
    let packet = scheduled(store, ledger, shares, Duration::from_secs(2)).await;
    let work = ours(store.clone(), ledger.clone(), packet.id.clone());
    let opens_at_ms = packet.opens_at_ms.expect("scheduled");
    (flood("ours_coalesced", config, opens_at_ms, users, run, work).await, packet)
}

/// The seeds' two-list design on a packet of [`SHARES`], set up now and grabbed from 2 s later,
/// through the same loop.
async fn two_list(config: &Config) -> Flood {
    let run = format!("campaign-2l-{}", &PacketId::random().as_str()[..8]);
    let opens_at_ms = SystemClock.now_ms() + 2_000;
    let conn = RedisStore::new(config).connection().await.expect("Redis");
    let work = two_list_work(conn, run.clone(), 1, u64::from(SHARES)).await;
    flood("two_list", config, opens_at_ms, USERS, &run, work).await
}

/// Redis CPU per `grab.lua` call of 20,000 callers on `packet`, at concurrency 64.
async fn script_cpu(store: &RedisStore, packet: &Packet, run: &str) -> f64 {
    let calls = 20_000;
    let mut probe = store.connection().await.expect("Redis");
    let keys = store.keys(&packet.id);
    let conn = store.connection().await.expect("Redis");
    let cpu_before = redis_cpu_seconds(&mut probe).await;
    let users: Vec<UserId> = (0..calls).map(|n| user(n, run)).collect();
    harness::run(users, 64, move |user| {
        let (mut conn, keys) = (conn.clone(), keys.clone());
        async move { scripts::grab(&mut conn, &keys, &GrabAttempt::by(user), SystemClock.now_ms()).await.expect("grab.lua") }
    })
    .await;
    (redis_cpu_seconds(&mut probe).await - cpu_before) * 1e6 / calls as f64
}

/// A packet of `shares` grabbed to its last share, then settled at `ceiling` through a metered
/// client until every grab is in the ledger.
async fn ledger_phase(config: &Config, client: &aws_sdk_dynamodb::Client, shares: u32, ceiling: u32) -> LedgerPhase {
    let run = format!("campaign-l-{}", &PacketId::random().as_str()[..8]);
    // A settle index of this packet's own: the floods' packets are not settled here.
    let mut config = config.clone();
    config.redis.key_prefix = run.clone();
    let config = &config;
    let store = Arc::new(RedisStore::new(config));
    // A fresh prefix looks to settle like a Redis that lost its data: no recovery sweep here,
    // which would restore every other open packet of the table under it.
    store.set_sweep_state([0, store.settle_shards() - 1], 0, i64::MAX).await.expect("sweep record");
    let ledger = DynamoLedger::new(client.clone(), config);
    let (drained, packet) = ours_flood(config, &store, &ledger, shares, shares as usize, &run).await;
    assert_eq!(drained.grabbed, u64::from(shares), "the packet drained");

    let mut paced = config.clone();
    paced.settle_partition_write_units = ceiling;
    let meter = WriteUnitMeter::default();
    let settler = Settler::new(store.clone(), DynamoLedger::new(meter.install(client), &paced));
    let started = Instant::now();
    let mut persisted = 0;
    for _ in 0..100 {
        // A run DynamoDB Local timed out on stops; the next goes on from the persisted mark, as
        // the next scheduled run does in AWS.
        if let Err(error) = settler.run(settler.shards_of(&SettleRequest::default()), None).await {
            eprintln!("[bench] a settle run stopped ({error}); the next goes on");
        }
        persisted = store.snapshot(&packet.id).await.expect("Redis").map_or(0, |live| live.persisted);
        if persisted >= shares as usize {
            break;
        }
    }
    assert_eq!(persisted, shares as usize, "every grab reached the ledger");
    let seconds = started.elapsed().as_secs_f64();
    let floor_seconds = f64::from(shares) * UNITS_PER_SHARE / f64::from(ceiling);
    let partition = format!("PKT#{}", packet.id);
    let peak = meter.peak("PKT#");
    // The ceiling is the invariant here, not a figure: a run over it fails `make bench`.
    if let Some((busiest, units)) = &peak {
        assert!(
            units <= &u64::from(ceiling),
            "{units} write units in one second to {busiest}, over the ceiling of {ceiling}"
        );
    }
    LedgerPhase {
        shares,
        ceiling_units_per_s: ceiling,
        seconds,
        floor_seconds,
        ratio_to_floor: seconds / floor_seconds,
        partition_write_units: meter.total(&partition),
        peak_partition_write_units_per_s: peak.map_or(0, |(_, units)| units),
    }
}

/// Both designs' floods, [`FLOOD_ROUNDS`] each in turn: each design's median round by throughput
/// (`BENCH_CAMPAIGN_FLOODS_ONLY` runs these alone, for `perf record`).
pub async fn floods(config: &Config, client: &aws_sdk_dynamodb::Client) -> Vec<Flood> {
    let ledger = DynamoLedger::new(client.clone(), config);
    let store = Arc::new(RedisStore::new(config));
    let mut coalesced = Vec::new();
    let mut theirs = Vec::new();
    for round in 0..FLOOD_ROUNDS {
        let run = format!("campaign-{round}-{}", &PacketId::random().as_str()[..8]);
        coalesced.push(ours_flood(config, &store, &ledger, SHARES, USERS, &run).await.0);
        theirs.push(two_list(config).await);
    }
    let pick = |mut floods: Vec<Flood>| {
        let mut rates: Vec<f64> = floods.iter().map(|flood| flood.grabs_per_s).collect();
        let middle = median(&mut rates);
        let at = floods.iter().position(|flood| flood.grabs_per_s == middle).unwrap_or(0);
        floods.swap_remove(at)
    };
    vec![pick(coalesced), pick(theirs)]
}

/// The campaign bench (see the module's header).
pub async fn measure(config: &Config, client: &aws_sdk_dynamodb::Client) -> CampaignResult {
    let ledger = DynamoLedger::new(client.clone(), config);
    let store = Arc::new(RedisStore::new(config));
    let floods = floods(config, client).await;

    let early = scheduled(&store, &ledger, 10, Duration::from_secs(86_400)).await;
    let sold = scheduled(&store, &ledger, 1, Duration::ZERO).await;
    let first = ours(store.clone(), ledger.clone(), sold.id.clone());
    assert!(first(0, "first".into()).await, "the one share taken");
    // A difference of one LPOP on an empty list in some 7 us a call: five rounds each, in turn,
    // each design's median.
    let (mut too_early, mut sold_out) = (Vec::new(), Vec::new());
    for round in 0..CPU_ROUNDS {
        too_early.push(script_cpu(&store, &early, &format!("early-{round}")).await);
        sold_out.push(script_cpu(&store, &sold, &format!("late-{round}")).await);
    }
    let not_open_yet_redis_cpu_us = median(&mut too_early);
    let sold_out_redis_cpu_us = median(&mut sold_out);

    let ledger_default = ledger_phase(config, client, SHARES, config.settle_partition_write_units).await;
    let ledger_paced = ledger_phase(config, client, EMULATOR_SHARES, EMULATOR_CEILING).await;
    let send_write_units = crate::write_units::per_send(config, client).await;
    let trail = crate::write_units::money_trail(config, client).await;
    CampaignResult {
        floods,
        not_open_yet_redis_cpu_us,
        sold_out_redis_cpu_us,
        ledger_default,
        ledger_paced,
        send_write_units,
        grab_write_units: (trail.wallet_units_per_grab, trail.none_units_per_grab),
    }
}

impl CampaignResult {
    /// The figures BENCHMARKS.md and `latest.json` name.
    pub fn json(&self) -> serde_json::Value {
        let design = |name: &str| self.floods.iter().find(|flood| flood.design == name);
        let ours = design("ours_coalesced").map_or(0.0, |flood| flood.grabs_per_s);
        let two_list = design("two_list").map_or(0.0, |flood| flood.grabs_per_s);
        serde_json::json!({
            "campaign_100k_grabs_per_s": ours,
            "campaign_100k_two_list_grabs_per_s": two_list,
            "campaign_100k_ratio_to_two_list": ours / two_list.max(f64::MIN_POSITIVE),
            "campaign_100k_p50_from_opening_us": design("ours_coalesced").map_or(0, |flood| flood.p50_from_opening_us),
            "campaign_100k_p99_from_opening_us": design("ours_coalesced").map_or(0, |flood| flood.p99_from_opening_us),
            "campaign_100k_redis_cpu_us_per_fresh_grab": design("ours_coalesced").map_or(0.0, |flood| flood.redis_cpu_us_per_fresh_grab),
            "not_open_yet_redis_cpu_us": self.not_open_yet_redis_cpu_us,
            "sold_out_redis_cpu_us": self.sold_out_redis_cpu_us,
            "campaign_100k_ledger_seconds": self.ledger_default.seconds,
            "campaign_100k_ledger_floor_seconds": self.ledger_default.floor_seconds,
            "peak_partition_write_units_per_s": self.ledger_default.peak_partition_write_units_per_s.max(self.ledger_paced.peak_partition_write_units_per_s),
            "details": self,
        })
    }
}
