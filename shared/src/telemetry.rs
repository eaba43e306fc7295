//! Logging: JSON lines in Lambda (CloudWatch), plain text locally; `RUST_LOG` filters. The
//! markers the template's alarms filter the logs on ([`MARKERS`]). And metrics, in CloudWatch's
//! embedded metric format ([`metrics`]): the handlers count through the `metrics` facade, and
//! each invocation's counts leave as one JSON log line that CloudWatch turns into metrics: no
//! `PutMetricData` call, nothing to reach from the VPC.

use tracing_subscriber::EnvFilter;

/// The marker on every reconciliation failure's log line, settle's and the funds function's:
/// the books of a packet or of the ledger do not balance.
pub const RECONCILIATION_MISMATCH: &str = "RECONCILIATION_MISMATCH";

/// Settle skipped a packet for its own data (corrupt, or an item DynamoDB rejects): its grabs
/// are not credited and its refund not paid until someone looks.
pub const SETTLE_PACKET_SKIPPED: &str = "SETTLE_PACKET_SKIPPED";

/// A settle run stopped because a store is unreachable (the run fails; the next one goes on).
pub const SETTLE_STOPPED: &str = "SETTLE_STOPPED";

/// Settle set a packet aside whose books it cannot balance (docs/OPERATIONS.md: releasing it).
pub const PACKET_QUARANTINED: &str = "PACKET_QUARANTINED";

/// A grab the user was told they made, revoked after a failover with no share left to give.
pub const GRAB_REVOKED: &str = "GRAB_REVOKED";

/// A request ended in a 500: a broken invariant or corrupt data, never a client's mistake.
pub const INTERNAL_ERROR: &str = "INTERNAL_ERROR";

/// A request answered 503: a store could not be reached (the client retries; many at once page).
pub const DEPENDENCY_UNAVAILABLE: &str = "DEPENDENCY_UNAVAILABLE";

/// Every marker the code logs. Each line that needs a person carries one (every ERROR line
/// does); `template.yaml` counts each with a metric filter and watches it with an alarm, and
/// `docs/OPERATIONS.md` has its runbook. `local/tests/it/deployment.rs` holds the three together.
pub const MARKERS: [&str; 7] = [
    RECONCILIATION_MISMATCH,
    SETTLE_PACKET_SKIPPED,
    SETTLE_STOPPED,
    PACKET_QUARANTINED,
    GRAB_REVOKED,
    INTERNAL_ERROR,
    DEPENDENCY_UNAVAILABLE,
];

pub use crate::settings::LOCAL_METRICS_NAMESPACE;

/// The count of execution environments' first invocations, and the properties naming each
/// metric document's invocation.
const COLD_STARTS: &str = "ColdStarts";
const REQUEST_ID: &str = "RequestId";
const TRACE_ID: &str = "TraceId";

/// Installs the embedded-metric-format recorder for `function` (a `Function` dimension on every
/// metric, a `ColdStarts` count, the request id and X-Ray trace id as properties); the Lambda runtime of
/// `metrics_cloudwatch_embedded` flushes it after each invocation. Without a recorder (the local
/// API, tests) the counters cost nothing and go nowhere.
pub fn metrics(function: &'static str) -> Result<&'static metrics_cloudwatch_embedded::Collector, MetricsError> {
    let namespace = crate::settings::METRICS_NAMESPACE.from_env().ok().flatten().unwrap_or_default();
    metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace(namespace)
        .with_dimension("Function", function)
        .lambda_cold_start_metric(COLD_STARTS)
        .with_lambda_request_id(REQUEST_ID)
        .with_lambda_xray_trace_id(TRACE_ID)
        .init()
        .map_err(|error| MetricsError(error.to_string()))
}

/// What `metrics_cloudwatch_embedded`'s `MetricsLayer` does, for a runtime that serves
/// invocations concurrently (`Runtime::run_concurrent` needs a `Clone` service with `Send`
/// futures; the layer's are neither): the cold start counted once, the invocation's request and
/// trace ids set as properties, and the metrics flushed after each invocation. Invocations
/// running at once share one collector: a document may carry another running invocation's
/// counts and ids, never lose or repeat a count.
#[derive(Clone, Copy)]
pub struct ConcurrentMetricsLayer(pub &'static metrics_cloudwatch_embedded::Collector);

impl<S> lambda_http::tower::Layer<S> for ConcurrentMetricsLayer {
    type Service = ConcurrentMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ConcurrentMetrics { collector: self.0, inner }
    }
}

/// The service of [`ConcurrentMetricsLayer`].
#[derive(Clone)]
pub struct ConcurrentMetrics<S> {
    collector: &'static metrics_cloudwatch_embedded::Collector,
    inner: S,
}

type Invocation = lambda_http::lambda_runtime::LambdaInvocation;

impl<S> lambda_http::Service<Invocation> for ConcurrentMetrics<S>
where
    S: lambda_http::Service<Invocation> + Clone,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, context: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(context)
    }

    fn call(&mut self, invocation: Invocation) -> Self::Future {
        static COLD_START: std::sync::Once = std::sync::Once::new();
        let collector = self.collector;
        collector.set_property(REQUEST_ID, invocation.context.request_id.clone());
        if let Some(trace_id) = &invocation.context.xray_trace_id {
            collector.set_property(TRACE_ID, trace_id.clone());
        }
        COLD_START.call_once(|| {
            let _ = collector.write_single(COLD_STARTS, Some(metrics::Unit::Count), 1, std::io::stdout());
        });
        // The clone that was made ready answers; the fresh one waits for the next invocation.
        let mut ready = self.inner.clone();
        std::mem::swap(&mut self.inner, &mut ready);
        let answer = ready.call(invocation);
        Box::pin(async move {
            let answer = answer.await;
            if let Err(error) = collector.flush(std::io::stdout()) {
                tracing::warn!(%error, "could not write the invocation's metrics");
            }
            answer
        })
    }
}

/// The metrics recorder could not be installed (one is installed already).
#[derive(Debug, thiserror::Error)]
#[error("metrics recorder: {0}")]
pub struct MetricsError(String);

/// Installs the global subscriber once; later calls do nothing.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_target(false).with_ansi(ansi);
    let _ = if std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some() {
        builder.json().flatten_event(true).without_time().try_init()
    } else {
        builder.try_init()
    };
}
