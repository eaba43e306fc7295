//! Reads at campaign scale, through the real query handler on Redis and DynamoDB Local: a page
//! of a packet's view is that page whatever the packet's size (the same answer as the whole
//! packet's page); a poll's tag changes on every path that changes its answer, each path its
//! own test; a poll that finds nothing new is answered from a version (an open packet's with one
//! Redis command and no DynamoDB read, a finalised one's with no read at all); the shared view
//! carries none of a caller's own fields.

use std::sync::Arc;

use crate::support::stack::Stack;
use crate::support::OwnRedis;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::domain::adjustment::{AdjustmentApproval, AdjustmentProposal, Direction};
use red_packets::domain::grab::LoggedGrab;
use red_packets::domain::recovery::{Casualty, Remedy};
use red_packets::domain::{Funds, PacketId, UserId};
use red_packets::packets::current_view;
use red_packets::ports::{Adjustments, Ledger, SettleLedger};
use red_packets::Clock;
use red_packets_testkit::events;
use serde_json::{json, Value};

const QUERY_EVENT: &str = include_str!("../../../events/query.json");
const SHARED_EVENT: &str = include_str!("../../../events/shared.json");
const WALLET_EVENT: &str = include_str!("../../../events/wallet.json");
const HISTORY_EVENT: &str = include_str!("../../../events/history.json");

/// One answer to a poll: its status, body, `ETag` and `Cache-Control`.
#[derive(Debug)]
struct Polled {
    status: u16,
    body: Value,
    tag: String,
    caching: String,
}

/// `event` by `user` (none for the shared view) on packet `id`, `?query`, with `If-None-Match:
/// tag` when given, through `service`.
async fn poll_on(
    service: &query::QueryService<impl red_packets::ports::LiveStore, impl red_packets::ports::Ledger>,
    template: &str,
    user: Option<&str>,
    id: Option<&str>,
    query: &str,
    tag: Option<&str>,
) -> Polled {
    let mut event: Value = serde_json::from_str(template).unwrap();
    if let Some(id) = id {
        events::set_packet_id(&mut event, id);
    }
    if let Some(user) = user {
        events::set_caller(&mut event, Some(user));
    }
    event["rawQueryString"] = Value::String(query.to_owned());
    event.as_object_mut().unwrap().remove("queryStringParameters");
    if let Some(tag) = tag {
        event["headers"]["if-none-match"] = Value::String(tag.to_owned());
    }
    let response = query::handle(service, events::to_request(&event).unwrap()).await.unwrap();
    let header = |name: &str| response.headers().get(name).map(|value| value.to_str().unwrap().to_owned());
    let body = if response.body().is_empty() { Value::Null } else { serde_json::from_slice(response.body()).unwrap() };
    Polled {
        status: response.status().as_u16(),
        tag: header("etag").unwrap_or_default(),
        caching: header("cache-control").unwrap_or_default(),
        body,
    }
}

async fn shared(stack: &Stack, id: &str, query: &str, tag: Option<&str>) -> Polled {
    poll_on(&stack.functions.query, SHARED_EVENT, None, Some(id), query, tag).await
}

async fn own(stack: &Stack, id: &str, user: &str, tag: Option<&str>) -> Polled {
    poll_on(&stack.functions.query, QUERY_EVENT, Some(user), Some(id), "", tag).await
}

async fn wallet(stack: &Stack, user: &str, tag: Option<&str>) -> Polled {
    poll_on(&stack.functions.query, WALLET_EVENT, Some(user), None, "", tag).await
}

async fn history(stack: &Stack, user: &str, role: &str, tag: Option<&str>) -> Polled {
    poll_on(&stack.functions.query, HISTORY_EVENT, Some(user), None, &format!("role={role}"), tag).await
}

