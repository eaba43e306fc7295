//! Send and grab end to end, through the real handlers, against the Redis and DynamoDB Local
//! that `make test` starts (REDIS_URL, AWS_ENDPOINT_URL_DYNAMODB).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use lambda_http::Request;
use local::{Functions, LocalAuthorizer};
use red_packets::adapters::redis::keys::parse_log_entry;
use red_packets::adapters::RedisStore;
use red_packets::clock::parse_rfc3339;
use red_packets::domain::PacketId;
use red_packets::Config;
use red_packets_testkit::events;
use red_packets_testkit::ManualClock;
use serde_json::{json, Value};

const SEND_EVENT: &str = include_str!("../../../events/send.json");
const GRAB_EVENT: &str = include_str!("../../../events/grab.json");

async fn functions() -> Arc<Functions> {
    let mut config = Config::from_env().expect("configuration");
    // Loaded 2-core machines answer slowly; 503s under load are another test's subject.
    config.redis.timeout = std::time::Duration::from_secs(10);
    Arc::new(local::functions(&config, LocalAuthorizer::new("test")).await.expect("DynamoDB Local is reachable"))
}

fn send_request(sender: &str, body: Value) -> Request {
    let mut event: Value = serde_json::from_str(SEND_EVENT).unwrap();
    events::set_caller(&mut event, Some(sender));
    events::set_header(&mut event, "Idempotency-Key", Some(&red_packets::domain::PacketId::random().to_string()));
    events::set_body(&mut event, &body.to_string());
    events::to_request(&event).unwrap()
}

fn grab_request(packet_id: &str, user: &str) -> Request {
    let mut event: Value = serde_json::from_str(GRAB_EVENT).unwrap();
    events::set_packet_id(&mut event, packet_id);
    events::set_caller(&mut event, Some(user));
    events::to_request(&event).unwrap()
}

async fn respond(response: lambda_http::Response<lambda_http::Body>) -> (u16, Value) {
    (response.status().as_u16(), serde_json::from_slice(response.body().as_ref()).unwrap())
}

async fn send(functions: &Functions, body: Value) -> Value {
    let (status, packet) = respond(send::handle(&functions.send, send_request("alice", body)).await.unwrap()).await;
    assert_eq!(status, 201, "{packet}");
    packet
}

async fn grab(functions: &Functions, packet_id: &str, user: &str) -> (u16, Value) {
    respond(grab::handle(&functions.grab, grab_request(packet_id, user)).await.unwrap()).await
}

/// 5,000 concurrent grabs from 1,000 users (5 attempts each) on a 100-share packet: exactly 100
/// grabbed, every other answer already_grabbed or sold_out, nobody twice, the sum exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_concurrent_grabs_on_a_hundred_shares() {
    let functions = functions().await;
    let packet = send(&functions, json!({ "total_cents": 20_000, "count": 100 })).await;
    let id = packet["packet_id"].as_str().unwrap().to_owned();

    let mut tasks = Vec::with_capacity(5_000);
    for attempt in 0..5 {
        for user in 0..1_000 {
            let functions = functions.clone();
            let id = id.clone();
            tasks.push(tokio::spawn(async move {
                let user = format!("user-{user}");
                let (status, body) = grab(&functions, &id, &user).await;
                (attempt, user, status, body)
            }));
        }
    }

    let mut grabbed: HashMap<String, u64> = HashMap::new();
    let mut answered: HashMap<String, u64> = HashMap::new();
    let (mut already, mut sold_out) = (0, 0);
    for task in tasks {
        let (_, user, status, body) = task.await.unwrap();
        match (status, body["already_grabbed"].as_bool()) {
            (200, Some(false)) => {
                let amount = body["amount_cents"].as_u64().unwrap();
                assert!(grabbed.insert(user.clone(), amount).is_none(), "{user} grabbed twice");
                answered.insert(user, amount);
            }
            (200, Some(true)) => {
                already += 1;
                let amount = body["amount_cents"].as_u64().unwrap();
                if let Some(previous) = answered.insert(user.clone(), amount) {
                    assert_eq!(previous, amount, "{user} was told two different amounts");
                }
            }
            (409, _) => {
                assert_eq!(body["error"]["code"], "sold_out");
                sold_out += 1;
            }
            other => panic!("unexpected answer {other:?}: {body}"),
        }
    }
    assert_eq!(grabbed.len(), 100, "exactly 100 grabs succeed");
    assert_eq!(grabbed.values().sum::<u64>(), 20_000, "the grabs sum to the total");
    assert!(grabbed.values().all(|&amount| amount >= 1));
    assert_eq!(already + sold_out + 100, 5_000);
    for (user, amount) in &answered {
        assert_eq!(grabbed.get(user), Some(amount), "{user}: a repeat answer matches a real grab");
    }

    // Redis agrees: 100 users recorded, 100 grabs in the settle log after its head mark, no share
    // left in the pool but its two end marks (load.lua).
    let config = Config::from_env().unwrap();
    let store = RedisStore::new(&config);
    let mut conn = store.connection().await.unwrap();
    let keys = store.keys(&PacketId::parse(&id).unwrap());
    let fields: HashMap<String, String> = redis::cmd("HGETALL").arg(&keys.packet).query_async(&mut conn).await.unwrap();
    let users = fields.keys().filter(|field| field.starts_with(':')).count();
    let mut log: Vec<String> =
        redis::cmd("LRANGE").arg(&keys.grabs).arg(0).arg(-1).query_async(&mut conn).await.unwrap();
    assert_eq!(log.remove(0), "~", "the log's head mark");
    let pool: Vec<String> = redis::cmd("LRANGE").arg(&keys.pool).arg(0).arg(-1).query_async(&mut conn).await.unwrap();
    assert_eq!((users, log.len(), pool), (100, 100, vec!["~".to_owned(), "~".to_owned()]));
    let logged: HashSet<String> =
        log.iter().map(|entry| parse_log_entry(entry).expect("a log entry").user.as_str().to_owned()).collect();
    assert_eq!(logged, grabbed.keys().cloned().collect::<HashSet<_>>());
}

