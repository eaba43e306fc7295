//! `GET /packets/{packet_id}?grabs_from=`: the packet view as its caller sees it, live from
//! Redis while the packet is open, from the ledger once settled, one page of its grabs read at
//! the cost of that page (`packets::packet_page`). `GET /packets/{packet_id}/shared`: the same
//! without the caller's own fields, for everyone, kept by CloudFront and the app
//! (`http::Caching`). `GET /me/packets?role=sent|received&limit&cursor`: the caller's own
//! history, newest first. `GET /me/wallet?limit&cursor`: the caller's balance and its movements,
//! newest first. Each answers an `ETag`, and `304` with no body to an `If-None-Match` naming it,
//! from a version without building the answer: a view's (`packets::unchanged_view`), the
//! wallet's and a settled history page's (the user's version, `Ledger::user_version`). A history
//! page with an open packet on it, or any without the wallet, is compared by its bytes.

use std::sync::Arc;

use lambda_http::http::StatusCode;
use lambda_http::{Body, Error, Request, RequestExt, Response};
use red_packets::domain::history::Role;
use red_packets::domain::tags::{self, TagScope};
use red_packets::domain::UserId;
use red_packets::http::{
    action, caller, conditional_tagged, if_none_match, money_response, not_modified, packet_id, page_limit, respond,
    Caching,
};
use red_packets::packets::{packet_page, unchanged_view, ViewRead};
use red_packets::ports::{Ledger, LiveStore, PageRequest};
use red_packets::routes::Action;
use red_packets::{ApiError, Clock, SystemClock};

pub use red_packets::http::{DEFAULT_LIMIT, MAX_LIMIT};

/// What the query handler needs: the live store, the ledger and a clock.
pub struct QueryService<S, L> {
    store: S,
    ledger: L,
    clock: Arc<dyn Clock>,
}

impl<S: LiveStore, L: Ledger> QueryService<S, L> {
    /// A service with the system clock.
    pub fn new(store: S, ledger: L) -> Self {
        Self::with_clock(store, ledger, Arc::new(SystemClock))
    }

    /// A service reading time from `clock`.
    pub fn with_clock(store: S, ledger: L, clock: Arc<dyn Clock>) -> Self {
        QueryService { store, ledger, clock }
    }
}

/// The Lambda handler of its three routes ([`red_packets::routes`]: a packet's view, the
/// caller's history and wallet), by the event's route key; another key is a 404.
pub async fn handle<S: LiveStore, L: Ledger>(
    service: &QueryService<S, L>,
    request: Request,
) -> Result<Response<Body>, Error> {
    let result = match action(&request) {
        Ok(Action::Packet) => packet(service, &request, false).await,
        Ok(Action::SharedPacket) => packet(service, &request, true).await,
        Ok(Action::Wallet) => wallet(service, &request).await,
        Ok(Action::History) => history(service, &request).await,
        Ok(_) | Err(_) => Err(ApiError::NotFound),
    };
    Ok(respond(result))
}

/// The packet's view: the caller's (`shared` false), or everyone's. A poll whose tag the packet's
/// version still names is a 304 before anything is built.
async fn packet<S: LiveStore, L: Ledger>(
    service: &QueryService<S, L>,
    request: &Request,
    shared: bool,
) -> Result<Response<Body>, ApiError> {
    let viewer = if shared { nobody() } else { caller(request)? };
    let id = packet_id(request)?;
    let now_ms = service.clock.now_ms();
    let read = ViewRead { id: &id, viewer: &viewer, shared, from: grabs_from(request)? };
    let caching = |finalised: bool| match (shared, finalised) {
        (false, _) => Caching::Private,
        (true, false) => Caching::SharedOpen,
        (true, true) => Caching::SharedFinal,
    };
    if let Some(unchanged) = unchanged_view(&service.store, read, &if_none_match(request), now_ms).await? {
        return Ok(not_modified(&unchanged.tag, caching(unchanged.finalised)));
    }
    let page = packet_page(&service.store, &service.ledger, read, now_ms).await?.ok_or(ApiError::NotFound)?;
    let currency = service.ledger.currency();
    let caching = caching(page.view.shared.settled);
    let response = if shared {
        money_response(StatusCode::OK, &page.view.shared(), currency)
    } else {
        money_response(StatusCode::OK, &page.view, currency)
    };
    Ok(conditional_tagged(request, response, page.tag, caching))
}

/// Whom the shared view is built for: nobody in particular (its caller's own fields are left
/// out of it).
fn nobody() -> UserId {
    UserId::from_claim("*").expect("a one-character id is a user id")
}

