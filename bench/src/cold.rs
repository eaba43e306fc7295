//! Cold start and footprint: each release binary started under AWS's Lambda Runtime Interface
//! Emulator (`aws-lambda-rie`, what `sam local invoke` runs), its init duration as the emulator
//! reports it and the time to its first response; binary sizes; the grab binary's peak RSS in a
//! storm.

use std::path::{Path, PathBuf};

use local::rie::Rie;
use rand::seq::SliceRandom;
use red_packets::adapters::RedisStore;
use red_packets::domain::PacketKind;
use serde::Serialize;
use serde_json::Value;

use crate::grab_path::load_packet;
use crate::stats::median;

/// Starts per binary; the median is reported.
const STARTS: usize = 20;

/// One binary's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Binary {
    /// The binary.
    pub name: String,
    /// Median init duration as the emulator reports it (`INIT REPORT`: from starting the
    /// bootstrap until it first asks for an event), ms.
    pub init_ms: f64,
    /// Median time from the first invocation to its response, ms (init plus the first event's
    /// work, including the first connections to Redis and DynamoDB).
    pub first_response_ms: f64,
    /// x86_64 release size, MiB.
    pub size_mib: f64,
    /// arm64 size from `make build`, MiB, when present.
    pub arm64_size_mib: Option<f64>,
}

fn mib(path: &Path) -> Option<f64> {
    std::fs::metadata(path).ok().map(|meta| meta.len() as f64 / 1_048_576.0)
}

fn sample_event(workspace: &Path, file: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(workspace.join("events").join(file)).expect("event")).expect("json")
}

/// Median cold start of `name` answering `event`, over [`STARTS`] starts.
pub async fn binary(workspace: &Path, name: &str, function: Option<&str>, event: Value) -> Binary {
    let path = workspace.join("target/release").join(name);
    let (mut inits, mut firsts) = (Vec::with_capacity(STARTS), Vec::with_capacity(STARTS));
    for _ in 0..STARTS {
        let rie = Rie::start(&path).await.expect("start the binary under aws-lambda-rie");
        let invoked = std::time::Instant::now();
        match rie.invoke(&event).await {
            Ok(answer) if answer.get("errorType").is_none() => firsts.push(invoked.elapsed().as_secs_f64() * 1000.0),
            other => panic!("{name} failed its first invocation: {other:?}"),
        }
        inits.push(rie.init_duration_ms().expect("the emulator reported the init"));
        rie.stop().await;
    }
    let arm64 = function.and_then(|function| mib(&workspace.join(".aws-sam/build").join(function).join("bootstrap")));
    Binary {
        name: name.into(),
        init_ms: median(&mut inits),
        first_response_ms: median(&mut firsts),
        size_mib: mib(&path).unwrap_or(0.0),
        arm64_size_mib: arm64,
    }
}

/// Every function and the hello-world floor.
pub async fn all(workspace: &Path) -> Vec<Binary> {
    vec![
        binary(workspace, "hello", None, serde_json::json!({ "hello": "world" })).await,
        binary(workspace, "grab", Some("GrabFunction"), sample_event(workspace, "grab.json")).await,
        binary(workspace, "send", Some("SendFunction"), sample_event(workspace, "send.json")).await,
        binary(workspace, "query", Some("QueryFunction"), sample_event(workspace, "query.json")).await,
        binary(workspace, "settle", Some("SettleFunction"), serde_json::json!({ "shards": [0, 0] })).await,
    ]
}

/// Peak RSS (VmHWM) of the grab binary after a storm of invocations: 50 packets of 100 shares,
/// 10,000 grabs by 5,000 users.
pub async fn grab_peak_rss_mib(workspace: &Path, store: &RedisStore) -> f64 {
    let path: PathBuf = workspace.join("target/release/grab");
    let rie = Rie::start(&path).await.expect("start grab under aws-lambda-rie");
    let mut packets = Vec::new();
    for _ in 0..50 {
        packets.push(load_packet(store, PacketKind::Lucky, 10_000, 100).await.id.to_string());
    }
    let template = sample_event(workspace, "grab.json");
    let mut jobs: Vec<(usize, usize)> = (0..10_000).map(|n| (n % 50, n % 5_000)).collect();
    jobs.shuffle(&mut rand::rng());
    for (packet, user) in jobs {
        let mut event = template.clone();
        red_packets::events::set_packet_id(&mut event, &packets[packet]);
        red_packets::events::set_caller(&mut event, Some(&format!("rss-u{user}")));
        rie.invoke(&event).await.expect("grab invocation");
    }
    let pid = rie.function_pid().expect("the function's pid");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    rie.stop().await;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .expect("VmHWM")
}
