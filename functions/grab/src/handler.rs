//! `POST /packets/{packet_id}/grab`: one atomic Lua call decides the grab.
//!
//! 200 with the share (or, for a repeat, the share this user already has), 403 not a
//! recipient or a wrong passphrase, 429 after too many wrong ones, 409 sold out, 410 expired
//! or cancelled, 404 unknown packet, 401 without identity, 503 when Redis cannot be reached.
//! The body may carry `{"passphrase": "…"}`: it is digested under the deployment's key here
//! and only the digest goes to Redis.
//! A packet Redis no longer holds (settled and retired, or lost) is answered from the ledger by
//! the store itself, one caller per id at a time, so a flood of grabs on unknown ids costs one
//! DynamoDB read per id per minute, however many arrive at once.

use std::sync::Arc;

use lambda_http::http::StatusCode;
use lambda_http::{Body, Error, Request, Response};
use red_packets::clock::rfc3339;
use red_packets::domain::grab::GrabAttempt;
use red_packets::domain::validate::parse_grab_request;
use red_packets::domain::{Cents, GrabOutcome, PacketId, PassphraseKey, UserId};
use red_packets::http::{caller, json_response, optional_json_body, packet_id, respond};
use red_packets::ports::{Ledger, LiveStore};
use red_packets::{ApiError, Clock, SystemClock};
use serde::{Deserialize, Serialize};

/// What the grab handler needs: the live store, the ledger (read only), the passphrase key and
/// a clock.
pub struct GrabService<S, L> {
    store: S,
    ledger: L,
    passphrase_key: PassphraseKey,
    clock: Arc<dyn Clock>,
}

impl<S: LiveStore, L: Ledger> GrabService<S, L> {
    /// A service digesting passphrases under `passphrase_key`, with the system clock.
    pub fn new(store: S, ledger: L, passphrase_key: PassphraseKey) -> Self {
        Self::with_clock(store, ledger, passphrase_key, Arc::new(SystemClock))
    }

    /// A service reading time from `clock`.
    pub fn with_clock(store: S, ledger: L, passphrase_key: PassphraseKey, clock: Arc<dyn Clock>) -> Self {
        GrabService { store, ledger, passphrase_key, clock }
    }
}

/// The body of a 200.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrabResponse {
    /// The packet.
    pub packet_id: PacketId,
    /// The caller.
    pub user: UserId,
    /// The caller's share.
    pub amount_cents: Cents,
    /// When the caller got it.
    pub grabbed_at: String,
    /// Shares left.
    pub remaining_count: u32,
    /// True when this answer repeats an earlier grab.
    pub already_grabbed: bool,
}

/// The Lambda handler: every outcome, errors included, is an HTTP response.
pub async fn handle<S: LiveStore, L: Ledger>(
    service: &GrabService<S, L>,
    request: Request,
) -> Result<Response<Body>, Error> {
    Ok(respond(grab(service, &request).await))
}