/// The `grabs_from` query parameter: the first grab of the page (1 for the first, the default).
fn grabs_from(request: &Request) -> Result<u32, ApiError> {
    match request.query_string_parameters_ref().and_then(|query| query.first("grabs_from")) {
        None => Ok(1),
        Some(text) => text.parse::<u32>().ok().filter(|from| *from >= 1).ok_or_else(|| {
            ApiError::invalid("grabs_from", "grabs_from must be a whole number from 1 (a view's next_grabs_from)")
        }),
    }
}

async fn history<S: LiveStore, L: Ledger>(
    service: &QueryService<S, L>,
    request: &Request,
) -> Result<Response<Body>, ApiError> {
    let user = caller(request)?;
    let query = request.query_string_parameters();
    let role = query
        .first("role")
        .and_then(Role::parse)
        .ok_or_else(|| ApiError::invalid("role", "role must be \"sent\" or \"received\""))?;
    let asked = PageRequest { limit: page_limit(request)?, cursor: query.first("cursor") };
    let page_key = format!("{}|{}|{}", role.as_str(), asked.limit, asked.cursor.unwrap_or(""));
    let scope = TagScope { read: "history", subject: user.as_str(), viewer: user.as_str(), page: &page_key };
    if let Some(unchanged) = unchanged_for(service, request, &user, &scope).await? {
        return Ok(unchanged);
    }
    let page = service.ledger.history(&user, role, asked).await?;
    Ok(own_answer(request, &scope, &page, page.version.as_deref(), service.ledger.currency()))
}

async fn wallet<S: LiveStore, L: Ledger>(
    service: &QueryService<S, L>,
    request: &Request,
) -> Result<Response<Body>, ApiError> {
    let user = caller(request)?;
    let cursor = request.query_string_parameters_ref().and_then(|query| query.first("cursor").map(str::to_owned));
    let asked = PageRequest { limit: page_limit(request)?, cursor: cursor.as_deref() };
    let page_key = format!("{}|{}", asked.limit, asked.cursor.unwrap_or(""));
    let scope = TagScope { read: "wallet", subject: user.as_str(), viewer: user.as_str(), page: &page_key };
    if let Some(unchanged) = unchanged_for(service, request, &user, &scope).await? {
        return Ok(unchanged);
    }
    let page = service.ledger.wallet(&user, asked).await?;
    Ok(own_answer(request, &scope, &page, page.version.as_deref(), service.ledger.currency()))
}

/// `page`, the caller's own 200, tagged with `scope` at `version` when it carries one (its bytes'
/// digest otherwise), or a `304` when `If-None-Match` names that tag.
fn own_answer(
    request: &Request,
    scope: &TagScope<'_>,
    page: &impl serde::Serialize,
    version: Option<&str>,
    currency: red_packets::domain::Currency,
) -> Response<Body> {
    let tag = version.map(|version| tags::versioned(scope, version));
    conditional_tagged(request, money_response(StatusCode::OK, page, currency), tag, Caching::Private)
}

/// A `304` when the request's `If-None-Match` lists the tag of `scope` at `user`'s version now
/// (one key read, [`Ledger::user_version`]); `None` when it lists no version's tag, or the ledger
/// keeps no version: the answer is built then, and compared.
async fn unchanged_for<S: LiveStore, L: Ledger>(
    service: &QueryService<S, L>,
    request: &Request,
    user: &UserId,
    scope: &TagScope<'_>,
) -> Result<Option<Response<Body>>, ApiError> {
    // A digest presented (a page with an open packet) is compared once the page is built: no
    // version read for it, which the page's own read repeats.
    let presented = if_none_match(request);
    if !presented.iter().any(|value| tags::lists_a_version(value)) {
        return Ok(None);
    }
    let Some(version) = service.ledger.user_version(user).await? else { return Ok(None) };
    let tag = tags::versioned(scope, &version);
    Ok(presented.iter().any(|value| tags::lists(value, &tag)).then(|| not_modified(&tag, Caching::Private)))
}

#[cfg(test)]
mod tests {
    //! The handler on the in-memory stores (no service needed); the integration suites in
    //! `local/tests` run it on Redis and DynamoDB Local.

    use super::*;
    use red_packets::domain::{Funds, Packet, PacketId, PacketKind, PacketSpec, PacketTerms, Seed, UserId};
    use red_packets::Config;
    use red_packets_testkit::events;
    use red_packets_testkit::memory::{MemoryLedger, MemoryStore};
    use serde_json::Value;

