//! Lambda entry point of `grab`.

use lambda_http::{service_fn, Error};
use metrics_cloudwatch_embedded::lambda::service::run_http;
use red_packets::adapters::dynamo::client::Connection;
use red_packets::adapters::{LazyLedger, RedisStore};
use red_packets::{telemetry, Config};

#[tokio::main]
async fn main() -> Result<(), Error> {
    telemetry::init();
    let config = Config::from_env()?;
    // The ledger answers only packets Redis no longer holds: its client is built when first needed.
    let ledger = LazyLedger::new(&config, Connection::from_env());
    let service = grab::GrabService::new(RedisStore::new(&config), ledger, config.passphrase_key.clone());
    run_http(telemetry::metrics("grab")?, service_fn(|request| grab::handle(&service, request))).await
}