/// A stack whose senders have money: `alice` holds 1,000.00.
async fn funded(name: &str) -> Stack {
    let mut config = red_packets::Config::from_env().unwrap();
    config.limits.max_count = 1_100;
    config.funds = Funds::Wallet;
    let stack = Stack::with_config(name, config).await;
    stack.top_up("alice", 100_000).await;
    stack
}

/// Asserts `tag` still gets a 304 of the shared view, then that `change` makes it a 200 with
/// another tag; returns the new answer.
async fn changed_by(stack: &Stack, id: &str, tag: &str) -> Polled {
    let again = shared(stack, id, "", Some(tag)).await;
    assert_ne!(again.status, 304, "the tag {tag} still named the view after the change");
    assert_eq!(again.status, 200, "{:?}", again.body);
    assert_ne!(again.tag, tag);
    again
}

/// Every page of an open packet of 1,100 grabs, then of the same packet settled, is the page of
/// the whole packet's view: the page read (Redis's log range while open, the ledger's share
/// claims once settled) answers what reading everything answered. The settled one is kept a
/// year; the open one 2 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_read_alone_is_the_page_of_the_whole_packet() {
    let stack = funded("pages").await;
    let id = stack.send("alice", json!({ "total_cents": 3_300, "count": 1_100, "expires_in_seconds": 60 })).await;
    let grabs = futures::future::join_all((0..1_099).map(|n| {
        let stack = &stack;
        let id = &id;
        async move { stack.grab(id, &format!("user-{n}")).await.0 }
    }))
    .await;
    assert!(grabs.iter().all(|status| *status == 200));
    let packet_id = PacketId::parse(&id).unwrap();
    let whole = |from: u32| {
        let stack = &stack;
        let packet_id = &packet_id;
        async move {
            let view = current_view(
                &stack.store(),
                &stack.ledger,
                packet_id,
                &UserId::from_claim("*").unwrap(),
                stack.clock.now_ms(),
            )
            .await
            .unwrap()
            .unwrap()
            .page(from);
            serde_json::to_value(view.shared()).unwrap()
        }
    };
    let same = |read: &Value, whole: &Value| {
        let mut read = read.clone();
        read.as_object_mut().unwrap().remove("currency");
        assert_eq!(&read, whole);
    };
    for from in [1, 1_001, 1_100, 1_200] {
        let page = shared(&stack, &id, &format!("grabs_from={from}"), None).await;
        assert_eq!((page.status, page.caching.as_str()), (200, "public, max-age=2"), "{from}");
        same(&page.body, &whole(from).await);
    }
    assert_eq!(stack.grab(&id, "user-last").await.0, 200);
    let sold_out = shared(&stack, &id, "grabs_from=1001", None).await;
    same(&sold_out.body, &whole(1_001).await);
    assert!(sold_out.body["best_luck"]["user"].is_string(), "best luck, found from the split: {}", sold_out.body);

    stack.settle_through(3).await;
    for from in [1, 1_001, 1_101] {
        let page = shared(&stack, &id, &format!("grabs_from={from}"), None).await;
        assert_eq!(
            (page.status, page.caching.as_str(), page.body["settled"].as_bool()),
            (200, "public, max-age=31536000, immutable", Some(true)),
            "{from}"
        );
        same(&page.body, &whole(from).await);
    }
}

