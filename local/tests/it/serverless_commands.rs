//! What ElastiCache Serverless does not offer is never needed: a whole packet life through the
//! real handlers (send, grabs, a repeat, a sold-out answer, views, history, settle, a grab on a
//! settled packet Redis forgot, an unknown id), on a server of the test's own (Redis or Valkey,
//! by `REDIS_SERVER`), then `INFO commandstats` lists every command the functions sent. None of
//! `WAIT`, `FUNCTION`/`FCALL`, `KEYS`, `CONFIG` or `CLIENT LIST` may appear, and every script
//! call carries keys (the scripts' wrappers pass every key in `KEYS`).

use std::collections::BTreeMap;

use crate::support::stack::Stack;
use crate::support::OwnRedis;
use red_packets::domain::PacketId;
use serde_json::json;

/// Commands (and command families) ElastiCache Serverless does not offer.
const UNSUPPORTED: &[&str] = &["wait", "waitaof", "function", "fcall", "fcall_ro", "keys", "config", "client|list"];

/// True when `command` (as `INFO commandstats` names it, `family|subcommand`) is unsupported;
/// the test's own `CONFIG RESETSTAT` aside.
fn unsupported(command: &str) -> bool {
    let family = command.split('|').next().unwrap_or(command);
    command != "config|resetstat" && (UNSUPPORTED.contains(&command) || UNSUPPORTED.contains(&family))
}

async fn command_counts(stack: &Stack) -> BTreeMap<String, u64> {
    let mut conn = stack.store().connection().await.unwrap();
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(&mut conn).await.unwrap();
    info.lines()
        .filter_map(|line| line.strip_prefix("cmdstat_"))
        .filter_map(|line| {
            let (name, stats) = line.split_once(':')?;
            let calls = stats.split(',').find_map(|stat| stat.strip_prefix("calls="))?.parse().ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_functions_send_nothing_elasticache_serverless_lacks() {
    let redis = OwnRedis::start();
    let stack = Stack::with_config("serverless", redis.config()).await;
    let mut conn = stack.store().connection().await.unwrap();
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut conn).await.unwrap();

    let id = stack.send("alice", json!({ "total_cents": 300, "count": 3, "expires_in_seconds": 60 })).await;
    for user in ["bob", "carol", "dave", "bob", "erin"] {
        stack.grab(&id, user).await;
    }
    stack.view(&id, "alice").await;
    let other = stack.send("alice", json!({ "total_cents": 300, "count": 3, "expires_in_seconds": 60 })).await;
    stack.grab(&other, "bob").await;
    stack.clock.advance(61_000);
    let summary = stack.settle().await;
    assert_eq!(summary.finalised, 2, "{summary:?}");
    stack.empty_redis(&[&id]).await;
    stack.grab(&id, "bob").await;
    stack.grab(&PacketId::random().to_string(), "bob").await;
    stack.history("bob", "role=received").await;

    let counts = command_counts(&stack).await;
    let sent: Vec<&String> = counts.keys().collect();
    eprintln!("figure: commands the functions sent over a packet's life: {sent:?}");
    let offending: Vec<&&String> = sent.iter().filter(|command| unsupported(command)).collect();
    assert!(offending.is_empty(), "not offered by ElastiCache Serverless: {offending:?}");
    assert!(counts.get("evalsha").copied().unwrap_or(0) > 0, "the scripts ran: {counts:?}");
    assert!(unsupported("config|get") && unsupported("wait") && unsupported("client|list"), "the check bites");
    assert!(!unsupported("client|setname") && !unsupported("evalsha"));
}
