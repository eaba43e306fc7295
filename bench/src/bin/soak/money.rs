//! Money out and corrections in the soak: users ask for withdrawals through the local API; the
//! payments system answers each one (paid, or failed with the money back), every word delivered
//! twice, through the funds function's handler; two operators propose and approve adjustments
//! (credits and debits) through the operators' entry point, the proposer's own approval refused
//! first. Every answer is held to what it must say; the books are reconciled whole at the end
//! (`scripts/soak.sh`).

use lambda_runtime::{Context, LambdaEvent};
use red_packets::adapters::DynamoLedger;
use red_packets::adapters::ReportDirectory;
use red_packets::funds::FundsEntry;
use red_packets::{Config, SystemClock};
use serde_json::{json, Value};

/// The IAM identity an operator signs the operators' function URL with.
fn operator_arn(name: &str) -> String {
    format!("arn:aws:sts::123456789012:assumed-role/RedPacketsOperators/{name}")
}

const OPERATOR_EVENT: &str = include_str!("../../../../events/adjustment-approve.json");

/// The payments system and the operators, calling the funds handlers in process on the soak's
/// table, as `local funds` does.
pub struct Desk {
    ledger: DynamoLedger,
    reports: ReportDirectory,
}

impl Desk {
    /// A desk on the configured table.
    pub fn from_env() -> Desk {
        let config = Config::from_env().expect("configuration");
        let ledger = DynamoLedger::new(DynamoLedger::client_from_env().expect("a DynamoDB client"), &config);
        Desk { ledger, reports: ReportDirectory::new(std::env::temp_dir().join("soak-reports")) }
    }

    /// One request of the payments system to `FundsFunction`: its answer, or its refusal as text.
    pub async fn payments(&self, payload: Value) -> Result<Value, String> {
        let event = LambdaEvent::new(payload, Context::default());
        funds::handle(&self.ledger, &SystemClock, &self.reports, FundsEntry::Payments, event)
            .await
            .map(|answer| serde_json::to_value(answer).expect("answers serialize"))
            .map_err(|failure| format!("{failure:?}"))
    }

    /// One request of operator `name` through the operators' function URL: the status and body.
    pub async fn operator(&self, name: &str, payload: Value) -> (u16, Value) {
        let mut event: Value = serde_json::from_str(OPERATOR_EVENT).expect("the sample event is JSON");
        event["requestContext"]["authorizer"]["iam"]["userArn"] = Value::String(operator_arn(name));
        red_packets_testkit::events::set_body(&mut event, &payload.to_string());
        let request = red_packets_testkit::events::to_request(&event).expect("the sample event is a request");
        match funds::operator::handle_url(&self.ledger, &SystemClock, &self.reports, request).await {
            Ok(response) => {
                (response.status().as_u16(), serde_json::from_slice(response.body().as_ref()).unwrap_or(Value::Null))
            }
            Err(error) => (0, json!({ "error": error.to_string() })),
        }
    }
}

/// The payments system's word on withdrawal `id`: `withdrawal_paid` or `withdrawal_failed`.
pub fn word(outcome: &str, id: &str, reference: &str) -> Value {
    json!({ outcome: { "withdrawal_id": id, "reference": reference } })
}
