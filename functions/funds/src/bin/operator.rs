//! Lambda entry point of `operator` (`OperatorFunction`): the operators' API (`/ops/v1`, behind
//! the operators' JWT authorizer). A binary of its own, so that its invoker (API Gateway) and its
//! role are its own: no money in, no withdrawal's word.

use funds::ops_api::{handle_api, OpsApi};
use lambda_http::{service_fn, Error, Request};
use metrics_cloudwatch_embedded::lambda::service::run_http;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::{telemetry, Config, SystemClock};

#[tokio::main]
async fn main() -> Result<(), Error> {
    telemetry::init();
    let config = Config::from_env()?;
    let ledger = DynamoLedger::new(DynamoLedger::client_from_env()?, &config);
    let (live, reports) = (RedisStore::new(&config), funds::reports::Reports::from_env()?);
    let api = OpsApi { ledger: &ledger, live: &live, reports: &reports, roles_claim: &config.operator_roles_claim };
    let api = &api;
    let handle = |request: Request| async move { Ok::<_, Error>(handle_api(api, &SystemClock, &request).await) };
    run_http(telemetry::metrics("operator")?, service_fn(handle)).await
}
