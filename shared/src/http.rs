//! HTTP glue shared by the handlers: identity, path and header parsing, JSON bodies, and the one
//! place where an [`ApiError`] becomes a response.

use lambda_http::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH, RETRY_AFTER};
use lambda_http::http::{HeaderValue, StatusCode};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use serde::Serialize;

use crate::domain::limits::MAX_BODY_BYTES;
use crate::domain::{Currency, IdempotencyKey, PacketId, UserId};
use crate::error::ApiError;
use crate::routes::{Action, OpsRoute, Route};
use crate::telemetry::{DEPENDENCY_UNAVAILABLE, INTERNAL_ERROR};

/// The seconds a 503's `Retry-After` asks for: drawn uniformly from this range, so that the
/// clients an outage turned away do not all come back in the same second.
pub const RETRY_AFTER_SECONDS: std::ops::RangeInclusive<u32> = 1..=5;

/// One draw of [`RETRY_AFTER_SECONDS`].
pub fn retry_after_seconds() -> u32 {
    rand::Rng::random_range(&mut rand::rng(), RETRY_AFTER_SECONDS)
}

/// The caller: the `sub` claim API Gateway's JWT authorizer verified, and nothing else.
pub fn caller(request: &Request) -> Result<UserId, ApiError> {
    let sub = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context
            .authorizer
            .as_ref()
            .and_then(|authorizer| authorizer.jwt.as_ref())
            .and_then(|jwt| jwt.claims.get("sub")),
        _ => None,
    };
    let sub = sub.ok_or(ApiError::Unauthorized("a verified token with a sub claim is required"))?;
    UserId::from_claim(sub).ok_or(ApiError::Unauthorized("the token's sub claim is not a usable user id"))
}

/// The route key the request came by (its event's, as API Gateway matched it).
fn route_key(request: &Request) -> Option<&str> {
    match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.route_key.as_deref(),
        _ => None,
    }
}

/// The action of the route the request came by (its event's route key, [`crate::routes`]);
/// `NotFound` for a key the API does not have, or none.
pub fn action(request: &Request) -> Result<Action, ApiError> {
    route_key(request).and_then(Route::keyed).map(|route| route.action).ok_or(ApiError::NotFound)
}

/// The operators' route the request came by ([`crate::routes::OPS_ROUTES`], by its event's route
/// key); `NotFound` for a key the operators' API does not have, or none.
pub fn ops_route(request: &Request) -> Result<&'static OpsRoute, ApiError> {
    route_key(request).and_then(OpsRoute::keyed).ok_or(ApiError::NotFound)
}

/// The path parameter `name` (API Gateway hands it over decoded); `None` without one.
pub fn path_parameter<'a>(request: &'a Request, name: &str) -> Option<&'a str> {
    request.path_parameters_ref().and_then(|parameters| parameters.first(name))
}

/// The `{packet_id}` path parameter; anything that is not a well-formed id names no packet.
pub fn packet_id(request: &Request) -> Result<PacketId, ApiError> {
    path_parameter(request, "packet_id").and_then(PacketId::parse).ok_or(ApiError::NotFound)
}

/// The `Idempotency-Key` header, required and validated: a send retried without one after a
/// timeout would pay twice (WeChat Pay's red packet API asks every send for its bill number for
/// the same reason).
pub fn idempotency_key(request: &Request) -> Result<IdempotencyKey, ApiError> {
    let Some(value) = request.headers().get("idempotency-key") else {
        return Err(ApiError::invalid(
            "Idempotency-Key",
            "the Idempotency-Key header is required: a key of your own per send, the same on every retry of it",
        ));
    };
    value.to_str().ok().and_then(IdempotencyKey::parse).ok_or_else(|| {
        ApiError::invalid("Idempotency-Key", "Idempotency-Key must be 1 to 64 characters of A-Z, a-z, 0-9, _ and -")
    })
}

/// The request body, at most 16 KiB, declared as JSON when its type is declared at all.
pub fn json_body(request: &Request) -> Result<&[u8], ApiError> {
    if let Some(content_type) = request.headers().get(CONTENT_TYPE) {
        let media_type = content_type.to_str().unwrap_or("").split(';').next().unwrap_or("").trim();
        if !media_type.eq_ignore_ascii_case("application/json") {
            return Err(ApiError::invalid("Content-Type", "the body must be application/json"));
        }
    }
    let body: &[u8] = request.body().as_ref();
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError::PayloadTooLarge { limit: MAX_BODY_BYTES });
    }
    Ok(body)
}

/// The request body when it has one, checked as [`json_body`] checks it; `None` for an empty
/// (or blank) body whatever type it declares: a grab without a passphrase sends none, and some
/// HTTP clients declare a form type on every POST.
pub fn optional_json_body(request: &Request) -> Result<Option<&[u8]>, ApiError> {
    let body: &[u8] = request.body().as_ref();
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    json_body(request).map(Some)
}

