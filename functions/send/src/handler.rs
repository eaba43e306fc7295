//! `POST /packets`: validate, split, record the packet in DynamoDB (counted against the
//! sender's daily limits in the same transaction), load it into Redis, 201.
//!
//! Every send carries an `Idempotency-Key` (400 without one): the same sender, key and body get the same packet back, as it is
//! now, and a retry after a failed Redis load finishes that load: never a second packet, never
//! counted twice. A replay reloads the packet into Redis only while the ledger holds it open,
//! and then with the ledger's grabs: a settled packet is never reopened, a grabbed share never
//! handed out again. A passphrase is digested under the deployment's key as the body is
//! validated: the clear phrase is stored, logged and fingerprinted nowhere.

use std::sync::Arc;

use lambda_http::http::header::LOCATION;
use lambda_http::http::{HeaderValue, StatusCode};
use lambda_http::{Body, Error, Request, Response};
use red_packets::domain::risk::HeldAction;
use red_packets::domain::validate::parse_send_request;
use red_packets::domain::{Limits, Packet, PacketId, Seed, SendLimits};
use red_packets::holds::HoldCheck;
use red_packets::http::{action, caller, idempotency_key, json_body, money_response, respond};
use red_packets::keys::Keys;
use red_packets::packets::{current_view, reload_from_ledger};
use red_packets::ports::{Holds, IdempotencyClaim, Ledger, LiveStore, Recorded, Withdrawals};
use red_packets::routes::Action;
use red_packets::{ApiError, Clock, Config, SystemClock};

/// What the send and cancel handlers need: the ledger, the live store, the limits, the
/// passphrase key, the holds in force and a clock.
pub struct SendService<L, S> {
    pub(crate) ledger: L,
    pub(crate) store: S,
    limits: Limits,
    /// The limits as `GET /me/limits` answers them (the daily ones are the ledger's to enforce).
    pub(crate) send_limits: SendLimits,
    keys: Arc<Keys>,
    pub(crate) holds: HoldCheck,
    pub(crate) clock: Arc<dyn Clock>,
}

impl<L: Ledger, S: LiveStore> SendService<L, S> {
    /// A service with `config`'s limits and the environment's passphrase key, and the system clock.
    pub fn new(ledger: L, store: S, config: &Config) -> Self {
        Self::with_clock(ledger, store, config, Arc::new(SystemClock))
    }

    /// A service reading time from `clock`.
    pub fn with_clock(ledger: L, store: S, config: &Config, clock: Arc<dyn Clock>) -> Self {
        let (limits, keys, holds) = (config.limits, Arc::new(Keys::fixed(config)), HoldCheck::new(config.hold_refresh));
        let send_limits = SendLimits::of(&config.limits, &config.daily);
        SendService { ledger, store, limits, send_limits, keys, holds, clock }
    }

    /// The same service with `keys` (read from their secrets at run time, in AWS).
    pub fn with_keys(mut self, keys: Arc<Keys>) -> Self {
        self.keys = keys;
        self
    }
}

/// The Lambda handler of its four routes ([`red_packets::routes`]: send, cancel, withdraw, limits), by
/// the event's route key; another key is a 404. Every outcome, errors included, is an HTTP
/// response; every send is counted (`Sends` by outcome: `created`, `replayed` or the error's
/// code; `SentCents`).
pub async fn handle<L: Ledger + Withdrawals + Holds, S: LiveStore>(
    service: &SendService<L, S>,
    request: Request,
) -> Result<Response<Body>, Error> {
    let result = match action(&request) {
        Ok(Action::Cancel) => crate::cancel::cancel(service, &request).await,
        Ok(Action::Withdraw) => crate::withdraw::withdraw(service, &request).await,
        Ok(Action::Limits) => crate::limits::limits(service, &request),
        Ok(Action::Send) => {
            let sent = send(service, &request).await;
            if let Err(error) = &sent {
                metrics::counter!("Sends", "outcome" => error.code()).increment(1);
            }
            sent
        }
        Ok(_) | Err(_) => Err(ApiError::NotFound),
    };
    Ok(respond(result))
}

