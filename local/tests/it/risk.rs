//! Risk controls through the real handlers on the real Redis and DynamoDB Local: one user's
//! grab rate across packets (one grab at a time, and grabs coalesced into batches; counted
//! exactly, before each grab, and alongside it, within the stated bound), and account
//! holds placed and lifted by operators through the operators' API, each taking effect within
//! the stated bound (`HOLD_REFRESH_SECONDS`), recorded with its operator and reason.

use std::collections::HashMap;
use std::sync::Arc;

use crate::support::stack::Stack;
use crate::support::OwnRedis;
use futures::future::join_all;
use red_packets::adapters::RedisStore;
use red_packets::domain::risk::{GrabRate, RateCounting};
use red_packets::{Clock, Config};
use serde_json::{json, Value};

fn rated(mut config: Config, grabs: u32, counting: RateCounting) -> Config {
    config.grab_rate = Some(GrabRate { grabs, window_seconds: 60, counting });
    config
}

/// How many times Redis ran `command` since its statistics were last reset.
async fn calls(conn: &mut red_packets::adapters::redis::RedisConnection, command: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await.unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("cmdstat_{command}:calls=")))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |calls| calls.parse().unwrap())
}

/// `count` packets sent by alice, each as `body` says; their ids.
async fn send_packets(stack: &Stack, count: usize, body: Value) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..count {
        ids.push(stack.send("alice", body.clone()).await);
    }
    ids
}

/// `users` users (`fan-<n>`) each grabbing every one of `packets`, all at once; each answer
/// with its user.
async fn fan_out(stack: &Arc<Stack>, users: usize, packets: &[String]) -> Vec<(String, (u16, Value))> {
    let grabs = (0..users).flat_map(|user| packets.iter().map(move |id| (format!("fan-{user}"), id.clone())));
    join_all(grabs.map(|(user, id)| {
        let stack = stack.clone();
        async move { (user.clone(), stack.grab(&id, &user).await) }
    }))
    .await
}

/// A connection to the stack's Redis, its command statistics reset.
async fn fresh_stats(stack: &Stack) -> red_packets::adapters::redis::RedisConnection {
    let mut conn = RedisStore::new(&stack.config).connection().await.unwrap();
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut conn).await.unwrap();
    conn
}

/// Moves the stack's clock to the start of the next rate window, so a test's grabs share one.
fn to_next_window(stack: &Stack) {
    let now = stack.clock.now_ms();
    stack.clock.advance(60_000 - now % 60_000);
}

fn remaining(view: &Value) -> u64 {
    view["remaining_count"].as_u64().unwrap()
}

/// Three grabs a window: mallory's fourth packet answers 429 `grab_rate_limited` and takes
/// nothing, while another user grabs it; the next window lets her grab again. A repeat of her
/// own grab counts too (the limit is on calls).
#[tokio::test]
async fn one_users_grabs_across_packets_are_limited_per_window() {
    let stack = Stack::with_config("rate", rated(Config::from_env().unwrap(), 3, RateCounting::Exact)).await;
    let packets = send_packets(&stack, 5, json!({ "total_cents": 500, "count": 5 })).await;
    to_next_window(&stack);
    for id in &packets[..3] {
        let (status, body) = stack.grab(id, "mallory").await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, refused) = stack.grab(&packets[3], "mallory").await;
    assert_eq!((status, refused["error"]["code"].as_str()), (429, Some("grab_rate_limited")), "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("60 s"), "the window's end: {refused}");
    let (status, body) = stack.grab(&packets[3], "bob").await;
    assert_eq!(status, 200, "another user is not limited: {body}");
    let (_, view) = stack.view(&packets[3], "alice").await;
    assert_eq!(remaining(&view), 4, "the refused grab took nothing: {view}");
    let (status, _) = stack.grab(&packets[0], "mallory").await;
    assert_eq!(status, 429, "a repeat counts as a call");

    stack.clock.advance(60_000);
    let (status, body) = stack.grab(&packets[3], "mallory").await;
    assert_eq!((status, body["already_grabbed"].as_bool()), (200, Some(false)), "a new window: {body}");
}

/// A packet Redis lost is reloaded by the grab that asks the ledger while the others wait for
/// its verdict: with the rate on, each of those grabs is counted once, however often it asks
/// Redis again while waiting, and every one is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grabs_waiting_on_a_lookup_are_counted_once() {
    let stack =
        Arc::new(Stack::with_config("rate-lookup", rated(Config::from_env().unwrap(), 1, RateCounting::Exact)).await);
    let id = stack.send("alice", json!({ "total_cents": 1_000, "count": 10 })).await;
    to_next_window(&stack);
    stack.empty_redis(&[&id]).await;
    let answers = join_all((0..8).map(|n| {
        let (stack, id) = (stack.clone(), id.clone());
        async move { stack.grab(&id, &format!("waiter-{n}")).await }
    }))
    .await;
    for (status, body) in &answers {
        assert_eq!(*status, 200, "each waiter's one grab is within its limit of one: {body}");
    }
    let (status, again) = stack.grab(&id, "waiter-0").await;
    assert_eq!((status, again["error"]["code"].as_str()), (429, Some("grab_rate_limited")), "{again}");
}

