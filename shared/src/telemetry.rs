//! Logging: JSON lines in Lambda (CloudWatch), plain text locally; `RUST_LOG` filters. And the
//! markers alarms filter the logs on.

use tracing_subscriber::EnvFilter;

/// The marker on every reconciliation failure's log line, settle's and the funds function's
/// (the template's metric filter and alarm count them).
pub const RECONCILIATION_MISMATCH: &str = "RECONCILIATION_MISMATCH";

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
