//! What API Gateway does in front of the Lambdas, locally: match the route, verify the bearer
//! token, build the HTTP API (payload v2) event, invoke the handler, return its response. Where
//! API Gateway answers itself, so does this, in its shape (`{"message": …}`, openapi.yaml's
//! `GatewayMessage`): 401 for a token the JWT authorizer refuses (with `www-authenticate`), 404
//! for a route or method it does not have, 429 for a request over the stage's throttling
//! ([`Throttle`]), 500 for a function that fails.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use axum::body::{to_bytes, Body as AxumBody};
use axum::extract::{Path, RawPathParams, Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use axum::http::HeaderValue;
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use base64::Engine;
use lambda_http::{Body, Error as LambdaError};
use red_packets::adapters::DeployedSettler;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::http::error_response;
use red_packets::routes::{self, Function, OpsRoute, Route, OPS_ROUTES, ROUTES};
use red_packets::ApiError;
use red_packets_testkit::events;
use serde_json::{json, Map, Value};

use crate::auth::LocalAuthorizer;
use crate::cors::{self, Cors};
use crate::throttle::Throttle;

/// API Gateway's own payload limit (10 MB): bodies up to it are read whole and reach the handler,
/// which refuses anything over 16 KiB with its own 413, so a client always reads the answer.
const MAX_FORWARDED_BODY: usize = 10 * 1024 * 1024;

/// Every function of the template, built once.
pub struct Functions {
    /// `POST /packets`, `POST /packets/{packet_id}/cancel` and `POST /me/withdrawals`.
    pub send: send::SendService<DynamoLedger, Arc<RedisStore>>,
    /// `POST /packets/{packet_id}/grab`.
    pub grab: grab::GrabService<Arc<RedisStore>, DynamoLedger>,
    /// `GET /packets/{packet_id}`, `GET /me/packets` and `GET /me/wallet`.
    pub query: query::QueryService<Arc<RedisStore>, DynamoLedger>,
    /// The scheduled settle run.
    pub settler: DeployedSettler,
    /// The JWT authorizer's stand-in.
    pub authorizer: LocalAuthorizer,
    /// The operators' API (`/ops/v1/…`): the operator function's handler on its own ledger
    /// client, behind the operators' authorizer's stand-in.
    pub operators: Operators,
    /// The stage's throttling.
    pub throttle: Throttle,
    /// The keys the local chat server's stand-in signs membership tickets with.
    pub membership_keys: red_packets::domain::membership::MembershipKeys,
    /// The API's CORS configuration.
    pub cors: Cors,
}

/// The operator function as the operators' API reaches it.
pub struct Operators {
    /// Its ledger.
    pub ledger: DynamoLedger,
    /// The live store (a packet's Redis side, its quarantine).
    pub live: Arc<RedisStore>,
    /// Where its reports go.
    pub reports: red_packets::adapters::ReportDirectory,
    /// The claim holding an operator's roles.
    pub roles_claim: String,
    /// Its clock.
    pub clock: Arc<dyn red_packets::Clock>,
    /// The operators' JWT authorizer's stand-in (its own secret: an app user's token is refused).
    pub authorizer: LocalAuthorizer,
}

/// The local API's router.
pub fn router(functions: Arc<Functions>) -> Router {
    let cors = functions.cors.clone();
    let mut router = Router::new();
    for route in ROUTES {
        let serve = move |State(functions): State<Arc<Functions>>, parameters: RawPathParams, request: Request| {
            let parameters = parameters.iter().map(|(name, value)| (name.to_owned(), value.to_owned())).collect();
            async move { serve(&functions, route, parameters, request).await }
        };
        router = router.route(route.path(), if route.method() == "GET" { get(serve) } else { post(serve) });
    }
    for route in OPS_ROUTES {
        // API Gateway hands an HTTP API's path parameters over decoded (`case%2017` as `case 17`).
        let serve = move |State(functions): State<Arc<Functions>>, Path(parameters): Path<Parameters>, request| async move {
            operators_route(&functions, route, parameters, request).await
        };
        router = router.route(route.path(), if route.method() == "GET" { get(serve) } else { post(serve) });
    }
    router
        .route("/local/ops-token", post(ops_token_route))
        .route("/local/app-token", post(app_token_route))
        .route("/local/membership-ticket", post(membership_ticket_route))
        .route("/app", get(crate::app::to_index))
        .route("/app/", get(crate::app::file))
        .route("/app/{*path}", get(crate::app::file))
        .route("/console", get(crate::console::to_index))
        .route("/console/", get(crate::console::file))
        .route("/console/{*path}", get(crate::console::file))
        .fallback(|| async { into_axum(gateway_answer(404, "Not Found")) })
        .method_not_allowed_fallback(|| async { into_axum(gateway_answer(404, "Not Found")) })
        .with_state(functions)
        .layer(axum::middleware::from_fn_with_state(cors, cors::layer))
}

/// An answer of API Gateway itself: `{"message": …}`.
pub fn gateway_answer(status: u16, message: &str) -> lambda_http::Response<Body> {
    let mut response = lambda_http::Response::new(Body::from(json!({ "message": message }).to_string()));
    *response.status_mut() = lambda_http::http::StatusCode::from_u16(status).unwrap_or_default();
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The JWT authorizer's refusal: 401 `{"message": "Unauthorized"}`, and why in `www-authenticate`
/// (API Gateway's "Troubleshooting HTTP API JWT authorizers").
fn unauthorized(presented: bool) -> lambda_http::Response<Body> {
    let mut response = gateway_answer(401, "Unauthorized");
    let why = if presented {
        r#"Bearer scope="" error="invalid_token" error_description="the token is not valid""#
    } else {
        "Bearer"
    };
    response.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static(why));
    response
}

/// A route's path parameters, by name.
type Parameters = Vec<(String, String)>;

/// A route of the app's API, through its function's handler.
async fn serve(functions: &Functions, route: &'static Route, parameters: Parameters, request: Request) -> Response {
    match route.function {
        Function::Send => {
            invoke(functions, route, parameters, request, |event| send::handle(&functions.send, event)).await
        }
        Function::Grab => {
            invoke(functions, route, parameters, request, |event| grab::handle(&functions.grab, event)).await
        }
        Function::Query => {
            invoke(functions, route, parameters, request, |event| query::handle(&functions.query, event)).await
        }
    }
}

/// `POST /local/ops-token`: the local sign-in, with the operators' authorizer's stand-in.
async fn ops_token_route(
    State(functions): State<Arc<Functions>>,
    axum::Json(sign_in): axum::Json<crate::console::SignIn>,
) -> Response {
    crate::console::ops_token(&functions.operators.authorizer, sign_in)
}

/// `POST /local/app-token`: the app's local sign-in, with the JWT authorizer's stand-in.
async fn app_token_route(
    State(functions): State<Arc<Functions>>,
    axum::Json(sign_in): axum::Json<crate::app::SignIn>,
) -> Response {
    crate::app::app_token(&functions.authorizer, sign_in)
}

/// `POST /local/membership-ticket`: the host app's chat server's stand-in.
async fn membership_ticket_route(
    State(functions): State<Arc<Functions>>,
    axum::Json(request): axum::Json<crate::app::TicketRequest>,
) -> Response {
    let now_s = u64::try_from(chrono::Utc::now().timestamp()).unwrap_or_default();
    crate::app::membership_ticket(&functions.membership_keys, now_s, request)
}

/// A route of the operators' API, through the operators' authorizer, to the operator function.
async fn operators_route(
    functions: &Functions,
    route: &'static OpsRoute,
    parameters: Parameters,
    request: Request,
) -> Response {
    let operators = &functions.operators;
    invoke_as(functions, &operators.authorizer, route.key, parameters, request, |event| async move {
        let api = funds::ops_api::OpsApi {
            ledger: &operators.ledger,
            live: operators.live.as_ref(),
            reports: &operators.reports,
            roles_claim: &operators.roles_claim,
        };
        Ok(funds::ops_api::handle_api(&api, operators.clock.as_ref(), &event).await)
    })
    .await
}

async fn invoke<F, Fut>(
    functions: &Functions,
    route: &Route,
    parameters: Parameters,
    request: Request,
    handler: F,
) -> Response
where
    F: FnOnce(lambda_http::Request) -> Fut,
    Fut: Future<Output = Result<lambda_http::Response<Body>, LambdaError>>,
{
    invoke_as(functions, &functions.authorizer, route.key, parameters, request, handler).await
}

async fn invoke_as<F, Fut>(
    functions: &Functions,
    authorizer: &LocalAuthorizer,
    route_key: &str,
    parameters: Parameters,
    request: Request,
    handler: F,
) -> Response
where
    F: FnOnce(lambda_http::Request) -> Fut,
    Fut: Future<Output = Result<lambda_http::Response<Body>, LambdaError>>,
{
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = match to_event(functions, authorizer, route_key, parameters, request).await {
        Err(Refused::Throttled) => gateway_answer(429, "Too Many Requests"),
        Ok(event) => match handler(event).await {
            Ok(response) => response,
            Err(error) => {
                tracing::error!(%error, "the function failed; API Gateway answers 500 itself");
                gateway_answer(500, "Internal Server Error")
            }
        },
        Err(Refused::Unauthorized { presented }) => unauthorized(presented),
        Err(Refused::Api(error)) => error_response(&error),
    };
    tracing::info!(%method, path, status = response.status().as_u16(), elapsed_ms = started.elapsed().as_millis() as u64, "request");
    into_axum(response)
}

/// Why a request never reached its function.
enum Refused {
    /// Over the stage's throttling.
    Throttled,
    /// The JWT authorizer refused the token (or there was none).
    Unauthorized {
        /// True when an `Authorization` header was there.
        presented: bool,
    },
    /// The request cannot become an event.
    Api(ApiError),
}

/// The event API Gateway would send for `request`, with the verified token's claims in the
/// authorizer context; an unverifiable token is refused before any handler runs, as by the JWT
/// authorizer (`authorizer`, the route's).
async fn to_event(
    functions: &Functions,
    authorizer: &LocalAuthorizer,
    route_key: &str,
    parameters: Parameters,
    request: Request,
) -> Result<lambda_http::Request, Refused> {
    let route = Route::keyed(route_key);
    let throttle = route.map_or(routes::Throttle::Default, |route| route.throttle);
    if !functions.throttle.admits(throttle) {
        return Err(Refused::Throttled);
    }
    let (parts, body) = request.into_parts();
    // A public route has no authorizer: its token, if any, is neither checked nor passed on.
    let claims = if route.is_some_and(|route| route.public) {
        None
    } else {
        let authorization = parts.headers.get(AUTHORIZATION).and_then(|value| value.to_str().ok());
        let presented = authorization.is_some();
        Some(authorizer.verify_claims(authorization).ok_or(Refused::Unauthorized { presented })?)
    };
    let body = to_bytes(body, MAX_FORWARDED_BODY)
        .await
        .map_err(|_| Refused::Api(ApiError::PayloadTooLarge { limit: red_packets::domain::limits::MAX_BODY_BYTES }))?;

    let mut headers = Map::new();
    for (name, value) in &parts.headers {
        if name == AUTHORIZATION {
            continue;
        }
        if let Ok(value) = value.to_str() {
            headers.insert(name.as_str().to_owned(), Value::String(value.to_owned()));
        }
    }
    let (body, is_base64) = match std::str::from_utf8(&body) {
        Ok(text) => (text.to_owned(), false),
        Err(_) => (base64::engine::general_purpose::STANDARD.encode(&body), true),
    };
    let now = chrono::Utc::now();
    let mut event = json!({
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": parts.uri.path(),
        "rawQueryString": parts.uri.query().unwrap_or(""),
        "headers": headers,
        "requestContext": {
            "http": {
                "method": parts.method.as_str(),
                "path": parts.uri.path(),
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": parts.headers.get("user-agent").and_then(|v| v.to_str().ok()).unwrap_or(""),
            },
            "requestId": format!("local-{}", now.timestamp_nanos_opt().unwrap_or_default()),
            "routeKey": route_key,
            "stage": "$default",
            "time": now.format("%d/%b/%Y:%H:%M:%S %z").to_string(),
            "timeEpoch": now.timestamp_millis(),
        },
        "body": body,
        "isBase64Encoded": is_base64,
    });
    if !parameters.is_empty() {
        event["pathParameters"] =
            Value::Object(parameters.into_iter().map(|(name, value)| (name, value.into())).collect());
    }
    if let Some(claims) = claims {
        event["requestContext"]["authorizer"] = json!({ "jwt": { "claims": claims, "scopes": null } });
    }
    events::to_request(&event)
        .map_err(|error| Refused::Api(ApiError::invalid("request", format!("unusable request: {error}"))))
}

fn into_axum(response: lambda_http::Response<Body>) -> Response {
    let (parts, body) = response.into_parts();
    let bytes: &[u8] = body.as_ref();
    Response::from_parts(parts, AxumBody::from(bytes.to_vec()))
}
