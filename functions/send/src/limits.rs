//! `GET /me/limits`: what the caller may send, the stack's limits per packet and per business
//! day ([`SendLimits`]), for the app's send form to state and to check before it sends (the send
//! checks them again). The answer is the function's configuration, read from no store; tagged by
//! its bytes, so a client asking again with the tag gets a `304`.
//!
//! [`SendLimits`]: red_packets::domain::SendLimits

use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use red_packets::http::{caller, conditional, money_response};
use red_packets::ports::{Ledger, LiveStore};
use red_packets::ApiError;

use crate::SendService;

/// The stack's send limits, in its currency, to a signed-in caller.
pub fn limits<L: Ledger, S: LiveStore>(
    service: &SendService<L, S>,
    request: &Request,
) -> Result<Response<Body>, ApiError> {
    caller(request)?;
    let answer = money_response(StatusCode::OK, &service.send_limits, service.ledger.currency());
    Ok(conditional(request, answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use red_packets::Config;
    use red_packets_testkit::events;
    use red_packets_testkit::memory::{MemoryLedger, MemoryStore};
    use serde_json::{json, Value};

    const LIMITS_EVENT: &str = include_str!("../../../events/limits.json");

    fn service(settings: &[(&str, &str)]) -> SendService<MemoryLedger, MemoryStore> {
        let setting = |name: &str| settings.iter().find(|(key, _)| *key == name).map(|(_, value)| value.to_string());
        let config =
            Config::from_lookup(|name| setting(name).or_else(|| (name == "FUNDS").then(|| "none".to_owned()))).unwrap();
        SendService::new(MemoryLedger::new(&config), MemoryStore::new(config.settle_shards), &config)
    }

    async fn call(service: &SendService<MemoryLedger, MemoryStore>, event: &Value) -> (u16, Option<String>, Value) {
        let response = crate::handle(service, events::to_request(event).unwrap()).await.unwrap();
        let tag = response.headers().get("etag").map(|tag| tag.to_str().unwrap().to_owned());
        let body = serde_json::from_slice(response.body().as_ref()).unwrap_or(Value::Null);
        (response.status().as_u16(), tag, body)
    }

    #[tokio::test]
    async fn the_sample_event_answers_the_stacks_limits_and_a_304_to_their_tag() {
        let configured = service(&[("MAX_TOTAL_CENTS", "50000"), ("MAX_COUNT", "200"), ("MAX_SENDS_PER_DAY", "7")]);
        let mut event: Value = serde_json::from_str(LIMITS_EVENT).unwrap();
        let (status, tag, body) = call(&configured, &event).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body,
            json!({
                "max_total_cents": 50_000, "max_count": 200, "min_share_cents": 1, "max_greeting_chars": 64,
                "max_passphrase_chars": 32, "max_recipients": 500, "min_expires_in_seconds": 60,
                "max_expires_in_seconds": 86_400, "default_expires_in_seconds": 86_400,
                "max_opens_ahead_seconds": 604_800, "max_sends_per_day": 7, "max_sent_cents_per_day": 2_000_000,
                "currency": { "code": "CNY", "exponent": 2 },
            })
        );
        events::set_header(&mut event, "If-None-Match", tag.as_deref());
        assert_eq!(call(&configured, &event).await.0, 304);
        let other = service(&[]);
        assert_eq!(call(&other, &event).await.0, 200, "a stack with other limits answers them, whatever the tag");
    }

    #[tokio::test]
    async fn no_caller_no_limits() {
        let mut event: Value = serde_json::from_str(LIMITS_EVENT).unwrap();
        event["requestContext"]["authorizer"] = Value::Null;
        let (status, _, body) = call(&service(&[]), &event).await;
        assert_eq!((status, body["error"]["code"].as_str()), (401, Some("unauthorized")), "{body}");
    }
}
