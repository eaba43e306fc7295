//! Who may grab, through the real handlers on the real Redis and DynamoDB Local: exclusive
//! and chat packets (recipients), members-only chat packets and their membership tickets
//! (expired, for another chat or user, forged, across a key rotation, and after Redis lost the
//! packet), passphrases and their lock, the sender's cancel racing a storm of grabs, and the
//! daily sender limits under concurrent sends.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::support::stack::Stack;
use futures::future::join_all;
use rand::seq::SliceRandom;
use red_packets::adapters::DynamoLedger;
use red_packets::config::LOCAL_MEMBERSHIP_KEY;
use red_packets::domain::membership::MembershipKeys;
use red_packets::domain::{BusinessDay, ChatId, PacketId, PacketStatus, UserId};
use red_packets::{Clock, Config};
use serde_json::{json, Value};

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn an_exclusive_packet_goes_to_its_recipient_alone() {
    let stack = Stack::new("exclusive").await;
    let id = stack.send("alice", json!({ "total_cents": 888, "count": 1, "recipients": ["bob"] })).await;
    for stranger in ["alice", "mallory"] {
        let (status, body) = stack.grab(&id, stranger).await;
        assert_eq!((status, code(&body)), (403, "not_eligible"), "{stranger}: {body}");
    }
    let (status, body) = stack.grab(&id, "bob").await;
    assert_eq!((status, body["amount_cents"].as_u64()), (200, Some(888)), "{body}");
    let (status, body) = stack.grab(&id, "mallory").await;
    assert_eq!((status, code(&body)), (403, "not_eligible"), "eligibility comes before sold out");

    let (_, by_sender) = stack.view(&id, "alice").await;
    assert_eq!((by_sender["recipients"].clone(), by_sender["eligible"].clone()), (json!(["bob"]), json!(false)));
    let (_, by_bob) = stack.view(&id, "bob").await;
    assert!(by_bob.get("recipients").is_none(), "only the sender sees the recipients: {by_bob}");
    assert_eq!((by_bob["eligible"].as_bool(), by_bob["has_passphrase"].as_bool()), (Some(true), Some(false)));
    assert_eq!(stack.view(&id, "mallory").await.1["eligible"], false);
}

/// A chat's packet: 100 members (the sender among them), 10 shares, 1,000 users grabbing at
/// once, members and strangers shuffled: exactly 10 shares, all to members, and the ledger
/// agrees once settled.
#[tokio::test]
async fn a_chat_packet_under_a_storm_pays_only_its_members() {
    let stack = Arc::new(Stack::new("chat").await);
    let members: Vec<String> = (0..100).map(|n| format!("member-{n:02}")).collect();
    let mut recipients = members.clone();
    recipients[0] = "alice".into();
    let id = stack.send("alice", json!({ "total_cents": 1_000, "count": 10, "recipients": recipients })).await;

    let mut crowd: Vec<String> = recipients.iter().cloned().chain((0..900).map(|n| format!("stranger-{n}"))).collect();
    crowd.shuffle(&mut rand::rng());
    let tasks = crowd.into_iter().map(|user| {
        let (stack, id) = (stack.clone(), id.clone());
        tokio::spawn(async move {
            let (status, body) = stack.grab(&id, &user).await;
            (user, status, body)
        })
    });
    let mut paid: HashMap<String, u64> = HashMap::new();
    for outcome in join_all(tasks).await {
        let (user, status, body) = outcome.unwrap();
        let member = recipients.contains(&user);
        match status {
            200 => {
                assert!(member, "{user} is no member yet was paid: {body}");
                paid.insert(user, body["amount_cents"].as_u64().unwrap());
            }
            403 => assert!(!member && code(&body) == "not_eligible", "{user}: {body}"),
            409 => assert!(member && code(&body) == "sold_out", "{user}: {body}"),
            other => panic!("{user}: unexpected {other} {body}"),
        }
    }
    assert_eq!(paid.len(), 10, "exactly the 10 shares, each once");
    assert_eq!(paid.values().sum::<u64>(), 1_000);

    let summary = stack.settle().await;
    assert_eq!(summary.finalised, 1, "{summary:?}");
    let recorded = stack.assert_settled_books(&id, &paid).await;
    assert_eq!(recorded.status, PacketStatus::Finished);
}

/// The ticket the host app's chat server would sign with `keys`, for `user` in `chat`, valid for
/// `seconds` from the stack's clock (negative: expired that long ago).
fn ticket(stack: &Stack, keys: &str, chat: &str, user: &str, seconds: i64) -> String {
    let keys = MembershipKeys::parse(keys).unwrap();
    let expires_at = (stack.clock.now_ms() / 1000 + seconds) as u64;
    keys.sign(&ChatId::parse(chat).unwrap(), &UserId::from_claim(user).unwrap(), expires_at)
}

