//! The seed articles' grab designs, reimplemented faithfully against the same Redis, and ours
//! through the same harness: 100 packets of 100 shares, 10,000 users clicking twice each (two
//! concurrent attempts per user, as a double tap or a retry does), 64 at a time.
//!
//! - `lock`: 003_c1dd673ab6e30af8 — pre-check (`DECRBY total 0`), per-user `SET NX PX 3000`
//!   lock, re-check, `SISMEMBER`, a Lua `SADD` + `DECR`, a Lua unlock: six round trips.
//! - `check_then_act`: 002_0e31253faaaef48b without its lock — `GET` the user's key, `GET` the
//!   count, `RPOP` a share, `DECR` the count, `SET` the user's key: up to five round trips, no atomicity.
//! - `two_list`: 004_a34bb8da67039d28 — JSON shares in an unconsumed list, one Lua script moving
//!   one to the consumed list and marking the user in a dedupe hash.
//! - `ours`: `grab.lua` through the store, every grab its own call (the store without
//!   coalescing); `ours_coalesced` the store as deployed, concurrent grabs of one packet in one
//!   `grab_many.lua` call; `ours_phrase` single calls on phrase packets, every grab carrying the
//!   right phrase (what a passphrase check costs: the same commands, the gate read in the same
//!   `HMGET`).
//!
//! Each design runs twice per round on fresh keys: the double-tap run above (throughput,
//! latency, violations, commands and Redis CPU per attempt), then a split run measuring Redis
//! CPU and commands per fresh grab (every user once) and per repeat (every user again).

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;

use rand::seq::SliceRandom;
use rand::Rng;
use red_packets::adapters::redis::RedisConnection;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::domain::grab::GrabAttempt;
use red_packets::domain::{Access, GrabOutcome, PacketId, PacketKind, Passphrase, UserId};
use red_packets::packets;
use red_packets::{Config, SystemClock};
use redis::{AsyncCommands, Script};
use serde::Serialize;

use crate::grab_path::load_packet_with;
use crate::harness;
use crate::stats::{summarize, RunStats};

const PACKETS: usize = 100;
const SHARES: u64 = 100;
const USERS: usize = 10_000;
/// Concurrency of every design's run.
pub const CONCURRENCY: usize = 64;

/// One design's result.
#[derive(Debug, Clone, Serialize)]
pub struct DesignResult {
    /// Which design.
    pub design: &'static str,
    /// Attempts per second and their latency.
    #[serde(flatten)]
    pub stats: RunStats,
    /// Attempts that got a share.
    pub grabbed: u64,
    /// Shares paid beyond a packet's count.
    pub oversells: u64,
    /// Extra shares paid to a user who already had one.
    pub double_grabs: u64,
    /// Redis commands executed per attempt (INFO stats, scripts counting with the calls inside them).
    pub redis_commands_per_attempt: f64,
    /// Redis CPU (`used_cpu_user + used_cpu_sys`) per attempt, microseconds.
    pub redis_cpu_us_per_attempt: f64,
    /// Redis CPU per fresh grab (every user's first attempt), microseconds.
    pub redis_cpu_us_per_fresh_grab: f64,
    /// Redis CPU per repeat (every user's second attempt, after the first was answered).
    pub redis_cpu_us_per_repeat: f64,
    /// Redis commands per fresh grab.
    pub redis_commands_per_fresh_grab: f64,
    /// Redis commands per repeat.
    pub redis_commands_per_repeat: f64,
}

impl DesignResult {
    /// Oversells plus double grabs.
    pub fn violations(&self) -> u64 {
        self.oversells + self.double_grabs
    }
}

const SADD_DECR: &str =
    "if redis.call('SADD', KEYS[1], ARGV[1]) == 1 then return redis.call('DECR', KEYS[2]) else return -1 end";
const UNLOCK: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
const TWO_LIST: &str = include_str!("../lua/two_list.lua");

