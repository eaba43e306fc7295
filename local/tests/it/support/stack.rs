//! One test's own stack for the settle and money tests: a Redis key prefix, a DynamoDB table
//! and a clock of its own, and the real handlers called with the sample events.

use std::collections::HashMap;
use std::sync::Arc;

use lambda_http::Request;
use local::{Functions, LocalAuthorizer};
use red_packets::adapters::{DeployedSettler, DynamoLedger, RedisStore, ReportDirectory};
use red_packets::domain::ledger::LedgerPacket;
use red_packets::domain::{PacketId, PacketStatus};
use red_packets::ports::Ledger;
use red_packets::settle::{FaultPoint, SettleSummary, Settler};
use red_packets::Config;
use red_packets_testkit::events;
use red_packets_testkit::ManualClock;
use serde_json::Value;

const SEND_EVENT: &str = include_str!("../../../../events/send.json");
const GRAB_EVENT: &str = include_str!("../../../../events/grab.json");
const QUERY_EVENT: &str = include_str!("../../../../events/query.json");
const HISTORY_EVENT: &str = include_str!("../../../../events/history.json");
const CANCEL_EVENT: &str = include_str!("../../../../events/cancel.json");
const WALLET_EVENT: &str = include_str!("../../../../events/wallet.json");
const WITHDRAW_EVENT: &str = include_str!("../../../../events/withdraw.json");
const OPERATOR_EVENT: &str = include_str!("../../../../events/adjustment-approve.json");

/// One test's own stack: its Redis database, its table, its clock.
pub struct Stack {
    pub config: Config,
    pub clock: Arc<ManualClock>,
    pub functions: Arc<Functions>,
    pub ledger: DynamoLedger,
}

impl Stack {
    pub async fn new(name: &str) -> Stack {
        Self::with_config(name, Config::from_env().expect("configuration")).await
    }

    /// A stack of its own on `config` (a Redis of the test's own, say).
    pub async fn with_config(name: &str, mut config: Config) -> Stack {
        // Loaded 2-core machines answer slowly; 503s under load are another test's subject.
        config.redis.timeout = std::time::Duration::from_secs(5);
        Self::keeping_deadline(name, config).await
    }

    /// A stack of its own on `config`, its Redis deadline (`REDIS_TIMEOUT_MS`) as given: for
    /// the tests whose subject is what a grab answers within it.
    pub async fn keeping_deadline(name: &str, config: Config) -> Stack {
        Self::through(name, config, DynamoLedger::client_from_env().expect("a DynamoDB client")).await
    }

    /// A stack of its own whose functions reach DynamoDB through `client` (one that injects
    /// faults, say); the test's own ledger reads go straight to DynamoDB Local.
    pub async fn through(name: &str, mut config: Config, client: aws_sdk_dynamodb::Client) -> Stack {
        // Of its own per run too: the services outlive a test run on a developer's machine.
        let run = PacketId::random().as_str()[..8].to_owned();
        config.table_name = format!("RedPackets-{name}-{run}");
        config.redis.key_prefix = format!("t-{name}-{run}");
        let clock = Arc::new(ManualClock::starting_now());
        let functions = local::functions_on(&config, LocalAuthorizer::new("test"), clock.clone(), client)
            .await
            .expect("DynamoDB Local is reachable");
        let ledger = DynamoLedger::new(DynamoLedger::client_from_env().expect("a DynamoDB client"), &config);
        Stack { config, clock, functions: Arc::new(functions), ledger }
    }

    /// The same packets, table and clock through another Redis (a promoted replica, say).
    pub async fn on_redis(&self, url: &str) -> Stack {
        let mut config = self.config.clone();
        config.redis.url = url.to_owned();
        let functions = local::functions_with_clock(&config, LocalAuthorizer::new("test"), self.clock.clone())
            .await
            .expect("DynamoDB Local is reachable");
        Stack { config, clock: self.clock.clone(), functions: Arc::new(functions), ledger: self.ledger.clone() }
    }