/// The coalesced path applies the same limit per user: 40 users each grab 3 packets at once
/// (their grabs of one packet go to Redis in batches), under a limit of 2 a window. Each user
/// gets exactly 2 shares and one 429; every request is counted once (one `INCR` each); and the
/// grabs did go in batches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coalesced_path_limits_each_user_alike() {
    const USERS: usize = 40;
    let redis = OwnRedis::start();
    let stack = Stack::with_config("rate-batched", rated(redis.config(), 2, RateCounting::Exact)).await;
    let packets = send_packets(&stack, 3, json!({ "total_cents": 10_000, "count": 100 })).await;
    to_next_window(&stack);
    let mut conn = fresh_stats(&stack).await;

    let stack = Arc::new(stack);
    let answers = fan_out(&stack, USERS, &packets).await;
    let mut by_user: HashMap<String, (usize, usize)> = HashMap::new();
    for (user, (status, body)) in &answers {
        let counts = by_user.entry(user.clone()).or_default();
        match status {
            200 => counts.0 += 1,
            429 => {
                assert_eq!(body["error"]["code"], "grab_rate_limited", "{body}");
                counts.1 += 1;
            }
            _ => panic!("{user}: {status} {body}"),
        }
    }
    assert!(by_user.values().all(|counts| *counts == (2, 1)), "two shares and one refusal each: {by_user:?}");

    assert_eq!(calls(&mut conn, "incr").await, (USERS * 3) as u64, "every grab request counted once");
    assert!(calls(&mut conn, "lindex").await > 0, "some grabs went to Redis in batches (grab_many.lua)");
    let taken: u64 = join_all(packets.iter().map(|id| stack.view(id, "alice")))
        .await
        .iter()
        .map(|(_, view)| 100 - remaining(view))
        .sum();
    assert_eq!(taken, (USERS * 2) as u64, "the shares taken are the grabs admitted");
}

/// Counted alongside the grab, a user passes the limit by at most one grab per instance that
/// serves them. Under a limit of three, mallory's grabs go through two instances (two execution
/// environments, one Redis): three within the limit; the fourth, on the second instance, is
/// counted past it but served (its count went with the grab), and that instance refuses her
/// next grab without a call; the first instance serves one more, learns, and refuses too. Five
/// shares, five counts; the refusals take nothing and count nothing; the next window serves
/// her again.
#[tokio::test]
async fn counted_alongside_a_user_passes_the_limit_by_one_grab_per_instance() {
    let first =
        Stack::with_config("rate-alongside", rated(Config::from_env().unwrap(), 3, RateCounting::Alongside)).await;
    let second = first.on_redis(&first.config.redis.url).await;
    let packets = send_packets(&first, 6, json!({ "total_cents": 500, "count": 5 })).await;
    to_next_window(&first);
    let window = first.clock.now_ms() / 60_000;
    let counter = format!("{}:{{u:mallory}}:grabs:{window}", first.config.redis.key_prefix);
    let mut conn = first.store().connection().await.unwrap();

    for id in &packets[..3] {
        let (status, body) = first.grab(id, "mallory").await;
        assert_eq!(status, 200, "within the limit: {body}");
    }
    let (status, past) = second.grab(&packets[3], "mallory").await;
    assert_eq!((status, past["amount_cents"].as_u64().is_some()), (200, true), "counted past it, served: {past}");
    let (status, refused) = second.grab(&packets[4], "mallory").await;
    assert_eq!((status, refused["error"]["code"].as_str()), (429, Some("grab_rate_limited")), "{refused}");
    let (status, past) = first.grab(&packets[4], "mallory").await;
    assert_eq!(status, 200, "the first instance has not seen her past the limit: {past}");
    for stack in [&first, &second] {
        let (status, refused) = stack.grab(&packets[5], "mallory").await;
        assert_eq!((status, refused["error"]["code"].as_str()), (429, Some("grab_rate_limited")), "{refused}");
    }
    let counted: u64 = redis::cmd("GET").arg(&counter).query_async(&mut conn).await.unwrap();
    assert_eq!(counted, 5, "each served grab counted once, the refusals not at all");
    let (_, view) = first.view(&packets[5], "alice").await;
    assert_eq!(remaining(&view), 5, "the refused grabs took nothing: {view}");
    let (status, body) = first.grab(&packets[5], "bob").await;
    assert_eq!(status, 200, "another user is not limited: {body}");

    first.clock.advance(60_000);
    for stack in [&first, &second] {
        let (status, body) = stack.grab(&packets[5], "mallory").await;
        assert_eq!(status, 200, "a new window: {body}");
    }
}

