//! Money out and corrections in the soak: users ask for withdrawals through the local API; the
//! payments system answers each one (paid, or failed with the money back), every word delivered
//! twice, through the funds function's handler; two operators propose and approve adjustments
//! (credits and debits) through the operators' API, the proposer's own approval refused
//! first. Every answer is held to what it must say; the books are reconciled whole at the end
//! (`scripts/soak.sh`).

use funds::ops_api::{handle_api, OpsApi};
use lambda_runtime::{Context, LambdaEvent};
use red_packets::adapters::{DynamoLedger, RedisStore, ReportDirectory};
use red_packets::funds::FundsEntry;
use red_packets::{Config, SystemClock};
use red_packets_testkit::events;
use serde_json::{json, Value};

const OPERATOR_EVENT: &str = include_str!("../../../../events/adjustment-approve.json");

/// The payments system and the operators, calling the funds handler and the operators' API in
/// process on the soak's table, as `local funds` and the local gateway do.
pub struct Desk {
    ledger: DynamoLedger,
    live: RedisStore,
    reports: ReportDirectory,
    roles_claim: String,
}

impl Desk {
    /// A desk on the configured table and Redis.
    pub fn from_env() -> Desk {
        let config = Config::from_env().expect("configuration");
        let ledger = DynamoLedger::new(DynamoLedger::client_from_env().expect("a DynamoDB client"), &config);
        let reports = ReportDirectory::new(std::env::temp_dir().join("soak-reports"));
        Desk { ledger, live: RedisStore::new(&config), reports, roles_claim: config.operator_roles_claim.clone() }
    }

    /// One request of the payments system to `FundsFunction`: its answer, or its refusal as text.
    pub async fn payments(&self, payload: Value) -> Result<Value, String> {
        let event = LambdaEvent::new(payload, Context::default());
        funds::handle(&self.ledger, &SystemClock, &self.reports, FundsEntry::Payments, event)
            .await
            .map(|answer| serde_json::to_value(answer).expect("answers serialize"))
            .map_err(|failure| format!("{failure:?}"))
    }

    /// One request of operator `name` (a finance and support agent) on the operators' API's route
    /// `route` with its path `parameters` and `body`: the status and body.
    pub async fn operator(&self, name: &str, route: &str, parameters: &[(&str, &str)], body: Value) -> (u16, Value) {
        let mut event: Value = serde_json::from_str(OPERATOR_EVENT).expect("the sample event is JSON");
        events::set_route(&mut event, route, parameters);
        events::set_operator(&mut event, name, &self.roles_claim, &["support", "finance"]);
        events::set_body(&mut event, &body.to_string());
        let request = events::to_request(&event).expect("the sample event is a request");
        let api =
            OpsApi { ledger: &self.ledger, live: &self.live, reports: &self.reports, roles_claim: &self.roles_claim };
        let response = handle_api(&api, &SystemClock, &request).await;
        (response.status().as_u16(), serde_json::from_slice(response.body().as_ref()).unwrap_or(Value::Null))
    }
}

/// The payments system's word on withdrawal `id`: `withdrawal_paid` or `withdrawal_failed`.
pub fn word(outcome: &str, id: &str, reference: &str) -> Value {
    json!({ outcome: { "withdrawal_id": id, "reference": reference } })
}