async fn grab<S: LiveStore, L: Ledger>(
    service: &GrabService<S, L>,
    request: &Request,
) -> Result<Response<Body>, ApiError> {
    let user = caller(request)?;
    let packet_id = packet_id(request)?;
    let passphrase = match optional_json_body(request)? {
        Some(body) => parse_grab_request(body)?,
        None => None,
    };
    let attempt =
        GrabAttempt { user: user.clone(), passphrase: passphrase.map(|phrase| service.passphrase_key.digest(&phrase)) };
    let outcome = service.store.grab(&packet_id, &attempt, service.clock.as_ref(), &service.ledger).await?;
    let (amount_cents, grabbed_at_ms, remaining_count, already_grabbed) = match outcome {
        GrabOutcome::Grabbed { amount_cents, grabbed_at_ms, remaining_count } => {
            (amount_cents, grabbed_at_ms, remaining_count, false)
        }
        GrabOutcome::Already { amount_cents, grabbed_at_ms, remaining_count } => {
            (amount_cents, grabbed_at_ms, remaining_count, true)
        }
        GrabOutcome::SoldOut => return Err(ApiError::SoldOut),
        GrabOutcome::Expired => return Err(ApiError::Expired),
        GrabOutcome::Cancelled => return Err(ApiError::Cancelled),
        GrabOutcome::NotEligible => return Err(ApiError::NotEligible),
        GrabOutcome::WrongPassphrase => return Err(ApiError::WrongPassphrase),
        GrabOutcome::TooManyAttempts => return Err(ApiError::TooManyAttempts),
        GrabOutcome::NotFound => return Err(ApiError::NotFound),
    };
    let body = GrabResponse {
        packet_id,
        user,
        amount_cents,
        grabbed_at: rfc3339(grabbed_at_ms),
        remaining_count,
        already_grabbed,
    };
    Ok(json_response(StatusCode::OK, &body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use red_packets::adapters::{DynamoLedger, RedisStore};
    use red_packets::clock::ManualClock;
    use red_packets::domain::{Packet, PacketKind, PacketSpec, Seed, SplitRule};
    use red_packets::events;
    use red_packets::Config;
    use serde_json::Value;

    const GRAB_EVENT: &str = include_str!("../../../events/grab.json");

    fn grab_event(packet_id: &str, sub: Option<&str>) -> Request {
        let mut event: Value = serde_json::from_str(GRAB_EVENT).unwrap();
        events::set_packet_id(&mut event, packet_id);
        events::set_caller(&mut event, sub);
        events::to_request(&event).unwrap()
    }

    async fn ledger(config: &Config) -> DynamoLedger {
        let ledger = DynamoLedger::new(DynamoLedger::client_from_env().expect("a DynamoDB client"), config);
        ledger.ensure_table().await.expect("DynamoDB Local (make test) is reachable");
        ledger
    }

    async fn service(config: &Config) -> GrabService<RedisStore, DynamoLedger> {
        GrabService::new(RedisStore::new(config), ledger(config).await, config.passphrase_key.clone())
    }

    async fn call(service: &GrabService<RedisStore, DynamoLedger>, request: Request) -> (u16, Value) {
        let response = handle(service, request).await.unwrap();
        (response.status().as_u16(), serde_json::from_slice(response.body().as_ref()).unwrap())
    }

    /// A packet of 3 lucky shares (600 cents), recorded in the ledger and loaded into Redis, as
    /// send does it (settle reports a packet Redis holds and the ledger does not).
    async fn loaded_packet(store: &RedisStore, ledger: &DynamoLedger, clock: &ManualClock) -> Packet {
        let spec = PacketSpec {
            total_cents: 600,
            count: 3,
            kind: PacketKind::Lucky,
            split: Some(SplitRule::DoubleAverage),
            greeting: None,
            expires_in_seconds: 60,
            recipients: None,
            passphrase: None,
        };
        let packet = Packet::new(
            PacketId::random(),
            UserId::from_claim("alice").unwrap(),
            &spec,
            Seed::random(),
            clock.now_ms(),
        );
        ledger.record_packet(&packet, None).await.expect("DynamoDB Local (make test) is reachable");
        store.load(&packet, &packet.shares()).await.expect("the test Redis (make test) is reachable");
        packet
    }

    #[tokio::test]
    async fn the_sample_event_without_identity_is_401() {
        let service = service(&Config::from_env().unwrap()).await;
        let (status, body) = call(&service, grab_event("0123456789abcdef0123456789abcdef", None)).await;
        assert_eq!(status, 401);
        assert_eq!(body["error"]["code"], "unauthorized");
    }

    #[tokio::test]
    async fn malformed_and_unknown_ids_are_404() {
        let service = service(&Config::from_env().unwrap()).await;
        for id in ["..%2F..%2Fetc", "not-an-id", &PacketId::random().to_string()] {
            let (status, body) = call(&service, grab_event(id, Some("bob"))).await;
            assert_eq!((status, body["error"]["code"].as_str()), (404, Some("not_found")), "{id}");
        }
    }

    #[tokio::test]
    async fn grab_repeat_sold_out_and_expired() {
        let clock = Arc::new(ManualClock::starting_now());
        let config = Config::from_env().unwrap();
        let store = RedisStore::new(&config);
        let ledger = ledger(&config).await;
        let packet = loaded_packet(&store, &ledger, &clock).await;
        let service = GrabService::with_clock(store, ledger, config.passphrase_key.clone(), clock.clone());
        let id = packet.id.to_string();

        let (status, first) = call(&service, grab_event(&id, Some("bob"))).await;
        assert_eq!(status, 200);
        assert_eq!(first["already_grabbed"], false);
        assert_eq!(first["remaining_count"], 2);

        let (status, again) = call(&service, grab_event(&id, Some("bob"))).await;
        assert_eq!(status, 200);
        assert_eq!(again["already_grabbed"], true);
        assert_eq!(again["amount_cents"], first["amount_cents"]);
        assert_eq!(again["grabbed_at"], first["grabbed_at"]);

        assert_eq!(call(&service, grab_event(&id, Some("carol"))).await.0, 200);
        clock.advance(60_000);
        let (status, body) = call(&service, grab_event(&id, Some("dave"))).await;
        assert_eq!((status, body["error"]["code"].as_str()), (410, Some("expired")));
        let (status, body) = call(&service, grab_event(&id, Some("bob"))).await;
        assert_eq!(
            (status, body["already_grabbed"].as_bool()),
            (200, Some(true)),
            "a repeat is answered after expiry too"
        );
    }

    #[tokio::test]
    async fn unreachable_redis_is_503_with_retry_after() {
        let mut config = Config::from_env().unwrap();
        config.redis.url = "redis://127.0.0.1:1".into();
        config.redis.timeout = std::time::Duration::from_millis(200);
        let service = GrabService::new(RedisStore::new(&config), ledger(&config).await, config.passphrase_key.clone());
        let response = handle(&service, grab_event(&PacketId::random().to_string(), Some("bob"))).await.unwrap();
        assert_eq!(response.status(), 503);
        assert_eq!(response.headers()["retry-after"], "1");
    }
}
