//! One packet, one key, one Redis shard: four designs through the seeds' bare harness (the same
//! Redis, the same multiplexed connection, a fixed number of concurrent callers), on packets
//! where every grab lands on one key.
//!
//! - *campaign*: one packet of 20,000 shares, 20,000 users at concurrency 256: every grab fresh.
//! - *chat*: one packet of 100 shares, 20,000 users at concurrency 256: most answers sold out.
//! - *one at a time*: one packet of 2,000 shares, 2,000 users at concurrency 1, so any latency a
//!   design adds (the coalescer's bookkeeping) shows.
//!
//! The designs: `ours_single` (the store without coalescing: a `grab.lua` call a grab),
//! `ours_coalesced` (the store as deployed: concurrent grabs of the packet in one `grab_many.lua`
//! call), `two_list` and `lock` (the seeds', as in `seeds.rs`). Three rounds in rotating order,
//! each design's median round by throughput. Redis CPU is the server's `used_cpu_user +
//! used_cpu_sys` over the round, per attempt (on the campaign packet every attempt is a fresh
//! grab).

use std::collections::HashMap;
use std::sync::Arc;

use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::domain::{Access, PacketId};
use red_packets::Config;
use serde::Serialize;

use crate::harness;
use crate::seeds::{lock_work, ours_work, redis_cpu_seconds, two_list_work, Work};
use crate::stats::{summarize, RunStats};

/// A packet every grab of a run lands on.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Shape {
    /// `campaign`, `chat` or `one_at_a_time`.
    pub name: &'static str,
    /// Shares in the packet.
    pub shares: u64,
    /// Users, each grabbing once.
    pub users: usize,
    /// Concurrent callers.
    pub concurrency: usize,
}

/// The shapes measured, in the order the tables show them.
pub const SHAPES: [Shape; 3] = [
    Shape { name: "campaign", shares: 20_000, users: 20_000, concurrency: 256 },
    Shape { name: "chat", shares: 100, users: 20_000, concurrency: 256 },
    Shape { name: "one_at_a_time", shares: 2_000, users: 2_000, concurrency: 1 },
];

/// The designs measured on each shape.
pub const DESIGNS: [&str; 4] = ["ours_single", "ours_coalesced", "two_list", "lock"];

/// One design's median round on one shape.
#[derive(Debug, Clone, Serialize)]
pub struct HotKeyResult {
    /// Which packet.
    pub shape: &'static str,
    /// Which design.
    pub design: &'static str,
    /// Attempts per second and their latency.
    #[serde(flatten)]
    pub stats: RunStats,
    /// Shares paid (must be `min(shares, users)`).
    pub grabbed: u64,
    /// Redis CPU per attempt, microseconds.
    pub redis_cpu_us_per_attempt: f64,
}

async fn work(design: &str, config: &Config, ledger: &DynamoLedger, run: String, shape: Shape) -> Work {
    let conn = RedisStore::new(config).connection().await.expect("Redis");
    match design {
        "ours_single" => {
            let store = Arc::new(RedisStore::new(config).without_coalescing());
            ours_work(store, ledger.clone(), Access::default(), 1, shape.shares).await
        }
        "ours_coalesced" => {
            ours_work(Arc::new(RedisStore::new(config)), ledger.clone(), Access::default(), 1, shape.shares).await
        }
        "two_list" => two_list_work(conn, run, 1, shape.shares).await,
        _ => lock_work(conn, run, 1, shape.shares).await,
    }
}

async fn round(design: &'static str, config: &Config, ledger: &DynamoLedger, shape: Shape) -> HotKeyResult {
    let run = format!("hot-{}", &PacketId::random().as_str()[..8]);
    let work = work(design, config, ledger, run.clone(), shape).await;
    let mut probe = RedisStore::new(config).connection().await.expect("Redis");
    let attempts: Vec<String> = (0..shape.users).map(|user| format!("{run}-u{user}")).collect();
    let cpu_before = redis_cpu_seconds(&mut probe).await;
    let (latencies, grabbed, elapsed) = harness::run(attempts, shape.concurrency, move |user| {
        let work = work.clone();
        async move { work(0, user).await }
    })
    .await;
    let cpu = redis_cpu_seconds(&mut probe).await - cpu_before;
    HotKeyResult {
        shape: shape.name,
        design,
        stats: summarize(&latencies, elapsed),
        grabbed: grabbed.iter().filter(|paid| **paid).count() as u64,
        redis_cpu_us_per_attempt: cpu * 1e6 / shape.users as f64,
    }
}

/// Every design on every shape, `rounds` times in rotating order; each pair's median round.
pub async fn compare(config: &Config, ledger: &DynamoLedger, rounds: usize) -> Vec<HotKeyResult> {
    let mut all: HashMap<(&'static str, &'static str), Vec<HotKeyResult>> = HashMap::new();
    for round_number in 0..rounds {
        for shape in SHAPES {
            for turn in 0..DESIGNS.len() {
                let design = DESIGNS[(round_number + turn) % DESIGNS.len()];
                let result = round(design, config, ledger, shape).await;
                all.entry((shape.name, design)).or_default().push(result);
            }
        }
    }
    let mut results = Vec::new();
    for shape in SHAPES {
        for design in DESIGNS {
            let mut runs = all.remove(&(shape.name, design)).unwrap_or_default();
            runs.sort_by(|a, b| a.stats.ops_per_s.total_cmp(&b.stats.ops_per_s));
            results.push(runs.swap_remove(runs.len() / 2));
        }
    }
    results
}

/// Grabs per script call of `ours_coalesced` on the campaign packet: one more round, counting
/// the script calls Redis ran (`INFO commandstats`, reset first).
pub async fn grabs_per_script_call(config: &Config, ledger: &DynamoLedger) -> f64 {
    let store = RedisStore::new(config);
    let mut conn = store.connection().await.expect("Redis");
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut conn).await.expect("RESETSTAT");
    let campaign = SHAPES[0];
    let result = round("ours_coalesced", config, ledger, campaign).await;
    result.grabbed as f64 / crate::hot_packet::script_runs(&store).await.max(1) as f64
}