/// Counted alongside, the coalesced path bounds each user alike: 40 users each grab 3 packets at
/// once under a limit of 2. Every request is counted once and goes with its batch's script, so
/// each user's third grab, counted past the limit, is served: 3 shares each, the limit plus the
/// user's grabs in flight. Then every user's grab of a fourth packet is refused by the instance
/// without a call: no count, no share.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counted_alongside_the_coalesced_path_refuses_once_a_count_is_past_the_limit() {
    const USERS: usize = 40;
    let redis = OwnRedis::start();
    let stack = Stack::with_config("rate-alongside-batched", rated(redis.config(), 2, RateCounting::Alongside)).await;
    let packets = send_packets(&stack, 4, json!({ "total_cents": 10_000, "count": 100 })).await;
    to_next_window(&stack);
    let mut conn = fresh_stats(&stack).await;

    let stack = Arc::new(stack);
    let answers = fan_out(&stack, USERS, &packets[..3]).await;
    for (user, (status, body)) in &answers {
        assert_eq!(*status, 200, "{user}: every grab in flight is served: {body}");
    }
    assert_eq!(calls(&mut conn, "incr").await, (USERS * 3) as u64, "every grab request counted once");
    assert!(calls(&mut conn, "lindex").await > 0, "some grabs went to Redis in batches (grab_many.lua)");

    for (_, (status, body)) in &fan_out(&stack, USERS, &packets[3..]).await {
        assert_eq!((*status, body["error"]["code"].as_str()), (429, Some("grab_rate_limited")), "{body}");
    }
    assert_eq!(calls(&mut conn, "incr").await, (USERS * 3) as u64, "the refusals made no count");
    let (_, view) = stack.view(&packets[3], "alice").await;
    assert_eq!(remaining(&view), 100, "and took nothing: {view}");
}

/// A count that fails decides nothing by itself. Redis refuses the counter's `INCR` to the
/// functions' Redis user (an ACL: every command but `INCR`), so every count fails while the
/// scripts run. Counted alongside, each grab is served and nobody is refused for the failed
/// count, over a limit of one: the rate is a control, never a grab's failure. Counted exactly,
/// the grab waits on its count: it answers 503 and takes nothing.
#[tokio::test]
async fn a_failed_count_refuses_nobody_alongside_and_fails_the_grab_exactly() {
    let redis = OwnRedis::start();
    let mut admin =
        redis::Client::open(redis.config().redis.url).unwrap().get_multiplexed_async_connection().await.unwrap();
    let acl = ["SETUSER", "uncounted", "on", ">secret", "allkeys", "allchannels", "allcommands", "-incr"];
    let _: () = redis::cmd("ACL").arg(&acl).query_async(&mut admin).await.unwrap();
    let uncounted = |counting| {
        let mut config = rated(redis.config(), 1, counting);
        config.redis.url = format!("redis://uncounted:secret@127.0.0.1:{}", redis.port());
        config
    };

    let alongside = Stack::with_config("rate-uncounted", uncounted(RateCounting::Alongside)).await;
    let packets = send_packets(&alongside, 3, json!({ "total_cents": 300, "count": 3 })).await;
    to_next_window(&alongside);
    for id in &packets {
        let (status, body) = alongside.grab(id, "mallory").await;
        assert_eq!(status, 200, "served though no count succeeded: {body}");
    }

    let exact = Stack::with_config("rate-uncounted-exact", uncounted(RateCounting::Exact)).await;
    let id = exact.send("alice", json!({ "total_cents": 300, "count": 3 })).await;
    to_next_window(&exact);
    let (status, body) = exact.grab(&id, "mallory").await;
    assert_eq!(status, 503, "the grab waits on its count: {body}");
    let (_, view) = exact.view(&id, "alice").await;
    assert_eq!(remaining(&view), 3, "and took nothing: {view}");
}

