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
/// `docs/OPERATIONS.md` has its runbook. `local/tests/deployment.rs` holds the three together.
pub const MARKERS: [&str; 7] = [
    RECONCILIATION_MISMATCH,
    SETTLE_PACKET_SKIPPED,
    SETTLE_STOPPED,
    PACKET_QUARANTINED,
    GRAB_REVOKED,
    INTERNAL_ERROR,
    DEPENDENCY_UNAVAILABLE,
];

/// The metric namespace when `METRICS_NAMESPACE` is not set (the template sets
/// `RedPackets/<stage>`).
pub const LOCAL_METRICS_NAMESPACE: &str = "RedPackets/local";

/// Installs the embedded-metric-format recorder for `function` (a `Function` dimension on every
/// metric, a `ColdStarts` count, the request id and X-Ray trace id as properties); the Lambda runtime of
/// `metrics_cloudwatch_embedded` flushes it after each invocation. Without a recorder (the local
/// API, tests) the counters cost nothing and go nowhere.
pub fn metrics(function: &'static str) -> Result<&'static metrics_cloudwatch_embedded::Collector, MetricsError> {
    let namespace = std::env::var("METRICS_NAMESPACE").unwrap_or_else(|_| LOCAL_METRICS_NAMESPACE.to_owned());
    metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace(namespace)
        .with_dimension("Function", function)
        .lambda_cold_start_metric("ColdStarts")
        .with_lambda_request_id("RequestId")
        .with_lambda_xray_trace_id("TraceId")
        .init()
        .map_err(|error| MetricsError(error.to_string()))
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
