//! Lambda entry point of `send`.

use lambda_http::{service_fn, Error};
use metrics_cloudwatch_embedded::lambda::service::run_http;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::{telemetry, Config};

#[tokio::main]
async fn main() -> Result<(), Error> {
    telemetry::init();
    let config = Config::from_env()?;
    let ledger = DynamoLedger::new(DynamoLedger::client_from_env()?, &config);
    let keys = red_packets::secrets::deployed_keys(&config);
    let service = send::SendService::new(ledger, RedisStore::new(&config), &config).with_keys(keys);
    run_http(telemetry::metrics("send")?, service_fn(|request| send::handle(&service, request))).await
}