/// The attempts: every user twice, on packet `user % 100`, shuffled.
fn attempts() -> Vec<(usize, String)> {
    let mut attempts: Vec<(usize, String)> = (0..USERS)
        .flat_map(|user| [(user % PACKETS, format!("u{user}")), (user % PACKETS, format!("u{user}"))])
        .collect();
    attempts.shuffle(&mut rand::rng());
    attempts
}

/// Every user once, on packet `user % 100`, shuffled: the split run's phases.
fn each_user_once() -> Vec<(usize, String)> {
    let mut attempts: Vec<(usize, String)> = (0..USERS).map(|user| (user % PACKETS, format!("u{user}"))).collect();
    attempts.shuffle(&mut rand::rng());
    attempts
}

fn tally(design: &'static str, outcomes: &[(usize, String, bool)], stats: RunStats) -> DesignResult {
    let mut per_packet: HashMap<usize, u64> = HashMap::new();
    let mut per_user: HashMap<(usize, &str), u64> = HashMap::new();
    for (packet, user, grabbed) in outcomes {
        if *grabbed {
            *per_packet.entry(*packet).or_default() += 1;
            *per_user.entry((*packet, user.as_str())).or_default() += 1;
        }
    }
    DesignResult {
        design,
        stats,
        grabbed: per_packet.values().sum(),
        oversells: per_packet.values().map(|&n| n.saturating_sub(SHARES)).sum(),
        double_grabs: per_user.values().map(|&n| n - 1).sum(),
        redis_commands_per_attempt: 0.0,
        redis_cpu_us_per_attempt: 0.0,
        redis_cpu_us_per_fresh_grab: 0.0,
        redis_cpu_us_per_repeat: 0.0,
        redis_commands_per_fresh_grab: 0.0,
        redis_commands_per_repeat: 0.0,
    }
}

async fn commands_processed(conn: &mut RedisConnection) -> u64 {
    let info: String = redis::cmd("INFO").arg("stats").query_async(conn).await.expect("INFO");
    info.lines()
        .find_map(|line| line.strip_prefix("total_commands_processed:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("total_commands_processed")
}

/// The Redis server's CPU time so far (user + sys), seconds.
pub async fn redis_cpu_seconds(conn: &mut RedisConnection) -> f64 {
    let info: String = redis::cmd("INFO").arg("cpu").query_async(conn).await.expect("INFO");
    info.lines()
        .filter(|line| line.starts_with("used_cpu_user:") || line.starts_with("used_cpu_sys:"))
        .filter_map(|line| line.split_once(':')?.1.trim().parse::<f64>().ok())
        .sum()
}

/// This process's CPU time so far, every thread's (`/proc/self/task/*/schedstat`, nanoseconds
/// on the CPU), seconds; 0 where there is no such file.
pub fn own_cpu_seconds() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0.0 };
    let nanos: u64 = tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    nanos as f64 / 1e9
}

/// One attempt of a design: grab a share of packet `n` for a user; true when it paid one.
pub type Work = Arc<dyn Fn(usize, String) -> BoxFuture<'static, bool> + Send + Sync>;

/// What one batch of attempts cost and came to.
struct Batch {
    outcomes: Vec<(usize, String, bool)>,
    stats: RunStats,
    commands_per_attempt: f64,
    cpu_us_per_attempt: f64,
}

async fn batch(probe: &mut RedisConnection, attempts: Vec<(usize, String)>, work: Work) -> Batch {
    let count = attempts.len() as f64;
    let (commands_before, cpu_before) = (commands_processed(probe).await, redis_cpu_seconds(probe).await);
    let (latencies, outcomes, elapsed) = harness::run(attempts, CONCURRENCY, move |(packet, user)| {
        let work = work.clone();
        async move {
            let grabbed = work(packet, user.clone()).await;
            (packet, user, grabbed)
        }
    })
    .await;
    let cpu_after = redis_cpu_seconds(probe).await;
    // INFO itself is a command: the two CPU reads and the first count are three.
    let commands_after = commands_processed(probe).await;
    Batch {
        outcomes,
        stats: summarize(&latencies, elapsed),
        commands_per_attempt: commands_after.saturating_sub(commands_before + 3) as f64 / count,
        cpu_us_per_attempt: (cpu_after - cpu_before) * 1e6 / count,
    }
}