    const QUERY_EVENT: &str = include_str!("../../../events/query.json");
    const SHARED_EVENT: &str = include_str!("../../../events/shared.json");
    const HISTORY_EVENT: &str = include_str!("../../../events/history.json");
    const WALLET_EVENT: &str = include_str!("../../../events/wallet.json");

    fn service() -> QueryService<MemoryStore, MemoryLedger> {
        service_with(Funds::Wallet)
    }

    fn service_with(funds: Funds) -> QueryService<MemoryStore, MemoryLedger> {
        let mut config = Config::from_lookup(|_| None).unwrap();
        config.funds = funds;
        QueryService::new(MemoryStore::new(config.settle_shards), MemoryLedger::new(&config))
    }

    async fn call(service: &QueryService<MemoryStore, MemoryLedger>, event: &Value) -> (u16, Value) {
        let response = handle(service, events::to_request(event).unwrap()).await.unwrap();
        (response.status().as_u16(), serde_json::from_slice(response.body().as_ref()).unwrap())
    }

    #[tokio::test]
    async fn the_sample_query_of_an_unknown_packet_is_404_and_needs_identity() {
        let service = service();
        let mut event: Value = serde_json::from_str(QUERY_EVENT).unwrap();
        events::set_packet_id(&mut event, &PacketId::random().to_string());
        assert_eq!(call(&service, &event).await.0, 404);
        events::set_caller(&mut event, None);
        assert_eq!(call(&service, &event).await.0, 401);
    }

    /// A view answers a page of 1,000 grabs and where the next starts; a bad `grabs_from` names
    /// itself.
    #[tokio::test]
    async fn a_packets_grabs_come_a_page_at_a_time() {
        let service = service_with(Funds::None);
        let spec = PacketSpec::open_to_all(PacketTerms::new(PacketKind::Fixed, 1_200, 1_200), 60);
        let now_ms = service.clock.now_ms();
        let packet =
            Packet::new(PacketId::random(), UserId::from_claim("alice").unwrap(), &spec, Seed::random(), now_ms);
        service.ledger.record_packet(&packet, None).await.unwrap();
        service.store.load(&packet, &packet.shares()).await.unwrap();
        for n in 0..1_200 {
            let attempt = red_packets::domain::grab::GrabAttempt::by(UserId::from_claim(&format!("u{n}")).unwrap());
            let call =
                red_packets::ports::GrabCall { clock: service.clock.as_ref(), ledger: &service.ledger, again: false };
            service.store.try_grab(&packet.id, &attempt, call).await.unwrap();
        }
        let mut event: Value = serde_json::from_str(QUERY_EVENT).unwrap();
        events::set_packet_id(&mut event, packet.id.as_str());
        let (status, first) = call(&service, &event).await;
        assert_eq!(status, 200, "{first}");
        assert_eq!(
            (first["grabs"].as_array().unwrap().len(), &first["grab_count"]),
            (1_000, &serde_json::json!(1_200))
        );
        assert_eq!(first["next_grabs_from"], 1_001);
        for (query, answer) in [("grabs_from=1001", Some(200)), ("grabs_from=0", None), ("grabs_from=next", None)] {
            let mut event = event.clone();
            event["rawQueryString"] = Value::String(query.into());
            event.as_object_mut().unwrap().remove("queryStringParameters");
            let (status, body) = call(&service, &event).await;
            match answer {
                Some(grabs) => {
                    assert_eq!(status, 200, "{body}");
                    assert_eq!(body["grabs"].as_array().unwrap().len(), grabs);
                    assert_eq!(
                        (body["grabs"][0]["share"].as_u64(), &body["next_grabs_from"]),
                        (Some(1_001), &Value::Null)
                    );
                }
                None => assert_eq!((status, body["error"]["field"].as_str()), (400, Some("grabs_from")), "{query}"),
            }
        }
    }