/// A finalised packet's tag is answered with no read at all: the same poll through a query
/// function whose Redis and DynamoDB are both unreachable is a 304, while a poll without the tag
/// is a 503. An open packet's tag needs Redis alone: one command (`HMGET`, counted on a Redis of
/// this test's own) and no DynamoDB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_that_finds_nothing_new_reads_one_version_or_nothing() {
    let redis = OwnRedis::start();
    let mut config = redis.config();
    config.redis.timeout = std::time::Duration::from_secs(2);
    config.funds = Funds::Wallet;
    let stack = Stack::with_config("versions", config).await;
    stack.top_up("alice", 100_000).await;
    let id = stack.send("alice", json!({ "total_cents": 300, "count": 3, "expires_in_seconds": 60 })).await;
    assert_eq!(stack.grab(&id, "bob").await.0, 200);
    let open = shared(&stack, &id, "", None).await;

    let dead_ledger = {
        let client = DynamoLedger::client_from_env().unwrap();
        let client = aws_sdk_dynamodb::Client::from_conf(
            client.config().to_builder().endpoint_url("http://127.0.0.1:9").build(),
        );
        DynamoLedger::new(client, &stack.config)
    };
    let redis_only = query::QueryService::with_clock(
        Arc::new(RedisStore::new(&stack.config)),
        dead_ledger.clone(),
        stack.clock.clone(),
    );
    // One connection reads the counters (a new one's handshake is counted too), and the poll's
    // store has made its own before the count begins.
    let counter = RedisStore::new(&stack.config);
    let mut conn = counter.connection().await.unwrap();
    assert_eq!(poll_on(&redis_only, SHARED_EVENT, None, Some(&id), "", Some(&open.tag)).await.status, 304);
    let before = command_calls(&mut conn).await;
    let unchanged = poll_on(&redis_only, SHARED_EVENT, None, Some(&id), "", Some(&open.tag)).await;
    // INFO itself is one call each time it is read.
    let used = command_calls(&mut conn).await - before - 1;
    assert_eq!((unchanged.status, &unchanged.tag, used), (304, &open.tag, 1), "one HMGET, no DynamoDB");

    for user in ["carol", "dave"] {
        assert_eq!(stack.grab(&id, user).await.0, 200);
    }
    stack.settle_through(3).await;
    let settled = shared(&stack, &id, "", None).await;
    assert_eq!(settled.body["settled"], true, "{:?}", settled.body);
    let mut nothing = stack.config.clone();
    nothing.redis.url = "redis://127.0.0.1:9".into();
    nothing.redis.timeout = std::time::Duration::from_millis(200);
    let unreachable =
        query::QueryService::with_clock(Arc::new(RedisStore::new(&nothing)), dead_ledger, stack.clock.clone());
    let unchanged = poll_on(&unreachable, SHARED_EVENT, None, Some(&id), "", Some(&settled.tag)).await;
    assert_eq!(
        (unchanged.status, unchanged.caching.as_str()),
        (304, "public, max-age=31536000, immutable"),
        "a finalised view's tag needs no store"
    );
    let asked = poll_on(&unreachable, SHARED_EVENT, None, Some(&id), "", Some(&open.tag)).await;
    assert_eq!(asked.status, 503, "another tag needs the stores: {:?}", asked.body);
}

/// Every command Redis has run, by `INFO commandstats` (one more each time it is read).
async fn command_calls(conn: &mut red_packets::adapters::redis::connection::RedisConnection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await.unwrap();
    info.lines().filter_map(|line| line.split_once(":calls=")?.1.split(',').next()?.parse::<u64>().ok()).sum()
}

/// The shared view is the same bytes and tag for every caller and carries none of a caller's own
/// fields, even on a packet whose sender named its recipients; the caller's own view has them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_shared_view_never_carries_a_callers_own_fields() {
    let stack = funded("shared-own").await;
    let body = json!({ "total_cents": 300, "count": 2, "recipients": ["bob", "carol"], "passphrase": "芝麻开门" });
    let id = stack.send("alice", body).await;
    assert_eq!(stack.grab_with(&id, "bob", Some(&json!({ "passphrase": "芝麻开门" }))).await.0, 200);
    let senders = own(&stack, &id, "alice", None).await;
    assert_eq!((&senders.body["eligible"], &senders.body["recipients"]), (&json!(false), &json!(["bob", "carol"])));
    assert_eq!(senders.caching, "private, no-cache");
    let first = shared(&stack, &id, "", None).await;
    for field in ["eligible", "recipients"] {
        assert!(first.body.get(field).is_none(), "{field} in the shared view: {}", first.body);
    }
    assert!(!first.body.to_string().contains("芝麻开门"), "no passphrase");
    // The same for a caller who presents a token the route does not read.
    let mut with_token: Value = serde_json::from_str(SHARED_EVENT).unwrap();
    events::set_caller(&mut with_token, Some("mallory"));
    let template = with_token.to_string();
    let mallory = poll_on(&stack.functions.query, &template, None, Some(&id), "", None).await;
    assert_eq!((&mallory.body, &mallory.tag), (&first.body, &first.tag));
}