/// An operator holds mallory from everything; within `HOLD_REFRESH_SECONDS` her grabs and sends
/// answer 403 `account_held` and take nothing; placing the same hold again changes nothing; the
/// hold is listed with its operator and reason; another operator lifts it and within the bound
/// she grabs again; the audit trail has both steps, each with its operator and reason.
#[tokio::test]
async fn a_hold_is_enforced_within_its_bound_and_lifted_the_same_way() {
    let stack = Stack::new("holds").await;
    let refresh = stack.config.hold_refresh.as_millis() as i64;
    let id = stack.send("alice", json!({ "total_cents": 500, "count": 5 })).await;
    let (status, _) = stack.grab(&id, "bob").await;
    assert_eq!(status, 200, "the grab function has read the holds: none");

    const HOLD: &str = "POST /ops/v1/users/{user}/hold";
    const LIFT: &str = "POST /ops/v1/users/{user}/hold/lift";
    let mallory = [("user", "mallory")];
    let hold = json!({ "scope": "all", "reason": "auto-grab script, ticket 42" });
    let (status, placed) = stack.ops("anna", HOLD, &mallory, Some(&hold)).await;
    assert_eq!(status, 200, "{placed}");
    assert_eq!(placed["changed"], true, "{placed}");
    assert_eq!(placed["hold"]["operator"], "anna", "the signed-in operator is the operator");

    stack.clock.advance(refresh);
    let (status, held) = stack.grab(&id, "mallory").await;
    assert_eq!((status, held["error"]["code"].as_str()), (403, Some("account_held")), "{held}");
    let (status, held) = stack.try_send("mallory", &json!({ "total_cents": 100, "count": 1 })).await;
    assert_eq!((status, held["error"]["code"].as_str()), (403, Some("account_held")), "{held}");
    let (_, view) = stack.view(&id, "alice").await;
    assert_eq!(remaining(&view), 4, "the held grab took nothing: {view}");

    let (status, again) = stack.ops("ben", HOLD, &mallory, Some(&hold)).await;
    assert_eq!((status, &again["changed"]), (200, &json!(false)), "{again}");
    assert_eq!(again["hold"]["operator"], "anna", "the hold in force is anna's");
    let (status, listed) = stack.ops("ben", "GET /ops/v1/holds", &[], None).await;
    assert_eq!(status, 200, "{listed}");
    let holds = listed["items"].as_array().unwrap();
    assert_eq!(holds.len(), 1, "{listed}");
    assert_eq!((holds[0]["user"].as_str(), holds[0]["scope"].as_str()), (Some("mallory"), Some("all")));
    assert_eq!(holds[0]["reason"], "auto-grab script, ticket 42");

    let lift = json!({ "reason": "appeal upheld" });
    let (status, lifted) = stack.ops("ben", LIFT, &mallory, Some(&lift)).await;
    assert_eq!((status, &lifted["changed"]), (200, &json!(true)), "{lifted}");
    let (_, twice) = stack.ops("ben", LIFT, &mallory, Some(&lift)).await;
    assert_eq!(twice["changed"], false, "lifting no hold changes nothing: {twice}");
    stack.clock.advance(refresh);
    let (status, body) = stack.grab(&id, "mallory").await;
    assert_eq!(status, 200, "lifted within the bound: {body}");

    let day = red_packets::clock::rfc3339(stack.clock.now_ms())[..10].to_owned();
    let (status, audit) = stack.ops("ben", "GET /ops/v1/audit/{day}", &[("day", &day)], None).await;
    assert_eq!(status, 200, "{audit}");
    let steps: Vec<(String, String, String)> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            let text = |field: &str| entry[field].as_str().unwrap().to_owned();
            (text("action"), text("actor"), text("reason"))
        })
        .collect();
    assert_eq!(
        steps,
        vec![
            ("hold_placed".into(), "anna".into(), "all: auto-grab script, ticket 42".into()),
            ("hold_lifted".into(), "ben".into(), "appeal upheld".into()),
        ],
        "one entry a change, none for the repeats"
    );
}

