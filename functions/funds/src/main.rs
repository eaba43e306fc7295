//! Lambda entry point of `funds` (`FundsFunction`): the payments system's requests, the daily
//! jobs and statements; never an adjustment (`operator` takes those).

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
    let handle = |event| funds::handle(&ledger, &SystemClock, &reports, FundsEntry::Payments, event);
    run(telemetry::metrics("funds")?, service_fn(handle)).await
}