/// A grab changes the shared view's tag and the caller's; the old tag gets the new page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grab_changes_the_tag() {
    let stack = funded("tag-grab").await;
    let id = stack.send("alice", json!({ "total_cents": 300, "count": 3 })).await;
    let before = shared(&stack, &id, "", None).await;
    let own_before = own(&stack, &id, "bob", None).await;
    assert_eq!(shared(&stack, &id, "", Some(&before.tag)).await.status, 304);
    assert_eq!(stack.grab(&id, "bob").await.0, 200);
    let after = changed_by(&stack, &id, &before.tag).await;
    assert_eq!(after.body["grab_count"], 1);
    let own_after = own(&stack, &id, "bob", Some(&own_before.tag)).await;
    assert_eq!((own_after.status, own_after.body["grab_count"].as_u64()), (200, Some(1)));
}

/// Settle recording the grabs and finalising the packet changes its tag (it says settled, its
/// seed and refund), and the new tag is a finalised one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_recording_a_finished_packet_changes_the_tag() {
    let stack = funded("tag-settle").await;
    let id = stack.send("alice", json!({ "total_cents": 300, "count": 2 })).await;
    for user in ["bob", "carol"] {
        assert_eq!(stack.grab(&id, user).await.0, 200);
    }
    let sold_out = shared(&stack, &id, "", None).await;
    assert_eq!((sold_out.body["status"].as_str(), sold_out.body["settled"].as_bool()), (Some("finished"), Some(false)));
    stack.settle_through(3).await;
    let settled = changed_by(&stack, &id, &sold_out.tag).await;
    assert_eq!(settled.body["settled"], true);
    assert!(settled.body["seed"].is_string());
    assert_eq!(settled.caching, "public, max-age=31536000, immutable");
}

/// A refund (an expired packet settle finalises with shares left) changes the view's tag and
/// the sender's wallet's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refund_changes_the_tags() {
    let stack = funded("tag-refund").await;
    let id = stack.send("alice", json!({ "total_cents": 300, "count": 3, "expires_in_seconds": 60 })).await;
    let (_, grabbed) = stack.grab(&id, "bob").await;
    let view = shared(&stack, &id, "", None).await;
    let purse = wallet(&stack, "alice", None).await;
    assert_eq!(wallet(&stack, "alice", Some(&purse.tag)).await.status, 304);
    stack.clock.advance(61_000);
    stack.settle_through(3).await;
    let refunded = changed_by(&stack, &id, &view.tag).await;
    let refund = 300 - grabbed["amount_cents"].as_u64().unwrap();
    assert_eq!(
        (refunded.body["refund_cents"].as_u64(), refunded.body["status"].as_str()),
        (Some(refund), Some("expired"))
    );
    let purse_after = wallet(&stack, "alice", Some(&purse.tag)).await;
    assert_eq!(purse_after.status, 200, "the refund's movement changed the wallet");
    assert_eq!(purse_after.body["items"][0]["kind"], "refund", "{}", purse_after.body);
}