/// A ring held from money out: within `HOLD_REFRESH_SECONDS` its withdrawal answers 403
/// `account_held` and nothing is debited, while it may still send (the scope is money out
/// alone); from the hold's `expires_at` on it withdraws again at once, without waiting for a
/// refresh; an `all` hold stops withdrawals too, and its lift frees them within the bound. An
/// expiry in the past is refused naming `expires_at`.
#[tokio::test]
async fn a_money_out_hold_stops_withdrawals_until_it_expires_or_is_lifted() {
    use red_packets::domain::wallet::TopUp;
    use red_packets::domain::{Funds, UserId};
    use red_packets::ports::Wallets;

    let mut config = Config::from_env().expect("configuration");
    config.funds = Funds::Wallet;
    let stack = Stack::with_config("holds-money-out", config).await;
    let refresh = stack.config.hold_refresh.as_millis() as i64;
    let ring = UserId::from_claim("ring-7").unwrap();
    let topup = TopUp { user: ring.clone(), amount_cents: 5_000, reference: "pay-ring-7".into() };
    stack.ledger.top_up(&topup, stack.clock.now_ms()).await.expect("top-up");
    let ask = json!({ "amount_cents": 100, "destination": "card-7" });
    let (status, body) = stack.withdraw("ring-7", &ask, "out-1").await;
    assert_eq!(status, 201, "no hold yet (the book is read): {body}");

    let now = stack.clock.now_ms();
    const HOLD: &str = "POST /ops/v1/users/{user}/hold";
    let ring_7 = [("user", "ring-7")];
    let past = json!({ "scope": "money_out", "reason": "ring", "expires_at": red_packets::clock::rfc3339(now - 1) });
    let (status, refused) = stack.ops("anna", HOLD, &ring_7, Some(&past)).await;
    assert_eq!((status, refused["error"]["field"].as_str()), (400, Some("expires_at")), "{refused}");

    let expires_at = red_packets::clock::rfc3339(now + 3 * refresh);
    let hold = json!({ "scope": "money_out", "reason": "cash-out ring, ticket 4713", "expires_at": expires_at });
    let (status, placed) = stack.ops("anna", HOLD, &ring_7, Some(&hold)).await;
    assert_eq!((status, &placed["hold"]["expires_at"]), (200, &json!(expires_at)), "{placed}");
    stack.clock.advance(refresh);
    let (status, held) = stack.withdraw("ring-7", &ask, "out-2").await;
    assert_eq!((status, held["error"]["code"].as_str()), (403, Some("account_held")), "{held}");
    assert_eq!(stack.ledger.balance(&ring).await.unwrap(), 4_900, "nothing debited");
    let sent = stack.try_send("ring-7", &json!({ "total_cents": 100, "count": 1 })).await;
    assert_eq!(sent.0, 201, "money out alone: the ring may still send: {}", sent.1);

    // At the expiry, not a refresh later: the book compares it with the clock at each check.
    stack.clock.advance(3 * refresh - refresh);
    let (status, body) = stack.withdraw("ring-7", &ask, "out-3").await;
    assert_eq!(status, 201, "expired: {body}");
    assert_eq!(stack.ledger.balance(&ring).await.unwrap(), 4_700);

    let all = json!({ "scope": "all", "reason": "fraud confirmed" });
    let (status, placed) = stack.ops("ben", HOLD, &ring_7, Some(&all)).await;
    assert_eq!((status, &placed["changed"]), (200, &json!(true)), "another scope replaces it: {placed}");
    stack.clock.advance(refresh);
    let (status, held) = stack.withdraw("ring-7", &ask, "out-4").await;
    assert_eq!((status, held["error"]["code"].as_str()), (403, Some("account_held")), "all stops money out: {held}");
    let lift = json!({ "reason": "cleared" });
    assert_eq!(stack.ops("anna", "POST /ops/v1/users/{user}/hold/lift", &ring_7, Some(&lift)).await.0, 200);
    stack.clock.advance(refresh);
    let (status, body) = stack.withdraw("ring-7", &ask, "out-4").await;
    assert_eq!(status, 201, "lifted within the bound: {body}");
    assert_eq!(stack.ledger.balance(&ring).await.unwrap(), 4_600);
}
