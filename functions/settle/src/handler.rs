//! The scheduled settle run: reads the shard range from the payload, keeps draining for
//! `SETTLE_DRAIN_SECONDS` (a pass every second), stops before the Lambda deadline, and returns
//! the summary of its passes. A run that cannot reach a store fails (so Lambda's
//! retry and the on-failure destination see it); what it did stays done. A failure's
//! `errorType` names what went wrong (`InvalidSettleRequest`, `StoreUnavailable`), never a Rust
//! type name. Each run's figures leave as metrics (its lag, what it persisted, finalised,
//! skipped, quarantined, its duration), and every run that ends, whatever its outcome, beats
//! its shard range's heartbeat (`SettleRuns`, dimension `shards`): the template's did-not-run
//! alarms fire on a missing heartbeat, the other alarms on a run that ran and failed.

use lambda_runtime::{Diagnostic, LambdaEvent};
use red_packets::domain::audit::Attribution;
use red_packets::ports::{SettleCursor, SettleIndex, SettleLedger};
use red_packets::settle::{SettleError, SettleRequest, SettleSummary, Settler};
use serde_json::Value;

/// Why an invocation failed.
#[derive(Debug, thiserror::Error)]
pub enum SettleFailure {
    /// The payload is not `{"shards": [from, to]}`, `{}` or `null`.
    #[error("invalid settle payload: {0}")]
    InvalidRequest(serde_json::Error),
    /// A release without its operator or reason.
    #[error("{}: {}", .0.field.as_deref().unwrap_or("release"), .0.message)]
    Unattributed(red_packets::domain::Invalid),
    /// The run stopped: a store unreachable (or, in tests, a fault point).
    #[error(transparent)]
    Stopped(#[from] SettleError),
}

impl From<SettleFailure> for Diagnostic {
    fn from(failure: SettleFailure) -> Self {
        let error_type = match &failure {
            SettleFailure::InvalidRequest(_) | SettleFailure::Unattributed(_) => "InvalidSettleRequest",
            SettleFailure::Stopped(SettleError::Unavailable { .. }) => "StoreUnavailable",
            // A test's fault point (`Settler::crashing_at`): no setting sets one in the Lambda.
            SettleFailure::Stopped(_) => "SettleCrashed",
        };
        Diagnostic { error_type: error_type.into(), error_message: failure.to_string() }
    }
}

/// The Lambda handler: `{"shards": [from, to]}` (inclusive), `{}` or `null` for every shard;
/// `"release": [ids]` takes packets out of quarantine first; `"replay": true` (after the ledger
/// was restored from a backup) settles every packet Redis holds again from its first grab. The
/// summary lists the packets in quarantine after the run.
pub async fn handle<S: SettleIndex + SettleCursor, L: SettleLedger>(
    settler: &Settler<S, L>,
    event: LambdaEvent<Value>,
) -> Result<SettleSummary, SettleFailure> {
    let request: SettleRequest = match event.payload {
        Value::Null => SettleRequest::default(),
        payload => serde_json::from_value(payload).map_err(SettleFailure::InvalidRequest)?,
    };
    let releaser = request.release_by().map_err(SettleFailure::Unattributed)?;
    let deadline_ms = i64::try_from(event.context.deadline).ok().filter(|&deadline| deadline > 0);
    let shards = settler.shards_of(&request);
    let heartbeat = format!("{}-{}", shards.start(), shards.end());
    let ran = settle_shards(settler, &request, releaser.as_ref(), shards, deadline_ms).await;
    // The run ended, whatever its outcome: a run that failed is told by the errors and markers,
    // a run that never ran (a broken schedule, a throttled or crashing function) by this
    // heartbeat missing (`{"shards": [0, 7]}` beats as `0-7`, one series per schedule).
    metrics::counter!("SettleRuns", "shards" => heartbeat).increment(1);
    ran
}

/// One invocation's work: the releases, then draining `shards` until the deadline, then the
/// packets in quarantine.
async fn settle_shards<S: SettleIndex + SettleCursor, L: SettleLedger>(
    settler: &Settler<S, L>,
    request: &SettleRequest,
    releaser: Option<&Attribution>,
    shards: std::ops::RangeInclusive<u32>,
    deadline_ms: Option<red_packets::Millis>,
) -> Result<SettleSummary, SettleFailure> {
    let started = std::time::Instant::now();
    let unavailable = |error| SettleError::Unavailable { error, summary: Box::default() };
    let released = match releaser {
        Some(by) => settler.release(&request.release, by).await.map_err(unavailable)?,
        None => 0,
    };
    let replayed = if request.replay { settler.replay(shards.clone()).await.map_err(unavailable)? } else { 0 };
    let drained = settler.drain(shards, deadline_ms, settler.drain_until(deadline_ms)).await;
    match &drained {
        Ok(summary) => record(summary, started.elapsed()),
        Err(SettleError::Unavailable { summary, .. }) => record(summary, started.elapsed()),
        Err(SettleError::Crashed(_)) => {} // a test's fault point
    }
    let mut summary = drained?;
    summary.released += released;
    summary.replayed += replayed;
    summary.in_quarantine = settler.quarantined().await.map_err(unavailable)?;
    Ok(summary)
}

/// A run's figures as metrics: what it made durable and finalised, what it could not, its lag
/// and its duration.
fn record(summary: &SettleSummary, elapsed: std::time::Duration) {
    metrics::counter!("GrabsPersisted").increment(summary.grabs_persisted);
    metrics::counter!("PacketsFinalised").increment(summary.finalised.into());
    metrics::counter!("RefundedCents").increment(summary.refunded_cents);
    metrics::counter!("PacketsSkipped").increment(summary.failed.into());
    metrics::counter!("PacketsQuarantined").increment(summary.quarantined.into());
    metrics::counter!("PacketsResynced").increment(summary.resynced.into());
    metrics::counter!("PacketsRestored").increment(summary.restored.into());
    metrics::counter!("PacketsDeferred").increment(summary.deferred.into());
    metrics::counter!("GrabsRegranted").increment(summary.regranted.into());
    metrics::counter!("GrabsRevoked").increment(summary.revoked.into());
    metrics::gauge!("SettleLagMilliseconds").set(summary.lag_ms as f64);
    metrics::histogram!("SettleRunSeconds").record(elapsed.as_secs_f64());
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory stores (no service needed); settle's own flows are tested
    //! in `red_packets::settle`, and on Redis and DynamoDB Local in `local/tests`.

    use super::*;
    use std::sync::Arc;

    use lambda_runtime::Context;
    use red_packets::Config;
    use red_packets_testkit::memory::{MemoryLedger, MemoryStore};

    const SETTLE_EVENT: &str = include_str!("../../../events/settle.json");

    fn settler() -> Settler<MemoryStore, MemoryLedger> {
        let config = Config::from_lookup(|_| None).unwrap();
        Settler::new(Arc::new(MemoryStore::new(config.settle_shards)), MemoryLedger::new(&config))
    }

    #[tokio::test]
    async fn the_sample_event_settles_its_shards() {
        let payload: Value = serde_json::from_str(SETTLE_EVENT).unwrap();
        let summary = handle(&settler(), LambdaEvent::new(payload, Context::default())).await.unwrap();
        assert_eq!(summary.shards, [0, 15]);
        assert_eq!(summary.mismatches, 0);
    }

    #[tokio::test]
    async fn a_past_deadline_stops_the_run_cleanly_or_finds_nothing_to_do() {
        let mut context = Context::default();
        context.deadline = 1;
        let summary = handle(&settler(), LambdaEvent::new(Value::Null, context)).await.unwrap();
        assert_eq!(summary.packets, 0, "no packet is started past the deadline");
    }

    #[tokio::test]
    async fn a_malformed_payload_is_an_error() {
        let payload = serde_json::json!({ "shards": "all" });
        let failure = handle(&settler(), LambdaEvent::new(payload, Context::default())).await.unwrap_err();
        assert_eq!(Diagnostic::from(failure).error_type, "InvalidSettleRequest");
    }

    #[tokio::test]
    async fn an_unreachable_ledger_is_a_store_unavailable_failure() {
        let settler = settler();
        settler.ledger().set_unreachable(true);
        let failure = handle(&settler, LambdaEvent::new(Value::Null, Context::default())).await.unwrap_err();
        assert_eq!(Diagnostic::from(failure).error_type, "StoreUnavailable");
    }

    /// The only test of this process that installs the metrics recorder (it is global). Every
    /// run that ends beats its shard range's heartbeat, in the embedded metric format with the
    /// dimension `shards`, a run that failed too; ranges no other test uses, so the counts are
    /// this test's own.
    #[tokio::test]
    async fn every_run_that_ends_beats_its_shard_ranges_heartbeat() {
        let collector = red_packets::telemetry::metrics("settle").expect("the first recorder of this process");
        let payload = serde_json::json!({ "shards": [2, 5] });
        handle(&settler(), LambdaEvent::new(payload, Context::default())).await.unwrap();
        let failing = settler();
        failing.ledger().set_unreachable(true);
        let payload = serde_json::json!({ "shards": [6, 6] });
        let failure = handle(&failing, LambdaEvent::new(payload, Context::default())).await.unwrap_err();
        assert_eq!(Diagnostic::from(failure).error_type, "StoreUnavailable");

        let documents = red_packets_testkit::telemetry::flushed(collector);
        for shards in ["2-5", "6-6"] {
            let beat = red_packets_testkit::telemetry::heartbeat(&documents, ("shards", shards), "SettleRuns");
            assert_eq!(beat["SettleRuns"].as_u64(), Some(1), "one run, one beat: {beat}");
            assert_eq!(beat["Function"], "settle");
            let declared = &beat["_aws"]["CloudWatchMetrics"][0];
            assert_eq!(declared["Namespace"], red_packets::telemetry::LOCAL_METRICS_NAMESPACE);
        }
    }
}