/// A design's round: the double-tap run on keys set up by `setup(0)`, then the split run
/// (every user once, then every user again) on keys set up by `setup(1)`.
async fn measure<S, Fut>(design: &'static str, mut probe: RedisConnection, setup: S) -> DesignResult
where
    S: Fn(u32) -> Fut,
    Fut: std::future::Future<Output = Work>,
{
    let work = setup(0).await;
    let double_tap = batch(&mut probe, attempts(), work).await;
    let mut result = tally(design, &double_tap.outcomes, double_tap.stats);
    result.redis_commands_per_attempt = double_tap.commands_per_attempt;
    result.redis_cpu_us_per_attempt = double_tap.cpu_us_per_attempt;
    let work = setup(1).await;
    let fresh = batch(&mut probe, each_user_once(), work.clone()).await;
    let repeat = batch(&mut probe, each_user_once(), work).await;
    result.redis_cpu_us_per_fresh_grab = fresh.cpu_us_per_attempt;
    result.redis_commands_per_fresh_grab = fresh.commands_per_attempt;
    result.redis_cpu_us_per_repeat = repeat.cpu_us_per_attempt;
    result.redis_commands_per_repeat = repeat.commands_per_attempt;
    result
}

/// 003's lock-based flow, on `packets` packets of `shares` shares under `run`.
pub async fn lock_work(conn: RedisConnection, run: String, packets: usize, shares: u64) -> Work {
    let mut setup = conn.clone();
    for packet in 0..packets {
        let _: () = setup.set(format!("{run}:red_packet:{packet}:total"), shares).await.expect("SET");
    }
    let sadd_decr = Arc::new(Script::new(SADD_DECR));
    let unlock = Arc::new(Script::new(UNLOCK));
    Arc::new(move |packet: usize, user: String| -> BoxFuture<'static, bool> {
        let (mut conn, sadd_decr, unlock, run) = (conn.clone(), sadd_decr.clone(), unlock.clone(), run.clone());
        Box::pin(async move {
            let total = format!("{run}:red_packet:{packet}:total");
            let grabbed_set = format!("{run}:red_packet:{packet}:grabbed");
            let remaining: i64 = conn.decr(&total, 0).await.expect("pre-check");
            if remaining <= 0 {
                return false;
            }
            let lock = format!("{run}:lock:red_packet:{packet}:{user}");
            let token = rand::rng().random::<u64>().to_string();
            let locked: Option<String> = redis::cmd("SET")
                .arg(&lock)
                .arg(&token)
                .arg("NX")
                .arg("PX")
                .arg(3000)
                .query_async(&mut conn)
                .await
                .expect("lock");
            if locked.is_none() {
                return false;
            }
            let grabbed = async {
                let final_remain: i64 = conn.decr(&total, 0).await.expect("re-check");
                if final_remain < 0 {
                    return false;
                }
                let member: bool = conn.sismember(&grabbed_set, &user).await.expect("SISMEMBER");
                if member {
                    return false;
                }
                let _: i64 = sadd_decr
                    .key(&grabbed_set)
                    .key(&total)
                    .arg(&user)
                    .invoke_async(&mut conn)
                    .await
                    .expect("SADD DECR");
                true // 003 returns true once the script ran, whatever DECR came to
            }
            .await;
            let _: i64 = unlock.key(&lock).arg(&token).invoke_async(&mut conn).await.expect("unlock");
            grabbed
        })
    })
}

