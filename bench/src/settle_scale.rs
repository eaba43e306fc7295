//! Settle's cost against what is open and what is new: one run over 1,000, 10,000 and 100,000
//! idle open packets (run time, Redis commands, DynamoDB requests: flat is the goal), runs after
//! 100, 1,000 and 10,000 new grabs (linear in grabs), and how fresh a grab is in its grabber's
//! history while an invocation drains under a steady grab rate.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use local::probe::{costs, RequestCounter};
use red_packets::adapters::DeployedSettler;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::config::Config;
use red_packets::domain::grab::GrabAttempt;
use red_packets::domain::history::Role;
use red_packets::domain::{Packet, PacketKind, UserId};
use red_packets::packets;
use red_packets::ports::{Ledger, PageRequest};
use red_packets::ports::{SettleCursor, SettleIndex};
use red_packets::settle::Settler;
use red_packets::SystemClock;
use serde::Serialize;

use crate::grab_path::load_packet;
use crate::stats::percentile;

/// One measured run.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// Open packets with no new grab.
    pub idle_packets: u64,
    /// Grabs made since the previous run.
    pub new_grabs: u64,
    /// The run's wall time, ms.
    pub run_ms: f64,
    /// Redis commands the run sent (`INFO commandstats`).
    pub redis_commands: u64,
    /// DynamoDB requests the run sent.
    pub dynamodb_requests: u64,
}

/// The section's figures.
#[derive(Debug, Clone, Serialize)]
pub struct SettleScale {
    /// Runs over idle packets only.
    pub idle: Vec<Run>,
    /// Runs after a number of new grabs, among 100,000 idle packets.
    pub busy: Vec<Run>,
    /// Grabs made per second while settle drained.
    pub steady_grabs_per_s: f64,
    /// Probed grabs.
    pub freshness_probes: usize,
    /// From a grab's answer to the grab in its grabber's `received` history, ms.
    pub freshness_p50_ms: f64,
    pub freshness_p99_ms: f64,
}

async fn measured(
    settler: &DeployedSettler,
    store: &RedisStore,
    counter: &RequestCounter,
    idle: u64,
    new_grabs: u64,
) -> Run {
    let run = async {
        let started = Instant::now();
        let summary = settler.run(settler.shards_of(&Default::default()), None).await;
        (summary, started.elapsed().as_secs_f64() * 1000.0)
    };
    let ((summary, run_ms), redis_commands, dynamodb_requests) = costs(store, counter, run).await;
    let summary = summary.expect("settle run");
    assert_eq!(summary.grabs_persisted, new_grabs, "{summary:?}");
    Run { idle_packets: idle, new_grabs, run_ms, redis_commands, dynamodb_requests }
}

async fn load_idle(store: &RedisStore, count: usize) -> Vec<Packet> {
    futures::stream::iter(0..count)
        .map(|_| load_packet(store, PacketKind::Fixed, 1_000, 10))
        .buffer_unordered(64)
        .collect()
        .await
}

/// Every figure of the section, on a key prefix of its own.
pub async fn measure(config: &Config, ledger: &DynamoLedger) -> SettleScale {
    let mut config = config.clone();
    config.redis.key_prefix = format!("{}-scale", config.redis.key_prefix);
    let store = Arc::new(RedisStore::new(&config));
    // The table holds the other sections' packets; this Redis has swept them already.
    store.set_sweep_state([0, store.settle_shards() - 1], 0, i64::MAX).await.expect("sweep record");
    let counter = RequestCounter::default();
    let client = DynamoLedger::client_from_env().expect("a DynamoDB client");
    let counted =
        aws_sdk_dynamodb::Client::from_conf(client.config().to_builder().interceptor(counter.clone()).build());
    let settler = Settler::new(store.clone(), DynamoLedger::new(counted, &config));

    let mut idle = Vec::new();
    let mut open = Vec::new();
    for level in [1_000usize, 10_000, 100_000] {
        open.extend(load_idle(&store, level - open.len()).await);
        idle.push(measured(&settler, &store, &counter, open.len() as u64, 0).await);
    }

    // New grabs among the 100,000 idle packets, recorded in the ledger first as a send would.
    let mut busy = Vec::new();
    let mut next = 0;
    for grabs in [100usize, 1_000, 10_000] {
        let packets = &open[next..next + grabs / 5];
        next += grabs / 5;
        futures::stream::iter(packets)
            .map(|packet| async move { ledger.record_packet(packet, None).await.expect("record") })
            .buffer_unordered(16)
            .collect::<Vec<_>>()
            .await;
        futures::stream::iter(packets.iter().flat_map(|packet| (0..5).map(move |n| (packet, n))))
            .map(|(packet, n)| {
                let store = store.clone();
                async move {
                    let user = UserId::from_claim(&format!("scale-u{n}")).expect("user");
                    packets::grab(&store, ledger, &packet.id, &GrabAttempt::by(user), &SystemClock)
                        .await
                        .expect("grab");
                }
            })
            .buffer_unordered(64)
            .collect::<Vec<_>>()
            .await;
        busy.push(measured(&settler, &store, &counter, (open.len() - grabs / 5) as u64, grabs as u64).await);
    }

    let (steady_grabs_per_s, freshness) = freshness(&config, ledger).await;
    SettleScale {
        idle,
        busy,
        steady_grabs_per_s,
        freshness_probes: freshness.len(),
        freshness_p50_ms: percentile(&freshness, 50.0),
        freshness_p99_ms: percentile(&freshness, 99.0),
    }
}

