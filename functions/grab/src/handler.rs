//! `POST /packets/{packet_id}/grab`: one atomic Lua call decides the grab.
//!
//! 200 with the share (or, for a repeat, the share this user already has), 403 not a
//! recipient or a wrong passphrase, 429 after too many wrong ones, 409 sold out, 410 expired
//! or cancelled, 404 unknown packet, 401 without identity, 503 when Redis cannot be reached.
//! The body may carry `{"passphrase": "…"}`: it is digested under the deployment's key here
//! and only the digest goes to Redis. A `Membership-Ticket` header is verified here, with no
//! store read (`domain::membership`): only the chat it admits the caller to goes to Redis,
//! where a `members_only` packet compares it with its own chat.
//! A packet Redis no longer holds (settled and retired, or lost) is answered from the ledger by
//! `packets::grab`, one caller per id at a time, so a flood of grabs on unknown ids costs one
//! DynamoDB read per id per minute, however many arrive at once.

use std::sync::Arc;

use lambda_http::http::StatusCode;
use lambda_http::{Body, Error, Request, Response};
use red_packets::clock::rfc3339;
use red_packets::domain::grab::GrabAttempt;
use red_packets::domain::membership::TicketRefusal;
use red_packets::domain::risk::HeldAction;
use red_packets::domain::validate::parse_grab_request;
use red_packets::domain::{Cents, ChatId, PacketId, UserId};
use red_packets::error::GrabbedShare;
use red_packets::holds::HoldCheck;
use red_packets::http::{caller, money_response, optional_json_body, packet_id, respond};
use red_packets::keys::Keys;
use red_packets::packets;
use red_packets::ports::{Holds, Ledger, LiveStore};
use red_packets::Config;
use red_packets::{ApiError, Clock, SystemClock};
use serde::{Deserialize, Serialize};

/// What the grab handler needs: the live store, the ledger (read only), the passphrase and
/// membership keys, the holds in force and a clock.
pub struct GrabService<S, L> {
    store: S,
    ledger: L,
    keys: Arc<Keys>,
    holds: Option<HoldCheck>,
    clock: Arc<dyn Clock>,
}

impl<S: LiveStore, L: Ledger + Holds> GrabService<S, L> {
    /// A service with `config`'s holds refresh and the environment's keys, and the system clock.
    pub fn new(store: S, ledger: L, config: &Config) -> Self {
        Self::with_clock(store, ledger, config, Arc::new(SystemClock))
    }

    /// A service reading time from `clock`.
    pub fn with_clock(store: S, ledger: L, config: &Config, clock: Arc<dyn Clock>) -> Self {
        let (keys, holds) = (Arc::new(Keys::fixed(config)), Some(HoldCheck::new(config.hold_refresh)));
        GrabService { store, ledger, keys, holds, clock }
    }

    /// The same service with `keys` (read from their secrets at run time, in AWS).
    pub fn with_keys(mut self, keys: Arc<Keys>) -> Self {
        self.keys = keys;
        self
    }

