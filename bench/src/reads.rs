//! The read side of a campaign (`make bench-reads`, bench/results/reads.json).
//!
//! - **A page and a poll, by packet size.** A packet of 1,000 and one of 100,000 shares, each open
//!   (every share but one grabbed, loaded into Redis as a re-sync loads it) and settled (every
//!   share grabbed, recorded and finalised by settle's own ledger writes: [`settled_packet`]), their shared view (`GET /packets/{id}/shared`, the first page) asked
//!   [`SAMPLES`] times through the query handler in-process, without a tag (a page) and with the
//!   page's own tag (a `304`): latency p50/p99, the body's bytes, Redis commands per request
//!   (`INFO stats`' `total_commands_processed`, which counts the commands a script runs too) and
//!   DynamoDB calls and read units per request (an interceptor on the handler's client asks each
//!   read for its `ConsumedCapacity` and adds it up, as DynamoDB Local reports it).
//! - **A flood of viewers through the edge.** [`VIEWERS`] viewers poll an open 100,000-share
//!   packet's shared view every [`POLL_EVERY`] with the tag they hold, for [`FLOOD_FOR`], through one
//!   edge location in front of the local gateway over HTTP ([`Edge`]: CloudFront's rule, each
//!   answer kept for its `max-age`, then revalidated with its tag, the misses of one object
//!   collapsed into one request), while grabs keep changing the packet: what reaches the function
//!   is counted at the origin.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::interceptors::{
    AfterDeserializationInterceptorContextRef, BeforeSerializationInterceptorContextMut,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_sdk_dynamodb::types::{ConsumedCapacity, ReturnConsumedCapacity};
use hdrhistogram::Histogram;
use local::probe::RequestCounter;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::domain::grab::LoggedGrab;
use red_packets::domain::settlement::finalise;
use red_packets::domain::{Cents, Packet, PacketId, PacketKind, PacketSpec, PacketTerms, Seed, UserId};
use red_packets::ports::{Ledger, LiveStore, PacketImage, SettleLedger};
use red_packets::{Clock, Config, SystemClock};
use red_packets_testkit::events;
use serde::Serialize;
use serde_json::Value;

/// Requests per (packet, answer).
const SAMPLES: usize = 200;
/// Viewers of the flood.
const VIEWERS: usize = 10_000;
/// How often each viewer polls (the app's interval, docs/CLIENTS.md).
const POLL_EVERY: Duration = Duration::from_millis(2_500);
/// How long the flood lasts.
const FLOOD_FOR: Duration = Duration::from_secs(20);
/// Grabs per second during the flood: the packet keeps changing under the viewers.
const FLOOD_GRABS_PER_SECOND: u64 = 50;

/// One (packet size, state, answer): what one request costs.
#[derive(Debug, Clone, Serialize)]
pub struct ReadCost {
    /// The packet's shares.
    pub shares: u32,
    /// `open` or `settled`.
    pub state: &'static str,
    /// `page` (no tag) or `not_modified` (the page's tag).
    pub answer: &'static str,
    /// The status every answer had.
    pub status: u16,
    /// Redis commands per request.
    pub redis_commands: f64,
    /// DynamoDB calls per request.
    pub dynamodb_calls: f64,
    /// DynamoDB read units per request, as DynamoDB Local reports them.
    pub dynamodb_read_units: f64,
    /// The body's bytes.
    pub bytes: usize,
    /// Latency of the handler in-process, milliseconds.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Requests measured.
    pub samples: usize,
}

/// The viewers' flood through the edge.
#[derive(Debug, Clone, Serialize)]
pub struct Flood {
    /// Viewers.
    pub viewers: usize,
    /// Seconds it lasted.
    pub seconds: f64,
    /// Polls the viewers made.
    pub polls: u64,
    /// The edge's answers that were 304s (the viewer's tag was current).
    pub not_modified: u64,
    /// Requests that reached the function.
    pub reached_function: u64,
    /// Of those, per second.
    pub reached_per_second: f64,
    /// Of those, the 304s.
    pub reached_not_modified: u64,
    /// Grabs made meanwhile.
    pub grabs: u64,
    /// `open`.
    pub state: &'static str,
    /// The edge's `max-age` for it.
    pub max_age_seconds: u64,
}

