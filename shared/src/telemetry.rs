//! Logging: JSON lines in Lambda (CloudWatch), plain text locally; `RUST_LOG` filters. The
//! markers the template's alarms filter the logs on ([`MARKERS`]). And metrics, in CloudWatch's
//! embedded metric format ([`metrics`]): the handlers count through the `metrics` facade, and
//! each invocation's counts leave as one JSON log line that CloudWatch turns into metrics: no
//! `PutMetricData` call, nothing to reach from the VPC.

use tracing_subscriber::EnvFilter;

pub use crate::settings::LOCAL_METRICS_NAMESPACE;
pub use red_packets_core::markers::{
    DEPENDENCY_UNAVAILABLE, GRAB_REVOKED, INTERNAL_ERROR, MARKERS, PACKET_QUARANTINED, RECONCILIATION_MISMATCH,
    SETTLE_PACKET_SKIPPED, SETTLE_STOPPED,
};

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
