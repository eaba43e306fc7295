//! `POST /packets/{packet_id}/cancel`: the sender takes back what is left.
//!
//! The ledger first, under a condition (the caller is the sender; the packet is open, not
//! expired), so a 200 means the ledger knows; then Redis closes the packet to grabs at once
//! (`cancel.lua`) and marks it for settle, which refunds the rest exactly as at expiry. A grab
//! acknowledged before the close is paid; none after it. A packet Redis lost is reloaded from
//! the ledger, closed. Cancelling again answers 200 again; a finished or expired packet is
//! `409 not_open`, another user's `403 forbidden`.

use lambda_http::http::StatusCode;
use lambda_http::{Request, Response};
use red_packets::http::{caller, money_response, packet_id};
use red_packets::packets::{current_view, reload_from_ledger};
use red_packets::ports::{CancelOutcome, Ledger, LiveStore};
use red_packets::ApiError;

use crate::SendService;

/// Cancels the packet the path names, for its sender; 200 with the packet view.
pub async fn cancel<L: Ledger, S: LiveStore>(
    service: &SendService<L, S>,
    request: &Request,
) -> Result<Response<lambda_http::Body>, ApiError> {
    let sender = caller(request)?;
    let id = packet_id(request)?;
    let now_ms = service.clock.now_ms();
    service.ledger.cancel(&id, &sender, now_ms).await?;
    match service.store.cancel(&id, now_ms).await? {
        CancelOutcome::Cancelled => {}
        CancelOutcome::Finished | CancelOutcome::Expired => return Err(ApiError::NotOpen),
        CancelOutcome::Resyncing => {
            return Err(ApiError::redis_unavailable("settle is re-syncing this packet from the ledger; try again"))
        }
        CancelOutcome::Missing => {
            // Lost by Redis (reloaded closed, then marked for settle), or settled and retired.
            let recorded = service.ledger.ledger_packet(&id).await?.ok_or(ApiError::NotFound)?;
            if reload_from_ledger(&service.store, &recorded).await?.is_some() {
                service.store.cancel(&id, now_ms).await?;
            }
        }
    }
    let view = current_view(&service.store, &service.ledger, &id, &sender, now_ms).await?.ok_or(ApiError::NotFound)?;
    Ok(money_response(StatusCode::OK, &view.page(1), service.ledger.currency()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use red_packets::Config;
    use red_packets_testkit::events;
    use red_packets_testkit::memory::{MemoryLedger, MemoryStore};
    use red_packets_testkit::ManualClock;
    use serde_json::Value;

    use crate::{handle, SendService};

    const SEND_EVENT: &str = include_str!("../../../events/send.json");
    const CANCEL_EVENT: &str = include_str!("../../../events/cancel.json");

    /// The handler on the in-memory stores, without wallets.
    fn service(clock: Arc<ManualClock>) -> SendService<MemoryLedger, MemoryStore> {
        let config = Config::from_lookup(|name| (name == "FUNDS").then(|| "none".to_owned())).unwrap();
        SendService::with_clock(MemoryLedger::new(&config), MemoryStore::new(config.settle_shards), &config, clock)
    }

    async fn call(service: &SendService<MemoryLedger, MemoryStore>, event: Value) -> (u16, Value) {
        let response = handle(service, events::to_request(&event).unwrap()).await.unwrap();
        (response.status().as_u16(), serde_json::from_slice(response.body().as_ref()).unwrap())
    }

    fn cancel_event(packet_id: &str, sub: Option<&str>) -> Value {
        let mut event: Value = serde_json::from_str(CANCEL_EVENT).unwrap();
        events::set_packet_id(&mut event, packet_id);
        events::set_caller(&mut event, sub);
        event
    }

    #[tokio::test]
    async fn only_the_sender_cancels_again_and_again_and_never_an_expired_packet() {
        let clock = Arc::new(ManualClock::starting_now());
        let service = service(clock.clone());
        let mut send: Value = serde_json::from_str(SEND_EVENT).unwrap();
        events::set_header(&mut send, "Idempotency-Key", Some(&red_packets::domain::PacketId::random().to_string()));
        events::set_body(&mut send, r#"{"total_cents":300,"count":3,"expires_in_seconds":60}"#);
        let (status, sent) = call(&service, send.clone()).await;
        assert_eq!(status, 201, "{sent}");
        let id = sent["packet_id"].as_str().unwrap().to_owned();

        let (status, body) = call(&service, cancel_event(&id, Some("mallory"))).await;
        assert_eq!((status, body["error"]["code"].as_str()), (403, Some("forbidden")));
        let (status, _) = call(&service, cancel_event(&id, None)).await;
        assert_eq!(status, 401);
        for _ in 0..2 {
            let (status, body) = call(&service, cancel_event(&id, Some("alice"))).await;
            assert_eq!((status, body["status"].as_str()), (200, Some("cancelled")), "{body}");
            assert_eq!(body["remaining_cents"], 300);
        }

        events::set_header(&mut send, "Idempotency-Key", Some("a-later-send"));
        let (_, late) = call(&service, send).await;
        clock.advance(60_000);
        let (status, body) = call(&service, cancel_event(late["packet_id"].as_str().unwrap(), Some("alice"))).await;
        assert_eq!((status, body["error"]["code"].as_str()), (409, Some("not_open")));
        let unknown = red_packets::domain::PacketId::random().to_string();
        assert_eq!(call(&service, cancel_event(&unknown, Some("alice"))).await.0, 404);
    }
}
