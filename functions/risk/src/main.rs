//! Lambda entry point of `risk` (`RiskFunction`): invoked by the bus's rule with each ledger
//! event the pattern rules read.
// The handler's future (the rules' ledger calls, nested) is deeper than rustc's default layout limit.
#![recursion_limit = "256"]

use lambda_runtime::{service_fn, Error};
use metrics_cloudwatch_embedded::lambda::service::run;
use red_packets::adapters::DynamoLedger;
use red_packets::{telemetry, Config, SystemClock};
use risk::Watch;

#[tokio::main]
async fn main() -> Result<(), Error> {
    telemetry::init();
    let config = Config::from_env()?;
    let ledger = DynamoLedger::new(DynamoLedger::client_from_env()?, &config);
    let watch = Watch::new(ledger, &config, SystemClock);
    run(telemetry::metrics("risk")?, service_fn(|event| risk::handle(&watch, event))).await
}