/// Everything `make bench-reads` measures.
#[derive(Debug, Clone, Serialize)]
pub struct Reads {
    /// Per packet size, state and answer.
    pub packets: Vec<ReadCost>,
    /// The flood.
    pub flood: Flood,
}

/// Read units and calls a DynamoDB client's reads consumed: asks each `GetItem`, `Query` and
/// `BatchGetItem` for its `ConsumedCapacity` and adds up what comes back.
#[derive(Debug, Clone, Default)]
struct ReadMeter {
    hundredths: Arc<AtomicU64>,
}

impl ReadMeter {
    fn install(&self, client: &aws_sdk_dynamodb::Client) -> aws_sdk_dynamodb::Client {
        aws_sdk_dynamodb::Client::from_conf(client.config().to_builder().interceptor(self.clone()).build())
    }

    fn units(&self) -> f64 {
        self.hundredths.load(Ordering::SeqCst) as f64 / 100.0
    }
}

impl Intercept for ReadMeter {
    fn name(&self) -> &'static str {
        "ReadMeter"
    }

    fn modify_before_serialization(
        &self,
        context: &mut BeforeSerializationInterceptorContextMut<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        use aws_sdk_dynamodb::operation::{
            batch_get_item::BatchGetItemInput, get_item::GetItemInput, query::QueryInput,
        };
        let total = Some(ReturnConsumedCapacity::Total);
        let input = context.input_mut();
        if let Some(get) = input.downcast_mut::<GetItemInput>() {
            get.return_consumed_capacity = total;
        } else if let Some(query) = input.downcast_mut::<QueryInput>() {
            query.return_consumed_capacity = total;
        } else if let Some(batch) = input.downcast_mut::<BatchGetItemInput>() {
            batch.return_consumed_capacity = total;
        }
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        use aws_sdk_dynamodb::operation::{
            batch_get_item::BatchGetItemOutput, get_item::GetItemOutput, query::QueryOutput,
        };
        let Ok(output) = context.output_or_error() else { return Ok(()) };
        let consumed: Vec<&ConsumedCapacity> = if let Some(get) = output.downcast_ref::<GetItemOutput>() {
            get.consumed_capacity.iter().collect()
        } else if let Some(query) = output.downcast_ref::<QueryOutput>() {
            query.consumed_capacity.iter().collect()
        } else if let Some(batch) = output.downcast_ref::<BatchGetItemOutput>() {
            batch.consumed_capacity.iter().flatten().collect()
        } else {
            Vec::new()
        };
        let units: f64 = consumed.iter().filter_map(|capacity| capacity.capacity_units).sum();
        self.hundredths.fetch_add((units * 100.0).round() as u64, Ordering::SeqCst);
        Ok(())
    }
}

/// A lucky packet of `shares` shares of 5 cents on average, lasting `lifetime_seconds`, recorded
/// in the ledger, and its first `grabbed` shares taken, one user each, `<who>-<seq>` (not yet
/// written anywhere).
async fn recorded_with_grabs(
    ledger: &DynamoLedger,
    (shares, grabbed): (u32, u32),
    lifetime_seconds: u32,
    who: &str,
) -> (Packet, Vec<LoggedGrab>) {
    let now = SystemClock.now_ms();
    let terms = PacketTerms::new(PacketKind::Lucky, 5 * u64::from(shares), shares);
    let spec = PacketSpec::open_to_all(terms, lifetime_seconds);
    let packet =
        Packet::new(PacketId::random(), UserId::from_claim("brand").expect("user"), &spec, Seed::random(), now);
    ledger.record_packet(&packet, None).await.expect("record the packet");
    let amounts = packet.shares();
    let grabs = (1..=grabbed)
        .map(|seq| LoggedGrab {
            seq,
            user: UserId::from_claim(&format!("{who}-{seq}")).expect("user"),
            amount_cents: amounts[seq as usize - 1],
            at_ms: now + i64::from(seq),
        })
        .collect();
    (packet, grabs)
}

