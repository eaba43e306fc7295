//! Memory over the soak: the local API process's resident set, and Redis's own figures.

use std::time::{Duration, Instant};

use red_packets::adapters::RedisStore;
use serde::Serialize;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// One sample.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Seconds since the soak began.
    pub at_s: f64,
    /// The local API's VmRSS, KiB.
    pub rss_kib: u64,
    /// Redis `used_memory`, bytes.
    pub redis_used_bytes: u64,
    /// Redis `DBSIZE`.
    pub redis_keys: u64,
}

/// Samples every few seconds until stopped.
pub struct Sampler {
    stop: watch::Sender<bool>,
    task: JoinHandle<Vec<Sample>>,
}

impl Sampler {
    /// Starts sampling process `pid` and the Redis behind `store` every `every`.
    pub fn start(pid: u32, store: RedisStore, every: Duration) -> Sampler {
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let mut samples = Vec::new();
            let mut ticks = tokio::time::interval(every);
            loop {
                tokio::select! {
                    _ = ticks.tick() => {}
                    _ = stopped.changed() => return samples,
                }
                let (redis_used_bytes, redis_keys) = redis_memory(&store).await;
                samples.push(Sample {
                    at_s: started.elapsed().as_secs_f64(),
                    rss_kib: rss_kib(pid),
                    redis_used_bytes,
                    redis_keys,
                });
            }
        });
        Sampler { stop, task }
    }

    /// Stops sampling; every sample taken.
    pub async fn stop(self) -> Vec<Sample> {
        let _ = self.stop.send(true);
        self.task.await.unwrap_or_default()
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

async fn redis_memory(store: &RedisStore) -> (u64, u64) {
    let Ok(mut conn) = store.connection().await else { return (0, 0) };
    let info: String = redis::cmd("INFO").arg("memory").query_async(&mut conn).await.unwrap_or_default();
    let used = info.lines().find_map(|line| line.strip_prefix("used_memory:")?.trim().parse().ok()).unwrap_or(0);
    let keys = redis::cmd("DBSIZE").query_async(&mut conn).await.unwrap_or(0);
    (used, keys)
}

/// Whether memory stayed flat: the mean over the second tenth of the traffic (after warm-up)
/// against the mean over the last tenth.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// Mean RSS over the second tenth, MiB.
    pub early_rss_mib: f64,
    /// Mean RSS over the last tenth, MiB.
    pub late_rss_mib: f64,
    /// The highest RSS sampled, MiB.
    pub peak_rss_mib: f64,
    /// Redis `used_memory` over the same windows, MiB.
    pub redis_early_mib: f64,
    /// Redis `used_memory` over the last tenth, MiB.
    pub redis_late_mib: f64,
    /// Late RSS within 10% + 2 MiB of early RSS.
    pub flat: bool,
}

impl Verdict {
    /// The verdict over a soak of `seconds` of traffic.
    pub fn of(samples: &[Sample], seconds: u64) -> Verdict {
        let seconds = seconds as f64;
        let mean = |from: f64, to: f64, value: fn(&Sample) -> f64| {
            let window: Vec<f64> = samples.iter().filter(|s| s.at_s >= from && s.at_s <= to).map(value).collect();
            window.iter().sum::<f64>() / window.len().max(1) as f64
        };
        let rss = |s: &Sample| s.rss_kib as f64 / 1024.0;
        let redis = |s: &Sample| s.redis_used_bytes as f64 / 1_048_576.0;
        let early_rss_mib = mean(0.1 * seconds, 0.2 * seconds, rss);
        let late_rss_mib = mean(0.9 * seconds, seconds, rss);
        Verdict {
            early_rss_mib,
            late_rss_mib,
            peak_rss_mib: samples.iter().map(rss).fold(0.0, f64::max),
            redis_early_mib: mean(0.1 * seconds, 0.2 * seconds, redis),
            redis_late_mib: mean(0.9 * seconds, seconds, redis),
            flat: early_rss_mib > 0.0 && late_rss_mib <= early_rss_mib * 1.10 + 2.0,
        }
    }

    /// The memory part of the report.
    pub fn markdown(&self) -> String {
        format!(
            "| memory | second tenth (mean) | last tenth (mean) |\n|---|---|---|\n| local API RSS | {:.1} MiB | {:.1} MiB (peak {:.1} MiB) |\n| Redis used_memory | {:.1} MiB | {:.1} MiB |\n\nRSS flat (last tenth within 10% + 2 MiB of the second): {}",
            self.early_rss_mib,
            self.late_rss_mib,
            self.peak_rss_mib,
            self.redis_early_mib,
            self.redis_late_mib,
            if self.flat { "yes" } else { "NO" }
        )
    }
}