    /// The same Redis and clock on another table (a restored ledger the stack is pointed at).
    pub async fn on_table(&self, table: &str) -> Stack {
        let mut config = self.config.clone();
        config.table_name = table.to_owned();
        let functions = local::functions_with_clock(&config, LocalAuthorizer::new("test"), self.clock.clone())
            .await
            .expect("DynamoDB Local is reachable");
        let ledger = DynamoLedger::new(DynamoLedger::client_from_env().expect("a DynamoDB client"), &config);
        Stack { config, clock: self.clock.clone(), functions: Arc::new(functions), ledger }
    }

    /// The same packets, table, Redis and clock under another `SETTLE_SHARDS` (a redeploy).
    pub async fn with_settle_shards(&self, shards: u32) -> Stack {
        let mut config = self.config.clone();
        config.settle_shards = shards;
        let functions = local::functions_with_clock(&config, LocalAuthorizer::new("test"), self.clock.clone())
            .await
            .expect("DynamoDB Local is reachable");
        Stack { config, clock: self.clock.clone(), functions: Arc::new(functions), ledger: self.ledger.clone() }
    }

    /// A settle run through the handler with `payload` (`{"release": [ids]}`, say).
    pub async fn settle_with(&self, payload: Value) -> SettleSummary {
        let event = lambda_runtime::LambdaEvent::new(payload, lambda_runtime::Context::default());
        settle::handle(&self.functions.settler, event).await.expect("settle run")
    }

    /// `POST /packets` with an `Idempotency-Key`: the status and body.
    pub async fn send_keyed(&self, sender: &str, body: &Value, key: &str) -> (u16, Value) {
        let mut event = event_by(SEND_EVENT, sender, None);
        events::set_header(&mut event, "Idempotency-Key", Some(key));
        events::set_body(&mut event, &body.to_string());
        reply(send::handle(&self.functions.send, request(&event)).await).await
    }

    /// `POST /me/withdrawals` by `user` with `body` under `key`: the status and body.
    pub async fn withdraw(&self, user: &str, body: &Value, key: &str) -> (u16, Value) {
        let mut event = event_by(WITHDRAW_EVENT, user, None);
        events::set_header(&mut event, "Idempotency-Key", Some(key));
        events::set_body(&mut event, &body.to_string());
        reply(send::handle(&self.functions.send, request(&event)).await).await
    }

    /// A request of operator `name` (an admin) to the operators' API (`OperatorFunction`'s
    /// handler), on route `route` with its path `parameters` and `body`: the status and body.
    pub async fn ops(
        &self,
        name: &str,
        route: &str,
        parameters: &[(&str, &str)],
        body: Option<&Value>,
    ) -> (u16, Value) {
        let mut event: Value = serde_json::from_str(OPERATOR_EVENT).unwrap();
        events::set_route(&mut event, route, parameters);
        events::set_operator(&mut event, name, &self.config.operator_roles_claim, &["admin"]);
        events::set_body(&mut event, &body.map(Value::to_string).unwrap_or_default());
        let reports = ReportDirectory::new(std::env::temp_dir().join("operator-reports"));
        let ledger = DynamoLedger::new(
            local::calls::dynamodb(DynamoLedger::client_from_env().unwrap(), "operator"),
            &self.config,
        );
        let api = funds::ops_api::OpsApi {
            ledger: &ledger,
            live: &self.store(),
            reports: &reports,
            roles_claim: &self.config.operator_roles_claim,
        };
        reply(Ok(funds::ops_api::handle_api(&api, self.clock.as_ref(), &request(&event)).await)).await
    }

    pub fn store(&self) -> RedisStore {
        RedisStore::new(&self.config)
    }