/// An expiry by time alone, no write anywhere, changes an open packet's tag: its view says
/// expired from that instant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiry_by_time_alone_changes_the_tag() {
    let stack = funded("tag-expiry").await;
    let id = stack.send("alice", json!({ "total_cents": 300, "count": 3, "expires_in_seconds": 60 })).await;
    let open = shared(&stack, &id, "", None).await;
    stack.clock.advance(59_000);
    assert_eq!(shared(&stack, &id, "", Some(&open.tag)).await.status, 304, "still open");
    stack.clock.advance(1_000);
    let expired = changed_by(&stack, &id, &open.tag).await;
    assert_eq!(expired.body["status"], "expired");
}

/// A re-sync after a failover rewrites Redis's log: a packet whose last grab Redis lost, reloaded
/// from the ledger and grabbed again by someone else, holds as many grabs as before under the old
/// tag's eyes, and the tag still changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resync_after_a_failover_changes_the_tag() {
    let stack = funded("tag-resync").await;
    let id = stack.send("alice", json!({ "total_cents": 400, "count": 4 })).await;
    assert_eq!(stack.grab(&id, "bob").await.0, 200);
    stack.settle_through(1).await;
    assert_eq!(stack.grab(&id, "carol").await.0, 200);
    let before = shared(&stack, &id, "", None).await;
    assert_eq!(before.body["grab_count"], 2);
    // The failover: the promoted replica had none of it; the next grab reloads what the ledger has
    // (bob's), and dave takes the share carol's grab had.
    stack.empty_redis(&[&id]).await;
    assert_eq!(stack.grab(&id, "dave").await.0, 200);
    let after = changed_by(&stack, &id, &before.tag).await;
    let users: Vec<&str> =
        after.body["grabs"].as_array().unwrap().iter().map(|grab| grab["user"].as_str().unwrap()).collect();
    assert_eq!((after.body["grab_count"].as_u64(), users), (Some(2), vec!["bob", "dave"]));
}

/// A withdrawal changes the wallet's tag (its debit is a movement).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawal_changes_the_wallet_tag() {
    let stack = funded("tag-withdrawal").await;
    let before = wallet(&stack, "alice", None).await;
    assert_eq!(wallet(&stack, "alice", Some(&before.tag)).await.status, 304);
    let (status, body) =
        stack.withdraw("alice", &json!({ "amount_cents": 1_000, "destination": "card-1" }), "withdrawal-1").await;
    assert!((200..=202).contains(&status), "{status} {body}");
    let after = wallet(&stack, "alice", Some(&before.tag)).await;
    assert_eq!((after.status, after.body["balance_cents"].as_u64()), (200, Some(99_000)));
    assert_ne!(after.tag, before.tag);
}

/// An adjustment, proposed by one operator and applied by another's approval, changes the
/// wallet's tag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adjustment_changes_the_wallet_tag() {
    let stack = funded("tag-adjustment").await;
    let before = wallet(&stack, "alice", None).await;
    let proposal = AdjustmentProposal {
        reference: "ticket-65".into(),
        user: UserId::from_claim("alice").unwrap(),
        direction: Direction::Credit,
        amount_cents: 500,
        reason: "goodwill".into(),
        proposer: "anna".into(),
        chargeback_of: None,
    };
    stack.ledger.propose_adjustment(&proposal, stack.clock.now_ms()).await.unwrap();
    assert_eq!(wallet(&stack, "alice", Some(&before.tag)).await.status, 304, "a proposal moves no money");
    let approval = AdjustmentApproval { reference: "ticket-65".into(), approver: "ben".into() };
    assert!(stack.ledger.approve_adjustment(&approval, stack.clock.now_ms()).await.unwrap().applied);
    let after = wallet(&stack, "alice", Some(&before.tag)).await;
    assert_eq!((after.status, after.body["balance_cents"].as_u64()), (200, Some(100_500)));
}