/// A JSON response with `status`.
pub fn json_response(status: StatusCode, value: &impl Serialize) -> Response<Body> {
    let body = serde_json::to_string(value).expect("responses serialize");
    let mut response = Response::new(Body::Text(body));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A JSON answer carrying amounts: `value`'s fields and the currency they are minor units of
/// (`"currency": {"code": "CNY", "exponent": 2}`).
pub fn money_response(status: StatusCode, value: &impl Serialize, currency: Currency) -> Response<Body> {
    #[derive(Serialize)]
    struct InCurrency<'a, T> {
        #[serde(flatten)]
        value: &'a T,
        currency: Currency,
    }
    json_response(status, &InCurrency { value, currency })
}

/// How a read's answer may be kept: its `Cache-Control`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caching {
    /// The caller's own answer: `private, no-cache` (kept by the app alone, asked again each time
    /// with its tag).
    Private,
    /// What every viewer of an open packet sees: `public, max-age=2`, so CloudFront and the app
    /// keep it [`Caching::OPEN_SECONDS`] and then ask again with its tag.
    SharedOpen,
    /// What every viewer of a finalised packet sees, which never changes: `public,
    /// max-age=31536000, immutable`.
    SharedFinal,
}

impl Caching {
    /// How long a shared view of an open packet may be kept: the most a viewer's page can be
    /// behind, and how often at most one edge location asks the function for it.
    pub const OPEN_SECONDS: u32 = 2;

    /// The `Cache-Control` value.
    pub fn header(self) -> &'static str {
        match self {
            Caching::Private => "private, no-cache",
            Caching::SharedOpen => "public, max-age=2",
            Caching::SharedFinal => "public, max-age=31536000, immutable",
        }
    }
}

/// The request's `If-None-Match` values (none when it has none).
pub fn if_none_match(request: &Request) -> Vec<&str> {
    request.headers().get_all(IF_NONE_MATCH).iter().filter_map(|value| value.to_str().ok()).collect()
}

/// `response` (a 200 of a read) with its `ETag`, a strong validator of its bytes (the first 128
/// bits of their SHA-256, hex, quoted), and `Cache-Control: private, no-cache`; a `304` with no
/// body instead when `request`'s `If-None-Match` names that tag (or `*`). The answer was built
/// to digest it: [`conditional_tagged`] with a version's tag saves the building too.
pub fn conditional(request: &Request, response: Response<Body>) -> Response<Body> {
    conditional_tagged(request, response, None, Caching::Private)
}

/// `response` (a 200 of a read) with `tag` as its `ETag` (its bytes' digest when `None`) and
/// `caching`'s `Cache-Control`; a `304` instead when `request`'s `If-None-Match` names the tag.
pub fn conditional_tagged(
    request: &Request,
    response: Response<Body>,
    tag: Option<String>,
    caching: Caching,
) -> Response<Body> {
    use sha2::{Digest, Sha256};
    if response.status() != StatusCode::OK {
        return response;
    }
    let tag = tag.unwrap_or_else(|| format!("\"{}\"", hex::encode(&Sha256::digest(response.body().as_ref())[..16])));
    if if_none_match(request).iter().any(|value| crate::domain::tags::named_in(value, &tag)) {
        return not_modified(&tag, caching);
    }
    tagged(response, &tag, caching)
}

/// A `304` with no body for `tag`: the poll's answer is unchanged.
pub fn not_modified(tag: &str, caching: Caching) -> Response<Body> {
    let mut unchanged = Response::new(Body::Empty);
    *unchanged.status_mut() = StatusCode::NOT_MODIFIED;
    tagged(unchanged, tag, caching)
}

fn tagged(mut response: Response<Body>, tag: &str, caching: Caching) -> Response<Body> {
    let headers = response.headers_mut();
    headers.insert(ETAG, HeaderValue::from_str(tag).expect("hex in quotes is a header value"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static(caching.header()));
    response
}

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    error: ErrorBody<'a>,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'a str,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
    /// A scheduled packet's opening, on `not_open_yet`.
    #[serde(skip_serializing_if = "Option::is_none")]
    opens_at: Option<String>,
    /// The roles one of which the operators' route needs, on its `forbidden`.
    #[serde(skip_serializing_if = "Option::is_none")]
    roles: Option<&'a [&'static str]>,
}

/// Largest page of a listing.
pub const MAX_LIMIT: u32 = 100;
/// A listing's page size when the caller does not say.
pub const DEFAULT_LIMIT: u32 = 20;

/// The `limit` query parameter of a listing: 1..=[`MAX_LIMIT`], [`DEFAULT_LIMIT`] when absent.
pub fn page_limit(request: &Request) -> Result<u32, ApiError> {
    match request.query_string_parameters_ref().and_then(|query| query.first("limit")) {
        None => Ok(DEFAULT_LIMIT),
        Some(text) => {
            text.parse::<u32>().ok().filter(|limit| (1..=MAX_LIMIT).contains(limit)).ok_or_else(|| {
                ApiError::invalid("limit", format!("limit must be a whole number from 1 to {MAX_LIMIT}"))
            })
        }
    }
}

