//! `make bench`: the grab path against Redis's own limit and the seeds' designs, in one run on
//! the same Redis; split, send and settle throughput; cold starts and footprint; fairness.
//! Expects the Redis and DynamoDB Local that `scripts/bench.sh` starts (REDIS_URL,
//! AWS_ENDPOINT_URL_DYNAMODB) and the release binaries it builds. With `BENCH_SEEDS_ONLY` set it
//! runs the seeds' comparison alone and prints it (for `perf record` of the client side); with
//! `BENCH_DRAIN_ONLY`, settle's drain and its write units per grab; with `BENCH_HOT_KEY_ONLY`,
//! one hot packet's four designs; with `BENCH_CAMPAIGN_FLOODS_ONLY`, the campaign's floods. It writes the run's figures to `bench/results/latest.json`, then
//! renders BENCHMARKS.md from its template and the data under `bench/results/` (`bench::render`);
//! `bench render` (`cargo run -p bench -- render`) does only the latter, running nothing;
//! `bench fairness` (`make bench-fairness`) reruns the fairness simulation alone (no services).
#![recursion_limit = "256"]

mod campaign;
mod cold;
mod controls;
mod drain;
mod fairness;
mod grab_path;
mod harness;
mod hot_key;
mod hot_packet;
mod kit;
mod patterns;
mod reads;
mod redis_benchmark;
mod report;
mod seeds;
mod settle_scale;
mod stats;
mod throughput;
mod write_units;

use std::sync::Arc;
use std::time::Duration;

use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::Config;

/// The campaign bench's figures `latest.json` carries beside `campaign.json`.
const CAMPAIGN_HEADLINES: [&str; 3] =
    ["campaign_100k_grabs_per_s", "campaign_100k_ledger_seconds", "peak_partition_write_units_per_s"];

/// Measures the read side ([`reads::measure`]) into bench/results/reads.json (with the commit it
/// measured, for the cost model: `scripts/capacity.py`) and renders BENCHMARKS.md.
async fn write_reads(workspace: &std::path::Path, config: &Config) -> Result<(), Box<dyn std::error::Error>> {
    let reads = reads::measure(config).await;
    let commit =
        std::process::Command::new("git").args(["rev-parse", "--short", "HEAD"]).current_dir(workspace).output()?;
    let mut measured = serde_json::to_value(&reads)?;
    measured["commit"] = String::from_utf8_lossy(&commit.stdout).trim().into();
    measured["machine"] = serde_json::to_value(report::Machine::detect())?;
    let results_dir = workspace.join("bench/results");
    std::fs::create_dir_all(&results_dir)?;
    std::fs::write(results_dir.join("reads.json"), serde_json::to_string_pretty(&measured)?)?;
    bench::render::write(workspace)?;
    println!("{}", serde_json::to_string_pretty(&measured)?);
    Ok(())
}

