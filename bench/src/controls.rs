//! What the risk controls cost a grab (`make bench-controls`): the real handler on fresh grabs,
//! each control off and on, in rotating order, the median of five rounds each.
//!
//! - `none`: no grab rate (`USER_GRAB_LIMIT=0`) and no hold check: the grab path as it was
//!   before the controls;
//! - `holds`: the hold check, with 1,000 holds in force in the ledger (every grab's lookup is in
//!   a book of 1,000 users, read again every refresh), no grab rate: what every deployment runs;
//! - `rate exact`: every grab counted against its user's rate before it (`INCR` and `EXPIRE
//!   NX`, one round trip before the script), a limit no bench user reaches, no hold check;
//! - `rate alongside`: the same counts sent with the script, at once (`USER_GRAB_COUNTING`'s
//!   default), no hold check;
//! - `rate alongside + holds`: both controls as the template deploys them.
//!
//! Each at concurrency 1 (the single-call path: one request per execution environment, standard
//! Lambda) and 256 (the coalesced path, the rate's counts batched with the grabs'). Redis CPU is
//! `INFO cpu` before and after, over the fresh grabs.

use std::sync::Arc;

use grab::GrabService;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::domain::risk::{GrabRate, HoldRequest, HoldScope, RateCounting};
use red_packets::domain::{PacketKind, UserId};
use red_packets::ports::Holds;
use red_packets::{Config, SystemClock};
use serde::Serialize;

use crate::grab_path::{fresh_grab, load_packet, request};
use crate::harness;
use crate::seeds::redis_cpu_seconds;
use crate::stats::{summarize, RunStats};

/// Rounds per variant and concurrency; the median is reported.
const ROUNDS: usize = 5;

/// Holds in force in the `rate + holds` variant.
const HOLDS: usize = 1_000;

/// One variant at one concurrency: the median round by grabs/s.
#[derive(Debug, Clone, Serialize)]
pub struct ControlsRun {
    /// `none`, `holds`, `rate exact`, `rate alongside` or `rate alongside + holds`.
    pub variant: &'static str,
    /// Callers at once.
    pub concurrency: usize,
    /// Throughput and latency.
    #[serde(flatten)]
    pub stats: RunStats,
    /// Redis CPU per fresh grab, microseconds.
    pub redis_cpu_us_per_grab: f64,
    /// Answers other than a fresh 200 (there should be none).
    pub unexpected: u64,
}

/// Every variant at concurrency 1 and 256, rounds in rotating order.
pub async fn compare(config: &Config, ledger: &DynamoLedger) -> Vec<ControlsRun> {
    let mut held_config = config.clone();
    held_config.table_name = format!("{}-holds-{}", config.table_name, std::process::id());
    let held_ledger = DynamoLedger::new(DynamoLedger::client_from_env().expect("a DynamoDB client"), &held_config);
    held_ledger.ensure_table().await.expect("DynamoDB Local");
    place_holds(&held_ledger).await;
    let rated = |mut config: Config, counting: RateCounting| {
        config.grab_rate = Some(GrabRate { grabs: 1_000_000, window_seconds: 60, counting });
        config
    };
    let mut unrated = config.clone();
    unrated.grab_rate = None;
    let mut unrated_held = held_config.clone();
    unrated_held.grab_rate = None;
    let variants: [(&'static str, Config, &DynamoLedger, bool); 5] = [
        ("none", unrated, ledger, false),
        ("holds", unrated_held, &held_ledger, true),
        ("rate exact", rated(config.clone(), RateCounting::Exact), ledger, false),
        ("rate alongside", rated(config.clone(), RateCounting::Alongside), ledger, false),
        ("rate alongside + holds", rated(held_config, RateCounting::Alongside), &held_ledger, true),
    ];
    let mut runs = Vec::new();
    for (concurrency, grabs) in [(1, 3_000u32), (256, 20_000)] {
        let mut rounds: Vec<Vec<ControlsRun>> = vec![Vec::new(); variants.len()];
        for round in 0..ROUNDS {
            for turn in 0..variants.len() {
                let index = (turn + round) % variants.len();
                let (variant, config, ledger, hold_check) = &variants[index];
                rounds[index].push(one(variant, config, ledger, *hold_check, concurrency, grabs, round).await);
            }
        }
        for mut variant in rounds {
            variant.sort_by(|a, b| a.stats.ops_per_s.total_cmp(&b.stats.ops_per_s));
            runs.push(variant.swap_remove(variant.len() / 2));
        }
    }
    runs
}

async fn place_holds(ledger: &DynamoLedger) {
    for n in 0..HOLDS {
        let hold = HoldRequest {
            user: UserId::from_claim(&format!("held-{n}")).expect("user"),
            scope: HoldScope::All,
            operator: "bench".into(),
            reason: "the controls bench".into(),
            expires_at: None,
        };
        ledger.place_hold(&hold, red_packets::Clock::now_ms(&SystemClock)).await.expect("a hold placed");
    }
}

async fn one(
    variant: &'static str,
    config: &Config,
    ledger: &DynamoLedger,
    hold_check: bool,
    concurrency: usize,
    grabs: u32,
    round: usize,
) -> ControlsRun {
    let store = Arc::new(RedisStore::new(config));
    let service = GrabService::new(store.clone(), ledger.clone(), config);
    let service = Arc::new(if hold_check { service } else { service.without_hold_check() });
    let packet = load_packet(&store, PacketKind::Fixed, u64::from(grabs), grabs).await.id.to_string();
    // The first grab reads the holds: outside the measured run.
    let warm = grab::handle(&service, request(&packet, &format!("ctl-{round}-warm"))).await.expect("handler");
    assert_eq!(warm.status(), 200, "the warm-up grab");
    let tag = variant.replace(' ', "");
    let requests = (1..grabs).map(|n| request(&packet, &format!("ctl-{tag}-c{concurrency}-r{round}-u{n}"))).collect();
    let mut conn = store.connection().await.expect("Redis");
    let cpu_before = redis_cpu_seconds(&mut conn).await;
    let (latencies, answers, elapsed) = harness::run(requests, concurrency, move |request| {
        let service = service.clone();
        async move { fresh_grab(&service, request).await }
    })
    .await;
    let cpu = redis_cpu_seconds(&mut conn).await - cpu_before;
    let fresh = answers.iter().filter(|fresh| **fresh).count();
    ControlsRun {
        variant,
        concurrency,
        stats: summarize(&latencies, elapsed),
        redis_cpu_us_per_grab: cpu * 1e6 / fresh.max(1) as f64,
        unexpected: (answers.len() - fresh) as u64,
    }
}
