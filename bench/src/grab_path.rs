//! The grab path: the real handler in-process at several concurrencies, and a storm.

use std::collections::HashMap;
use std::sync::Arc;

use grab::GrabService;
use lambda_http::Request;
use rand::seq::SliceRandom;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::domain::{Access, Packet, PacketId, PacketKind, PacketSpec, PacketTerms, Seed, UserId};
use red_packets::ports::LiveStore;
use red_packets::{Clock, SystemClock};
use red_packets_testkit::events;
use serde::Serialize;
use serde_json::Value;

use crate::harness;
use crate::stats::{summarize, RunStats};

const GRAB_EVENT: &str = include_str!("../../events/grab.json");

/// One concurrency level of the handler benchmark.
#[derive(Debug, Clone, Serialize)]
pub struct Level {
    /// Concurrent callers.
    pub concurrency: usize,
    /// Throughput and latency.
    #[serde(flatten)]
    pub stats: RunStats,
    /// Answers other than a fresh 200 (there should be none).
    pub unexpected: u64,
}

/// The storm: 100 packets of 100 shares, 20,000 users racing.
#[derive(Debug, Clone, Serialize)]
pub struct Storm {
    /// Throughput and latency.
    #[serde(flatten)]
    pub stats: RunStats,
    /// Grabs that got a share (must be exactly 10,000).
    pub grabbed: u64,
    /// Shares handed out beyond a packet's count, plus users paid twice.
    pub violations: u64,
}

/// A grab request for `user` on `packet`, as API Gateway would deliver it.
pub fn request(packet: &str, user: &str) -> Request {
    let mut event: Value = serde_json::from_str(GRAB_EVENT).expect("grab.json");
    events::set_packet_id(&mut event, packet);
    events::set_caller(&mut event, Some(user));
    events::to_request(&event).expect("an API Gateway event")
}

/// Loads a packet of `count` shares straight into Redis (the ledger is not on the grab path).
pub async fn load_packet(store: &RedisStore, kind: PacketKind, total_cents: u64, count: u32) -> Packet {
    load_packet_with(store, kind, total_cents, count, Access::default()).await
}

/// [`load_packet`] for a packet with `access` (recipients, a passphrase, a chat's members only).
pub async fn load_packet_with(
    store: &RedisStore,
    kind: PacketKind,
    total_cents: u64,
    count: u32,
    access: Access,
) -> Packet {
    let terms = PacketTerms { chat_id: access.members_of.clone(), ..PacketTerms::new(kind, total_cents, count) };
    let spec = PacketSpec {
        recipients: access.recipients,
        passphrase: access.passphrase,
        members_only: access.members_of.is_some(),
        ..PacketSpec::open_to_all(terms, 86_400)
    };
    let sender = UserId::from_claim("bench-sender").expect("user");
    let packet = Packet::new(PacketId::random(), sender, &spec, Seed::random(), SystemClock.now_ms());
    store.load(&packet, &packet.shares()).await.expect("load into Redis");
    packet
}

/// `request` through the grab handler: whether it was answered with a fresh share (a 200 that
/// is no repeat).
pub async fn fresh_grab(service: &GrabService<Arc<RedisStore>, DynamoLedger>, request: Request) -> bool {
    let response = grab::handle(service, request).await.expect("handler");
    response.status().as_u16() == 200
        && !String::from_utf8_lossy(response.body().as_ref()).contains("\"already_grabbed\":true")
}

/// The handler at `concurrency` on a packet that does not run dry.
pub async fn level(
    service: Arc<GrabService<Arc<RedisStore>, DynamoLedger>>,
    store: &RedisStore,
    concurrency: usize,
    grabs: u32,
) -> Level {
    let packet = load_packet(store, PacketKind::Fixed, u64::from(grabs), grabs).await;
    let id = packet.id.to_string();
    let requests: Vec<Request> = (0..grabs).map(|n| request(&id, &format!("c{concurrency}-u{n}"))).collect();
    let (latencies, answers, elapsed) = harness::run(requests, concurrency, move |request| {
        let service = service.clone();
        async move { fresh_grab(&service, request).await }
    })
    .await;
    Level {
        concurrency,
        stats: summarize(&latencies, elapsed),
        unexpected: answers.iter().filter(|fresh| !**fresh).count() as u64,
    }
}

/// 100 packets of 100 shares; 20,000 users, each grabbing one packet (200 per packet), in a
/// random order, 256 at a time. Checks afterwards that Redis paid exactly 10,000 shares.
pub async fn storm(service: Arc<GrabService<Arc<RedisStore>, DynamoLedger>>, store: &RedisStore) -> Storm {
    let mut packets = Vec::new();
    for _ in 0..100 {
        packets.push(load_packet(store, PacketKind::Lucky, 10_000, 100).await.id.to_string());
    }
    let mut jobs: Vec<(usize, String)> = (0..20_000).map(|user| (user % 100, format!("storm-u{user}"))).collect();
    jobs.shuffle(&mut rand::rng());
    let requests: Vec<(usize, Request)> =
        jobs.into_iter().map(|(packet, user)| (packet, request(&packets[packet], &user))).collect();
    let (latencies, answers, elapsed) = harness::run(requests, 256, move |(packet, request)| {
        let service = service.clone();
        async move {
            let response = grab::handle(&service, request).await.expect("handler");
            (packet, response.status().as_u16() == 200)
        }
    })
    .await;
    let mut per_packet: HashMap<usize, u64> = HashMap::new();
    for (packet, grabbed) in &answers {
        if *grabbed {
            *per_packet.entry(*packet).or_default() += 1;
        }
    }
    let grabbed: u64 = per_packet.values().sum();
    let mut violations: u64 = per_packet.values().map(|&n| n.saturating_sub(100)).sum();
    for id in &packets {
        let live = store.snapshot(&PacketId::parse(id).expect("id")).await.expect("Redis").expect("loaded");
        let users: std::collections::HashSet<&UserId> = live.grabs.iter().map(|grab| &grab.user).collect();
        violations += (live.grabs.len() - users.len()) as u64 + (live.grabs.len() as u64).saturating_sub(100);
    }
    Storm { stats: summarize(&latencies, elapsed), grabbed, violations }
}