    /// A poll with the view's `ETag` is a 304 with no body until a grab changes the view; the
    /// history and the wallet answer the same way, and a tag from another answer changes nothing.
    #[tokio::test]
    async fn a_poll_with_the_answers_etag_is_304_until_it_changes() {
        let service = service_with(Funds::None);
        let spec = PacketSpec::open_to_all(PacketTerms::new(PacketKind::Fixed, 300, 3), 60);
        let packet = Packet::new(
            PacketId::random(),
            UserId::from_claim("alice").unwrap(),
            &spec,
            Seed::random(),
            service.clock.now_ms(),
        );
        service.ledger.record_packet(&packet, None).await.unwrap();
        service.store.load(&packet, &packet.shares()).await.unwrap();
        let mut view: Value = serde_json::from_str(QUERY_EVENT).unwrap();
        events::set_packet_id(&mut view, packet.id.as_str());
        let poll = |event: &Value, tag: Option<&str>| {
            let mut event = event.clone();
            if let Some(tag) = tag {
                event["headers"]["if-none-match"] = Value::String(tag.to_owned());
            }
            let request = events::to_request(&event).unwrap();
            async { handle(&service, request).await.unwrap() }
        };
        let etag = |response: &Response<Body>| response.headers()["etag"].to_str().unwrap().to_owned();
        let first = poll(&view, None).await;
        assert_eq!(
            (first.status(), first.headers()["cache-control"].to_str().unwrap()),
            (StatusCode::OK, "private, no-cache")
        );
        let tag = etag(&first);
        assert!(tag.len() == 35 && tag.starts_with("\"v") && tag.ends_with('"'), "a version's tag: {tag}");
        let unchanged = poll(&view, Some(&format!("\"other\", {tag}"))).await;
        assert_eq!(
            (unchanged.status(), unchanged.body().as_ref().len(), etag(&unchanged)),
            (StatusCode::NOT_MODIFIED, 0, tag.clone())
        );
        assert_eq!(poll(&view, Some("\"0123\"")).await.status(), StatusCode::OK, "another tag gets the answer");
        let bob = UserId::from_claim("bob").unwrap();
        let attempt = red_packets::domain::grab::GrabAttempt::by(bob);
        let call =
            red_packets::ports::GrabCall { clock: service.clock.as_ref(), ledger: &service.ledger, again: false };
        service.store.try_grab(&packet.id, &attempt, call).await.unwrap();
        let changed = poll(&view, Some(&tag)).await;
        assert_eq!(changed.status(), StatusCode::OK, "a grab changed the view");
        assert_ne!(etag(&changed), tag);

        let history: Value = serde_json::from_str(HISTORY_EVENT).unwrap();
        let tag = etag(&poll(&history, None).await);
        assert_eq!(poll(&history, Some(&tag)).await.status(), StatusCode::NOT_MODIFIED);
        let wallets = service_with(Funds::Wallet);
        let wallet: Value = serde_json::from_str(WALLET_EVENT).unwrap();
        let answer = |tag: Option<String>| {
            let mut event = wallet.clone();
            if let Some(tag) = tag {
                event["headers"]["if-none-match"] = Value::String(tag);
            }
            let request = events::to_request(&event).unwrap();
            async { handle(&wallets, request).await.unwrap() }
        };
        let tag = etag(&answer(None).await);
        assert_eq!(answer(Some(tag)).await.status(), StatusCode::NOT_MODIFIED);
    }

    /// The shared view needs no caller, carries none of a caller's own fields, and is what the
    /// sender's own view says but for them; an open packet's may be kept 2 s by anyone, and its
    /// version's tag answers a poll with a 304.
    #[tokio::test]
    async fn the_shared_view_is_everyones_and_kept_at_the_edge() {
        let service = service_with(Funds::None);
        let mut spec = PacketSpec::open_to_all(PacketTerms::new(PacketKind::Fixed, 300, 3), 60);
        spec.recipients = Some(vec![UserId::from_claim("bob").unwrap()]);
        let packet = Packet::new(
            PacketId::random(),
            UserId::from_claim("bob").unwrap(),
            &spec,
            Seed::random(),
            service.clock.now_ms(),
        );
        service.ledger.record_packet(&packet, None).await.unwrap();
        service.store.load(&packet, &packet.shares()).await.unwrap();
        let mut shared: Value = serde_json::from_str(SHARED_EVENT).unwrap();
        events::set_packet_id(&mut shared, packet.id.as_str());
        let response = handle(&service, events::to_request(&shared).unwrap()).await.unwrap();
        assert_eq!(
            (response.status(), response.headers()["cache-control"].to_str().unwrap()),
            (StatusCode::OK, "public, max-age=2")
        );
        let tag = response.headers()["etag"].to_str().unwrap().to_owned();
        let body: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        let mut own: Value = serde_json::from_str(QUERY_EVENT).unwrap();
        events::set_packet_id(&mut own, packet.id.as_str());
        let (_, mut bobs) = call(&service, &own).await;
        assert_eq!(
            (bobs["eligible"].take(), bobs["recipients"].take()),
            (Value::Bool(true), serde_json::json!(["bob"]))
        );
        bobs.as_object_mut().unwrap().retain(|name, _| name != "eligible" && name != "recipients");
        assert_eq!(body, bobs, "the caller's view but for their own fields");
        shared["headers"]["if-none-match"] = Value::String(tag.clone());
        let again = handle(&service, events::to_request(&shared).unwrap()).await.unwrap();
        assert_eq!(
            (again.status(), again.headers()["etag"].to_str().unwrap()),
            (StatusCode::NOT_MODIFIED, tag.as_str())
        );
    }