/// An open packet to read, `grabbed` of its `shares` taken, loaded into Redis as a re-sync would
/// (its grabs in its log, counted as persisted, the rest in its pool): settle leaves it alone
/// until its expiry.
async fn packet_with_grabs(store: &RedisStore, ledger: &DynamoLedger, shares: u32, grabbed: u32) -> Packet {
    let (packet, grabs) = recorded_with_grabs(ledger, (shares, grabbed), 86_400, "viewer").await;
    let amounts = packet.shares();
    let pool: Vec<(u32, Cents)> = (grabbed + 1..=shares).map(|seq| (seq, amounts[seq as usize - 1])).collect();
    let image = PacketImage { packet: &packet, cancelled: false, closed: false, grabs: &grabs, pool: &pool };
    store.restore(image).await.expect("load into Redis");
    packet
}

/// The shared view's event for `id`, with `If-None-Match: tag` when given.
fn shared_event(id: &PacketId, tag: Option<&str>) -> Value {
    let mut event: Value = serde_json::from_str(include_str!("../../events/shared.json")).expect("shared.json");
    events::set_packet_id(&mut event, id.as_str());
    if let Some(tag) = tag {
        event["headers"]["if-none-match"] = Value::String(tag.to_owned());
    }
    event
}

/// Both measurements on the bench's Redis and DynamoDB Local.
pub async fn measure(config: &Config) -> Reads {
    let mut config = config.clone();
    config.table_name = format!("{}-reads-{}", config.table_name, std::process::id());
    config.redis.key_prefix = format!("reads-{}", std::process::id());
    config.limits.max_count = 100_000;
    // DynamoDB Local has no partition ceiling: settle's writes go as fast as it takes them.
    config.settle_partition_write_units = 1_000_000;
    let client = DynamoLedger::client_from_env().expect("a DynamoDB client");
    let ledger = DynamoLedger::new(client.clone(), &config);
    ledger.ensure_table().await.expect("DynamoDB Local");
    let store = Arc::new(RedisStore::new(&config));
    let (counter, meter) = (RequestCounter::default(), ReadMeter::default());
    let metered = DynamoLedger::new(meter.install(&counter.on(&client)), &config);
    let query = query::QueryService::new(store.clone(), metered);

    let mut packets = Vec::new();
    for shares in [1_000, 100_000] {
        let open = packet_with_grabs(&store, &ledger, shares, shares - 1).await;
        let settled = settled_packet(&ledger, shares).await;
        for (state, packet) in [("open", &open), ("settled", &settled)] {
            packets.extend(costs(&query, &store, &counter, &meter, shares, state, &packet.id).await);
        }
    }
    let flood = flood(&config, &store, &ledger).await;
    Reads { packets, flood }
}

/// A packet of `shares` shares, every one grabbed, in the ledger as settle leaves it: each grab
/// recorded by settle's own write (`record_grabs`: the share's claim, then the grab item), then
/// finalised by its own transaction with the totals a page reads. Settle's run itself would read
/// the whole 200,000-item partition twice around the finalisation, which DynamoDB Local takes
/// many minutes over; what a page reads afterwards is the same.
async fn settled_packet(ledger: &DynamoLedger, shares: u32) -> Packet {
    let (packet, grabs) = recorded_with_grabs(ledger, (shares, shares), 60, "grabber").await;
    for chunk in grabs.chunks(1_000) {
        let refused = ledger.record_grabs(&packet, chunk).await.expect("record the grabs");
        assert!(refused.is_empty(), "{refused:?}");
    }
    let result = finalise(packet.terms.total_cents, shares, &grabs, false).expect("the books balance");
    assert!(ledger.finalise(&packet, &result, SystemClock.now_ms()).await.expect("finalise"), "finalised now");
    packet
}