/// Settle recording a grab changes the grabber's received history (its answer, so its tag).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settle_recording_a_grab_changes_the_history_tag() {
    let stack = funded("tag-history").await;
    let id = stack.send("alice", json!({ "total_cents": 300, "count": 3 })).await;
    assert_eq!(stack.grab(&id, "bob").await.0, 200);
    let before = history(&stack, "bob", "received", None).await;
    assert_eq!(history(&stack, "bob", "received", Some(&before.tag)).await.status, 304);
    stack.settle_through(1).await;
    let after = history(&stack, "bob", "received", Some(&before.tag)).await;
    assert_eq!((after.status, after.body["items"].as_array().map(Vec::len)), (200, Some(1)), "{}", after.body);
}

/// True when `tag` is a version's (`v…`), which a poll is answered from without building the
/// answer; a content digest has no letter.
fn from_a_version(tag: &str) -> bool {
    tag.starts_with("\"v")
}

/// A history page with an open packet on it is compared by its bytes (that packet's settle
/// changes the page, and no version of the caller's counts it); once every packet on it is
/// final, its tag is the caller's version, and a poll that finds nothing new is answered after
/// one DynamoDB request (the balance item's `GetItem`), both sides of the history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settled_history_page_is_answered_after_one_key_read() {
    let stack = funded("history-version").await;
    let id = stack.send("alice", json!({ "total_cents": 300, "count": 3, "expires_in_seconds": 60 })).await;
    assert_eq!(stack.grab(&id, "bob").await.0, 200);
    stack.settle_through(1).await;
    let sent_open = history(&stack, "alice", "sent", None).await;
    let received_open = history(&stack, "bob", "received", None).await;
    for open in [&sent_open, &received_open] {
        assert_eq!(open.body["items"][0]["status"], "open", "{}", open.body);
        assert!(!from_a_version(&open.tag), "an open packet's page is compared by its bytes: {}", open.tag);
    }
    stack.clock.advance(61_000);
    stack.settle_through(3).await;
    let sent = history(&stack, "alice", "sent", Some(&sent_open.tag)).await;
    let received = history(&stack, "bob", "received", Some(&received_open.tag)).await;
    for settled in [&sent, &received] {
        assert_eq!((settled.status, &settled.body["items"][0]["status"]), (200, &json!("expired")), "{}", settled.body);
        assert!(from_a_version(&settled.tag), "{}", settled.tag);
    }

    let counter = local::probe::RequestCounter::default();
    let counted_ledger = DynamoLedger::new(counter.on(&DynamoLedger::client_from_env().unwrap()), &stack.config);
    let counted =
        query::QueryService::with_clock(Arc::new(RedisStore::new(&stack.config)), counted_ledger, stack.clock.clone());
    for (user, role, tag) in [("alice", "sent", &sent.tag), ("bob", "received", &received.tag)] {
        let before = counter.count();
        let polled = poll_on(&counted, HISTORY_EVENT, Some(user), None, &format!("role={role}"), Some(tag)).await;
        assert_eq!((polled.status, counter.count() - before), (304, 1), "{user}'s {role} history");
    }
}

/// A send changes the sender's sent history's tag: its debit changes their version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_changes_the_sent_history_tag() {
    let stack = funded("history-send").await;
    let before = history(&stack, "alice", "sent", None).await;
    assert!(from_a_version(&before.tag), "an empty page is settled: {}", before.tag);
    assert_eq!(history(&stack, "alice", "sent", Some(&before.tag)).await.status, 304);
    stack.send("alice", json!({ "total_cents": 300, "count": 3 })).await;
    let after = history(&stack, "alice", "sent", Some(&before.tag)).await;
    assert_eq!((after.status, after.body["items"].as_array().map(Vec::len)), (200, Some(1)), "{}", after.body);
}