/// A chat's members-only packet pays a grab with a valid ticket for its chat and its caller,
/// and refuses, taking nothing, a grab with none, an expired one, one for another chat or user,
/// or one signed with a key the stack does not hold, each saying why; the refusals stand when
/// Redis lost the packet and it is reloaded from the ledger.
#[tokio::test]
async fn a_members_only_packet_pays_a_ticket_for_its_chat_and_caller_alone() {
    let stack = Stack::new("members").await;
    let ours = LOCAL_MEMBERSHIP_KEY;
    let body = json!({ "total_cents": 600, "count": 3, "chat_id": "family", "members_only": true });
    let id = stack.send("alice", body).await;
    assert_eq!(stack.view(&id, "bob").await.1["members_only"], true);

    let refusals = [
        ("carol", None, "the grab carried no Membership-Ticket"),
        ("carol", Some(ticket(&stack, ours, "family", "carol", -1)), "the membership ticket has expired"),
        ("carol", Some(ticket(&stack, ours, "family", "dave", 300)), "issued to another user"),
        ("carol", Some(ticket(&stack, "someone-elses-key-123", "family", "carol", 300)), "not signed with a key"),
        ("carol", Some("not-a-ticket".to_owned()), "malformed"),
        ("carol", Some(ticket(&stack, ours, "office", "carol", 300)), "the membership ticket is for another chat"),
    ];
    for (user, carried, why) in &refusals {
        let (status, body) = stack.grab_with_ticket(&id, user, carried.as_deref()).await;
        assert_eq!((status, code(&body)), (403, "not_eligible"), "{why}: {body}");
        assert!(body["error"]["message"].as_str().unwrap().contains(why), "{why}: {body}");
    }
    let (status, body) = stack.grab_with_ticket(&id, "bob", Some(&ticket(&stack, ours, "family", "bob", 300))).await;
    assert_eq!(status, 200, "{body}");
    let (_, view) = stack.view(&id, "alice").await;
    assert_eq!(
        (view["grab_count"].as_u64(), view["remaining_count"].as_u64()),
        (Some(1), Some(2)),
        "refusals take nothing"
    );

    // Redis loses the packet: reloaded from the ledger, it is members-only still.
    stack.settle().await;
    stack.empty_redis(&[&id]).await;
    let (status, body) = stack.grab(&id, "erin").await;
    assert_eq!((status, code(&body)), (403, "not_eligible"), "reloaded without its gate? {body}");
    let (status, body) = stack.grab_with_ticket(&id, "erin", Some(&ticket(&stack, ours, "family", "erin", 300))).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = stack.grab_with_ticket(&id, "bob", None).await;
    assert_eq!(status, 200, "a repeat needs no ticket: the share is the caller's already");
}

/// A key rotation: with the new key beside the old (`MEMBERSHIP_KEYS=<new>,<old>`), tickets
/// signed with either pass, so chat servers can move to the new key without a refusal; once
/// the old key is removed, its tickets are refused.
#[tokio::test]
async fn a_key_rotation_keeps_both_keys_tickets_until_the_old_one_goes() {
    let (old, new) = ("membership-key-old-0001", "membership-key-new-0002");
    let stack_with = |keys: String| {
        let mut config = Config::from_env().expect("configuration");
        config.membership_keys = MembershipKeys::parse(&keys).unwrap();
        Stack::with_config("rotation", config)
    };
    let during = stack_with(format!("{new},{old}")).await;
    let body = json!({ "total_cents": 400, "count": 4, "chat_id": "family", "members_only": true });
    let id = during.send("alice", body.clone()).await;
    for (user, key) in [("bob", old), ("carol", new)] {
        let (status, body) = during.grab_with_ticket(&id, user, Some(&ticket(&during, key, "family", user, 300))).await;
        assert_eq!(status, 200, "{user}, signed with {key}: {body}");
    }
    let after = stack_with(new.to_owned()).await;
    let id = after.send("alice", body).await;
    let (status, body) = after.grab_with_ticket(&id, "bob", Some(&ticket(&after, old, "family", "bob", 300))).await;
    assert_eq!((status, code(&body)), (403, "not_eligible"), "{body}");
    let (status, _) = after.grab_with_ticket(&id, "bob", Some(&ticket(&after, new, "family", "bob", 300))).await;
    assert_eq!(status, 200);
}