/// 15 s of 200 grabs a second on 30 packets while settle drains; one grab in ten followed to
/// its grabber's history.
async fn freshness(config: &Config, ledger: &DynamoLedger) -> (f64, Vec<f64>) {
    let mut config = config.clone();
    config.redis.key_prefix = format!("{}-fresh", config.redis.key_prefix);
    let store = Arc::new(RedisStore::new(&config));
    store.set_sweep_state([0, store.settle_shards() - 1], 0, i64::MAX).await.expect("sweep record");
    let mut packets = Vec::new();
    for _ in 0..30 {
        let packet = load_packet(&store, PacketKind::Lucky, 100_000, 1_000).await;
        ledger.record_packet(&packet, None).await.expect("record");
        packets.push(packet);
    }
    let settler = Arc::new(Settler::new(store.clone(), ledger.clone()).draining_for(Duration::from_secs(25)));
    let draining = tokio::spawn({
        let settler = settler.clone();
        async move { settler.drain(settler.shards_of(&Default::default()), None, settler.drain_until(None)).await }
    });
    let started = Instant::now();
    let mut ticks = tokio::time::interval(Duration::from_millis(5));
    let mut probes = tokio::task::JoinSet::new();
    let mut grabs = 0u64;
    while started.elapsed() < Duration::from_secs(15) {
        ticks.tick().await;
        let packet = packets[grabs as usize % packets.len()].clone();
        let user = UserId::from_claim(&format!("fresh-u{grabs}")).expect("user");
        grabs += 1;
        let (store, ledger) = (store.clone(), ledger.clone());
        let probe = grabs.is_multiple_of(10);
        probes.spawn(async move {
            packets::grab(&store, &ledger, &packet.id, &GrabAttempt::by(user.clone()), &SystemClock)
                .await
                .expect("grab");
            let granted = Instant::now();
            if !probe {
                return None;
            }
            while granted.elapsed() < Duration::from_secs(30) {
                let page = ledger
                    .history(&user, Role::Received, PageRequest { limit: 5, cursor: None })
                    .await
                    .expect("history");
                if page.items.iter().any(|item| item.packet_id == packet.id) {
                    return Some(granted.elapsed().as_secs_f64() * 1000.0);
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            None
        });
    }
    let rate = grabs as f64 / started.elapsed().as_secs_f64();
    let mut delays = Vec::new();
    while let Some(delay) = probes.join_next().await {
        delays.extend(delay.expect("probe"));
    }
    draining.abort();
    (rate, delays)
}

/// A figure of a run, for one axis of the chart.
type Axis = fn(&Run) -> u64;

/// `settle-scale.png`: Redis commands and DynamoDB requests per run against idle open packets
/// (log scale: flat is the goal), and against new grabs (linear).
pub fn chart(scale: &SettleScale, path: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;
    let root = BitMapBackend::new(path, (900, 800)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((2, 1));
    let series: [(&str, RGBColor, Axis); 2] = [
        ("Redis commands per run", RGBColor(200, 30, 40), |run| run.redis_commands),
        ("DynamoDB requests per run", RGBColor(30, 90, 200), |run| run.dynamodb_requests),
    ];
    let panel_data: [(&str, &str, &[Run], Axis); 2] = [
        ("a settle run over idle open packets", "open idle packets", &scale.idle, |run| run.idle_packets),
        ("a settle run after new grabs (among 100,000 open packets)", "new grabs", &scale.busy, |run| run.new_grabs),
    ];
    for (panel, (title, x_desc, runs, x_of)) in panels.iter().zip(panel_data) {
        let top = runs.iter().flat_map(|run| series.iter().map(move |(_, _, y)| y(run))).max().unwrap_or(1).max(10)
            as f64
            * 2.0;
        let (x_min, x_max) = (
            runs.iter().map(x_of).min().unwrap_or(1) as f64 / 2.0,
            runs.iter().map(x_of).max().unwrap_or(1) as f64 * 2.0,
        );
        let mut chart = ChartBuilder::on(panel)
            .caption(title, ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(35)
            .y_label_area_size(70)
            .build_cartesian_2d((x_min..x_max).log_scale(), (0.5f64..top).log_scale())?;
        chart.configure_mesh().x_desc(x_desc).draw()?;
        for (label, color, y_of) in series {
            let points: Vec<(f64, f64)> =
                runs.iter().map(|run| (x_of(run) as f64, (y_of(run) as f64).max(0.5))).collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
            chart.draw_series(points.into_iter().map(|point| Circle::new(point, 4, color.filled())))?;
        }
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    }
    root.present()?;
    Ok(())
}
