//! Lambda entry point of `settle`.

use std::sync::Arc;

use lambda_runtime::{service_fn, Error};
use metrics_cloudwatch_embedded::lambda::service::run;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::settle::Settler;
use red_packets::{telemetry, Config};

#[tokio::main]
async fn main() -> Result<(), Error> {
    telemetry::init();
    let config = Config::from_env()?;
    let ledger = DynamoLedger::new(DynamoLedger::client_from_env()?, &config);
    let settler = Settler::new(Arc::new(RedisStore::new(&config)), ledger).draining_for(config.settle_drain);
    run(telemetry::metrics("settle")?, service_fn(|event| settle::handle(&settler, event))).await
}