/// Passphrases: missing, wrong and NFC-equivalent right ones; the sixth wrong try is locked
/// while another user is not; and the phrase is in no Redis value, no ledger item, no log line.
#[tokio::test]
async fn a_phrase_packet_takes_the_phrase_in_any_normal_form_and_locks_guessers() {
    let logs = capture_logs();
    let stack = Stack::new("phrase").await;
    let composed = "Café 恭喜发财";
    let decomposed = "Cafe\u{301} 恭喜发财";
    let key = PacketId::random().to_string();
    let body = json!({ "total_cents": 300, "count": 3, "passphrase": composed, "expires_in_seconds": 60 });
    let (status, sent) = stack.send_keyed("alice", &body, &key).await;
    assert_eq!(status, 201, "{sent}");
    assert_eq!(sent["has_passphrase"], true);
    let id = sent["packet_id"].as_str().unwrap().to_owned();
    assert_eq!(stack.send_keyed("alice", &body, &key).await.1["packet_id"], sent["packet_id"], "a replay (logged)");

    let (status, body) = stack.grab(&id, "bob").await;
    assert_eq!((status, code(&body)), (403, "wrong_passphrase"), "no phrase: {body}");
    let (status, body) = stack.grab_with(&id, "bob", Some(&json!({ "passphrase": "Cafe 恭喜发财" }))).await;
    assert_eq!((status, code(&body)), (403, "wrong_passphrase"), "{body}");
    let (status, body) = stack.grab_with(&id, "bob", Some(&json!({ "passphrase": decomposed }))).await;
    assert_eq!(status, 200, "the NFC-equivalent phrase is the phrase: {body}");

    for attempt in 1..=5 {
        let (status, body) =
            stack.grab_with(&id, "eve", Some(&json!({ "passphrase": format!("guess {attempt}") }))).await;
        assert_eq!((status, code(&body)), (403, "wrong_passphrase"), "try {attempt}");
    }
    let (status, body) = stack.grab_with(&id, "eve", Some(&json!({ "passphrase": "guess 6" }))).await;
    assert_eq!((status, code(&body)), (429, "too_many_attempts"), "{body}");
    let (status, body) = stack.grab_with(&id, "eve", Some(&json!({ "passphrase": composed }))).await;
    assert_eq!((status, code(&body)), (429, "too_many_attempts"), "a locked guesser stays locked: {body}");
    let (status, body) = stack.grab_with(&id, "carol", Some(&json!({ "passphrase": composed }))).await;
    assert_eq!(status, 200, "another user is unaffected: {body}");
    let (status, body) = stack.grab_with(&id, "bob", None).await;
    assert_eq!((status, body["already_grabbed"].as_bool()), (200, Some(true)), "a repeat needs no phrase: {body}");

    stack.clock.advance(60_000);
    assert_eq!(stack.settle().await.finalised, 1);

    let redis = redis_values(&stack, &id).await;
    let ledger = ledger_items(&stack).await;
    let logged = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    let digest = stack.config.passphrase_key.digest(&red_packets::domain::Passphrase::new(composed).unwrap());
    assert!(redis.contains(digest.as_str()) && ledger.contains(digest.as_str()), "the digest is what is kept");
    assert!(logged.contains(&id), "the log holds this packet's lines");
    for (place, text) in [("Redis", &redis), ("DynamoDB", &ledger), ("the log", &logged)] {
        for phrase in [composed, decomposed, "恭喜发财", "guess 6"] {
            assert!(!text.contains(phrase), "{place} holds the phrase {phrase:?} in clear");
        }
    }
}

