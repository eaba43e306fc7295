//! The limit: `redis-benchmark` running EVALSHA of the same `grab.lua` on the same server.

use std::process::Command;

use red_packets::adapters::redis::keys::PacketKeys;
use red_packets::adapters::redis::scripts::GRAB_LUA;
use red_packets::adapters::RedisStore;
use red_packets::domain::PacketKind;
use red_packets::{Clock, SystemClock};

use crate::grab_path::load_packet;

/// Requests per `redis-benchmark` run.
pub const REQUESTS: u64 = 200_000;

/// EVALSHA of grab.lua with a random user each call on a packet that does not run dry: requests
/// per second with 50 clients, unpipelined (`pipeline` 1) or pipelined.
pub async fn evalsha(store: &RedisStore, port: u16, pipeline: u32) -> Result<f64, String> {
    let packet = load_packet(store, PacketKind::Fixed, REQUESTS + 10_000, (REQUESTS + 10_000) as u32).await;
    let mut conn = store.connection().await.map_err(|e| e.to_string())?;
    let sha: String =
        redis::cmd("SCRIPT").arg("LOAD").arg(GRAB_LUA).query_async(&mut conn).await.map_err(|e| e.to_string())?;
    let PacketKeys { packet: packet_key, pool, grabs, .. } = store.keys(&packet.id);
    let now = SystemClock.now_ms().to_string();
    let output = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-n", &REQUESTS.to_string(), "-c", "50"])
        .args(["-P", &pipeline.to_string(), "-r", "1000000000", "--csv"])
        .args(["EVALSHA", &sha, "3", &packet_key, &pool, &grabs])
        .args([":bench-user:__rand_int__", now.as_str()])
        .output()
        .map_err(|e| format!("redis-benchmark: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    // --csv prints a header line, then "<command>","<rps>",...
    text.lines()
        .filter(|line| !line.starts_with("\"test\""))
        .find_map(|line| line.split("\",\"").nth(1).and_then(|rps| rps.trim_matches('"').parse::<f64>().ok()))
        .ok_or_else(|| format!("no figure in redis-benchmark's output: {text}"))
}
