//! Hostile input against the local API binary (`target/debug/local`, run as a subprocess so its
//! logs can be read): every malformed request is a 4xx JSON error naming what is wrong, never a
//! 5xx; forged, expired and wrongly signed tokens are the JWT authorizer's 401, unknown routes its
//! 404, both in API Gateway's own shape; and no token or secret reaches the logs.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{encode, EncodingKey, Header};
use local::LocalAuthorizer;
use serde_json::{json, Value};

const SECRET: &str = "hostile-test-secret-7f3a";

struct LocalApi {
    child: Child,
    base: String,
    log: PathBuf,
}

impl LocalApi {
    async fn start() -> LocalApi {
        let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned();
        let binary = workspace.join("target/debug/local");
        assert!(binary.exists(), "{} is missing: `cargo build --bins` first (make test does)", binary.display());
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log = std::env::temp_dir().join(format!("red-packets-hostile-{port}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let child = Command::new(binary)
            .arg("serve")
            .env("PORT", port.to_string())
            .env("LOCAL_JWT_SECRET", SECRET)
            .env("RUST_LOG", "debug")
            .env("SETTLE_EVERY_SECONDS", "1")
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        // Owned before the wait, so a failed start still kills the process.
        let api = LocalApi { child, base: format!("http://127.0.0.1:{port}"), log };
        for _ in 0..100 {
            if std::fs::read_to_string(&api.log).unwrap_or_default().contains("listening on") {
                return api;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the local API did not start: {}", std::fs::read_to_string(&api.log).unwrap_or_default());
    }
}

impl Drop for LocalApi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

fn token(claims: Value, secret: &str) -> String {
    encode(&Header::default(), &claims, &EncodingKey::from_secret(secret.as_bytes())).unwrap()
}

async fn expect_error(response: reqwest::Response, status: u16, code: &str, what: &str) -> Value {
    assert_eq!(response.status().as_u16(), status, "{what}");
    let body: Value = response.json().await.unwrap_or_else(|_| panic!("{what}: a JSON body"));
    assert_eq!(body["error"]["code"], code, "{what}: {body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}");
    body
}

#[tokio::test]
async fn hostile_requests_get_clear_4xx_answers_and_secrets_stay_out_of_the_logs() {
    let api = LocalApi::start().await;
    let http = reqwest::Client::new();
    let good = LocalAuthorizer::new(SECRET).token("mallory", 600);
    let bearer = format!("Bearer {good}");
    let post = |body: Vec<u8>, content_type: &str| {
        http.post(format!("{}/packets", api.base))
            .header("authorization", &bearer)
            .header("idempotency-key", red_packets::domain::PacketId::random().to_string())
            .header("content-type", content_type)
            .body(body)
            .send()
    };

    // Bodies.
    let json_type = "application/json";
    for (body, field, what) in [
        ("not json".to_owned(), None, "non-JSON"),
        (String::new(), None, "empty body"),
        ("[1,2]".to_owned(), None, "not an object"),
        (r#"{"total_cents":-1,"count":1}"#.to_owned(), Some("total_cents"), "negative"),
        (r#"{"total_cents":1.5,"count":1}"#.to_owned(), Some("total_cents"), "fractional"),
        (r#"{"total_cents":"100","count":1}"#.to_owned(), Some("total_cents"), "string number"),
        (r#"{"total_cents":9223372036854775808,"count":1}"#.to_owned(), Some("total_cents"), "2^63"),
        (r#"{"total_cents":1e300,"count":1}"#.to_owned(), Some("total_cents"), "huge float"),
        (r#"{"total_cents":5,"count":6}"#.to_owned(), Some("count"), "count above total"),
        (r#"{"total_cents":100,"count":1,"sender":"alice"}"#.to_owned(), Some("sender"), "unknown field"),
        (r#"{"count":1}"#.to_owned(), Some("total_cents"), "missing field"),
        (
            format!(r#"{{"total_cents":100,"count":1,"greeting":"{}"}}"#, "🧧".repeat(65)),
            Some("greeting"),
            "65 characters",
        ),
    ] {
        let body = expect_error(post(body.into_bytes(), json_type).await.unwrap(), 400, "invalid_request", what).await;
        assert_eq!(body["error"]["field"].as_str(), field, "{what}");
    }
    expect_error(post(b"{}".to_vec(), "text/plain").await.unwrap(), 400, "invalid_request", "wrong content type").await;
    let big = format!(r#"{{"total_cents":100,"count":1,"greeting":"{}"}}"#, "x".repeat(17 * 1024));
    expect_error(post(big.into_bytes(), json_type).await.unwrap(), 413, "payload_too_large", "17 KiB").await;
    expect_error(post(vec![b' '; 3 * 1024 * 1024], json_type).await.unwrap(), 413, "payload_too_large", "3 MiB").await;
    let fine =
        post(format!(r#"{{"total_cents":100,"count":1,"greeting":"{}"}}"#, "🧧".repeat(64)).into_bytes(), json_type);
    assert_eq!(fine.await.unwrap().status(), 201, "64 characters of unicode are fine");

    // Ids.
    for id in ["%E7%BA%A2%E5%8C%85", &"a".repeat(10 * 1024), "..%2F..%2Fetc%2Fpasswd", "%00", "{x}"] {
        let grab =
            http.post(format!("{}/packets/{id}/grab", api.base)).header("authorization", &bearer).send().await.unwrap();
        expect_error(grab, 404, "not_found", &format!("grab on id {}", &id[..id.len().min(20)])).await;
        let view =
            http.get(format!("{}/packets/{id}", api.base)).header("authorization", &bearer).send().await.unwrap();
        expect_error(view, 404, "not_found", "view").await;
    }

    // Tokens.
    let now = chrono_now();
    let forged = token(json!({ "sub": "alice", "exp": now + 600 }), "not-the-secret");
    let expired = token(json!({ "sub": "alice", "exp": now - 60 }), SECRET);
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let claims = URL_SAFE_NO_PAD.encode(format!(r#"{{"sub":"alice","exp":{}}}"#, now + 600));
    let unsigned = format!("{header}.{claims}.");
    let mut tampered = good.clone();
    tampered.replace_range(good.len() - 4.., "AAAA");
    for (authorization, what) in [
        (None, "missing"),
        (Some(format!("Bearer {forged}")), "forged"),
        (Some(format!("Bearer {expired}")), "expired"),
        (Some(format!("Bearer {unsigned}")), "alg none"),
        (Some(format!("Bearer {tampered}")), "tampered signature"),
        (Some(format!("Basic {good}")), "wrong scheme"),
        (Some("Bearer ".to_owned()), "empty"),
    ] {
        let presented = authorization.is_some();
        let mut request = http.get(format!("{}/me/packets?role=sent", api.base));
        if let Some(authorization) = authorization {
            request = request.header("authorization", authorization);
        }
        // The JWT authorizer's own answer, as API Gateway gives it: no handler ran.
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), 401, "{what}");
        let why = response.headers()["www-authenticate"].to_str().unwrap().to_owned();
        assert!(why.starts_with("Bearer"), "{what}: {why}");
        assert_eq!(why.contains(r#"error="invalid_token""#), presented, "{what}: {why}");
        assert_eq!(response.json::<Value>().await.unwrap(), json!({ "message": "Unauthorized" }), "{what}");
    }

    // Routes and methods API Gateway does not have: its own 404, never the app's.
    for (method, path) in [("GET", "/nowhere"), ("DELETE", "/packets"), ("PUT", "/me/wallet")] {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let response = http
            .request(method.clone(), format!("{}{path}", api.base))
            .header("authorization", &bearer)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 404, "{method} {path}");
        assert_eq!(response.json::<Value>().await.unwrap(), json!({ "message": "Not Found" }), "{method} {path}");
    }

    // Nothing secret in the logs, even at debug level.
    tokio::time::sleep(Duration::from_millis(1_500)).await; // one local settle tick too
    let logs = std::fs::read_to_string(&api.log).unwrap();
    assert!(logs.contains("request"), "the API did log its requests");
    for secret in [good.as_str(), forged.as_str(), expired.as_str(), SECRET] {
        assert!(!logs.contains(secret), "a token or the secret reached the logs");
    }
    assert!(!logs.contains(good.split('.').nth(2).unwrap()), "not even a token's signature");
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}