/// The sender cancels while 150 users grab, spread over 1.5 s: every acknowledged grab is
/// paid, the refund is the rest, once, and every grab sent after the cancel's 200 is
/// `410 cancelled`.
#[tokio::test]
async fn a_cancel_racing_a_storm_refunds_exactly_what_nobody_took() {
    let stack = Arc::new(Stack::new("cancel").await);
    let id = stack.send("alice", json!({ "total_cents": 5_000, "count": 100 })).await;
    let acknowledged_cancel = Arc::new(AtomicBool::new(false));
    let grabbers = (0..150).map(|n| {
        let (stack, id, cancelled) = (stack.clone(), id.clone(), acknowledged_cancel.clone());
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(10 * n)).await;
            let user = format!("grabber-{n}");
            let sent_after_cancel = cancelled.load(Ordering::SeqCst);
            let (status, body) = stack.grab(&id, &user).await;
            (user, sent_after_cancel, status, body)
        })
    });
    let grabbers: Vec<_> = grabbers.collect();
    // The cancel goes at 0.2 s of the storm's 1.5 s: it lands mid-storm even when the machine's
    // cores are busy and it takes a second.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let (status, cancelled) = stack.cancel(&id, "alice").await;
    acknowledged_cancel.store(true, Ordering::SeqCst);
    assert_eq!((status, cancelled["status"].as_str()), (200, Some("cancelled")), "{cancelled}");

    let mut paid: HashMap<String, u64> = HashMap::new();
    for outcome in join_all(grabbers).await {
        let (user, sent_after_cancel, status, body) = outcome.unwrap();
        match status {
            200 => {
                assert!(!sent_after_cancel, "{user} was paid after the cancel's 200");
                paid.insert(user, body["amount_cents"].as_u64().unwrap());
            }
            410 => assert_eq!(code(&body), "cancelled"),
            other => panic!("{user}: unexpected {other} {body}"),
        }
    }
    let (status, late) = stack.grab(&id, "latecomer").await;
    assert_eq!((status, code(&late)), (410, "cancelled"));
    assert_eq!(stack.cancel(&id, "alice").await.0, 200, "cancelling again is fine");
    assert_eq!(stack.cancel(&id, "mallory").await.0, 403);

    let grabbed: u64 = paid.values().sum();
    let first = stack.settle().await;
    assert_eq!((first.finalised, first.refunded_cents), (1, 5_000 - grabbed), "{first:?}");
    let recorded = stack.assert_settled_books(&id, &paid).await;
    assert_eq!(recorded.status, PacketStatus::Cancelled);
    assert_eq!(recorded.refund_item_cents, Some(5_000 - grabbed));
    let again = stack.settle().await;
    assert_eq!(again.refunded_cents, 0, "refunded exactly once");
    let (_, view) = stack.view(&id, "alice").await;
    assert_eq!((view["status"].as_str(), view["refund_cents"].as_u64()), (Some("cancelled"), Some(5_000 - grabbed)));
    assert!(!paid.is_empty() && paid.len() < 100, "the cancel landed mid-storm: {} paid", paid.len());
    eprintln!("figure: cancel racing 150 grabs: {} paid ({grabbed} cents), {} refunded", paid.len(), 5_000 - grabbed);
}

#[tokio::test]
async fn a_finished_or_foreign_packet_cannot_be_cancelled() {
    let stack = Stack::new("cancel-rules").await;
    let id = stack.send("alice", json!({ "total_cents": 100, "count": 1 })).await;
    assert_eq!(stack.grab(&id, "bob").await.0, 200);
    let (status, body) = stack.cancel(&id, "alice").await;
    assert_eq!((status, code(&body)), (409, "not_open"));
    let (status, body) = stack.cancel(&PacketId::random().to_string(), "alice").await;
    assert_eq!((status, code(&body)), (404, "not_found"));

    // A cancelled packet Redis lost is restored closed: no grab, and settle refunds it.
    let lost = stack.send("alice", json!({ "total_cents": 300, "count": 3 })).await;
    assert_eq!(stack.grab(&lost, "bob").await.0, 200);
    stack.settle().await;
    stack.empty_redis(&[&lost]).await;
    let (status, body) = stack.cancel(&lost, "alice").await;
    assert_eq!((status, body["status"].as_str()), (200, Some("cancelled")), "{body}");
    let (status, body) = stack.grab(&lost, "carol").await;
    assert_eq!((status, code(&body)), (410, "cancelled"), "{body}");
    let summary = stack.settle().await;
    assert_eq!(summary.finalised, 1, "{summary:?}");
    assert_eq!(stack.recorded(&lost).await.status, PacketStatus::Cancelled);
}