/// A page and a 304 of `id`'s shared view, [`SAMPLES`] each.
async fn costs(
    query: &query::QueryService<Arc<RedisStore>, DynamoLedger>,
    store: &RedisStore,
    counter: &RequestCounter,
    meter: &ReadMeter,
    shares: u32,
    state: &'static str,
    id: &PacketId,
) -> Vec<ReadCost> {
    let first = query::handle(query, events::to_request(&shared_event(id, None)).expect("event")).await.expect("query");
    let tag = first.headers()["etag"].to_str().expect("an ETag").to_owned();
    let mut conn = store.connection().await.expect("Redis");
    let mut costs = Vec::new();
    for (answer, tag) in [("page", None), ("not_modified", Some(tag.as_str()))] {
        let event = shared_event(id, tag);
        let mut latencies = Histogram::<u64>::new(3).expect("histogram");
        let (calls, units, commands) = (counter.count(), meter.units(), crate::kit::commands(&mut conn).await);
        let (mut status, mut bytes) = (0, 0);
        for _ in 0..SAMPLES {
            let started = Instant::now();
            let response = query::handle(query, events::to_request(&event).expect("event")).await.expect("query");
            latencies.record(started.elapsed().as_micros() as u64).expect("a latency");
            (status, bytes) = (response.status().as_u16(), response.body().as_ref().len());
        }
        // INFO itself is one command, counted in the second reading.
        let commands = (crate::kit::commands(&mut conn).await - commands - 1) as f64 / SAMPLES as f64;
        costs.push(ReadCost {
            shares,
            state,
            answer,
            status,
            redis_commands: commands,
            dynamodb_calls: (counter.count() - calls) as f64 / SAMPLES as f64,
            dynamodb_read_units: (meter.units() - units) / SAMPLES as f64,
            bytes,
            p50_ms: latencies.value_at_quantile(0.5) as f64 / 1_000.0,
            p99_ms: latencies.value_at_quantile(0.99) as f64 / 1_000.0,
            samples: SAMPLES,
        });
    }
    costs
}

/// What one edge location keeps of one object: the answer and until when it is fresh.
struct Kept {
    tag: String,
    body: Vec<u8>,
    fresh_until: Instant,
}

/// One CloudFront edge location in front of the local gateway, by CloudFront's rule for this
/// behaviour: an answer is kept for its `max-age`; a request for a fresh one is answered from
/// it (a `304` when the viewer's tag is its tag); a stale one is revalidated with its tag, one
/// request to the origin for all the viewers that found it stale at once.
struct Edge {
    origin: String,
    http: reqwest::Client,
    kept: tokio::sync::Mutex<HashMap<String, Kept>>,
    reached: AtomicU64,
    reached_not_modified: AtomicU64,
}

impl Edge {
    /// The viewer's answer to `path` with `tag`: its status and bytes.
    async fn get(&self, path: &str, tag: Option<&str>) -> (u16, usize) {
        let mut kept = self.kept.lock().await;
        let stale = kept.get(path).is_none_or(|kept| kept.fresh_until <= Instant::now());
        if stale {
            let mut request = self.http.get(format!("{}{path}", self.origin));
            if let Some(entry) = kept.get(path) {
                request = request.header("if-none-match", entry.tag.clone());
            }
            self.reached.fetch_add(1, Ordering::Relaxed);
            let response = request.send().await.expect("the local gateway");
            let max_age = max_age(response.headers().get("cache-control").and_then(|value| value.to_str().ok()));
            let fresh_until = Instant::now() + max_age;
            if response.status() == 304 {
                self.reached_not_modified.fetch_add(1, Ordering::Relaxed);
                if let Some(entry) = kept.get_mut(path) {
                    entry.fresh_until = fresh_until;
                }
            } else {
                assert_eq!(response.status(), 200, "the origin's answer");
                let tag = response.headers()["etag"].to_str().expect("an ETag").to_owned();
                let body = response.bytes().await.expect("a body").to_vec();
                kept.insert(path.to_owned(), Kept { tag, body, fresh_until });
            }
        }
        let entry = &kept[path];
        if tag == Some(entry.tag.as_str()) {
            (304, 0)
        } else {
            (200, entry.body.len())
        }
    }
}

