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

use std::collections::HashMap;
use std::sync::Arc;

use rand::seq::SliceRandom;
use rand::Rng;
use red_packets::adapters::redis_store::RedisConnection;
use red_packets::adapters::RedisStore;
use red_packets::domain::{PacketId, PacketKind, UserId};
use red_packets::ports::{GrabOutcome, LiveStore};
use red_packets::{Clock, SystemClock};
use redis::{AsyncCommands, Script};
use serde::Serialize;

use crate::grab_path::load_packet;
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
const TWO_LIST: &str = r#"
if redis.call('hexists', KEYS[3], KEYS[4]) ~= 0 then
  return nil
else
  local hongBao = redis.call('rpop', KEYS[1]);
  if hongBao then
    local x = cjson.decode(hongBao);
    x['userId'] = KEYS[4];
    local re = cjson.encode(x);
    redis.call('hset', KEYS[3], KEYS[4], KEYS[4]);
    redis.call('lpush', KEYS[2], re);
    return re;
  end
end
return nil
"#;

/// The attempts: every user twice, on packet `user % 100`, shuffled.
fn attempts() -> Vec<(usize, String)> {
    let mut attempts: Vec<(usize, String)> = (0..USERS)
        .flat_map(|user| [(user % PACKETS, format!("u{user}")), (user % PACKETS, format!("u{user}"))])
        .collect();
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
    }
}

async fn commands_processed(conn: &mut RedisConnection) -> u64 {
    let info: String = redis::cmd("INFO").arg("stats").query_async(conn).await.expect("INFO");
    info.lines()
        .find_map(|line| line.strip_prefix("total_commands_processed:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("total_commands_processed")
}

async fn measure<F, Fut>(design: &'static str, mut probe: RedisConnection, work: F) -> DesignResult
where
    F: Fn(usize, String) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = bool> + Send,
{
    let before = commands_processed(&mut probe).await;
    let attempts = attempts();
    let count = attempts.len() as f64;
    let (latencies, outcomes, elapsed) = harness::run(attempts, CONCURRENCY, move |(packet, user)| {
        let work = work.clone();
        async move {
            let grabbed = work(packet, user.clone()).await;
            (packet, user, grabbed)
        }
    })
    .await;
    // INFO itself is one command; scripts count once plus once per redis.call inside them.
    let after = commands_processed(&mut probe).await;
    let mut result = tally(design, &outcomes, summarize(&latencies, elapsed));
    result.redis_commands_per_attempt = after.saturating_sub(before + 1) as f64 / count;
    result
}

/// 003's lock-based flow.
pub async fn lock_based(conn: RedisConnection, run: &str) -> DesignResult {
    let mut setup = conn.clone();
    for packet in 0..PACKETS {
        let _: () = setup.set(format!("{run}:red_packet:{packet}:total"), SHARES).await.expect("SET");
    }
    let sadd_decr = Arc::new(Script::new(SADD_DECR));
    let unlock = Arc::new(Script::new(UNLOCK));
    let run = run.to_owned();
    measure("lock", conn.clone(), move |packet, user| {
        let (mut conn, sadd_decr, unlock, run) = (conn.clone(), sadd_decr.clone(), unlock.clone(), run.clone());
        async move {
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
        }
    })
    .await
}

/// 002's check-then-act flow, without its lock.
pub async fn check_then_act(conn: RedisConnection, run: &str) -> DesignResult {
    let mut setup = conn.clone();
    for packet in 0..PACKETS {
        let shares: Vec<u64> = (0..SHARES).map(|n| 50 + n).collect();
        let _: () = setup.lpush(format!("{run}:red:{packet}"), shares).await.expect("LPUSH");
        let _: () = setup.set(format!("{run}:totalNum:{packet}"), SHARES).await.expect("SET");
    }
    let run = run.to_owned();
    measure("check_then_act", conn.clone(), move |packet, user| {
        let (mut conn, run) = (conn.clone(), run.clone());
        async move {
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
        }
    })
    .await
}

/// 004's two-list Lua flow with JSON shares.
pub async fn two_list(conn: RedisConnection, run: &str) -> DesignResult {
    let mut setup = conn.clone();
    for packet in 0..PACKETS {
        let shares: Vec<String> =
            (0..SHARES).map(|n| serde_json::json!({ "id": n, "money": 50 + n }).to_string()).collect();
        let _: () = setup.lpush(format!("{run}:hongBao:{packet}"), shares).await.expect("LPUSH");
    }
    let script = Arc::new(Script::new(TWO_LIST));
    let run = run.to_owned();
    measure("two_list", conn.clone(), move |packet, user| {
        let (mut conn, script, run) = (conn.clone(), script.clone(), run.clone());
        async move {
            let taken: Option<String> = script
                .key(format!("{run}:hongBao:{packet}"))
                .key(format!("{run}:consumed:{packet}"))
                .key(format!("{run}:dedupe:{packet}"))
                .key(&user)
                .invoke_async(&mut conn)
                .await
                .expect("two-list script");
            taken.is_some()
        }
    })
    .await
}

/// Ours, through the same harness: `grab.lua` through the store.
pub async fn ours(store: Arc<RedisStore>) -> DesignResult {
    let mut packets = Vec::new();
    for _ in 0..PACKETS {
        packets.push(load_packet(&store, PacketKind::Lucky, 10_000, SHARES as u32).await.id);
    }
    let packets: Arc<Vec<PacketId>> = Arc::new(packets);
    let probe = store.connection().await.expect("Redis");
    measure("ours", probe, move |packet, user| {
        let (store, packets) = (store.clone(), packets.clone());
        async move {
            let user = UserId::from_claim(&user).expect("user");
            let outcome = store.grab(&packets[packet], &user, SystemClock.now_ms()).await.expect("grab");
            matches!(outcome, GrabOutcome::Grabbed { .. })
        }
    })
    .await
}

/// Every design `rounds` times, the order rotating each round (the machine's other load drifts),
/// each on fresh keys. Reports each design's median round; violations are summed over rounds.
pub async fn rounds(store: Arc<RedisStore>, rounds: usize) -> Result<Vec<DesignResult>, red_packets::ApiError> {
    let conn = store.connection().await?;
    let mut all: HashMap<&'static str, Vec<DesignResult>> = HashMap::new();
    for round in 0..rounds {
        let run = format!("seed-{}-{round}", &PacketId::random().as_str()[..6]);
        for turn in 0..4 {
            let result = match (round + turn) % 4 {
                0 => lock_based(conn.clone(), &run).await,
                1 => check_then_act(conn.clone(), &run).await,
                2 => two_list(conn.clone(), &run).await,
                _ => ours(store.clone()).await,
            };
            all.entry(result.design).or_default().push(result);
        }
    }
    let mut results = Vec::new();
    for design in ["lock", "check_then_act", "two_list", "ours"] {
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
