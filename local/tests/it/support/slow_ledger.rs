//! A slow DynamoDB, on the wire: a proxy on loopback in front of DynamoDB Local that forwards
//! every request at once and holds back one answer in `every` for `delay`, past the client's
//! attempt timeout (2 s). The write has landed by then; the client only never hears so, as from
//! a hot partition or a brownout. The SDK's timeouts and retries, and settle above them, are the
//! deployed functions', unchanged. It holds answers only while switched on, and stops with the
//! test's runtime.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::header::{CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use axum::response::Response;

/// The proxy: where it listens, and what it did.
pub struct SlowLedger {
    url: String,
    shared: Arc<Shared>,
}

struct Shared {
    upstream: String,
    client: reqwest::Client,
    every: u64,
    delay: Duration,
    on: AtomicBool,
    /// Requests forwarded, and of them the ones whose answer was held back.
    seen: AtomicU64,
    held: AtomicU64,
    /// Requests in flight now, and the most at once.
    in_flight: AtomicU64,
    peak: AtomicU64,
}

impl SlowLedger {
    /// A proxy to `upstream` (DynamoDB Local's URL) holding back one answer in `every` for
    /// `delay` once switched on.
    pub async fn start(upstream: &str, every: u64, delay: Duration) -> SlowLedger {
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_owned(),
            client: reqwest::Client::new(),
            every,
            delay,
            on: AtomicBool::new(false),
            seen: AtomicU64::new(0),
            held: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            peak: AtomicU64::new(0),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new().fallback(forward).with_state(shared.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        SlowLedger { url, shared }
    }

    /// The URL the slowed clients use as their DynamoDB endpoint.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Starts or stops holding answers back.
    pub fn set_slow(&self, on: bool) {
        self.shared.on.store(on, Ordering::SeqCst);
    }

    /// Answers held back so far.
    pub fn held(&self) -> u64 {
        self.shared.held.load(Ordering::SeqCst)
    }

    /// Requests forwarded so far.
    pub fn seen(&self) -> u64 {
        self.shared.seen.load(Ordering::SeqCst)
    }

    /// The most requests in flight at once.
    pub fn peak(&self) -> u64 {
        self.shared.peak.load(Ordering::SeqCst)
    }
}

async fn forward(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let _counted = InFlight::enter(&shared);
    answer(&shared, request).await
}

/// One request in flight, counted until its answer is sent or its client gives up (the
/// handler is dropped then).
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn enter(shared: &'a Shared) -> Self {
        let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        shared.peak.fetch_max(now, Ordering::SeqCst);
        InFlight(shared)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn answer(shared: &Shared, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = to_bytes(body, 16 << 20).await.unwrap_or_default();
    let mut headers = parts.headers.clone();
    for hop in [HOST, CONTENT_LENGTH, TRANSFER_ENCODING] {
        headers.remove(hop);
    }
    let path = parts.uri.path_and_query().map_or("/", |path| path.as_str());
    let answer = shared
        .client
        .request(parts.method.clone(), format!("{}{path}", shared.upstream))
        .headers(headers)
        .body(body)
        .send()
        .await;
    let n = shared.seen.fetch_add(1, Ordering::SeqCst) + 1;
    if shared.on.load(Ordering::SeqCst) && n.is_multiple_of(shared.every) {
        shared.held.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(shared.delay).await;
    }
    let Ok(answer) = answer else {
        return Response::builder().status(502).body(Body::empty()).unwrap();
    };
    let mut response = Response::builder().status(answer.status().as_u16());
    for (name, value) in answer.headers() {
        if name != CONTENT_LENGTH && name != TRANSFER_ENCODING {
            response = response.header(name, value);
        }
    }
    response.body(Body::from(answer.bytes().await.unwrap_or_default())).unwrap()
}
