//! `bench/results/latest.json`: one run's figures, as data. BENCHMARKS.md is rendered from them
//! (`bench::render`).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use crate::cold::Binary;
use crate::drain::Drain;
use crate::fairness::{self, Fairness};
use crate::grab_path::{Level, Storm};
use crate::hot_key::HotKeyResult;
use crate::hot_packet::{self, HotPacket};
use crate::seeds::DesignResult;
use crate::settle_scale::SettleScale;
use crate::stats::RunStats;
use crate::throughput::Split;
use crate::write_units::MoneyTrail;

/// The machine the run was on.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    /// CPU model.
    pub cpu: String,
    /// Cores the OS sees.
    pub cores: usize,
    /// Memory, GiB.
    pub memory_gib: f64,
    /// `redis-server --version`.
    pub redis: String,
    /// When, UTC.
    pub date: String,
}

impl Machine {
    /// Reads /proc and asks redis-server.
    pub fn detect() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name"))
            .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let kb = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok());
        let redis = std::process::Command::new("redis-server")
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
        Machine {
            cpu: cpu.unwrap_or_else(|| "unknown".into()),
            cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            memory_gib: kb.unwrap_or(0.0) / 1_048_576.0,
            redis: redis.unwrap_or_else(|_| "unknown".into()),
            date: red_packets::clock::rfc3339(red_packets::Clock::now_ms(&red_packets::SystemClock)),
        }
    }
}

/// What the run was set to, where the report states it beside the figures.
#[derive(Debug, Clone, Serialize)]
pub struct Setup {
    /// Packets settle keeps in flight (`red_packets::settle::PACKETS_IN_FLIGHT`).
    pub packets_in_flight: usize,
    /// Concurrent callers of the seeds' comparison.
    pub seeds_concurrency: usize,
    /// Users on the hot packet.
    pub hot_packet_users: u32,
    /// Concurrent callers on the hot packet.
    pub hot_packet_concurrency: usize,
    /// Packets per rule of the fairness simulation.
    pub fairness_packets: u64,
    /// Cents in each of them.
    pub fairness_total_cents: u64,
    /// Shares in each of them.
    pub fairness_shares: u32,
}

impl Setup {
    /// This build's.
    pub fn current() -> Self {
        Setup {
            packets_in_flight: red_packets::settle::PACKETS_IN_FLIGHT,
            seeds_concurrency: crate::seeds::CONCURRENCY,
            hot_packet_users: hot_packet::USERS,
            hot_packet_concurrency: hot_packet::CONCURRENCY,
            fairness_packets: fairness::PACKETS,
            fairness_total_cents: fairness::TOTAL,
            fairness_shares: fairness::COUNT,
        }
    }
}

/// Everything one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Results {
    /// Where it ran.
    pub machine: Machine,
    /// What it was set to.
    pub setup: Setup,
    /// The grab handler at each concurrency.
    pub levels: Vec<Level>,
    /// 100 packets raced for by 20,000 users.
    pub storm: Storm,
    /// One sold-out packet, with the fast path and without.
    pub hot_packet: Vec<HotPacket>,
    /// `redis-benchmark`'s EVALSHA of grab.lua, one command per round trip.
    pub redis_benchmark_unpipelined: f64,
    /// The same, 16 commands per round trip.
    pub redis_benchmark_pipelined: f64,
    /// The seeds' designs and ours, on the same harness.
    pub seeds: Vec<DesignResult>,
    /// One hot packet's shapes, four designs on each.
    pub hot_key: Vec<HotKeyResult>,
    /// Grabs per script call of `ours_coalesced` on the campaign packet (a separate round).
    pub hot_key_batch_size: f64,
    /// Shares split per second, per rule.
    pub splits: Vec<Split>,
    /// Sends through the handler.
    pub send: RunStats,
    /// Settle's drain against a naive one and DynamoDB Local's ceilings.
    pub drain: Drain,
    /// Write units per grab of settle's money trail.
    pub money_trail: MoneyTrail,
    /// Settle against open packets and new grabs; freshness while it drains.
    pub settle_scale: SettleScale,
    /// Cold starts and sizes of the release binaries.
    pub binaries: Vec<Binary>,
    /// The same starts on an earlier build's binaries (`COLD_BEFORE_DIR`), with where they came from.
    pub binaries_before: Option<(String, Vec<Binary>)>,
    /// The grab binary's peak RSS over 10,000 invocations.
    pub grab_peak_rss_mib: f64,
    /// Shares by grab position, per rule.
    pub fairness: Vec<Fairness>,
}

impl Results {
    fn level(&self, concurrency: usize) -> f64 {
        self.levels.iter().find(|l| l.concurrency == concurrency).map_or(0.0, |l| l.stats.ops_per_s)
    }

    fn hot(&self, variant: &str) -> &HotPacket {
        self.hot_packet.iter().find(|h| h.variant == variant).expect("variant measured")
    }

    fn design(&self, name: &str) -> &DesignResult {
        self.seeds.iter().find(|d| d.design == name).expect("design measured")
    }

    fn on_hot_key(&self, shape: &str, design: &str) -> &HotKeyResult {
        let mut results = self.hot_key.iter();
        results.find(|r| r.shape == shape && r.design == design).expect("design measured on the shape")
    }

    fn cold(&self, name: &str) -> f64 {
        self.binaries.iter().find(|b| b.name == name).map_or(0.0, |b| b.init_ms)
    }

    fn slowest_function_cold_start(&self) -> f64 {
        let functions = self.binaries.iter().filter(|b| b.name != "hello");
        functions.map(|b| b.init_ms).fold(0.0, f64::max)
    }