    /// Redis forgets everything of this test: its packets' keys and its settle index.
    pub async fn empty_redis(&self, ids: &[&str]) {
        let store = self.store();
        let mut conn = store.connection().await.expect("Redis is reachable");
        // Everything settle keeps besides the packets: a Redis that lost its data lost these too.
        let mut doomed: Vec<String> = (0..self.config.settle_shards)
            .flat_map(|shard| {
                [store.settle_index_key(shard), store.settle_dirty_key(shard), store.settle_retired_key(shard)]
            })
            .chain([store.sweep_key()])
            .collect();
        for id in ids {
            let keys = store.keys(&PacketId::parse(id).unwrap());
            doomed.extend([keys.packet, keys.pool, keys.grabs, keys.lookup]);
        }
        for key in doomed {
            let _: () = redis::cmd("DEL").arg(key).query_async(&mut conn).await.unwrap();
        }
    }

    pub fn settler(&self, crash_at: Option<FaultPoint>) -> DeployedSettler {
        Settler::new(Arc::new(self.store()), self.ledger.clone()).with_clock(self.clock.clone()).crashing_at(crash_at)
    }

    pub async fn settle(&self) -> SettleSummary {
        self.settle_run().await.expect("settle run")
    }

    /// One scheduled settle run (the handler with EventBridge's payload), as it ended.
    async fn settle_run(&self) -> Result<SettleSummary, settle::handler::SettleFailure> {
        let event = lambda_runtime::LambdaEvent::new(Value::Null, lambda_runtime::Context::default());
        settle::handle(&self.functions.settler, event).await
    }

    /// A settle run that may stop early on a store that answers too slowly (DynamoDB Local with
    /// the machine's cores busy): its summary, or `None` when it stopped so. What it did stays
    /// done and the next run continues, as in AWS; any other failure panics.
    pub async fn settle_or_stop(&self) -> Option<SettleSummary> {
        match self.settle_run().await {
            Ok(summary) => Some(summary),
            Err(settle::handler::SettleFailure::Stopped(red_packets::settle::SettleError::Unavailable {
                error,
                ..
            })) => {
                eprintln!("a settle run stopped early: {error}");
                None
            }
            Err(failure) => panic!("settle run: {failure:?}"),
        }
    }

    /// Settle runs until one ends without stopping early (at most `runs`): its summary.
    pub async fn settle_through(&self, runs: usize) -> SettleSummary {
        for _ in 1..runs {
            if let Some(summary) = self.settle_or_stop().await {
                return summary;
            }
        }
        self.settle().await
    }

    pub async fn send(&self, sender: &str, body: Value) -> String {
        let (status, packet) = self.try_send(sender, &body).await;
        assert_eq!(status, 201, "{packet}");
        packet["packet_id"].as_str().unwrap().to_owned()
    }

    pub async fn grab(&self, id: &str, user: &str) -> (u16, Value) {
        self.grab_with(id, user, None).await
    }

    /// A grab whose body is `body` (`{"passphrase": …}`), or none.
    pub async fn grab_with(&self, id: &str, user: &str, body: Option<&Value>) -> (u16, Value) {
        let mut event = event_by(GRAB_EVENT, user, Some(id));
        if let Some(body) = body {
            events::set_body(&mut event, &body.to_string());
        }
        reply(grab::handle(&self.functions.grab, request(&event)).await).await
    }

    /// A grab carrying `ticket` in its `Membership-Ticket` header, or none.
    pub async fn grab_with_ticket(&self, id: &str, user: &str, ticket: Option<&str>) -> (u16, Value) {
        let mut event = event_by(GRAB_EVENT, user, Some(id));
        if let Some(ticket) = ticket {
            event["headers"]["membership-ticket"] = Value::String(ticket.to_owned());
        }
        reply(grab::handle(&self.functions.grab, request(&event)).await).await
    }

    /// `POST /packets/{id}/cancel` by `user`.
    pub async fn cancel(&self, id: &str, user: &str) -> (u16, Value) {
        let event = event_by(CANCEL_EVENT, user, Some(id));
        reply(send::handle(&self.functions.send, request(&event)).await).await
    }

    /// `POST /packets` by `sender` with a fresh key: the status and body, whatever they are.
    pub async fn try_send(&self, sender: &str, body: &Value) -> (u16, Value) {
        self.send_keyed(sender, body, &PacketId::random().to_string()).await
    }