    #[tokio::test]
    async fn the_sample_history_query_answers_a_page() {
        let service = service();
        let event: Value = serde_json::from_str(HISTORY_EVENT).unwrap();
        let (status, body) = call(&service, &event).await;
        assert_eq!(status, 200, "{body}");
        assert!(body["items"].is_array());
    }

    #[tokio::test]
    async fn bad_history_parameters_name_their_field() {
        let service = service();
        for (query, field) in [
            ("role=everyone", "role"),
            ("limit=5", "role"),
            ("role=sent&limit=0", "limit"),
            ("role=sent&limit=101", "limit"),
            ("role=sent&limit=ten", "limit"),
            ("role=sent&cursor=forged", "cursor"),
        ] {
            let mut event: Value = serde_json::from_str(HISTORY_EVENT).unwrap();
            event["rawQueryString"] = Value::String(query.into());
            event.as_object_mut().unwrap().remove("queryStringParameters");
            let (status, body) = call(&service, &event).await;
            assert_eq!((status, body["error"]["field"].as_str()), (400, Some(field)), "{query}");
        }
    }

    #[tokio::test]
    async fn the_sample_wallet_query_answers_a_balance_and_names_a_bad_cursor() {
        let service = service();
        let event: Value = serde_json::from_str(WALLET_EVENT).unwrap();
        let (status, body) = call(&service, &event).await;
        assert_eq!(status, 200, "{body}");
        assert!(body["balance_cents"].is_u64() && body["items"].is_array(), "{body}");
        for (query, field) in [("limit=0", "limit"), ("cursor=forged", "cursor"), ("cursor=UEtUI3g", "cursor")] {
            let mut event = event.clone();
            event["rawQueryString"] = Value::String(query.into());
            event.as_object_mut().unwrap().remove("queryStringParameters");
            let (status, body) = call(&service, &event).await;
            assert_eq!((status, body["error"]["field"].as_str()), (400, Some(field)), "{query}");
        }
        let (status, body) = call(&service_with(Funds::None), &event).await;
        assert_eq!((status, body["error"]["code"].as_str()), (404, Some("not_found")), "FUNDS=none: {body}");
        assert_eq!(body["error"]["message"], "this deployment keeps no wallets");
    }

    #[tokio::test]
    async fn the_history_pages_newest_first_and_a_packets_view_is_live_while_open() {
        let service = service_with(Funds::None);
        let spec = PacketSpec::open_to_all(PacketTerms::new(PacketKind::Fixed, 300, 3), 60);
        let alice = UserId::from_claim("alice").unwrap();
        let mut sent = Vec::new();
        for at_ms in [1_000, 2_000, 3_000] {
            let packet =
                Packet::new(PacketId::random(), alice.clone(), &spec, Seed::random(), service.clock.now_ms() + at_ms);
            service.ledger.record_packet(&packet, None).await.unwrap();
            service.store.load(&packet, &packet.shares()).await.unwrap();
            sent.push(packet.id.to_string());
        }
        let mut event: Value = serde_json::from_str(HISTORY_EVENT).unwrap();
        event["rawQueryString"] = Value::String("role=sent&limit=2".into());
        event.as_object_mut().unwrap().remove("queryStringParameters");
        let (status, first) = call(&service, &event).await;
        assert_eq!(status, 200, "{first}");
        let ids = |page: &Value| {
            page["items"].as_array().unwrap().iter().map(|item| item["packet_id"].clone()).collect::<Vec<_>>()
        };
        assert_eq!(ids(&first), [sent[2].clone(), sent[1].clone()], "newest first");
        let cursor = first["next_cursor"].as_str().expect("a next page").to_owned();
        event["rawQueryString"] = Value::String(format!("role=sent&limit=2&cursor={cursor}"));
        let (_, second) = call(&service, &event).await;
        assert_eq!(ids(&second), [sent[0].clone()]);
        assert!(second["next_cursor"].is_null());

        let mut query: Value = serde_json::from_str(QUERY_EVENT).unwrap();
        events::set_packet_id(&mut query, &sent[0]);
        let (status, view) = call(&service, &query).await;
        assert_eq!((status, view["status"].as_str(), view["remaining_count"].as_u64()), (200, Some("open"), Some(3)));
    }
}
