//! CORS on the local gateway over HTTP, as API Gateway answers it with `CorsAllowedOrigins` set:
//! a browser's preflight answered before any token is checked, an allowed origin echoed on every
//! answer (errors included), a foreign origin given no CORS header, and without origins
//! configured an `OPTIONS` is a route the API does not have.

use std::sync::Arc;

use local::cors::Cors;
use local::LocalAuthorizer;
use red_packets::Config;
use serde_json::{json, Value};

async fn serve(cors: Cors) -> String {
    let config = Config::from_env().expect("configuration");
    let mut functions = local::functions(&config, LocalAuthorizer::new("test")).await.expect("services of make test");
    functions.cors = cors;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, local::router(Arc::new(functions))).await });
    base
}

fn preflight(http: &reqwest::Client, base: &str, origin: &str) -> reqwest::RequestBuilder {
    http.request(reqwest::Method::OPTIONS, format!("{base}/packets"))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization,content-type,idempotency-key")
}

#[tokio::test]
async fn an_allowed_origin_gets_its_preflight_answered_and_its_answers_marked() {
    let base = serve(Cors::new(["https://h5.example.com"])).await;
    let http = reqwest::Client::new();

    let answer = preflight(&http, &base, "https://h5.example.com").send().await.unwrap();
    assert_eq!(answer.status(), 204, "answered before any authorizer: no token was sent");
    let header = |response: &reqwest::Response, name: &str| {
        response.headers().get(name).map(|value| value.to_str().unwrap().to_owned())
    };
    assert_eq!(header(&answer, "access-control-allow-origin").as_deref(), Some("https://h5.example.com"));
    assert_eq!(header(&answer, "access-control-allow-methods").as_deref(), Some("GET,OPTIONS,POST"));
    let allowed = header(&answer, "access-control-allow-headers").unwrap();
    for needed in ["authorization", "content-type", "idempotency-key", "if-none-match", "membership-ticket"] {
        assert!(allowed.contains(needed), "{needed} in {allowed}");
    }
    assert_eq!(header(&answer, "access-control-max-age").as_deref(), Some("600"));

    let foreign = preflight(&http, &base, "https://evil.example.net").send().await.unwrap();
    assert_eq!(header(&foreign, "access-control-allow-origin"), None, "a foreign origin is not allowed");

    // The real request: the gateway's own 401 and the app's 201 both carry the origin.
    let refused = http.post(format!("{base}/packets")).header("origin", "https://h5.example.com").send().await.unwrap();
    assert_eq!(refused.status(), 401);
    assert_eq!(header(&refused, "access-control-allow-origin").as_deref(), Some("https://h5.example.com"));
    let token = LocalAuthorizer::new("test").token("alice", 60);
    let sent = http
        .post(format!("{base}/packets"))
        .header("origin", "https://h5.example.com")
        .bearer_auth(token)
        .header("idempotency-key", "cors-send-1")
        .json(&json!({ "total_cents": 100, "count": 1 }))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 201);
    assert_eq!(header(&sent, "access-control-allow-origin").as_deref(), Some("https://h5.example.com"));
    let exposed = header(&sent, "access-control-expose-headers").unwrap();
    assert!(exposed.contains("location") && exposed.contains("retry-after"), "{exposed}");
}

#[tokio::test]
async fn without_origins_configured_options_is_not_a_route() {
    let base = serve(Cors::default()).await;
    let http = reqwest::Client::new();
    let answer = preflight(&http, &base, "https://h5.example.com").send().await.unwrap();
    assert_eq!(answer.status(), 404);
    assert!(answer.headers().get("access-control-allow-origin").is_none());
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body, json!({ "message": "Not Found" }), "API Gateway's own shape");
}