async fn send<L: Ledger + Holds, S: LiveStore>(
    service: &SendService<L, S>,
    request: &Request,
) -> Result<Response<Body>, ApiError> {
    let sender = caller(request)?;
    let key = idempotency_key(request)?;
    let now_ms = service.clock.now_ms();
    if service.holds.stops(&service.ledger, &sender, HeldAction::Send, now_ms).await.is_some() {
        return Err(ApiError::AccountHeld { action: "sending" });
    }
    // The key in force (read from its secret at most once a refresh period), for a phrase the
    // body may hold in any spelling JSON allows.
    let passphrase_key = service.keys.passphrase_key().await?;
    let spec = parse_send_request(json_body(request)?, &service.limits, &passphrase_key, now_ms)?;
    let claim = IdempotencyClaim { key, request_hash: spec.fingerprint() };

    let fresh = Packet::new(PacketId::random(), sender.clone(), &spec, Seed::random(), now_ms)
        .under(service.limits.split_version);
    let view = match service.ledger.record_packet(&fresh, Some(&claim)).await? {
        Recorded::New => {
            // The ledger holds the packet and its sender's debit: the send is done, and a 503
            // now would invite a retry that pays again. Its first grab loads it into Redis.
            if let Err(error) = service.store.load(&fresh, &fresh.shares()).await {
                tracing::warn!(packet_id = %fresh.id, %error, "packet recorded but not loaded into Redis; its first grab loads it");
            }
            metrics::counter!("Sends", "outcome" => "created").increment(1);
            metrics::counter!("SentCents").increment(fresh.terms.total_cents);
            fresh.fresh_view(&sender)
        }
        Recorded::Replay(original) => {
            tracing::info!(packet_id = %original.id, "idempotent replay of a send");
            metrics::counter!("Sends", "outcome" => "replayed").increment(1);
            let recorded =
                service.ledger.ledger_packet(&original.id).await?.ok_or_else(|| {
                    ApiError::Internal(format!("replayed packet {} has no ledger record", original.id))
                })?;
            reload_from_ledger(&service.store, &recorded).await?;
            current_view(&service.store, &service.ledger, &original.id, &sender, now_ms)
                .await?
                .unwrap_or_else(|| recorded.view(&sender, now_ms))
                .page(1)
        }
    };

    let mut response = money_response(StatusCode::CREATED, &view, service.ledger.currency());
    if let Ok(location) = HeaderValue::from_str(&format!("/packets/{}", view.shared.packet_id)) {
        response.headers_mut().insert(LOCATION, location);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory stores (no service needed); the integration suites in
    //! `local/tests` run it on Redis and DynamoDB Local.

    use super::*;
    use red_packets::adapters::RedisStore;
    use red_packets::domain::wallet::TopUp;
    use red_packets::domain::UserId;
    use red_packets::ports::Wallets;
    use red_packets::Config;
    use red_packets_testkit::events;
    use red_packets_testkit::memory::{MemoryLedger, MemoryStore};
    use serde_json::Value;

    const SEND_EVENT: &str = include_str!("../../../events/send.json");

    /// The defaults with `settings` on top (`FUNDS=none` unless they say otherwise).
    fn config(settings: &[(&str, &str)]) -> Config {
        let setting = |name: &str| settings.iter().find(|(key, _)| *key == name).map(|(_, value)| value.to_string());
        Config::from_lookup(|name| setting(name).or_else(|| (name == "FUNDS").then(|| "none".to_owned()))).unwrap()
    }

    fn service(config: &Config) -> SendService<MemoryLedger, MemoryStore> {
        SendService::new(MemoryLedger::new(config), MemoryStore::new(config.settle_shards), config)
    }

    fn send_event(edit: impl FnOnce(&mut Value)) -> Request {
        let mut event: Value = serde_json::from_str(SEND_EVENT).unwrap();
        events::set_header(&mut event, "Idempotency-Key", Some(&PacketId::random().to_string()));
        edit(&mut event);
        events::to_request(&event).unwrap()
    }

    async fn call<L: Ledger + Withdrawals + Holds, S: LiveStore>(
        service: &SendService<L, S>,
        request: Request,
    ) -> (u16, Value) {
        let response = handle(service, request).await.unwrap();
        (response.status().as_u16(), serde_json::from_slice(response.body().as_ref()).unwrap())
    }

    const WITHDRAW_EVENT: &str = include_str!("../../../events/withdraw.json");

    /// The sample withdrawal on the in-memory ledger: 402 while the balance is short, then 201,
    /// a retry 200 with the same withdrawal, the key with another body 422.
    #[tokio::test]
    async fn the_sample_withdrawal_is_debited_once_and_a_short_balance_is_402() {
        let service = service(&config(&[("FUNDS", "wallet")]));
        let event: Value = serde_json::from_str(WITHDRAW_EVENT).unwrap();
        let (status, short) = call(&service, events::to_request(&event).unwrap()).await;
        assert_eq!((status, short["error"]["code"].as_str()), (402, Some("insufficient_funds")), "{short}");
        let alice = UserId::from_claim("alice").unwrap();
        let topup = TopUp { user: alice.clone(), amount_cents: 5_000, reference: "pay-w".into() };
        service.ledger.top_up(&topup, 0).await.unwrap();
        let (status, first) = call(&service, events::to_request(&event).unwrap()).await;
        assert_eq!(
            (status, first["status"].as_str(), first["balance_cents"].as_u64()),
            (201, Some("pending"), Some(3_000))
        );
        let (status, again) = call(&service, events::to_request(&event).unwrap()).await;
        assert_eq!(
            (status, &again["withdrawal_id"], again["balance_cents"].as_u64()),
            (200, &first["withdrawal_id"], Some(3_000))
        );
        let mut other = event.clone();
        events::set_body(&mut other, r#"{"amount_cents":2001,"destination":"card-7731"}"#);
        let (status, reused) = call(&service, events::to_request(&other).unwrap()).await;
        assert_eq!((status, reused["error"]["code"].as_str()), (422, Some("idempotency_key_reused")));
        events::set_body(&mut other, r#"{"amount_cents":5,"destination":"card 1"}"#);
        let (status, bad) = call(&service, events::to_request(&other).unwrap()).await;
        assert_eq!((status, bad["error"]["field"].as_str()), (400, Some("destination")), "{bad}");
    }

    #[tokio::test]
    async fn the_sample_event_creates_a_packet() {
        let service = service(&config(&[]));
        let (status, body) = call(&service, send_event(|_| {})).await;
        assert_eq!(status, 201, "{body}");
        assert_eq!(body["sender"], "alice");
        assert_eq!(body["total_cents"], 10_000);
        assert_eq!(body["remaining_count"], 10);
        assert_eq!(body["status"], "open");
        assert_eq!(body["greeting"], "恭喜发财");
        assert_eq!(body["grabs"], serde_json::json!([]));
        let id = PacketId::parse(body["packet_id"].as_str().unwrap()).unwrap();
        assert!(service.store.snapshot(&id).await.unwrap().is_some(), "loaded into the live store");
        assert!(service.ledger.ledger_packet(&id).await.unwrap().is_some(), "recorded in the ledger");
    }

    #[tokio::test]
    async fn the_same_key_and_body_replay_and_another_body_is_422() {
        let service = service(&config(&[]));
        let key = PacketId::random().to_string();
        let with_key = |body: Option<&'static str>| {
            let key = key.clone();
            send_event(move |event| {
                events::set_header(event, "Idempotency-Key", Some(&key));
                if let Some(body) = body {
                    events::set_body(event, body);
                }
            })
        };
        let (first_status, first) = call(&service, with_key(None)).await;
        let (second_status, second) = call(&service, with_key(None)).await;
        assert_eq!((first_status, second_status), (201, 201));
        assert_eq!(first["packet_id"], second["packet_id"]);
        let (status, body) = call(&service, with_key(Some(r#"{"total_cents":500,"count":5}"#))).await;
        assert_eq!((status, body["error"]["code"].as_str()), (422, Some("idempotency_key_reused")));
    }

    #[tokio::test]
    async fn bad_input_is_a_4xx_naming_the_field() {
        let service = service(&config(&[]));
        let (status, body) =
            call(&service, send_event(|e| events::set_body(e, r#"{"total_cents":5,"count":6}"#))).await;
        assert_eq!((status, body["error"]["field"].as_str()), (400, Some("count")));
        let huge = format!(r#"{{"total_cents":100,"count":1,"greeting":"{}"}}"#, "x".repeat(17 * 1024));
        let (status, body) = call(&service, send_event(|e| events::set_body(e, &huge))).await;
        assert_eq!((status, body["error"]["code"].as_str()), (413, Some("payload_too_large")));
        let (status, _) =
            call(&service, send_event(|e| events::set_header(e, "content-type", Some("text/plain")))).await;
        assert_eq!(status, 400);
        let (status, body) =
            call(&service, send_event(|e| events::set_header(e, "Idempotency-Key", Some("no spaces")))).await;
        assert_eq!((status, body["error"]["field"].as_str()), (400, Some("Idempotency-Key")));
        let (status, body) = call(&service, send_event(|e| events::set_header(e, "Idempotency-Key", None))).await;
        assert_eq!(
            (status, body["error"]["code"].as_str(), body["error"]["field"].as_str()),
            (400, Some("invalid_request"), Some("Idempotency-Key")),
            "a send without a key could pay twice on a retry: {body}"
        );
        let (status, _) = call(&service, send_event(|e| events::set_caller(e, None))).await;
        assert_eq!(status, 401);
    }

    #[tokio::test]
    async fn the_daily_limit_is_429_naming_it_and_a_replay_is_not_counted() {
        let service = service(&config(&[("MAX_SENDS_PER_DAY", "2")]));
        let key = PacketId::random().to_string();
        let keyed = || send_event(|event| events::set_header(event, "Idempotency-Key", Some(&key)));
        assert_eq!(call(&service, keyed()).await.0, 201);
        assert_eq!(call(&service, keyed()).await.0, 201, "a replay, not a second send");
        assert_eq!(call(&service, send_event(|_| {})).await.0, 201);
        let (status, body) = call(&service, send_event(|_| {})).await;
        assert_eq!((status, body["error"]["field"].as_str()), (429, Some("max_sends_per_day")), "{body}");
    }

    #[tokio::test]
    async fn with_the_wallet_a_short_balance_is_402_and_a_funded_send_debits_it() {
        let service = service(&config(&[("FUNDS", "wallet")]));
        let (status, body) = call(&service, send_event(|_| {})).await;
        assert_eq!((status, body["error"]["code"].as_str()), (402, Some("insufficient_funds")));
        let alice = UserId::from_claim("alice").unwrap();
        let topup = TopUp { user: alice.clone(), amount_cents: 15_000, reference: "pay-1".into() };
        service.ledger.top_up(&topup, 0).await.unwrap();
        assert_eq!(call(&service, send_event(|_| {})).await.0, 201);
        assert_eq!(service.ledger.balance(&alice), 5_000, "the packet's total left the balance");
    }

    #[tokio::test]
    async fn an_unreachable_ledger_is_503_with_retry_after() {
        let service = service(&config(&[]));
        service.ledger.set_unreachable(true);
        let response = handle(&service, send_event(|_| {})).await.unwrap();
        assert_eq!(response.status(), 503);
        assert!(red_packets::http::RETRY_AFTER_SECONDS
            .contains(&response.headers()["retry-after"].to_str().unwrap().parse().unwrap()));
    }

    #[tokio::test]
    async fn a_failed_live_load_is_still_201_and_a_retry_with_the_key_loads_the_same_packet() {
        let config = config(&[]);
        let mut broken = config.clone();
        broken.redis.url = "redis://127.0.0.1:1".into();
        broken.redis.timeout = std::time::Duration::from_millis(200);
        let ledger = MemoryLedger::new(&config);
        let key = PacketId::random().to_string();
        let request = || send_event(|event| events::set_header(event, "Idempotency-Key", Some(&key)));

        // Recorded and paid in the ledger: done, whatever the live store said (a 503 would invite
        // a retry that pays again); its first grab, or a replay, loads it.
        let unreachable_live = SendService::new(ledger.clone(), RedisStore::new(&broken), &config);
        let (status, body) = call(&unreachable_live, request()).await;
        assert_eq!(status, 201, "{body}");
        let store = MemoryStore::new(config.settle_shards);
        let (status, again) = call(&SendService::new(ledger, store, &config), request()).await;
        assert_eq!((status, &again["packet_id"]), (201, &body["packet_id"]), "never a second packet");
    }
}
