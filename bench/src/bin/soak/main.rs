//! `make soak`: minutes of steady mixed traffic (send, grab, packet view, history, withdrawals
//! the payments system resolves, adjustments two operators make) against the local API, whose settle runs on its own schedule meanwhile; memory sampled throughout; at the
//! end, once every packet has expired and settled, every invariant of DESIGN.md checked against
//! DynamoDB Local and the answers the clients were given. Writes `bench/results/soak-<seconds>s.json`.
//!
//! `scripts/soak.sh` starts the stack and passes: `SOAK_URL` (the local API), `SOAK_PID` (its
//! process, for memory), `SOAK_LOG` (its log), `SOAK_SECONDS` (default 600), plus the stores'
//! `REDIS_URL`, `AWS_ENDPOINT_URL_DYNAMODB`, `TABLE_NAME` and the `LOCAL_JWT_SECRET`.

mod failover;
mod memory;
mod money;
mod traffic;
mod verify;

use std::time::Duration;

use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::Config;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("SOAK_URL")?;
    let pid: u32 = std::env::var("SOAK_PID")?.parse()?;
    let log = std::env::var("SOAK_LOG")?;
    let seconds: u64 = std::env::var("SOAK_SECONDS").ok().map(|s| s.parse()).transpose()?.unwrap_or(600);
    let config = Config::from_env()?;
    let store = RedisStore::new(&config);
    let dynamodb = DynamoLedger::client_from_env().expect("a DynamoDB client");
    let ledger = DynamoLedger::new(dynamodb.clone(), &config);

    eprintln!("[soak] {seconds} s of traffic against {url}");
    let sampler = memory::Sampler::start(pid, RedisStore::new(&config), Duration::from_secs(5));
    // SOAK_FAILOVER_EVERY_SECONDS (default 60; 0 for none): a simulated failover that often.
    let every: u64 = std::env::var("SOAK_FAILOVER_EVERY_SECONDS").ok().map(|s| s.parse()).transpose()?.unwrap_or(60);
    let failing_over = async {
        match every {
            0 => Vec::new(),
            every => {
                failover::run(RedisStore::new(&config), Duration::from_secs(every), Duration::from_secs(seconds)).await
            }
        }
    };
    let (outcome, failovers) = tokio::join!(traffic::run(&url, Duration::from_secs(seconds)), failing_over);
    eprintln!(
        "[soak] traffic done: {} requests, {} errors; waiting for every packet to expire and settle",
        outcome.requests(),
        outcome.errors.len()
    );
    let settled = verify::wait_until_settled(&ledger, &outcome.packets, Duration::from_secs(180)).await;
    let samples = sampler.stop().await;
    let mut report =
        verify::check(&outcome, &settled, &failovers, &store, (&ledger, &dynamodb, &config.table_name), &log).await;
    report.check_money_out(&outcome, &money::Desk::from_env()).await;
    let memory = memory::Verdict::of(&samples, seconds);

    println!("{}", report.markdown(&outcome, seconds));
    println!(
        "Failovers: {} (a packet's keys put back {} ms), {} casualties re-granted or revoked, {} grabs acknowledged in a lost window and not paid.\n",
        failovers.len(),
        failovers.first().map_or(0, |failover| failover.restored_ms - failover.snapshot_ms),
        report.casualties,
        report.lost_in_failovers
    );
    let resolved = |how: &str| outcome.withdrawals.iter().filter(|asked| asked.resolved == Some(how)).count();
    println!(
        "Money out: {} withdrawals asked ({} paid, {} failed, the rest pending), each word delivered twice; {} adjustments applied by a second operator.\n",
        outcome.withdrawals.len(),
        resolved("paid"),
        resolved("failed"),
        outcome.adjustments.len()
    );
    println!("{}", memory.markdown());
    let results = json!({
        "seconds": seconds,
        "requests": outcome.requests(),
        "by_route_and_status": outcome.tally(),
        "errors": outcome.errors,
        "packets": outcome.packets.len(),
        "acknowledged_grabs": outcome.acknowledged.len(),
        "withdrawals": outcome.withdrawals.len(),
        "withdrawals_paid": resolved("paid"),
        "withdrawals_failed": resolved("failed"),
        "adjustments": outcome.adjustments.len(),
        "violations": report.violations,
        "failovers": failovers,
        "failover_casualties": report.casualties,
        "lost_in_failovers": report.lost_in_failovers,
        "history_freshness_p50_ms": report.freshness_p50_ms,
        "history_freshness_p99_ms": report.freshness_p99_ms,
        "freshness_probes": outcome.freshness_ms.len(),
        "memory": memory,
        "samples": samples,
    });
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("results/soak-{seconds}s.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&results)?)?;
    eprintln!("[soak] wrote {}", path.display());
    if !outcome.errors.is_empty() || !report.violations.is_empty() || !memory.flat {
        return Err("soak failed: see the report above".into());
    }
    Ok(())
}
