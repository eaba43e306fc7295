//! Lambda entry point of `grab`: one request at a time on standard Lambda, `AWS_LAMBDA_MAX_CONCURRENCY` at once
//! under Lambda Managed Instances, sharing one Redis connection, where grabs of one packet go to Redis together.

use std::sync::Arc;

use lambda_http::lambda_runtime::layers::TracingLayer;
use lambda_http::{service_fn, Error};
use red_packets::adapters::dynamo::client::Connection;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::telemetry::{self, ConcurrentMetricsLayer};
use red_packets::Config;

#[tokio::main]
async fn main() -> Result<(), Error> {
    telemetry::init();
    let config = Config::from_env()?;
    let ledger = DynamoLedger::on_first_use(Connection::from_env(), &config);
    let keys = red_packets::secrets::deployed_keys(&config);
    let service = Arc::new(grab::GrabService::new(RedisStore::new(&config), ledger, &config).with_keys(keys));
    let handler = service_fn(move |request| {
        let service = service.clone();
        async move { grab::handle(&service, request).await }
    });
    let runtime = lambda_http::runtime_concurrent(handler).layer(TracingLayer::new());
    runtime.layer(ConcurrentMetricsLayer(telemetry::metrics("grab")?)).run_concurrent().await
}