/// The response for `error`: `{"error": {"code", "message", "field"?, "opens_at"?, "roles"?}}`, with
/// `Retry-After` on a 503 (jittered) and on `not_open_yet` (the seconds until the opening).
/// Server-side failures are logged here; their details never reach the client.
pub fn error_response(error: &ApiError) -> Response<Body> {
    let field = match error {
        ApiError::InvalidRequest { field, .. } => field.as_deref(),
        ApiError::LimitExceeded { field } => Some(*field),
        _ => None,
    };
    match error {
        ApiError::Unavailable { dependency, detail } => {
            tracing::warn!(marker = DEPENDENCY_UNAVAILABLE, dependency, detail, "{DEPENDENCY_UNAVAILABLE} {dependency}")
        }
        ApiError::Internal(detail) => {
            tracing::error!(marker = INTERNAL_ERROR, detail, "{INTERNAL_ERROR} internal error")
        }
        _ => {}
    }
    let opens_at = match error {
        ApiError::NotYetOpen { opens_at_ms, .. } => Some(crate::clock::rfc3339(*opens_at_ms)),
        _ => None,
    };
    let roles = match error {
        ApiError::RoleRequired(roles) => Some(roles.as_slice()),
        _ => None,
    };
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json_response(
        status,
        &ErrorEnvelope { error: ErrorBody { code: error.code(), message: error.to_string(), field, opens_at, roles } },
    );
    match error {
        ApiError::Unavailable { .. } => {
            response.headers_mut().insert(RETRY_AFTER, HeaderValue::from(retry_after_seconds()));
        }
        ApiError::NotYetOpen { retry_after_seconds, .. } | ApiError::GrabRateLimited { retry_after_seconds } => {
            response.headers_mut().insert(RETRY_AFTER, HeaderValue::from(*retry_after_seconds));
        }
        _ => {}
    }
    response
}

/// Turns a handler's result into the response, errors included: handlers never return `Err` to
/// the runtime, so API Gateway never sees a bare 500.
pub fn respond(result: Result<Response<Body>, ApiError>) -> Response<Body> {
    result.unwrap_or_else(|error| error_response(&error))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(claims: &str) -> Request {
        let json = format!(
            r#"{{"version":"2.0","routeKey":"POST /packets/{{packet_id}}/grab","rawPath":"/packets/x/grab","rawQueryString":"",
               "headers":{{}},"pathParameters":{{"packet_id":"0123456789abcdef0123456789abcdef"}},
               "requestContext":{{"http":{{"method":"POST","path":"/packets/x/grab","protocol":"HTTP/1.1","sourceIp":"127.0.0.1","userAgent":"t"}},
               "authorizer":{{"jwt":{{"claims":{claims},"scopes":null}}}},"requestId":"r","routeKey":"x","stage":"$default","time":"x","timeEpoch":0}},
               "isBase64Encoded":false}}"#
        );
        lambda_http::request::from_str(&json).expect("event parses")
    }

    #[test]
    fn identity_comes_only_from_the_authorizer() {
        assert_eq!(caller(&event(r#"{"sub":"bob"}"#)).unwrap().as_str(), "bob");
        assert!(matches!(caller(&event("{}")), Err(ApiError::Unauthorized(_))));
    }

    #[test]
    fn an_empty_body_is_none_whatever_its_declared_type() {
        let mut request = event(r#"{"sub":"bob"}"#);
        request.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/x-www-form-urlencoded"));
        assert_eq!(optional_json_body(&request).unwrap(), None);
        *request.body_mut() = Body::Text("{}".into());
        assert!(matches!(optional_json_body(&request), Err(ApiError::InvalidRequest { .. })), "a body must be JSON");
        request.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        assert_eq!(optional_json_body(&request).unwrap(), Some(&b"{}"[..]));
    }

    #[test]
    fn errors_have_the_contract_shape() {
        let response = error_response(&ApiError::invalid("count", "count is required"));
        assert_eq!(response.status(), 400);
        let body: serde_json::Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        assert_eq!(body["error"]["code"], "invalid_request");
        assert_eq!(body["error"]["field"], "count");

        let response = error_response(&ApiError::redis_unavailable("connection refused"));
        assert_eq!(response.status(), 503);
        let seconds =
            |response: &Response<Body>| -> u32 { response.headers()[RETRY_AFTER].to_str().unwrap().parse().unwrap() };
        assert!(RETRY_AFTER_SECONDS.contains(&seconds(&response)));
        // Spread: 200 answers use every second of the range (each missed with odds (4/5)^200).
        let spread: std::collections::BTreeSet<u32> =
            (0..200).map(|_| seconds(&error_response(&ApiError::redis_unavailable("down")))).collect();
        assert_eq!(spread, RETRY_AFTER_SECONDS.collect(), "Retry-After is jittered over its range");
        let body: serde_json::Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        assert!(body["error"].get("field").is_none());
        assert!(!body["error"]["message"].as_str().unwrap().contains("refused"), "details stay in the logs");
    }
}