    pub async fn view(&self, id: &str, user: &str) -> (u16, Value) {
        let event = event_by(QUERY_EVENT, user, Some(id));
        reply(query::handle(&self.functions.query, request(&event)).await).await
    }

    pub async fn history(&self, user: &str, query_string: &str) -> (u16, Value) {
        self.query_page(HISTORY_EVENT, user, query_string).await
    }

    /// `GET /me/wallet?<query_string>` by `user`.
    pub async fn wallet(&self, user: &str, query_string: &str) -> (u16, Value) {
        self.query_page(WALLET_EVENT, user, query_string).await
    }

    /// A page of `template`'s route (history or wallet) by `user`, `?<query_string>`.
    async fn query_page(&self, template: &str, user: &str, query_string: &str) -> (u16, Value) {
        let mut event = event_by(template, user, None);
        event["rawQueryString"] = Value::String(query_string.to_owned());
        event.as_object_mut().unwrap().remove("queryStringParameters");
        reply(query::handle(&self.functions.query, request(&event)).await).await
    }

    /// A top-up of `who`'s wallet as the payments system makes it (reference `pay-<who>`).
    pub async fn top_up(&self, who: &str, amount_cents: red_packets::domain::Cents) {
        use red_packets::ports::Wallets;
        use red_packets::Clock;
        let user = red_packets::domain::UserId::from_claim(who).unwrap();
        let topup = red_packets::domain::TopUp { user, amount_cents, reference: format!("pay-{who}") };
        assert!(self.ledger.top_up(&topup, self.clock.now_ms()).await.expect("top-up").applied);
    }

    /// `who`'s balance, as `GET /me/wallet` answers it.
    pub async fn balance(&self, who: &str) -> u64 {
        let (status, wallet) = self.wallet(who, "").await;
        assert_eq!(status, 200, "{wallet}");
        wallet["balance_cents"].as_u64().unwrap()
    }

    pub async fn recorded(&self, id: &str) -> LedgerPacket {
        self.ledger.ledger_packet(&PacketId::parse(id).unwrap()).await.unwrap().expect("the packet is in the ledger")
    }

    /// Invariants 1 and 3 for one packet, once settled: the grab items are exactly the
    /// acknowledged grabs (user and amount), and grabs + refund == total, grabs <= count.
    pub async fn assert_settled_books(&self, id: &str, acknowledged: &HashMap<String, u64>) -> LedgerPacket {
        let recorded = self.recorded(id).await;
        assert_ne!(recorded.status, PacketStatus::Open, "{id} is finalised");
        let items: HashMap<String, u64> =
            recorded.grabs.iter().map(|grab| (grab.user.to_string(), grab.amount_cents)).collect();
        assert_eq!(items.len(), recorded.grabs.len(), "{id}: no user has two grab items");
        assert_eq!(&items, acknowledged, "{id}: every acknowledged grab has exactly one item with its amount");
        let grabbed: u64 = items.values().sum();
        let refund = recorded.refund_item_cents.unwrap_or(0);
        assert_eq!(grabbed + refund, recorded.packet.terms.total_cents, "{id}: grabs + refund == total");
        assert!(items.len() <= recorded.packet.terms.count as usize);
        assert_eq!(recorded.refund_cents, Some(refund), "{id}: the packet records the refund it got");
        recorded
    }
}

pub fn request(event: &Value) -> Request {
    events::to_request(event).unwrap()
}

pub async fn reply(response: Result<lambda_http::Response<lambda_http::Body>, lambda_http::Error>) -> (u16, Value) {
    let response = response.unwrap();
    (response.status().as_u16(), serde_json::from_slice(response.body().as_ref()).unwrap())
}

/// The event `template` (one of `events/`) by `user`, on packet `id` when given.
fn event_by(template: &str, user: &str, id: Option<&str>) -> Value {
    let mut event: Value = serde_json::from_str(template).unwrap();
    if let Some(id) = id {
        events::set_packet_id(&mut event, id);
    }
    events::set_caller(&mut event, Some(user));
    event
}
