//! What the app team's kit costs the server (`make bench-kit`, bench/results/kit.json).
//!
//! - **Membership tickets on the single-call grab path** (concurrency 1: one request per
//!   execution environment, standard Lambda), the grab handler in-process on fresh grabs, the
//!   median of five rounds each, in rotating order: `open to all` (the grab path as it was),
//!   `open to all + ticket` (a ticket carried and verified, HMAC-SHA256, on a packet that does not
//!   look at it: the verification's own cost), and `members only + ticket` (a members-only
//!   packet: the ticket verified and its chat compared in the script's gated branch). Redis CPU
//!   is `INFO cpu` over the run, per fresh grab.
//! - **A conditional poll against a full answer**: the packet view of an open packet (10 and
//!   1,000 grabs, from Redis) and of a settled one (1,000 grabs, from the ledger), the sent
//!   history and the wallet, each asked 200 times without and with the answer's `ETag` in
//!   `If-None-Match`: latency, the bytes of the body, Redis commands per request (`INFO stats`'
//!   `total_commands_processed`) and DynamoDB calls per request (an interceptor on the query
//!   handler's client counting what it sends).

use std::sync::Arc;
use std::time::Instant;

use grab::GrabService;
use hdrhistogram::Histogram;
use lambda_http::Request;
use local::probe::RequestCounter;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::domain::{Access, ChatId, PacketKind, UserId};
use red_packets::ports::{Ledger, Wallets};
use red_packets::{Clock, Config, SystemClock};
use red_packets_testkit::events;
use serde::Serialize;
use serde_json::Value;

use crate::grab_path::{fresh_grab, load_packet_with, request};
use crate::harness;
use crate::seeds::redis_cpu_seconds;
use crate::stats::{summarize, RunStats};

/// Rounds per variant; the median is reported.
const ROUNDS: usize = 5;

/// Fresh grabs per round.
const GRABS: u32 = 3_000;

/// Requests per poll variant.
const POLLS: usize = 200;

/// One ticket variant: the median round by grabs/s.
#[derive(Debug, Clone, Serialize)]
pub struct TicketRun {
    /// `open to all`, `open to all + ticket` or `members only + ticket`.
    pub variant: &'static str,
    /// Throughput and latency.
    #[serde(flatten)]
    pub stats: RunStats,
    /// Redis CPU per fresh grab, microseconds.
    pub redis_cpu_us_per_grab: f64,
    /// Answers other than a fresh 200 (there should be none).
    pub unexpected: u64,
}

/// One read, asked without and with its `ETag`.
#[derive(Debug, Clone, Serialize)]
pub struct PollRun {
    /// What was read.
    pub read: String,
    /// `full` (no `If-None-Match`) or `304` (the answer's own tag).
    pub asked: &'static str,
    /// The status every answer had.
    pub status: u16,
    /// Latency of the handler in-process, median and 99th percentile, microseconds.
    pub p50_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// The body's bytes per answer.
    pub body_bytes: usize,
    /// Redis commands per request.
    pub redis_commands: f64,
    /// DynamoDB calls per request.
    pub dynamodb_calls: f64,
}

/// Everything `make bench-kit` measures.
#[derive(Debug, Clone, Serialize)]
pub struct Kit {
    /// The ticket variants.
    pub tickets: Vec<TicketRun>,
    /// The polls.
    pub polls: Vec<PollRun>,
}

/// Both measurements on the bench's Redis and DynamoDB Local.
pub async fn measure(config: &Config, ledger: &DynamoLedger) -> Kit {
    Kit { tickets: tickets(config, ledger).await, polls: polls(config).await }
}

