//! The scheduled settle run: reads the shard range from the payload, stops before the Lambda
//! deadline, and returns the run's summary. A run that cannot reach a store fails (so the
//! scheduler's retry policy and dead-letter queue see it); what it did stays done.

use lambda_runtime::{Error, LambdaEvent};
use red_packets::settle::{SettleRequest, SettleSummary, Settler};
use serde_json::Value;

/// The Lambda handler: `{"shards": [from, to]}` (inclusive), `{}` or `null` for every shard.
pub async fn handle(settler: &Settler, event: LambdaEvent<Value>) -> Result<SettleSummary, Error> {
    let request: SettleRequest = match event.payload {
        Value::Null => SettleRequest::default(),
        payload => serde_json::from_value(payload).map_err(|error| format!("invalid settle payload: {error}"))?,
    };
    let deadline_ms = i64::try_from(event.context.deadline).ok().filter(|&deadline| deadline > 0);
    Ok(settler.run(settler.shards_of(&request), deadline_ms).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use lambda_runtime::Context;
    use red_packets::adapters::{DynamoLedger, RedisStore};
    use red_packets::Config;

    const SETTLE_EVENT: &str = include_str!("../../../events/settle.json");

    async fn settler() -> Settler {
        let config = Config::from_env().unwrap();
        let ledger = DynamoLedger::new(DynamoLedger::client_from_env().await, &config);
        ledger.ensure_table().await.expect("DynamoDB Local (make test) is reachable");
        Settler::new(Arc::new(RedisStore::new(&config)), ledger)
    }

    #[tokio::test]
    async fn the_sample_event_settles_its_shards() {
        let payload: Value = serde_json::from_str(SETTLE_EVENT).unwrap();
        let summary = handle(&settler().await, LambdaEvent::new(payload, Context::default())).await.unwrap();
        assert_eq!(summary.shards, [0, 15]);
        assert_eq!(summary.mismatches, 0);
    }

    #[tokio::test]
    async fn a_past_deadline_stops_the_run_cleanly_or_finds_nothing_to_do() {
        let mut context = Context::default();
        context.deadline = 1;
        let summary = handle(&settler().await, LambdaEvent::new(Value::Null, context)).await.unwrap();
        assert_eq!(summary.packets, 0, "no packet is started past the deadline");
    }

    #[tokio::test]
    async fn a_malformed_payload_is_an_error() {
        let payload = serde_json::json!({ "shards": "all" });
        assert!(handle(&settler().await, LambdaEvent::new(payload, Context::default())).await.is_err());
    }
}
