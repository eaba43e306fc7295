//! Cold start and footprint: each release binary started under AWS's Lambda Runtime Interface
//! Emulator (`aws-lambda-rie`, what `sam local invoke` runs), its init duration as the emulator
//! reports it and the time to its first response, with DynamoDB Local reached over TLS (a
//! [`TlsFront`]) as DynamoDB is in AWS; binary sizes; the grab binary's peak RSS in a storm.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use local::rie::Rie;
use local::tls_front::TlsFront;
use rand::seq::SliceRandom;
use red_packets::adapters::dynamo::client::AMAZON_TRUST_SERVICES;
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
    /// Median time of a second invocation of the same event on the same instance, ms: what the
    /// event costs warm, so first minus second is what the cold start adds.
    pub warm_response_ms: f64,
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

/// What the functions are started with: DynamoDB Local behind a TLS front, and trust in the
/// front's authority the way each build reads it: `AWS_CA_BUNDLE` (this project's client: the
/// Amazon Trust Services roots plus the front's) and `SSL_CERT_FILE` (the platform roots that
/// `aws_config` loads, plus the front's, for the binaries of earlier commits).
pub struct Ledger {
    front: TlsFront,
    bundle: PathBuf,
    platform_bundle: PathBuf,
}

impl Ledger {
    /// A TLS front for the DynamoDB Local at `AWS_ENDPOINT_URL_DYNAMODB`.
    pub async fn over_tls() -> Ledger {
        let endpoint = std::env::var("AWS_ENDPOINT_URL_DYNAMODB").expect("AWS_ENDPOINT_URL_DYNAMODB");
        let backend: SocketAddr =
            endpoint.trim_start_matches("http://").trim_end_matches('/').parse().expect("host:port");
        let front = TlsFront::start(backend).await.expect("TLS front");
        let dir = std::env::temp_dir();
        let bundle = dir.join(format!("bench-ca-{}.pem", std::process::id()));
        let platform_bundle = dir.join(format!("bench-platform-ca-{}.pem", std::process::id()));
        let ours = [AMAZON_TRUST_SERVICES, front.authority_pem().as_bytes()].concat();
        let platform = std::fs::read("/etc/ssl/certs/ca-certificates.crt").unwrap_or_default();
        std::fs::write(&bundle, ours).expect("write the bundle");
        std::fs::write(&platform_bundle, [platform.as_slice(), front.authority_pem().as_bytes()].concat())
            .expect("write the platform bundle");
        Ledger { front, bundle, platform_bundle }
    }

    fn environment(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL_DYNAMODB", self.front.url()),
            ("AWS_CA_BUNDLE", self.bundle.display().to_string()),
            ("SSL_CERT_FILE", self.platform_bundle.display().to_string()),
            ("SSL_CERT_DIR", String::new()),
        ]
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.bundle);
        let _ = std::fs::remove_file(&self.platform_bundle);
    }
}

/// Median cold start of the binary at `path` answering `event`, over [`STARTS`] starts.
async fn binary(path: &Path, ledger: &Ledger, event: &Value, arm64_size_mib: Option<f64>) -> Binary {
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let environment = ledger.environment();
    let environment: Vec<(&str, &str)> = environment.iter().map(|(name, value)| (*name, value.as_str())).collect();
    let (mut inits, mut firsts, mut warms) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..STARTS {
        let rie = Rie::start_with(path, &environment).await.expect("start the binary under aws-lambda-rie");
        for times in [&mut firsts, &mut warms] {
            let invoked = std::time::Instant::now();
            match rie.invoke(event).await {
                Ok(answer) if answer.get("errorType").is_none() => times.push(invoked.elapsed().as_secs_f64() * 1000.0),
                other => panic!("{name} failed an invocation: {other:?}"),
            }
        }
        inits.push(rie.init_duration_ms().expect("the emulator reported the init"));
        rie.stop().await;
    }
    Binary {
        name,
        init_ms: median(&mut inits),
        first_response_ms: median(&mut firsts),
        warm_response_ms: median(&mut warms),
        size_mib: mib(path).unwrap_or(0.0),
        arm64_size_mib,
    }
}

/// Every function and the hello-world floor, from the binaries in `dir` (this build's
/// `target/release`, or an earlier commit's for a before-and-after).
pub async fn all(workspace: &Path, dir: &Path, ledger: &Ledger) -> Vec<Binary> {
    let arm64 = |function: &str| mib(&workspace.join(".aws-sam/build").join(function).join("bootstrap"));
    let settle = serde_json::json!({ "shards": [0, 0] });
    vec![
        binary(&dir.join("hello"), ledger, &serde_json::json!({ "hello": "world" }), None).await,
        binary(&dir.join("grab"), ledger, &sample_event(workspace, "grab.json"), arm64("GrabFunction")).await,
        binary(&dir.join("send"), ledger, &sample_event(workspace, "send.json"), arm64("SendFunction")).await,
        binary(&dir.join("query"), ledger, &sample_event(workspace, "query.json"), arm64("QueryFunction")).await,
        binary(&dir.join("settle"), ledger, &settle, arm64("SettleFunction")).await,
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
        red_packets_testkit::events::set_packet_id(&mut event, &packets[packet]);
        red_packets_testkit::events::set_caller(&mut event, Some(&format!("rss-u{user}")));
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
