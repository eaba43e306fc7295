//! A Lambda Runtime API emulator: runs a function's real binary the way Lambda (or `sam local
//! invoke`) does, without Docker. The binary polls `/runtime/invocation/next` for events and
//! posts each response or error back; [`LambdaProcess::invoke`] hands it one event and waits.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::Value;
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot, Mutex};

const PREFIX: &str = "/2018-06-01/runtime";

/// What the function answered to one event.
#[derive(Debug)]
pub enum Invocation {
    /// The handler's response payload.
    Response(Value),
    /// The error the runtime reported (handler error or panic).
    Error(Value),
}

struct Pending {
    id: String,
    event: Value,
}

#[derive(Clone)]
struct Emulator {
    first_poll: Arc<std::sync::OnceLock<Instant>>,
    next: Arc<Mutex<mpsc::Receiver<Pending>>>,
    waiting: Arc<Mutex<HashMap<String, oneshot::Sender<Invocation>>>>,
    init_error: Arc<Mutex<Option<Value>>>,
}

/// A function binary running against its own runtime API emulator on 127.0.0.1.
pub struct LambdaProcess {
    child: Child,
    events: mpsc::Sender<Pending>,
    emulator: Emulator,
    counter: AtomicU64,
    started: Instant,
}

impl LambdaProcess {
    /// Starts `binary` as function `name`, with the current environment plus the variables
    /// Lambda sets, pointed at a fresh emulator.
    pub async fn start(binary: &Path, name: &str) -> std::io::Result<Self> {
        let (events, receiver) = mpsc::channel(1);
        let emulator = Emulator {
            first_poll: Arc::new(std::sync::OnceLock::new()),
            next: Arc::new(Mutex::new(receiver)),
            waiting: Arc::new(Mutex::new(HashMap::new())),
            init_error: Arc::new(Mutex::new(None)),
        };
        let app = Router::new()
            .route(&format!("{PREFIX}/invocation/next"), get(next))
            .route(&format!("{PREFIX}/invocation/{{id}}/response"), post(respond))
            .route(&format!("{PREFIX}/invocation/{{id}}/error"), post(fail))
            .route(&format!("{PREFIX}/init/error"), post(init_error))
            .with_state(emulator.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        tokio::spawn(async move { axum::serve(listener, app).await });

        let child = Command::new(binary)
            .env("AWS_LAMBDA_RUNTIME_API", address.to_string())
            .env("AWS_LAMBDA_FUNCTION_NAME", name)
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}"))
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "local")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        Ok(LambdaProcess { child, events, emulator, counter: AtomicU64::new(0), started: Instant::now() })
    }

    /// The binary's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The init duration, as Lambda reports it: from start until the runtime first asked for an
    /// event (clients built, ready to handle); `None` before that.
    pub fn init_duration(&self) -> Option<Duration> {
        self.emulator.first_poll.get().map(|polled| polled.duration_since(self.started))
    }

    /// Time since [`LambdaProcess::start`].
    pub fn since_start(&self) -> Duration {
        self.started.elapsed()
    }

    /// Hands the function one event and waits (up to `timeout`) for its answer.
    pub async fn invoke(&self, event: Value, timeout: Duration) -> Result<Invocation, String> {
        let id = format!("local-{}", self.counter.fetch_add(1, Ordering::SeqCst));
        let (answer, answered) = oneshot::channel();
        self.emulator.waiting.lock().await.insert(id.clone(), answer);
        self.events.send(Pending { id, event }).await.map_err(|_| "the emulator stopped".to_owned())?;
        match tokio::time::timeout(timeout, answered).await {
            Ok(Ok(invocation)) => Ok(invocation),
            Ok(Err(_)) => Err("the invocation was dropped".into()),
            Err(_) => match self.emulator.init_error.lock().await.take() {
                Some(error) => Err(format!("init error: {error}")),
                None => Err(format!("no answer within {timeout:?}")),
            },
        }
    }

    /// Stops the binary.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

async fn next(State(emulator): State<Emulator>) -> Response {
    emulator.first_poll.get_or_init(Instant::now);
    let Some(pending) = emulator.next.lock().await.recv().await else {
        return StatusCode::GONE.into_response();
    };
    let deadline = chrono::Utc::now().timestamp_millis() + 30_000;
    let mut headers = HeaderMap::new();
    let header = |value: String| HeaderValue::from_str(&value).expect("header value");
    headers.insert("lambda-runtime-aws-request-id", header(pending.id));
    headers.insert("lambda-runtime-deadline-ms", header(deadline.to_string()));
    headers.insert(
        "lambda-runtime-invoked-function-arn",
        header("arn:aws:lambda:us-east-1:123456789012:function:local".into()),
    );
    headers.insert("lambda-runtime-trace-id", header("Root=1-00000000-000000000000000000000000".into()));
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    (headers, pending.event.to_string()).into_response()
}

async fn deliver(emulator: &Emulator, id: &str, invocation: Invocation) -> StatusCode {
    match emulator.waiting.lock().await.remove(id) {
        Some(waiter) => {
            let _ = waiter.send(invocation);
            StatusCode::ACCEPTED
        }
        None => StatusCode::NOT_FOUND,
    }
}

fn json(body: &Bytes) -> Value {
    serde_json::from_slice(body).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

async fn respond(State(emulator): State<Emulator>, UrlPath(id): UrlPath<String>, body: Bytes) -> StatusCode {
    deliver(&emulator, &id, Invocation::Response(json(&body))).await
}

async fn fail(State(emulator): State<Emulator>, UrlPath(id): UrlPath<String>, body: Bytes) -> StatusCode {
    deliver(&emulator, &id, Invocation::Error(json(&body))).await
}

async fn init_error(State(emulator): State<Emulator>, body: Bytes) -> StatusCode {
    *emulator.init_error.lock().await = Some(json(&body));
    StatusCode::ACCEPTED
}