async fn tickets(config: &Config, ledger: &DynamoLedger) -> Vec<TicketRun> {
    let mut config = config.clone();
    config.grab_rate = None;
    let variants: [(&'static str, bool, bool); 3] =
        [("open to all", false, false), ("open to all + ticket", false, true), ("members only + ticket", true, true)];
    let mut rounds: Vec<Vec<TicketRun>> = vec![Vec::new(); variants.len()];
    for round in 0..ROUNDS {
        for turn in 0..variants.len() {
            let index = (turn + round) % variants.len();
            let (variant, members_only, ticket) = variants[index];
            rounds[index].push(ticket_round(variant, &config, ledger, members_only, ticket, round).await);
        }
    }
    rounds
        .into_iter()
        .map(|mut variant| {
            variant.sort_by(|a, b| a.stats.ops_per_s.total_cmp(&b.stats.ops_per_s));
            variant.swap_remove(variant.len() / 2)
        })
        .collect()
}

async fn ticket_round(
    variant: &'static str,
    config: &Config,
    ledger: &DynamoLedger,
    members_only: bool,
    ticket: bool,
    round: usize,
) -> TicketRun {
    let store = Arc::new(RedisStore::new(config));
    let service = Arc::new(GrabService::new(store.clone(), ledger.clone(), config).without_hold_check());
    let chat = ChatId::parse("bench-chat").expect("chat");
    let access = Access { members_of: members_only.then(|| chat.clone()), ..Access::default() };
    let packet = load_packet_with(&store, PacketKind::Fixed, u64::from(GRABS), GRABS, access).await.id.to_string();
    let keys = &config.membership_keys;
    let expires_at = (SystemClock.now_ms() / 1000 + 3_600) as u64;
    let tag = variant.replace(' ', "");
    let carried = |user: &str| {
        let mut request = request(&packet, user);
        if ticket {
            let signed = keys.sign(&chat, &UserId::from_claim(user).expect("user"), expires_at);
            request.headers_mut().insert("membership-ticket", signed.parse().expect("a header value"));
        }
        request
    };
    let warm = grab::handle(&service, carried(&format!("kit-{tag}-{round}-warm"))).await.expect("handler");
    assert_eq!(warm.status(), 200, "the warm-up grab");
    let requests = (1..GRABS).map(|n| carried(&format!("kit-{tag}-r{round}-u{n}"))).collect();
    let mut conn = store.connection().await.expect("Redis");
    let cpu_before = redis_cpu_seconds(&mut conn).await;
    let (latencies, answers, elapsed) = harness::run(requests, 1, move |request| {
        let service = service.clone();
        async move { fresh_grab(&service, request).await }
    })
    .await;
    let cpu = redis_cpu_seconds(&mut conn).await - cpu_before;
    let fresh = answers.iter().filter(|fresh| **fresh).count();
    TicketRun {
        variant,
        stats: summarize(&latencies, elapsed),
        redis_cpu_us_per_grab: cpu * 1e6 / fresh.max(1) as f64,
        unexpected: (answers.len() - fresh) as u64,
    }
}

async fn polls(config: &Config) -> Vec<PollRun> {
    let mut config = config.clone();
    config.funds = red_packets::domain::Funds::Wallet;
    config.table_name = format!("{}-kit-{}", config.table_name, std::process::id());
    // Keys of its own: settle below must see only these packets, not the ticket rounds'.
    config.redis.key_prefix = format!("kit-polls-{}", std::process::id());
    let counter = RequestCounter::default();
    let client = DynamoLedger::client_from_env().expect("a DynamoDB client");
    let counted = counter.on(&client);
    let plain = DynamoLedger::new(client, &config);
    plain.ensure_table().await.expect("DynamoDB Local");
    let store = Arc::new(RedisStore::new(&config));
    let query = query::QueryService::new(store.clone(), DynamoLedger::new(counted, &config));
    let functions = local::functions(&config, local::LocalAuthorizer::new("kit")).await.expect("functions");
    let sender = "kit-sender";
    let funding = red_packets::domain::TopUp {
        user: UserId::from_claim(sender).expect("user"),
        amount_cents: 10_000_000,
        reference: format!("kit-{}", red_packets::domain::PacketId::random()),
    };
    plain.top_up(&funding, SystemClock.now_ms()).await.expect("top-up");

    // A packet of `count` shares, `grabs` of them grabbed (all of them: it finishes, and settle
    // finalises it; fewer: it stays open, in Redis).
    let send = |count: u32, grabs: u32| {
        let functions = &functions;
        async move {
            let body = serde_json::json!({ "total_cents": count * 10, "count": count, "kind": "fixed" });
            let mut event: Value = serde_json::from_str(include_str!("../../events/send.json")).expect("send.json");
            events::set_caller(&mut event, Some(sender));
            events::set_body(&mut event, &body.to_string());
            event["headers"]["idempotency-key"] = Value::String(red_packets::domain::PacketId::random().to_string());
            let response =
                send::handle(&functions.send, events::to_request(&event).expect("event")).await.expect("send");
            let view: Value = serde_json::from_slice(response.body().as_ref()).expect("a view");
            let id = view["packet_id"].as_str().expect("a packet id").to_owned();
            for n in 0..grabs {
                let grab = request(&id, &format!("kit-grabber-{n}"));
                assert_eq!(grab::handle(&functions.grab, grab).await.expect("grab").status(), 200);
            }
            id
        }
    };
    let small = send(11, 10).await;
    let large = send(1_001, 1_000).await;
    let settled = send(1_000, 1_000).await;
    let settled_id = red_packets::domain::PacketId::parse(&settled).expect("a packet id");
    let finalised = |ledger: &DynamoLedger| {
        let id = settled_id.clone();
        let ledger = ledger.clone();
        async move { ledger.ledger_packet(&id).await.ok().flatten().is_some_and(|packet| packet.refund_cents.is_some()) }
    };
    for _ in 0..60 {
        if finalised(&plain).await {
            break;
        }
        // DynamoDB Local on a loaded machine may time out a run: the next one resumes it.
        let settler = &functions.settler;
        let _ = settler.run(settler.shards_of(&Default::default()), None).await;
    }
    assert!(finalised(&plain).await, "the 1,000-grab packet settled within 60 runs");
    let reads = [
        ("packet view, open, 10 grabs (Redis)", view_event(&small)),
        ("packet view, open, 1,000 grabs (Redis)", view_event(&large)),
        ("packet view, settled, 1,000 grabs (ledger)", view_event(&settled)),
        ("history, sent, 20 items", read_event(include_str!("../../events/history.json"), "role=sent&limit=20")),
        ("wallet, 20 movements", read_event(include_str!("../../events/wallet.json"), "limit=20")),
    ];
    let mut conn = store.connection().await.expect("Redis");
    let mut runs = Vec::new();
    for (read, event) in reads {
        let first = query::handle(&query, events::to_request(&event).expect("event")).await.expect("query");
        let etag = first.headers()["etag"].to_str().expect("an ETag").to_owned();
        for (asked, tag) in [("full", None), ("304", Some(etag.clone()))] {
            let mut event = event.clone();
            if let Some(tag) = &tag {
                event["headers"]["if-none-match"] = Value::String(tag.clone());
            }
            let mut latencies = Histogram::<u64>::new(3).expect("histogram");
            let (calls_before, commands_before) = (counter.count(), commands(&mut conn).await);
            let (mut status, mut body_bytes) = (0, 0);
            for _ in 0..POLLS {
                let request: Request = events::to_request(&event).expect("event");
                let started = Instant::now();
                let response = query::handle(&query, request).await.expect("query");
                latencies.record(started.elapsed().as_micros() as u64).expect("a latency");
                (status, body_bytes) = (response.status().as_u16(), response.body().as_ref().len());
            }
            // INFO itself is one command, counted in the second reading.
            let commands = (commands(&mut conn).await - commands_before - 1) as f64 / POLLS as f64;
            runs.push(PollRun {
                read: read.to_owned(),
                asked,
                status,
                p50_us: latencies.value_at_quantile(0.5),
                p99_us: latencies.value_at_quantile(0.99),
                body_bytes,
                redis_commands: commands,
                dynamodb_calls: (counter.count() - calls_before) as f64 / POLLS as f64,
            });
        }
    }
    runs
}

fn view_event(packet: &str) -> Value {
    let mut event: Value = serde_json::from_str(include_str!("../../events/query.json")).expect("query.json");
    events::set_packet_id(&mut event, packet);
    events::set_caller(&mut event, Some("kit-sender"));
    event
}

fn read_event(sample: &str, query: &str) -> Value {
    let mut event: Value = serde_json::from_str(sample).expect("a sample event");
    events::set_caller(&mut event, Some("kit-sender"));
    event["rawQueryString"] = Value::String(query.into());
    event.as_object_mut().expect("an object").remove("queryStringParameters");
    event
}

pub(crate) async fn commands(conn: &mut red_packets::adapters::redis::connection::RedisConnection) -> u64 {
    let info: String = redis::cmd("INFO").arg("stats").query_async(conn).await.expect("INFO");
    info.lines()
        .find_map(|line| line.strip_prefix("total_commands_processed:"))
        .and_then(|count| count.trim().parse().ok())
        .expect("total_commands_processed")
}
