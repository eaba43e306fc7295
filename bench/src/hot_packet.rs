//! The hot packet: 20,000 users on one 100-share packet through the real handler, with the
//! sold-out fast path and without it (every grab runs the script), in alternating rounds.

use std::sync::Arc;

use grab::GrabService;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::domain::PacketKind;
use red_packets::Config;
use serde::Serialize;

use crate::grab_path::{load_packet, request};
use crate::harness;
use crate::stats::{summarize, RunStats};

/// Users racing for the packet.
pub const USERS: u32 = 20_000;
/// Concurrent callers.
pub const CONCURRENCY: usize = 256;

/// One variant's median round.
#[derive(Debug, Clone, Serialize)]
pub struct HotPacket {
    /// `fast path` or `script only`.
    pub variant: &'static str,
    /// Throughput and latency of the median round.
    #[serde(flatten)]
    pub stats: RunStats,
    /// Times the grab script ran in that round.
    pub script_runs: u64,
    /// Redis server CPU (user + sys) per grab in that round, microseconds.
    pub redis_cpu_us_per_grab: f64,
    /// Shares paid in that round (must be 100).
    pub grabbed: u64,
}

/// `rounds` rounds of each variant, alternating; each variant's median round by throughput.
pub async fn compare(config: &Config, ledger: &DynamoLedger, rounds: usize) -> Vec<HotPacket> {
    let mut runs: [Vec<HotPacket>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..rounds {
        runs[0].push(round("fast path", Arc::new(RedisStore::new(config)), ledger, config).await);
        runs[1].push(
            round("script only", Arc::new(RedisStore::new(config).without_sold_out_memo()), ledger, config).await,
        );
    }
    runs.into_iter()
        .map(|mut variant| {
            variant.sort_by(|a, b| a.stats.ops_per_s.total_cmp(&b.stats.ops_per_s));
            variant.swap_remove(variant.len() / 2)
        })
        .collect()
}

async fn round(variant: &'static str, store: Arc<RedisStore>, ledger: &DynamoLedger, config: &Config) -> HotPacket {
    let packet = load_packet(&store, PacketKind::Lucky, 10_000, 100).await.id.to_string();
    let service = Arc::new(GrabService::new(store.clone(), ledger.clone(), config));
    let requests = (0..USERS).map(|user| request(&packet, &format!("hot-{variant}-u{user}"))).collect();
    let mut conn = store.connection().await.expect("Redis");
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut conn).await.expect("RESETSTAT");
    let cpu_before = redis_cpu_seconds(&store).await;
    let (latencies, answers, elapsed) = harness::run(requests, CONCURRENCY, move |request| {
        let service = service.clone();
        async move { grab::handle(&service, request).await.expect("handler").status().as_u16() == 200 }
    })
    .await;
    let cpu = redis_cpu_seconds(&store).await - cpu_before;
    HotPacket {
        variant,
        stats: summarize(&latencies, elapsed),
        script_runs: script_runs(&store).await,
        redis_cpu_us_per_grab: cpu * 1e6 / f64::from(USERS),
        grabbed: answers.iter().filter(|paid| **paid).count() as u64,
    }
}

async fn info(store: &RedisStore, section: &str) -> String {
    let mut conn = store.connection().await.expect("Redis");
    redis::cmd("INFO").arg(section).query_async(&mut conn).await.expect("INFO")
}

/// The Redis server's CPU time so far (user + sys), seconds.
async fn redis_cpu_seconds(store: &RedisStore) -> f64 {
    info(store, "cpu")
        .await
        .lines()
        .filter(|line| line.starts_with("used_cpu_user:") || line.starts_with("used_cpu_sys:"))
        .filter_map(|line| line.split_once(':')?.1.trim().parse::<f64>().ok())
        .sum()
}

/// Script runs since the last RESETSTAT: EVALSHA calls that did not fail with NOSCRIPT, plus EVALs.
pub async fn script_runs(store: &RedisStore) -> u64 {
    let stats = info(store, "commandstats").await;
    let field = |command: &str, name: &str| -> u64 {
        stats
            .lines()
            .find_map(|line| line.strip_prefix(&format!("cmdstat_{command}:")))
            .and_then(|fields| fields.split(',').find_map(|pair| pair.strip_prefix(&format!("{name}="))?.parse().ok()))
            .unwrap_or(0)
    };
    field("evalsha", "calls") - field("evalsha", "failed_calls") - field("evalsha", "rejected_calls")
        + field("eval", "calls")
}