/// A grab a failover revoked (acknowledged by Redis, with no share left in the ledger to give)
/// changes the grabber's received history's tag: settle's recovery records the casualty and
/// counts it in their version in one transaction (here through the ledger's port, as recovery
/// calls it; `recovery.rs` drives the failover itself).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_grab_changes_the_received_history_tag() {
    let stack = funded("history-revoked").await;
    let before = history(&stack, "dave", "received", None).await;
    assert!(from_a_version(&before.tag), "{}", before.tag);
    assert_eq!(history(&stack, "dave", "received", Some(&before.tag)).await.status, 304);
    let id = PacketId::parse(&stack.send("alice", json!({ "total_cents": 300, "count": 3 })).await).unwrap();
    let packet = stack.ledger.ledger_packet(&id).await.unwrap().unwrap().packet;
    let dave = UserId::from_claim("dave").unwrap();
    let acknowledged = LoggedGrab { seq: 1, user: dave, amount_cents: 77, at_ms: stack.clock.now_ms() };
    let casualty = Casualty { acknowledged, remedy: Remedy::Revoked };
    stack.ledger.record_casualty(&packet, &casualty, stack.clock.now_ms()).await.unwrap();
    let after = history(&stack, "dave", "received", Some(&before.tag)).await;
    assert_eq!((after.status, &after.body["items"][0]["revoked_cents"]), (200, &json!(77)), "{}", after.body);
    // Recorded again (settle's next run): once, and the version with it.
    stack.ledger.record_casualty(&packet, &casualty, stack.clock.now_ms()).await.unwrap();
    let again = history(&stack, "dave", "received", None).await;
    assert_eq!((again.body["items"].as_array().map(Vec::len), again.tag), (Some(1), after.tag));
}

/// The history index is eventually consistent: while it does not yet list what the caller's
/// version counts (their latest send on the sent history's first page, every revoked grab), the
/// page is compared by its bytes, so no tag of a version names a page that lacks it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_the_history_index_does_not_list_yet_keeps_the_page_compared_by_its_bytes() {
    let stack = funded("history-lag").await;
    for _ in 0..2 {
        stack.send("alice", json!({ "total_cents": 300, "count": 3, "expires_in_seconds": 60 })).await;
    }
    stack.clock.advance(61_000);
    stack.settle_through(3).await;
    assert!(from_a_version(&history(&stack, "alice", "sent", None).await.tag));
    assert!(from_a_version(&history(&stack, "alice", "received", None).await.tag));
    // As the index lags: a send it does not list yet, a revoked grab it does not list yet.
    let client = DynamoLedger::client_from_env().unwrap();
    let unlisted = PacketId::random();
    client
        .update_item()
        .table_name(&stack.config.table_name)
        .key("pk", aws_sdk_dynamodb::types::AttributeValue::S("WALLET#alice".into()))
        .key("sk", aws_sdk_dynamodb::types::AttributeValue::S("BALANCE".into()))
        .update_expression("SET last_sent = :unlisted ADD revoked :one")
        .expression_attribute_values(":unlisted", aws_sdk_dynamodb::types::AttributeValue::S(unlisted.to_string()))
        .expression_attribute_values(":one", aws_sdk_dynamodb::types::AttributeValue::N("1".into()))
        .send()
        .await
        .unwrap();
    for role in ["sent", "received"] {
        let lagging = history(&stack, "alice", role, None).await;
        assert_eq!(lagging.status, 200);
        assert!(!from_a_version(&lagging.tag), "{role}: {}", lagging.tag);
    }
    // A later page of the sent history lists older sends only, which the index has: its tag is
    // the version's.
    let first = poll_on(&stack.functions.query, HISTORY_EVENT, Some("alice"), None, "role=sent&limit=1", None).await;
    let cursor = first.body["next_cursor"].as_str().expect("two sends, one a page");
    let query = format!("role=sent&limit=1&cursor={cursor}");
    let later = poll_on(&stack.functions.query, HISTORY_EVENT, Some("alice"), None, &query, None).await;
    assert_eq!(later.body["items"].as_array().map(Vec::len), Some(1), "{}", later.body);
    assert!(!from_a_version(&first.tag) && from_a_version(&later.tag), "{} {}", first.tag, later.tag);
}