/// 002's check-then-act flow without its lock, on keys under `run`.
async fn check_then_act_work(conn: RedisConnection, run: String) -> Work {
    let mut setup = conn.clone();
    for packet in 0..PACKETS {
        let shares: Vec<u64> = (0..SHARES).map(|n| 50 + n).collect();
        let _: () = setup.lpush(format!("{run}:red:{packet}"), shares).await.expect("LPUSH");
        let _: () = setup.set(format!("{run}:totalNum:{packet}"), SHARES).await.expect("SET");
    }
    Arc::new(move |packet: usize, user: String| -> BoxFuture<'static, bool> {
        let (mut conn, run) = (conn.clone(), run.clone());
        Box::pin(async move {
            let mine = format!("{run}:rob:{packet}:{user}");
            let prior: Option<String> = conn.get(&mine).await.expect("GET rob");
            if prior.is_some() {
                return false;
            }
            let total: Option<i64> = conn.get(format!("{run}:totalNum:{packet}")).await.expect("GET totalNum");
            if total.is_none_or(|total| total <= 0) {
                return false;
            }
            let money: Option<String> = conn.rpop(format!("{run}:red:{packet}"), None).await.expect("RPOP");
            let Some(money) = money else { return false };
            let _: i64 = conn.decr(format!("{run}:totalNum:{packet}"), 1).await.expect("DECR");
            let _: () = conn.set(&mine, money).await.expect("SET rob");
            true
        })
    })
}

/// 004's two-list Lua flow with JSON shares, on `packets` packets of `shares` shares under `run`.
pub async fn two_list_work(conn: RedisConnection, run: String, packets: usize, shares: u64) -> Work {
    let mut setup = conn.clone();
    for packet in 0..packets {
        let shares: Vec<String> =
            (0..shares).map(|n| serde_json::json!({ "id": n, "money": 50 + n }).to_string()).collect();
        for chunk in shares.chunks(1_000) {
            let _: () = setup.lpush(format!("{run}:hongBao:{packet}"), chunk).await.expect("LPUSH");
        }
    }
    let script = Arc::new(Script::new(TWO_LIST));
    Arc::new(move |packet: usize, user: String| -> BoxFuture<'static, bool> {
        let (mut conn, script, run) = (conn.clone(), script.clone(), run.clone());
        Box::pin(async move {
            let taken: Option<String> = script
                .key(format!("{run}:hongBao:{packet}"))
                .key(format!("{run}:consumed:{packet}"))
                .key(format!("{run}:dedupe:{packet}"))
                .key(&user)
                .invoke_async(&mut conn)
                .await
                .expect("two-list script");
            taken.is_some()
        })
    })
}

/// Ours: the store's grab (the same call the grab handler makes), on `packets` fresh packets of
/// `shares` shares with `access`; every grab carries the packet's passphrase digest, if it has one.
pub async fn ours_work(
    store: Arc<RedisStore>,
    ledger: DynamoLedger,
    access: Access,
    packets: usize,
    shares: u64,
) -> Work {
    let mut ids = Vec::new();
    for _ in 0..packets {
        ids.push(load_packet_with(&store, PacketKind::Lucky, 100 * shares, shares as u32, access.clone()).await.id);
    }
    let packets = ids;
    let packets: Arc<Vec<PacketId>> = Arc::new(packets);
    Arc::new(move |packet: usize, user: String| -> BoxFuture<'static, bool> {
        let (store, packets, ledger, passphrase) =
            (store.clone(), packets.clone(), ledger.clone(), access.passphrase.clone());
        Box::pin(async move {
            let attempt = GrabAttempt { user: UserId::from_claim(&user).expect("user"), passphrase, member_of: None };
            let outcome = packets::grab(&store, &ledger, &packets[packet], &attempt, &SystemClock).await.expect("grab");
            matches!(outcome, GrabOutcome::Grabbed { .. })
        })
    })
}

/// 003's lock-based flow.
pub async fn lock_based(conn: RedisConnection, run: &str) -> DesignResult {
    measure("lock", conn.clone(), |phase| lock_work(conn.clone(), format!("{run}-{phase}"), PACKETS, SHARES)).await
}

/// 002's check-then-act flow, without its lock.
pub async fn check_then_act(conn: RedisConnection, run: &str) -> DesignResult {
    measure("check_then_act", conn.clone(), |phase| check_then_act_work(conn.clone(), format!("{run}-{phase}"))).await
}