    /// The flat keys the issue names, and every detail.
    pub fn json(&self) -> Value {
        let (ours, two_list) = (self.design("ours"), self.design("two_list"));
        let phrase = self.design("ours_phrase");
        let check_then_act = self.design("check_then_act");
        let (fast, script) = (self.hot("fast path"), self.hot("script only"));
        let campaign = |design| self.on_hot_key("campaign", design);
        let one_at_a_time = |design| &self.on_hot_key("one_at_a_time", design).stats;
        let (drain, trail, scale) = (&self.drain, &self.money_trail, &self.settle_scale);
        let first_responses: BTreeMap<_, _> =
            self.binaries.iter().map(|b| (b.name.clone(), b.first_response_ms)).collect();
        json!({
            "grab_handler_ops_per_s_c64": self.level(64),
            "redis_benchmark_evalsha_ops_per_s": self.redis_benchmark_unpipelined,
            "redis_benchmark_evalsha_pipelined_ops_per_s": self.redis_benchmark_pipelined,
            "seed_lock_ops_per_s": self.design("lock").stats.ops_per_s,
            "seed_check_then_act_ops_per_s": check_then_act.stats.ops_per_s,
            "seed_check_then_act_violations": check_then_act.violations(),
            "seed_two_list_ops_per_s": two_list.stats.ops_per_s,
            "ours_ops_per_s": ours.stats.ops_per_s,
            "redis_cpu_us_per_fresh_grab": ours.redis_cpu_us_per_fresh_grab,
            "redis_cpu_us_per_repeat": ours.redis_cpu_us_per_repeat,
            "seed_two_list_redis_cpu_us_per_grab": two_list.redis_cpu_us_per_fresh_grab,
            "seed_two_list_redis_cpu_us_per_repeat": two_list.redis_cpu_us_per_repeat,
            "ours_redis_commands_per_attempt": ours.redis_commands_per_attempt,
            "ours_redis_commands_per_fresh_grab": ours.redis_commands_per_fresh_grab,
            "ours_redis_commands_per_repeat": ours.redis_commands_per_repeat,
            "ours_phrase_redis_commands_per_fresh_grab": phrase.redis_commands_per_fresh_grab,
            "ours_phrase_redis_cpu_us_per_fresh_grab": phrase.redis_cpu_us_per_fresh_grab,
            "seed_two_list_redis_commands_per_attempt": two_list.redis_commands_per_attempt,
            "ours_violations": ours.violations() + self.storm.violations,
            "settle_items_per_s": drain.settle_items_per_s,
            "settle_ceiling_items_per_s": drain.settle_ceiling_items_per_s,
            "settle_wallet_items_per_s": drain.settle_wallet_items_per_s,
            "settle_wallet_ratio": drain.settle_wallet_items_per_s / drain.settle_items_per_s,
            "money_trail_write_units_per_grab": trail.wallet_units_per_grab,
            "money_trail_reported_write_units_per_grab": trail.wallet_reported_units_per_grab,
            "settle_write_units_per_grab_without_wallet": trail.none_units_per_grab,
            "settle_full_run_items_per_s": drain.settle_full_run_items_per_s,
            "naive_settle_items_per_s": drain.naive_items_per_s,
            "settle_redis_commands_per_run_idle_1k": scale.idle[0].redis_commands,
            "settle_redis_commands_per_run_idle_10k": scale.idle[1].redis_commands,
            "settle_redis_commands_per_run_idle_100k": scale.idle[2].redis_commands,
            "settle_dynamodb_requests_per_run_idle_100k": scale.idle[2].dynamodb_requests,
            "history_freshness_p50_ms": scale.freshness_p50_ms,
            "history_freshness_p99_ms": scale.freshness_p99_ms,
            "cold_start_ms": self.cold("grab"),
            "hello_world_cold_start_ms": self.cold("hello"),
            "slowest_function_init_ms": self.slowest_function_cold_start(),
            "first_response_over_tls_ms": first_responses,
            "grab_peak_rss_mib": self.grab_peak_rss_mib,
            "hot_packet_fast_path_grabs_per_s": fast.stats.ops_per_s,
            "hot_packet_script_only_grabs_per_s": script.stats.ops_per_s,
            "hot_packet_fast_path_redis_cpu_us_per_grab": fast.redis_cpu_us_per_grab,
            "hot_packet_script_only_redis_cpu_us_per_grab": script.redis_cpu_us_per_grab,
            "coalesced_redis_cpu_us_per_fresh_grab":
                campaign("ours_coalesced").redis_cpu_us_per_attempt,
            "campaign_single_redis_cpu_us_per_fresh_grab":
                campaign("ours_single").redis_cpu_us_per_attempt,
            "campaign_two_list_redis_cpu_us_per_fresh_grab":
                campaign("two_list").redis_cpu_us_per_attempt,
            "campaign_coalesced_grabs_per_s": campaign("ours_coalesced").stats.ops_per_s,
            "campaign_single_grabs_per_s": campaign("ours_single").stats.ops_per_s,
            "campaign_two_list_grabs_per_s": campaign("two_list").stats.ops_per_s,
            "campaign_lock_grabs_per_s": campaign("lock").stats.ops_per_s,
            "campaign_grabs_per_script_call": self.hot_key_batch_size,
            "one_at_a_time_single_p50_us": one_at_a_time("ours_single").p50_us,
            "one_at_a_time_coalesced_p50_us": one_at_a_time("ours_coalesced").p50_us,
            "one_at_a_time_single_p99_us": one_at_a_time("ours_single").p99_us,
            "one_at_a_time_coalesced_p99_us": one_at_a_time("ours_coalesced").p99_us,
            "details": self,
        })
    }
}
