//! Lambda entry point of `operator` (`OperatorFunction`): operators' adjustments, proposed by
//! one and approved by another, and nothing else. A binary of its own, so that its invokers
//! (the operators' principal) and its role are its own: no money in, no withdrawal's word.

use lambda_runtime::{service_fn, Error};
use metrics_cloudwatch_embedded::lambda::service::run;
use red_packets::adapters::DynamoLedger;
use red_packets::funds::FundsEntry;
use red_packets::{telemetry, Config, SystemClock};

#[tokio::main]
async fn main() -> Result<(), Error> {
    telemetry::init();
    let config = Config::from_env()?;
    let ledger = DynamoLedger::new(DynamoLedger::client_from_env()?, &config);
    let reports = funds::reports::Reports::from_env()?;
    let handle = |event| funds::handle(&ledger, &SystemClock, &reports, FundsEntry::Operator, event);
    run(telemetry::metrics("operator")?, service_fn(handle)).await
}
