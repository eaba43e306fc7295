//! The markers the template's alarms filter the logs on: each line that needs a person carries
//! one. Declared here, where settle and the funds function log them; `red_packets::telemetry`
//! re-exports them beside the logging and metrics setup.

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