/// The seeds' example: 10,000 cents in 10 lucky shares.
#[tokio::test]
async fn the_seeds_example_ten_thousand_cents_in_ten_shares() {
    let functions = functions().await;
    for split in ["double_average", "line_cut"] {
        let packet =
            send(&functions, json!({ "total_cents": 10_000, "count": 10, "kind": "lucky", "split": split })).await;
        let id = packet["packet_id"].as_str().unwrap();
        let mut amounts = Vec::new();
        for user in 0..10 {
            let (status, body) = grab(&functions, id, &format!("friend-{user}")).await;
            assert_eq!(status, 200, "{body}");
            assert_eq!(body["remaining_count"], 9 - user);
            amounts.push(body["amount_cents"].as_u64().unwrap());
        }
        assert_eq!(amounts.iter().sum::<u64>(), 10_000);
        assert!(amounts.iter().all(|&amount| amount >= 1));

        let (status, body) = grab(&functions, id, "friend-10").await;
        assert_eq!((status, body["error"]["code"].as_str()), (409, Some("sold_out")));
        let (status, body) = grab(&functions, id, "friend-3").await;
        assert_eq!(status, 200);
        assert_eq!(body["already_grabbed"], true);
        assert_eq!(body["amount_cents"].as_u64(), Some(amounts[3]));
    }
}

/// Fixed packets hand out equal shares.
#[tokio::test]
async fn fixed_packets_hand_out_equal_shares() {
    let functions = functions().await;
    let packet = send(&functions, json!({ "total_cents": 900, "count": 3, "kind": "fixed" })).await;
    assert_eq!(packet["split"], Value::Null);
    let id = packet["packet_id"].as_str().unwrap();
    for user in ["a", "b", "c"] {
        let (status, body) = grab(&functions, id, user).await;
        assert_eq!((status, body["amount_cents"].as_u64()), (200, Some(300)));
    }
}

