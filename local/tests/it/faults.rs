//! Redis faults through the real handlers: a Redis that dies answers 503 with Retry-After
//! promptly (never a hang, never a 500) and works again after a restart; a Redis that forgets
//! its scripts (SCRIPT FLUSH, restart) keeps serving grabs. Each test runs its own redis-server
//! on a free loopback port; DynamoDB Local is the one `make test` started.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{grab_request, send_packet, send_request, OwnRedis};
use local::{Functions, LocalAuthorizer};
use red_packets::Config;
use serde_json::{json, Value};

async fn functions(config: &Config) -> Functions {
    local::functions(config, LocalAuthorizer::new("faults")).await.expect("DynamoDB Local is reachable")
}

async fn grab(functions: &Functions, id: &str, user: &str) -> (u16, Value, Option<String>) {
    let response = grab::handle(&functions.grab, grab_request(id, user)).await.unwrap();
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), serde_json::from_slice(response.body().as_ref()).unwrap(), retry_after)
}

/// Grabs until one answers something other than 503 (bounded), as a client honouring Retry-After would.
async fn grab_retrying(functions: &Functions, id: &str, user: &str) -> (u16, Value) {
    for _ in 0..20 {
        let (status, body, _) = grab(functions, id, user).await;
        if status != 503 {
            return (status, body);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{user} still got 503 after 20 tries");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_redis_is_a_prompt_503_and_a_restarted_one_serves_again() {
    let mut redis = OwnRedis::start();
    let functions = Arc::new(functions(&redis.config()).await);
    let id = send_packet(&functions, 1_000, 10).await;
    let (status, first, _) = grab(&functions, &id, "before-crash").await;
    assert_eq!(status, 200);

    redis.kill();
    let mut answers = Vec::new();
    let started = Instant::now();
    let tasks: Vec<_> = (0..50)
        .map(|n| {
            let (functions, id) = (functions.clone(), id.clone());
            tokio::spawn(async move { grab(&functions, &id, &format!("during-{n}")).await })
        })
        .collect();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    let elapsed = started.elapsed();
    eprintln!(
        "figure: 50 concurrent grabs on a SIGKILLed Redis (REDIS_TIMEOUT_MS=300) all answered 503 within {elapsed:?}"
    );
    let mut waits = std::collections::BTreeSet::new();
    for (status, body, retry_after) in &answers {
        assert_eq!((*status, body["error"]["code"].as_str()), (503, Some("unavailable")), "never a 500");
        let seconds: u32 = retry_after.as_deref().expect("a 503 says when to retry").parse().unwrap();
        assert!(red_packets::http::RETRY_AFTER_SECONDS.contains(&seconds), "{seconds}");
        waits.insert(seconds);
    }
    assert!(waits.len() > 1, "50 clients are not all sent back in the same second: {waits:?}");
    assert!(elapsed < Duration::from_secs(10), "no hang: 50 grabs on a dead Redis answered in {elapsed:?}");
    // A send is recorded (and paid) in the ledger before Redis: it is done, 201, never a 503
    // that a plain retry would pay again; its first grab, once Redis is back, loads it.
    let response =
        send::handle(&functions.send, send_request(json!({ "total_cents": 100, "count": 1 }))).await.unwrap();
    assert_eq!(response.status(), 201, "the ledger recorded the send");
    let sent: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
    let unloaded = sent["packet_id"].as_str().unwrap().to_owned();

    redis.spawn();
    let (status, loaded) = grab_retrying(&functions, &unloaded, "first-after").await;
    assert_eq!((status, loaded["amount_cents"].as_u64()), (200, Some(100)), "its first grab loaded it: {loaded}");
    let restarted = Instant::now();
    let (status, again) = grab_retrying(&functions, &id, "before-crash").await;
    eprintln!("figure: first grab answered again {:?} after redis-server was restarted", restarted.elapsed());
    assert_eq!(
        (status, again["already_grabbed"].as_bool()),
        (200, Some(true)),
        "the acknowledged grab survived (AOF always)"
    );
    assert_eq!(again["amount_cents"], first["amount_cents"]);
    let (status, _) = grab_retrying(&functions, &id, "after-restart").await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn grabs_survive_script_flush_and_a_restart() {
    let mut redis = OwnRedis::start();
    let config = redis.config();
    let functions = functions(&config).await;
    let id = send_packet(&functions, 1_000, 10).await;
    assert_eq!(grab(&functions, &id, "u1").await.0, 200);

    let store = red_packets::adapters::RedisStore::new(&config);
    let mut conn = store.connection().await.unwrap();
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query_async(&mut conn).await.unwrap();
    let (status, body, _) = grab(&functions, &id, "u2").await;
    assert_eq!(status, 200, "NOSCRIPT is answered by loading the script again: {body}");

    redis.kill();
    redis.spawn(); // a fresh process has no scripts cached at all
    let (status, _) = grab_retrying(&functions, &id, "u3").await;
    assert_eq!(status, 200);
    let (status, body) = grab_retrying(&functions, &id, "u1").await;
    assert_eq!((status, body["already_grabbed"].as_bool()), (200, Some(true)));
}

/// A Redis that answers nobody for longer than the connection's response timeout, then comes
/// back: the grab's first call timed out (it may have run), so it is asked again once, and the
/// caller is paid once, with a 200, not sent away with a 503 for a share that was taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grab_whose_call_timed_out_is_asked_again_and_paid_once() {
    let redis = OwnRedis::start();
    let mut config = redis.config();
    config.redis.timeout = Duration::from_millis(1_000);
    let functions = Arc::new(functions(&config).await);
    let id = send_packet(&functions, 1_000, 10).await;
    assert_eq!(grab(&functions, &id, "before-pause").await.0, 200, "the connection and script are warm");

    redis.pause();
    let patient = {
        let (functions, id) = (functions.clone(), id.clone());
        tokio::spawn(async move { grab(&functions, &id, "patient").await })
    };
    // Past the first call's response timeout (1 s), within the call asked again (1 s after it).
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    redis.resume();
    let (status, body, _) = patient.await.unwrap();
    assert_eq!((status, body["already_grabbed"].as_bool()), (200, Some(false)), "{body}");

    let (status, again, _) = grab(&functions, &id, "patient").await;
    assert_eq!((status, again["already_grabbed"].as_bool()), (200, Some(true)), "{again}");
    assert_eq!(again["amount_cents"], body["amount_cents"], "one share, told the same twice");
    let store = red_packets::adapters::RedisStore::new(&config);
    let mut conn = store.connection().await.unwrap();
    let keys = store.keys(&red_packets::domain::PacketId::parse(&id).unwrap());
    let log: Vec<String> = redis::cmd("LRANGE").arg(&keys.grabs).arg(0).arg(-1).query_async(&mut conn).await.unwrap();
    let theirs = log.iter().filter_map(|entry| red_packets::adapters::redis::keys::parse_log_entry(entry));
    assert_eq!(theirs.filter(|entry| entry.user.as_str() == "patient").count(), 1, "one share in the settle log");
}

/// Five packets of 100 shares.
async fn five_packets(functions: &Functions) -> Vec<String> {
    let mut packets = Vec::new();
    for _ in 0..5 {
        let response =
            send::handle(&functions.send, send_request(json!({ "total_cents": 10_000, "count": 100 }))).await.unwrap();
        let body: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        packets.push(body["packet_id"].as_str().unwrap().to_owned());
    }
    packets
}

/// 500 concurrent grabs on `packets`; `kill` runs once 50 have been acknowledged (at most 10 s).
/// Returns the grabs acknowledged with a fresh share: (packet, user, amount).
async fn storm_killed_midway(
    functions: &Arc<Functions>,
    packets: &[String],
    kill: impl FnOnce(),
) -> Vec<(String, String, u64)> {
    let acknowledged_so_far = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tasks: Vec<_> = (0..500)
        .map(|n| {
            let (functions, id, acknowledged_so_far) =
                (functions.clone(), packets[n % packets.len()].clone(), acknowledged_so_far.clone());
            tokio::spawn(async move {
                let user = format!("storm-{n}");
                let (status, body, _) = grab(&functions, &id, &user).await;
                if status == 200 {
                    acknowledged_so_far.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                (id, user, status, body)
            })
        })
        .collect();
    for _ in 0..1_000 {
        if acknowledged_so_far.load(std::sync::atomic::Ordering::SeqCst) >= 50 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    kill();
    let mut acknowledged = Vec::new();
    for task in tasks {
        let (id, user, status, body) = task.await.unwrap();
        assert!(matches!(status, 200 | 503), "{status} {body}");
        if status == 200 && body["already_grabbed"] == false {
            acknowledged.push((id, user, body["amount_cents"].as_u64().unwrap()));
        }
    }
    acknowledged
}

/// How many acknowledged grabs `store`'s Redis does not hold with their amount.
async fn lost_grabs(store: &red_packets::adapters::RedisStore, acknowledged: &[(String, String, u64)]) -> usize {
    let mut conn = loop {
        if let Ok(conn) = store.connection().await {
            break conn;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut lost = 0;
    for (id, user, amount) in acknowledged {
        let keys = store.keys(&red_packets::domain::PacketId::parse(id).unwrap());
        let user = red_packets::domain::UserId::from_claim(user).unwrap();
        let field = red_packets::adapters::redis::keys::PacketKeys::grabber_field(&user);
        let recorded: Option<String> =
            redis::cmd("HGET").arg(&keys.packet).arg(field).query_async(&mut conn).await.unwrap();
        let recorded_amount = recorded.as_deref().and_then(red_packets::adapters::redis::keys::grab_entry);
        if recorded_amount.map(|grab| grab.amount_cents) != Some(*amount) {
            lost += 1;
        }
    }
    lost
}

/// SIGKILL in the middle of a storm of grabs, with AOF `everysec` and `always`: every grab that
/// was acknowledged before the crash is still there after the restart (with `always` this is a
/// guarantee; with `everysec` a killed process loses nothing either, because the AOF was written
/// to the OS before the reply; only a machine crash can cost `everysec` its last second).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_grabs_survive_a_sigkill_mid_storm() {
    for fsync in ["everysec", "always"] {
        let mut redis = OwnRedis::start_with(fsync);
        let config = redis.config();
        let functions = Arc::new(functions(&config).await);
        let packets = five_packets(&functions).await;
        let acknowledged = storm_killed_midway(&functions, &packets, || redis.kill()).await;

        redis.spawn();
        let lost = lost_grabs(&red_packets::adapters::RedisStore::new(&config), &acknowledged).await;
        eprintln!(
            "figure: appendfsync {fsync}: SIGKILL mid-way through a 500-grab storm; {} grabs acknowledged, {lost} lost",
            acknowledged.len()
        );
        assert!(!acknowledged.is_empty(), "some grabs were acknowledged before the kill");
        if fsync == "always" {
            assert_eq!(lost, 0, "with appendfsync always no acknowledged grab is lost");
        }
    }
}

/// A primary and a replica on loopback; the primary is killed mid-storm and the replica
/// promoted. With `GRAB_WAIT_REPLICAS=1` a grab is acknowledged only once the replica has it, so
/// no acknowledged grab is lost; without it, the figure says how many were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_with_replica_acknowledgement_loses_no_acknowledged_grab() {
    for wait_for_replica in [true, false] {
        let mut primary = OwnRedis::start_with("everysec");
        let replica = OwnRedis::replica_of(&primary);
        let mut config = primary.config();
        config.redis.timeout = Duration::from_secs(1); // room for WAIT on a loaded machine
        if wait_for_replica {
            config.grab_wait =
                Some(red_packets::config::ReplicaWait { replicas: 1, timeout: Duration::from_millis(500) });
        }
        let functions = Arc::new(functions(&config).await);
        let packets = five_packets(&functions).await;
        let replica_store = red_packets::adapters::RedisStore::new(&replica.config());
        let last = red_packets::domain::PacketId::parse(&packets[4]).unwrap();
        for _ in 0..200 {
            if replica_store.snapshot(&last).await.ok().flatten().is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let acknowledged = storm_killed_midway(&functions, &packets, || primary.kill()).await;

        let mut conn = replica_store.connection().await.unwrap();
        let _: () = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query_async(&mut conn).await.unwrap();
        let lost = lost_grabs(&replica_store, &acknowledged).await;
        eprintln!(
            "figure: failover, GRAB_WAIT_REPLICAS={} (WAIT timeout 500 ms): {} grabs acknowledged before the primary was killed, {lost} missing on the promoted replica",
            u8::from(wait_for_replica),
            acknowledged.len()
        );
        assert!(!acknowledged.is_empty());
        if wait_for_replica {
            assert_eq!(lost, 0, "with replica acknowledgement no acknowledged grab is lost in a failover");
        }
        drop(replica);
    }
}
