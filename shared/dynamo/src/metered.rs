//! Every DynamoDB call counted, as the Redis calls are: an SDK interceptor on the client, the one
//! place every operation passes, with its retries inside it. `DynamoCalls`, their total time in
//! `DynamoCallMilliseconds`, and two kinds of failure: `DynamoErrors` (no answer: a timeout, a
//! refused connection, an unreadable response; the ledger was unavailable) and `DynamoRefusals`
//! (DynamoDB answered with an error of its API: a refused condition, which settle's idempotent
//! writes meet by design, or throttling). Counters, not histograms: a settle invocation makes
//! more calls than an embedded-metric document holds values (100), so the mean is the ratio.
//!
//! `DynamoThrottles` counts attempts, not calls: every answer in which DynamoDB throttled the
//! request (a call the SDK retried into success counts too), as the client saw it. The table's
//! own `ReadThrottleEvents` and `WriteThrottleEvents` count what DynamoDB throttled; this counts
//! what the functions met, per function, and `DynamoThrottlesAlarm` watches both.

use std::time::Instant;

use aws_sdk_dynamodb::config::interceptors::{
    BeforeSerializationInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_smithy_types::config_bag::{Storable, StoreReplace};

/// The interceptor: stateless, so one serves every call of the client.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct CallMeter;

/// When the call began, kept in the call's own config bag.
#[derive(Debug, Clone, Copy)]
struct CallStarted(Instant);

impl Storable for CallStarted {
    type Storer = StoreReplace<Self>;
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallEnd {
    Answered,
    Refused,
    Failed,
}

impl Intercept for CallMeter {
    fn name(&self) -> &'static str {
        "CallMeter"
    }

    fn read_before_execution(
        &self,
        _: &BeforeSerializationInterceptorContextRef<'_>,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        cfg.interceptor_state().store_put(CallStarted(Instant::now()));
        Ok(())
    }

    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let throttled = context.response().is_some_and(|response| {
            response.status().as_u16() == 400 && response.body().bytes().is_some_and(names_throttling)
        });
        if throttled {
            metrics::counter!("DynamoThrottles").increment(1);
        }
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let end = match context.output_or_error() {
            Some(Ok(_)) => CallEnd::Answered,
            Some(Err(error)) if error.is_operation_error() => CallEnd::Refused,
            _ => CallEnd::Failed,
        };
        let elapsed_ms = cfg.load::<CallStarted>().map_or(0, |started| started.0.elapsed().as_millis() as u64);
        record_call(elapsed_ms, end);
        Ok(())
    }
}

/// The error codes in which DynamoDB says it throttled a request: a table or index over its
/// throughput (`ProvisionedThroughputExceededException`, also an on-demand table past its
/// partition's or its warm throughput), the account's or the table's request rate
/// (`ThrottlingException`, `RequestLimitExceeded`), and a transaction cancelled because one
/// of its items was throttled (`ThrottlingError` among its cancellation reasons).
pub(super) const THROTTLING_CODES: [&str; 4] =
    ["ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded", "ThrottlingError"];

/// Whether an error answer's body names throttling (the JSON protocol puts the code in
/// `__type`, a transaction's in its `CancellationReasons`).
fn names_throttling(body: &[u8]) -> bool {
    let body = String::from_utf8_lossy(body);
    THROTTLING_CODES.iter().any(|code| body.contains(code))
}

fn record_call(elapsed_ms: u64, end: CallEnd) {
    metrics::counter!("DynamoCalls").increment(1);
    metrics::counter!("DynamoCallMilliseconds").increment(elapsed_ms);
    match end {
        CallEnd::Answered => {}
        CallEnd::Refused => metrics::counter!("DynamoRefusals").increment(1),
        CallEnd::Failed => metrics::counter!("DynamoErrors").increment(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttling_answers_are_told_from_other_refusals() {
        let throttled = br#"{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded."}"#;
        assert!(names_throttling(throttled));
        assert!(names_throttling(br#"{"__type":"com.amazon.coral.availability#ThrottlingException"}"#));
        let cancelled = br#"{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","CancellationReasons":[{"Code":"None"},{"Code":"ThrottlingError"}]}"#;
        assert!(names_throttling(cancelled));
        let refused = br#"{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException"}"#;
        assert!(!names_throttling(refused));
    }
}