/// No grab succeeds at or after `expires_at`; one millisecond before, it does.
#[tokio::test]
async fn no_grab_succeeds_at_or_after_expiry() {
    let config = Config::from_env().unwrap();
    let clock = Arc::new(ManualClock::starting_now());
    let functions = local::functions_with_clock(&config, LocalAuthorizer::new("test"), clock.clone()).await.unwrap();
    let grabber = &functions.grab;

    let packet = send(&functions, json!({ "total_cents": 300, "count": 3, "expires_in_seconds": 60 })).await;
    let id = packet["packet_id"].as_str().unwrap();
    let expires_at = parse_rfc3339(packet["expires_at"].as_str().unwrap()).unwrap();
    let grab_at = |user: &str| grab::handle(grabber, grab_request(id, user));

    clock.advance(expires_at - 1 - red_packets::Clock::now_ms(clock.as_ref()));
    let (status, _) = respond(grab_at("early").await.unwrap()).await;
    assert_eq!(status, 200, "one millisecond before expiry a grab succeeds");

    clock.advance(1);
    let (status, body) = respond(grab_at("on-time").await.unwrap()).await;
    assert_eq!((status, body["error"]["code"].as_str()), (410, Some("expired")), "at expires_at");
    clock.advance(3_600_000);
    let (status, _) = respond(grab_at("late").await.unwrap()).await;
    assert_eq!(status, 410, "after expires_at");
    let (status, body) = respond(grab_at("early").await.unwrap()).await;
    assert_eq!((status, body["already_grabbed"].as_bool()), (200, Some(true)), "a repeat still answers with the share");
}

/// The local API over real HTTP: bearer tokens, routes, the contract's answers.
#[tokio::test]
async fn the_local_api_serves_send_and_grab_over_http() {
    let config = Config::from_env().unwrap();
    let functions = local::functions(&config, LocalAuthorizer::new("http-test")).await.unwrap();
    let authorizer = functions.authorizer.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = local::router(Arc::new(functions));
    tokio::spawn(async move { axum::serve(listener, app).await });
    let http = reqwest::Client::new();
    let bearer = |user: &str| format!("Bearer {}", authorizer.token(user, 60));

    let sent = http
        .post(format!("{base}/packets"))
        .header("authorization", bearer("alice"))
        .header("idempotency-key", "http-send-1")
        .json(&json!({ "total_cents": 500, "count": 5, "greeting": "新年快乐" }))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 201);
    let packet: Value = sent.json().await.unwrap();
    let id = packet["packet_id"].as_str().unwrap();

    let grabbed =
        http.post(format!("{base}/packets/{id}/grab")).header("authorization", bearer("bob")).send().await.unwrap();
    assert_eq!(grabbed.status(), 200);
    let body: Value = grabbed.json().await.unwrap();
    assert_eq!(body["user"], "bob", "identity comes from the token");

    let forged = LocalAuthorizer::new("someone-else").token("bob", 60);
    for authorization in [None, Some("Bearer nonsense".to_owned()), Some(format!("Bearer {forged}"))] {
        let mut request = http.post(format!("{base}/packets/{id}/grab"));
        if let Some(authorization) = authorization {
            request = request.header("authorization", authorization);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 401);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body, json!({ "message": "Unauthorized" }), "the JWT authorizer's own answer");
    }

    let unknown = http
        .post(format!("{base}/packets/{}/grab", PacketId::random()))
        .header("authorization", bearer("bob"))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

/// Over the stage's throttling, the local API answers as API Gateway does: 429
/// `{"message":"Too Many Requests"}` before the authorizer and the function, per route setting,
/// never the app's own 429 shape.
#[tokio::test]
async fn over_its_throttling_the_local_api_answers_429_as_api_gateway_does() {
    let config = Config::from_env().unwrap();
    let mut functions = local::functions(&config, LocalAuthorizer::new("throttle-test")).await.unwrap();
    functions.throttle = local::Throttle::new((0.0, 2), (0.0, 1), (0.0, 1));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, local::router(Arc::new(functions))).await });
    let http = reqwest::Client::new();
    let grab = format!("{base}/packets/{}/grab", PacketId::random());

    let statuses = [
        http.post(&grab).send().await.unwrap().status().as_u16(),
        http.post(&grab).send().await.unwrap().status().as_u16(),
    ];
    assert_eq!(statuses, [401, 401], "within the burst, the authorizer answers (no token)");
    let throttled = http.post(&grab).send().await.unwrap();
    assert_eq!(throttled.status(), 429);
    let body: Value = throttled.json().await.unwrap();
    assert_eq!(body, json!({ "message": "Too Many Requests" }), "the gateway's own shape, not the app's error");

    assert_eq!(http.get(format!("{base}/me/wallet")).send().await.unwrap().status(), 401, "the other routes' bucket");
    assert_eq!(http.get(format!("{base}/me/wallet")).send().await.unwrap().status(), 429);
    let withdrawals = format!("{base}/me/withdrawals");
    assert_eq!(http.post(&withdrawals).send().await.unwrap().status(), 401, "the withdrawal route's own bucket");
    assert_eq!(http.post(&withdrawals).send().await.unwrap().status(), 429);
}
