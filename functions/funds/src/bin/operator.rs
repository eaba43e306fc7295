//! Lambda entry point of `operator` (`OperatorFunction`): operators' adjustments (proposed by
//! one, approved by another) and the audit trail, behind its function URL with `AWS_IAM`; the
//! signed caller is the operator. A binary of its own, so that its invokers and its role are its
//! own: no money in, no withdrawal's word.

use lambda_http::{service_fn, Error};
use metrics_cloudwatch_embedded::lambda::service::run_http;
use red_packets::adapters::DynamoLedger;
use red_packets::{telemetry, Config, SystemClock};

#[tokio::main]
async fn main() -> Result<(), Error> {
    telemetry::init();
    let config = Config::from_env()?;
    let ledger = DynamoLedger::new(DynamoLedger::client_from_env()?, &config);
    let reports = funds::reports::Reports::from_env()?;
    let roles_claim = config.operator_roles_claim.as_str();
    let handle = |request| funds::operator::handle_request(&ledger, &SystemClock, &reports, roles_claim, request);
    run_http(telemetry::metrics("operator")?, service_fn(handle)).await
}
