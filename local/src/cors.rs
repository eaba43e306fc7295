//! What API Gateway's CORS configuration does, locally (`CORS_ALLOWED_ORIGINS`, the template's
//! `CorsAllowedOrigins`): with origins configured, it answers a preflight (`OPTIONS` with `Origin`
//! and `Access-Control-Request-Method`) itself, before any authorizer or route, and adds the
//! allowed origin to every answer of a request from one. Without them, `OPTIONS` is a route
//! like any other the API does not have: 404.
//! <https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-cors.html>

use axum::extract::{Request, State};
use axum::http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, ACCESS_CONTROL_REQUEST_METHOD, ORIGIN,
};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The headers a browser may send (template.yaml's `CorsConfiguration.AllowHeaders`).
pub const ALLOW_HEADERS: &[&str] =
    &["authorization", "content-type", "idempotency-key", "if-none-match", "membership-ticket"];
/// The methods of the API's routes (`AllowMethods`).
pub const ALLOW_METHODS: &[&str] = &["GET", "OPTIONS", "POST"];
/// The answer headers a page may read (`ExposeHeaders`): a send's `Location`, a 503's `Retry-After`,
/// a read's `ETag` (for its next poll's `If-None-Match`).
pub const EXPOSE_HEADERS: &[&str] = &["etag", "location", "retry-after"];
/// How long a browser may keep a preflight's answer, in seconds (`MaxAge`).
pub const MAX_AGE_SECONDS: u32 = 600;

/// The origins allowed to call the API from a browser.
#[derive(Debug, Clone, Default)]
pub struct Cors {
    origins: Vec<String>,
}

impl Cors {
    /// `origins` exactly as written (`*` for any).
    pub fn new<S: Into<String>>(origins: impl IntoIterator<Item = S>) -> Self {
        Cors { origins: origins.into_iter().map(Into::into).filter(|origin: &String| !origin.is_empty()).collect() }
    }

    /// `CORS_ALLOWED_ORIGINS`, comma-separated; unset or empty for none.
    pub fn from_env() -> Self {
        Self::new(std::env::var("CORS_ALLOWED_ORIGINS").unwrap_or_default().split(',').map(str::trim))
    }

    fn allowed(&self, origin: Option<&HeaderValue>) -> Option<HeaderValue> {
        let origin = origin?;
        let text = origin.to_str().ok()?;
        self.origins.iter().any(|allowed| allowed == "*" || allowed == text).then(|| origin.clone())
    }
}

/// The middleware: a preflight answered here, every other answer given its CORS headers.
pub async fn layer(State(cors): State<Cors>, request: Request, next: Next) -> Response {
    if cors.origins.is_empty() {
        return next.run(request).await;
    }
    let origin = cors.allowed(request.headers().get(ORIGIN));
    let preflight = request.method() == Method::OPTIONS
        && request.headers().contains_key(ORIGIN)
        && request.headers().contains_key(ACCESS_CONTROL_REQUEST_METHOD);
    if preflight {
        let mut response = StatusCode::NO_CONTENT.into_response();
        if let Some(origin) = origin {
            let headers = response.headers_mut();
            headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            headers.insert(ACCESS_CONTROL_ALLOW_METHODS, listed(ALLOW_METHODS));
            headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, listed(ALLOW_HEADERS));
            headers.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from(MAX_AGE_SECONDS));
        }
        return response;
    }
    let mut response = next.run(request).await;
    if let Some(origin) = origin {
        response.headers_mut().insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        response.headers_mut().insert(ACCESS_CONTROL_EXPOSE_HEADERS, listed(EXPOSE_HEADERS));
    }
    response
}

fn listed(values: &[&str]) -> HeaderValue {
    HeaderValue::from_str(&values.join(",")).expect("constant header values")
}