fn step(what: &str) {
    eprintln!("[bench] {what}");
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let workspace = bench::render::workspace();
    if std::env::args().nth(1).as_deref() == Some("render") {
        bench::render::write(&workspace)?;
        step("rendered BENCHMARKS.md from bench/BENCHMARKS.md.j2 and bench/results/");
        return Ok(());
    }
    if std::env::args().nth(1).as_deref() == Some("fairness") {
        // `make bench-fairness`: the fairness simulation alone (no services), into latest.json.
        let fairness = fairness::all();
        let results_dir = workspace.join("bench/results");
        fairness::chart(&fairness, &results_dir.join("fairness.png"))?;
        let path = results_dir.join("latest.json");
        let mut latest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
        latest["details"]["fairness"] = serde_json::to_value(&fairness)?;
        std::fs::write(&path, serde_json::to_string_pretty(&latest)?)?;
        bench::render::write(&workspace)?;
        step("wrote the fairness figures into bench/results/latest.json, bench/results/fairness.png and BENCHMARKS.md");
        return Ok(());
    }
    let mut config = Config::from_env()?;
    config.limits.max_count = 1_000_000;
    config.limits.max_total_cents = 1_000_000_000;
    // A few bench senders record thousands of packets: the daily limits are who_may_grab.rs's subject.
    config.daily.max_sends = u32::MAX;
    config.daily.max_sent_cents = 1_000_000_000_000_000;
    config.redis.timeout = Duration::from_secs(5);
    config.redis.key_prefix = "bench".into();
    let redis_port: u16 = config
        .redis
        .url
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
        .ok_or("REDIS_URL has no port")?;
    let client = DynamoLedger::client_from_env()?;
    let ledger = DynamoLedger::new(client.clone(), &config);
    ledger.ensure_table().await?;
    let store = Arc::new(RedisStore::new(&config));
    let grab_service = Arc::new(grab::GrabService::new(store.clone(), ledger.clone(), &config));

    if std::env::var_os("BENCH_SEEDS_ONLY").is_some() {
        // For profiling the grab path (`perf record`): the seeds' comparison alone, printed.
        let seeds = seeds::rounds(&config, &ledger, 3).await?;
        println!("{}", serde_json::to_string_pretty(&seeds)?);
        return Ok(());
    }
    if std::env::var_os("BENCH_HOT_KEY_ONLY").is_some() {
        // One hot packet, four designs, printed (no BENCHMARKS.md).
        let hot_key = hot_key::compare(&config, &ledger, 3).await;
        println!("{}", serde_json::to_string_pretty(&hot_key)?);
        let batch = hot_key::grabs_per_script_call(&config, &ledger).await;
        println!("grabs per script call, coalesced campaign: {batch:.1}");
        return Ok(());
    }
    if std::env::var_os("BENCH_DRAIN_ONLY").is_some() {
        // For tuning settle's writes: the drain comparison alone, printed.
        let drain = drain::compare(&config, &ledger, &client).await;
        println!("{}", serde_json::to_string_pretty(&drain)?);
        let money_trail = write_units::money_trail(&config, &client).await;
        println!("{}", serde_json::to_string_pretty(&money_trail)?);
        return Ok(());
    }
    if std::env::var_os("BENCH_CAMPAIGN_FLOODS_ONLY").is_some() {
        // For profiling the flood (`perf record`): the campaign's floods alone, printed.
        let floods = campaign::floods(&config, &client).await;
        println!("{}", serde_json::to_string_pretty(&floods)?);
        return Ok(());
    }
    let results_dir = workspace.join("bench/results");
    if std::env::var_os("BENCH_CAMPAIGN_ONLY").is_some() {
        // `make bench-campaign`: the campaign packet alone, into bench/results/campaign.json.
        step("the campaign packet: 100,000 shares opening at an instant, then settled under the partition ceiling");
        let campaign = campaign::measure(&config, &client).await.json();
        std::fs::create_dir_all(&results_dir)?;
        std::fs::write(results_dir.join("campaign.json"), serde_json::to_string_pretty(&campaign)?)?;
        // Its headline figures into latest.json too, as a whole `make bench` writes them.
        let path = results_dir.join("latest.json");
        let mut latest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
        for key in CAMPAIGN_HEADLINES {
            latest[key] = campaign[key].clone();
        }
        std::fs::write(&path, serde_json::to_string_pretty(&latest)?)?;
        bench::render::write(&workspace)?;
        println!("{}", serde_json::to_string_pretty(&campaign)?);
        return Ok(());
    }
    if std::env::var_os("BENCH_PATTERNS_ONLY").is_some() {
        // The pattern rules' figures alone, into bench/results/controls.json beside the grab path's.
        step("pattern detection: ordinary chats' events through the risk function");
        let path = results_dir.join("controls.json");
        let mut measured: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
        measured["patterns"] = serde_json::to_value(patterns::measure(&config).await)?;
        std::fs::write(&path, serde_json::to_string_pretty(&measured)?)?;
        bench::render::write(&workspace)?;
        println!("{}", serde_json::to_string_pretty(&measured["patterns"])?);
        return Ok(());
    }
    if std::env::var_os("BENCH_KIT_ONLY").is_some() {
        // `make bench-kit`: what membership tickets cost a grab, and a 304 against a full
        // answer, into bench/results/kit.json.
        step("membership tickets on the single-call grab path, 5 rounds each; polls with and without ETags");
        let kit = kit::measure(&config, &ledger).await;
        let measured = serde_json::json!({ "machine": report::Machine::detect(), "kit": kit });
        std::fs::create_dir_all(&results_dir)?;
        std::fs::write(results_dir.join("kit.json"), serde_json::to_string_pretty(&measured)?)?;
        bench::render::write(&workspace)?;
        println!("{}", serde_json::to_string_pretty(&measured)?);
        return Ok(());
    }
    if std::env::var_os("BENCH_READS_ONLY").is_some() {
        // `make bench-reads`: the read side of a campaign, into bench/results/reads.json.
        step("the read side: a page and a 304 of 1,000- and 100,000-share packets, open and settled; 10,000 viewers through the edge");
        write_reads(&workspace, &config).await?;
        return Ok(());
    }
    if std::env::var_os("BENCH_CONTROLS_ONLY").is_some() {
        // `make bench-controls`: what the risk controls cost a grab, and what pattern detection
        // costs the events it reads, into bench/results/controls.json.
        step("the risk controls off and on: the grab handler at concurrency 1 and 256, 5 rounds each");
        let runs = controls::compare(&config, &ledger).await;
        step("pattern detection: ordinary chats' events through the risk function");
        let patterns = patterns::measure(&config).await;
        let measured = serde_json::json!({ "machine": report::Machine::detect(), "runs": runs, "patterns": patterns });
        std::fs::create_dir_all(&results_dir)?;
        std::fs::write(results_dir.join("controls.json"), serde_json::to_string_pretty(&measured)?)?;
        bench::render::write(&workspace)?;
        println!("{}", serde_json::to_string_pretty(&measured)?);
        return Ok(());
    }
    step("cold starts (20 per binary), DynamoDB Local over TLS");
    let ledger_over_tls = cold::Ledger::over_tls().await;
    let binaries = cold::all(&workspace, &workspace.join("target/release"), &ledger_over_tls).await;
    let binaries_before = match std::env::var("COLD_BEFORE_DIR") {
        Ok(dir) => {
            step(&format!("cold starts of the binaries in {dir}"));
            let label = std::env::var("COLD_BEFORE_LABEL").unwrap_or_else(|_| dir.clone());
            Some((label, cold::all(&workspace, std::path::Path::new(&dir), &ledger_over_tls).await))
        }
        Err(_) => None,
    };
    drop(ledger_over_tls);
    if std::env::var_os("BENCH_COLD_ONLY").is_some() {
        // Init, first and warm responses and sizes alone, printed (a before-and-after of a build change).
        let cold = serde_json::json!({ "binaries": binaries, "before": binaries_before });
        println!("{}", serde_json::to_string_pretty(&cold)?);
        return Ok(());
    }
    step("grab handler at concurrency 1, 16, 64, 256");
    let mut levels = Vec::new();
    for (concurrency, grabs) in [(1, 5_000), (16, 40_000), (64, 40_000), (256, 40_000)] {
        levels.push(grab_path::level(grab_service.clone(), &store, concurrency, grabs).await);
    }
    step("storm: 100 packets x 100 shares, 20,000 users");
    let storm = grab_path::storm(grab_service.clone(), &store).await;
    step("hot packet: 20,000 users on one 100-share packet, fast path vs script only, 3 rounds each");
    let hot_packet = hot_packet::compare(&config, &ledger, 3).await;
    step("grab binary peak RSS");
    let grab_peak_rss_mib = cold::grab_peak_rss_mib(&workspace, &store).await;
    step("redis-benchmark EVALSHA grab.lua");
    let redis_benchmark_unpipelined = redis_benchmark::evalsha(&store, redis_port, 1).await?;
    let redis_benchmark_pipelined = redis_benchmark::evalsha(&store, redis_port, 16).await?;
    step("the seeds' designs and ours, 3 rounds in rotating order");
    let seeds = seeds::rounds(&config, &ledger, 3).await?;
    step("one hot packet: campaign, chat and one-at-a-time, four designs, 3 rounds in rotating order");
    let hot_key = hot_key::compare(&config, &ledger, 3).await;
    let hot_key_batch_size = hot_key::grabs_per_script_call(&config, &ledger).await;
    step("split and send throughput");
    let splits = throughput::splits();
    let send_service = Arc::new(send::SendService::new(ledger.clone(), store.clone(), &config));
    let send = throughput::sends(send_service).await;
    step("settle against a naive drain");
    let drain = drain::compare(&config, &ledger, &client).await;
    step("write units per grab of settle's money trail");
    let money_trail = write_units::money_trail(&config, &client).await;
    step("settle against open packets and new grabs; freshness while draining");
    let settle_scale = settle_scale::measure(&config, &ledger).await;
    step("fairness (100,000 packets per rule and split version)");
    let fairness = fairness::all();
    step("the campaign packet: 100,000 shares opening at an instant, then settled under the partition ceiling");
    let campaign = campaign::measure(&config, &client).await.json();
    std::fs::create_dir_all(&results_dir)?;
    fairness::chart(&fairness, &results_dir.join("fairness.png"))?;
    settle_scale::chart(&settle_scale, &results_dir.join("settle-scale.png"))?;

    let results = report::Results {
        machine: report::Machine::detect(),
        setup: report::Setup::current(),
        levels,
        storm,
        hot_packet,
        redis_benchmark_unpipelined,
        redis_benchmark_pipelined,
        seeds,
        hot_key,
        hot_key_batch_size,
        splits,
        send,
        drain,
        money_trail,
        settle_scale,
        binaries,
        binaries_before,
        grab_peak_rss_mib,
        fairness,
    };
    let mut latest = results.json();
    for key in CAMPAIGN_HEADLINES {
        latest[key] = campaign[key].clone();
    }
    std::fs::write(results_dir.join("latest.json"), serde_json::to_string_pretty(&latest)?)?;
    std::fs::write(results_dir.join("campaign.json"), serde_json::to_string_pretty(&campaign)?)?;
    step("the read side: a page and a 304 of 1,000- and 100,000-share packets, open and settled; 10,000 viewers through the edge");
    write_reads(&workspace, &config).await?;
    step("wrote bench/results/latest.json, reads.json, fairness.png, settle-scale.png and BENCHMARKS.md");
    println!("{}", serde_json::to_string_pretty(&results.json()["grab_handler_ops_per_s_c64"])?);
    Ok(())
}