    /// The same service without the hold check: the grab path as it was before the risk
    /// controls (the controls bench measures what the check adds against this).
    pub fn without_hold_check(mut self) -> Self {
        self.holds = None;
        self
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

/// The Lambda handler: every outcome, errors included, is an HTTP response, and is counted
/// (`Grabs` by outcome: `grabbed`, `already_grabbed` or the error's code; `GrabbedCents`).
pub async fn handle<S: LiveStore, L: Ledger + Holds>(
    service: &GrabService<S, L>,
    request: Request,
) -> Result<Response<Body>, Error> {
    let result = grab(service, &request).await;
    if let Err(error) = &result {
        metrics::counter!("Grabs", "outcome" => error.code()).increment(1);
    }
    Ok(respond(result))
}

async fn grab<S: LiveStore, L: Ledger + Holds>(
    service: &GrabService<S, L>,
    request: &Request,
) -> Result<Response<Body>, ApiError> {
    let user = caller(request)?;
    let packet_id = packet_id(request)?;
    let now_ms = service.clock.now_ms();
    if let Some(check) = &service.holds {
        if check.stops(&service.ledger, &user, HeldAction::Grab, now_ms).await.is_some() {
            return Err(ApiError::AccountHeld { action: "grabbing" });
        }
    }
    let passphrase = match optional_json_body(request)? {
        Some(body) => parse_grab_request(body)?,
        None => None,
    };
    let passphrase = match passphrase {
        Some(phrase) => Some(service.keys.passphrase_key().await?.digest(&phrase)),
        None => None,
    };
    let membership = membership(service, request, &user, now_ms).await?;
    let attempt = GrabAttempt { user: user.clone(), passphrase, member_of: membership.as_ref().ok().cloned() };
    let outcome = packets::grab(&service.store, &service.ledger, &packet_id, &attempt, service.clock.as_ref()).await?;
    let not_a_member = match membership {
        Ok(_) => "the membership ticket is for another chat",
        Err(None) => "the grab carried no Membership-Ticket",
        Err(Some(refusal)) => refusal.reason(),
    };
    let share = ApiError::from_grab(outcome, service.clock.now_ms(), not_a_member)?;
    let GrabbedShare { amount_cents, grabbed_at_ms, remaining_count, already: already_grabbed } = share;
    if already_grabbed {
        metrics::counter!("Grabs", "outcome" => "already_grabbed").increment(1);
    } else {
        metrics::counter!("Grabs", "outcome" => "grabbed").increment(1);
        metrics::counter!("GrabbedCents").increment(amount_cents);
    }
    let body = GrabResponse {
        packet_id,
        user,
        amount_cents,
        grabbed_at: rfc3339(grabbed_at_ms),
        remaining_count,
        already_grabbed,
    };
    Ok(money_response(StatusCode::OK, &body, service.ledger.currency()))
}

/// The chat the request's `Membership-Ticket` admits the caller to at `now_ms`; `Err(None)`
/// when it carries none, `Err(Some(why))` when the ticket admits nobody. The keys are read only
/// for a request that carries a ticket (503 when they cannot be).
async fn membership<S, L>(
    service: &GrabService<S, L>,
    request: &Request,
    user: &UserId,
    now_ms: i64,
) -> Result<Result<ChatId, Option<TicketRefusal>>, ApiError> {
    let Some(ticket) = request.headers().get("membership-ticket") else { return Ok(Err(None)) };
    let Ok(ticket) = ticket.to_str() else { return Ok(Err(Some(TicketRefusal::Malformed))) };
    Ok(service.keys.membership_keys().await?.verify(ticket, user, now_ms).map_err(Some))
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory stores (no service needed); the integration suites in
    //! `local/tests` run it on Redis and DynamoDB Local.

    use super::*;
    use red_packets::adapters::RedisStore;
    use red_packets::domain::{Packet, PacketKind, PacketSpec, PacketTerms, Seed};
    use red_packets::Config;
    use red_packets_testkit::events;
    use red_packets_testkit::memory::{MemoryLedger, MemoryStore};
    use red_packets_testkit::ManualClock;
    use serde_json::Value;

    const GRAB_EVENT: &str = include_str!("../../../events/grab.json");

    fn grab_event(packet_id: &str, sub: Option<&str>) -> Request {
        let mut event: Value = serde_json::from_str(GRAB_EVENT).unwrap();
        events::set_packet_id(&mut event, packet_id);
        events::set_caller(&mut event, sub);
        events::to_request(&event).unwrap()
    }

    /// The defaults, without wallets: these tests are about grabs, not money.
    fn config() -> Config {
        Config::from_lookup(|name| (name == "FUNDS").then(|| "none".to_owned())).unwrap()
    }

    fn service(clock: Arc<ManualClock>) -> GrabService<MemoryStore, MemoryLedger> {
        let config = config();
        let store = MemoryStore::new(config.settle_shards);
        GrabService::with_clock(store, MemoryLedger::new(&config), &config, clock)
    }

    async fn call<S: LiveStore, L: Ledger + Holds>(service: &GrabService<S, L>, request: Request) -> (u16, Value) {
        let response = handle(service, request).await.unwrap();
        (response.status().as_u16(), serde_json::from_slice(response.body().as_ref()).unwrap())
    }

    /// A packet of 3 lucky shares (600 cents), recorded in the ledger and, unless `ledger_only`
    /// (a send whose load failed, or a live store that lost it), loaded into the live store.
    async fn sent_packet(service: &GrabService<MemoryStore, MemoryLedger>, ledger_only: bool) -> Packet {
        let spec = PacketSpec::open_to_all(PacketTerms::new(PacketKind::Lucky, 600, 3), 60);
        let alice = UserId::from_claim("alice").unwrap();
        let packet = Packet::new(PacketId::random(), alice, &spec, Seed::random(), service.clock.now_ms());
        service.ledger.record_packet(&packet, None).await.unwrap();
        if !ledger_only {
            service.store.load(&packet, &packet.shares()).await.unwrap();
        }
        packet
    }

    #[tokio::test]
    async fn the_sample_event_without_identity_is_401() {
        let service = service(Arc::new(ManualClock::starting_now()));
        let (status, body) = call(&service, grab_event("0123456789abcdef0123456789abcdef", None)).await;
        assert_eq!(status, 401);
        assert_eq!(body["error"]["code"], "unauthorized");
    }

    #[tokio::test]
    async fn malformed_and_unknown_ids_are_404() {
        let service = service(Arc::new(ManualClock::starting_now()));
        for id in ["..%2F..%2Fetc", "not-an-id", &PacketId::random().to_string()] {
            let (status, body) = call(&service, grab_event(id, Some("bob"))).await;
            assert_eq!((status, body["error"]["code"].as_str()), (404, Some("not_found")), "{id}");
        }
    }

    #[tokio::test]
    async fn grab_repeat_sold_out_and_expired() {
        let clock = Arc::new(ManualClock::starting_now());
        let service = service(clock.clone());
        let packet = sent_packet(&service, false).await;
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
    async fn before_its_opening_a_grab_is_409_with_the_opening_and_the_seconds_to_wait() {
        let clock = Arc::new(ManualClock::starting_now());
        let service = service(clock.clone());
        let opens_at_ms = clock.now_ms() + 90_500;
        let spec = PacketSpec {
            opens_at_ms: Some(opens_at_ms),
            ..PacketSpec::open_to_all(PacketTerms::new(PacketKind::Lucky, 600, 3), 60)
        };
        let packet = Packet::new(
            PacketId::random(),
            UserId::from_claim("alice").unwrap(),
            &spec,
            Seed::random(),
            clock.now_ms(),
        );
        service.ledger.record_packet(&packet, None).await.unwrap();
        service.store.load(&packet, &packet.shares()).await.unwrap();
        let response = handle(&service, grab_event(&packet.id.to_string(), Some("bob"))).await.unwrap();
        assert_eq!(response.status(), 409);
        assert_eq!(response.headers()["retry-after"], "91", "90.5 s, rounded up");
        let body: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        assert_eq!(body["error"]["code"], "not_open_yet");
        assert_eq!(body["error"]["opens_at"], red_packets::clock::rfc3339(opens_at_ms));
        clock.advance(90_500);
        assert_eq!(call(&service, grab_event(&packet.id.to_string(), Some("bob"))).await.0, 200);
    }

    #[tokio::test]
    async fn the_last_share_then_sold_out_and_the_shares_add_up() {
        let service = service(Arc::new(ManualClock::starting_now()));
        let packet = sent_packet(&service, false).await;
        let id = packet.id.to_string();
        let mut paid = 0;
        for user in ["bob", "carol", "dave"] {
            let (status, body) = call(&service, grab_event(&id, Some(user))).await;
            assert_eq!(status, 200, "{body}");
            paid += body["amount_cents"].as_u64().unwrap();
        }
        assert_eq!(paid, 600, "three grabs take the whole packet");
        let (status, body) = call(&service, grab_event(&id, Some("erin"))).await;
        assert_eq!((status, body["error"]["code"].as_str()), (409, Some("sold_out")));
    }

    #[tokio::test]
    async fn a_packet_only_the_ledger_holds_is_restored_then_grabbed() {
        let service = service(Arc::new(ManualClock::starting_now()));
        let packet = sent_packet(&service, true).await;
        let (status, body) = call(&service, grab_event(&packet.id.to_string(), Some("bob"))).await;
        assert_eq!((status, body["already_grabbed"].as_bool()), (200, Some(false)), "{body}");
        assert!(service.store.snapshot(&packet.id).await.unwrap().is_some(), "restored into the live store");
    }

    #[tokio::test]
    async fn an_unreachable_ledger_behind_a_packet_the_live_store_lacks_is_503() {
        let service = service(Arc::new(ManualClock::starting_now()));
        let packet = sent_packet(&service, true).await;
        service.ledger.set_unreachable(true);
        let response = handle(&service, grab_event(&packet.id.to_string(), Some("bob"))).await.unwrap();
        assert_eq!(response.status(), 503);
        assert!(red_packets::http::RETRY_AFTER_SECONDS
            .contains(&response.headers()["retry-after"].to_str().unwrap().parse().unwrap()));
    }

    #[tokio::test]
    async fn unreachable_redis_is_503_with_retry_after() {
        let mut config = config();
        config.redis.url = "redis://127.0.0.1:1".into();
        config.redis.timeout = std::time::Duration::from_millis(200);
        let ledger = MemoryLedger::new(&config);
        let service = GrabService::new(RedisStore::new(&config), ledger, &config);
        let response = handle(&service, grab_event(&PacketId::random().to_string(), Some("bob"))).await.unwrap();
        assert_eq!(response.status(), 503);
        assert!(red_packets::http::RETRY_AFTER_SECONDS
            .contains(&response.headers()["retry-after"].to_str().unwrap().parse().unwrap()));
    }

    /// The only test of this process that installs the metrics recorder (it is global).
    #[tokio::test]
    async fn each_grab_is_counted_in_the_embedded_metric_format() {
        let collector = red_packets::telemetry::metrics("grab").expect("the first recorder of this process");
        let service = service(Arc::new(ManualClock::starting_now()));
        let packet = sent_packet(&service, false).await;
        for user in ["bob", "bob"] {
            assert_eq!(call(&service, grab_event(&packet.id.to_string(), Some(user))).await.0, 200);
        }
        let mut written = Vec::new();
        collector.flush(&mut written).unwrap();
        let documents: Vec<Value> =
            String::from_utf8(written).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        let counted = |outcome: &str| {
            documents.iter().find(|document| document["outcome"] == outcome && document["Grabs"].is_number()).cloned()
        };
        let grabbed = counted("grabbed").unwrap_or_else(|| panic!("no grabbed count in {documents:?}"));
        assert!(grabbed["Grabs"].as_u64() >= Some(1), "{grabbed}");
        assert_eq!(grabbed["Function"], "grab");
        let declared = &grabbed["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(declared["Namespace"], red_packets::telemetry::LOCAL_METRICS_NAMESPACE);
        assert!(declared["Dimensions"].to_string().contains("outcome"), "{declared}");
        assert!(counted("already_grabbed").is_some(), "the repeat is counted apart: {documents:?}");
    }
}