fn max_age(cache_control: Option<&str>) -> Duration {
    let seconds = cache_control
        .into_iter()
        .flat_map(|value| value.split(','))
        .find_map(|directive| directive.trim().strip_prefix("max-age=")?.parse::<u64>().ok())
        .unwrap_or(0);
    Duration::from_secs(seconds)
}

/// [`VIEWERS`] viewers on an open 100,000-share packet, half grabbed, while grabs go on.
async fn flood(config: &Config, store: &Arc<RedisStore>, ledger: &DynamoLedger) -> Flood {
    let packet = packet_with_grabs(store, ledger, 100_000, 50_000).await;
    let functions = Arc::new(local::functions(config, local::LocalAuthorizer::new("reads")).await.expect("functions"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let origin = format!("http://{}", listener.local_addr().expect("an address"));
    let server = tokio::spawn(std::future::IntoFuture::into_future(axum::serve(
        listener,
        local::gateway::router(functions.clone()),
    )));
    let edge = Arc::new(Edge {
        origin,
        http: reqwest::Client::new(),
        kept: tokio::sync::Mutex::new(HashMap::new()),
        reached: AtomicU64::new(0),
        reached_not_modified: AtomicU64::new(0),
    });
    let path = format!("/packets/{}/shared", packet.id);
    let (polls, not_modified, grabs) =
        (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let started = Instant::now();
    let grabber = {
        let (functions, id, grabs) = (functions.clone(), packet.id.clone(), grabs.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(1_000 / FLOOD_GRABS_PER_SECOND));
            while started.elapsed() < FLOOD_FOR {
                tick.tick().await;
                let n = grabs.fetch_add(1, Ordering::Relaxed);
                let request = crate::grab_path::request(id.as_str(), &format!("flood-grabber-{n}"));
                let _ = grab::handle(&functions.grab, request).await;
            }
        })
    };
    let viewers: Vec<_> = (0..VIEWERS)
        .map(|viewer| {
            let (edge, path, polls, not_modified) = (edge.clone(), path.clone(), polls.clone(), not_modified.clone());
            tokio::spawn(async move {
                // Viewers arrive spread over one interval, as phones opening the page do.
                let offset = POLL_EVERY.mul_f64(viewer as f64 / VIEWERS as f64);
                tokio::time::sleep(offset).await;
                let mut tag: Option<String> = None;
                let mut tick = tokio::time::interval(POLL_EVERY);
                while started.elapsed() < FLOOD_FOR {
                    tick.tick().await;
                    let (status, _) = edge.get(&path, tag.as_deref()).await;
                    polls.fetch_add(1, Ordering::Relaxed);
                    if status == 304 {
                        not_modified.fetch_add(1, Ordering::Relaxed);
                    } else {
                        tag = edge.kept.lock().await.get(&path).map(|kept| kept.tag.clone());
                    }
                }
            })
        })
        .collect();
    for viewer in viewers {
        viewer.await.expect("a viewer");
    }
    grabber.await.expect("the grabber");
    let seconds = started.elapsed().as_secs_f64();
    server.abort();
    let reached = edge.reached.load(Ordering::Relaxed);
    Flood {
        viewers: VIEWERS,
        seconds,
        polls: polls.load(Ordering::Relaxed),
        not_modified: not_modified.load(Ordering::Relaxed),
        reached_function: reached,
        reached_per_second: reached as f64 / seconds,
        reached_not_modified: edge.reached_not_modified.load(Ordering::Relaxed),
        grabs: grabs.load(Ordering::Relaxed),
        state: "open",
        max_age_seconds: red_packets::http::Caching::OPEN_SECONDS.into(),
    }
}