/// 004's two-list Lua flow with JSON shares.
pub async fn two_list(conn: RedisConnection, run: &str) -> DesignResult {
    measure("two_list", conn.clone(), |phase| two_list_work(conn.clone(), format!("{run}-{phase}"), PACKETS, SHARES))
        .await
}

/// Ours, through the same harness: `grab.lua` through the store, every grab its own call, each
/// phase with a store of its own (so the sold-out memo starts empty).
pub async fn ours(config: &Config, ledger: DynamoLedger) -> DesignResult {
    let probe = RedisStore::new(config).connection().await.expect("Redis");
    measure("ours", probe, |_| {
        let store = Arc::new(RedisStore::new(config).without_coalescing());
        ours_work(store, ledger.clone(), Access::default(), PACKETS, SHARES)
    })
    .await
}

/// Ours as deployed: concurrent grabs of one packet coalesced into one script call.
pub async fn ours_coalesced(config: &Config, ledger: DynamoLedger) -> DesignResult {
    let probe = RedisStore::new(config).connection().await.expect("Redis");
    measure("ours_coalesced", probe, |_| {
        ours_work(Arc::new(RedisStore::new(config)), ledger.clone(), Access::default(), PACKETS, SHARES)
    })
    .await
}

/// Ours on phrase packets (口令红包), every grab carrying the right phrase.
pub async fn ours_phrase(config: &Config, ledger: DynamoLedger) -> DesignResult {
    let probe = RedisStore::new(config).connection().await.expect("Redis");
    let phrase = Passphrase::new("恭喜发财").expect("a phrase");
    let access = Access { passphrase: Some(config.passphrase_key.digest(&phrase)), ..Access::default() };
    measure("ours_phrase", probe, |_| {
        let store = Arc::new(RedisStore::new(config).without_coalescing());
        ours_work(store, ledger.clone(), access.clone(), PACKETS, SHARES)
    })
    .await
}

/// Every design measured, in the order the tables show them.
pub const DESIGNS: [&str; 6] = ["lock", "check_then_act", "two_list", "ours", "ours_coalesced", "ours_phrase"];

/// Every design `rounds` times, the order rotating each round (the machine's other load drifts),
/// each on fresh keys. Reports each design's median round; violations are summed over rounds.
pub async fn rounds(
    config: &Config,
    ledger: &DynamoLedger,
    rounds: usize,
) -> Result<Vec<DesignResult>, red_packets::ports::StoreError> {
    let conn = RedisStore::new(config).connection().await?;
    let mut all: HashMap<&'static str, Vec<DesignResult>> = HashMap::new();
    for round in 0..rounds {
        let run = format!("seed-{}-{round}", &PacketId::random().as_str()[..6]);
        for turn in 0..DESIGNS.len() {
            let result = match (round + turn) % DESIGNS.len() {
                0 => lock_based(conn.clone(), &run).await,
                1 => check_then_act(conn.clone(), &run).await,
                2 => two_list(conn.clone(), &run).await,
                3 => ours(config, ledger.clone()).await,
                4 => ours_coalesced(config, ledger.clone()).await,
                _ => ours_phrase(config, ledger.clone()).await,
            };
            all.entry(result.design).or_default().push(result);
        }
    }
    let mut results = Vec::new();
    for design in DESIGNS {
        let mut runs = all.remove(design).unwrap_or_default();
        runs.sort_by(|a, b| a.stats.ops_per_s.total_cmp(&b.stats.ops_per_s));
        let oversells = runs.iter().map(|r| r.oversells).sum();
        let double_grabs = runs.iter().map(|r| r.double_grabs).sum();
        let grabbed = runs.iter().map(|r| r.grabbed).sum();
        let mut median = runs.swap_remove(runs.len() / 2);
        median.oversells = oversells;
        median.double_grabs = double_grabs;
        median.grabbed = grabbed;
        results.push(median);
    }
    Ok(results)
}