/// 20 sends at once at the edge of each daily limit: never one over; a replay is not counted;
/// another sender and the next UTC day are unaffected.
#[tokio::test]
async fn daily_limits_hold_under_concurrent_sends() {
    let mut config = Config::from_env().unwrap();
    config.daily.max_sends = 5;
    config.daily.max_sent_cents = 1_000;
    let stack = Arc::new(Stack::with_config("limits", config).await);

    let key = PacketId::random().to_string();
    let first = json!({ "total_cents": 100, "count": 1 });
    assert_eq!(stack.send_keyed("alice", &first, &key).await.0, 201);
    let sends = (0..20).map(|_| {
        let stack = stack.clone();
        tokio::spawn(async move { stack.try_send("alice", &json!({ "total_cents": 100, "count": 1 })).await })
    });
    let outcomes: Vec<(u16, Value)> = join_all(sends).await.into_iter().map(Result::unwrap).collect();
    let created = outcomes.iter().filter(|(status, _)| *status == 201).count();
    assert_eq!(created, 4, "the limit of 5 sends, never one over: {outcomes:?}");
    for (status, body) in outcomes.iter().filter(|(status, _)| *status != 201) {
        assert_eq!(
            (*status, code(body), body["error"]["field"].as_str()),
            (429, "limit_exceeded", Some("max_sends_per_day"))
        );
    }
    let (status, replay) = stack.send_keyed("alice", &first, &key).await;
    assert_eq!(status, 201, "a replay is answered, not counted: {replay}");
    assert_eq!(stack.try_send("bob", &first).await.0, 201, "another sender has their own limits");

    let cents = json!({ "total_cents": 300, "count": 1 });
    let sends = (0..20).map(|_| {
        let (stack, cents) = (stack.clone(), cents.clone());
        tokio::spawn(async move { stack.try_send("bob", &cents).await })
    });
    let created = join_all(sends).await.into_iter().filter(|outcome| outcome.as_ref().unwrap().0 == 201).count();
    assert_eq!(created, 3, "100 + 3 x 300 of 1,000 cents, never over");
    let (status, body) = stack.try_send("bob", &json!({ "total_cents": 200, "count": 1 })).await;
    assert_eq!((status, body["error"]["field"].as_str()), (429, Some("max_sent_cents_per_day")), "{body}");
    let (status, body) = stack.try_send("carol", &json!({ "total_cents": 1_001, "count": 1 })).await;
    assert_eq!((status, body["error"]["field"].as_str()), (429, Some("max_sent_cents_per_day")), "{body}");

    stack.clock.advance(24 * 60 * 60 * 1000);
    assert_eq!(stack.try_send("alice", &first).await.0, 201, "a new UTC day, a new allowance");
}

/// The daily limits count the business day's calendar days: in Asia/Shanghai a day turns at
/// 16:00 UTC, so two sends either side of it are on two days (one send a day each), where a
/// deployment on UTC counts them on one and refuses the second.
#[tokio::test]
async fn daily_limits_count_the_days_of_the_business_time_zone() {
    const DAY_MS: i64 = 86_400_000;
    for (zone, second) in [("Asia/Shanghai", 201), ("UTC", 429)] {
        let mut config = Config::from_env().unwrap();
        config.daily.max_sends = 1;
        config.business_day = BusinessDay::parse(zone).unwrap();
        let stack = Stack::with_config("business-day", config).await;
        let to_1559_utc = (15 * 3_600_000 + 59 * 60_000 - stack.clock.now_ms().rem_euclid(DAY_MS)).rem_euclid(DAY_MS);
        stack.clock.advance(to_1559_utc);
        let one = json!({ "total_cents": 100, "count": 1 });
        assert_eq!(stack.try_send("alice", &one).await.0, 201, "{zone}: the day's one send");
        stack.clock.advance(2 * 60_000);
        let (status, body) = stack.try_send("alice", &one).await;
        assert_eq!(status, second, "{zone}: a send at 16:01 UTC: {body}");
    }
}

/// Every value Redis holds of packet `id` (its keys are all in one slot, so this reads them on
/// one node of a cluster too), as one string.
async fn redis_values(stack: &Stack, id: &str) -> String {
    let store = stack.store();
    let mut conn = store.connection().await.unwrap();
    let keys = store.keys(&PacketId::parse(id).unwrap());
    let packet: Vec<String> = redis::cmd("HGETALL").arg(&keys.packet).query_async(&mut conn).await.unwrap();
    let mut dump = format!("{} {packet:?}\n", keys.packet);
    for list in [&keys.pool, &keys.grabs] {
        let entries: Vec<String> = redis::cmd("LRANGE").arg(list).arg(0).arg(-1).query_async(&mut conn).await.unwrap();
        dump.push_str(&format!("{list} {entries:?}\n"));
    }
    let lookup: Option<String> = redis::cmd("GET").arg(&keys.lookup).query_async(&mut conn).await.unwrap();
    dump.push_str(&format!("{} {lookup:?}\n", keys.lookup));
    dump
}

/// Every item of the test's table, as one string.
async fn ledger_items(stack: &Stack) -> String {
    let client = DynamoLedger::client_from_env().unwrap();
    let scanned = client.scan().table_name(&stack.config.table_name).send().await.unwrap();
    format!("{:?}", scanned.items())
}

/// Every log line of this test binary, at debug, kept in memory.
fn capture_logs() -> Arc<Mutex<Vec<u8>>> {
    #[derive(Clone)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl Write for Sink {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let sink = Sink(buffer.clone());
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("debug"))
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber of this test binary");
    buffer
}
