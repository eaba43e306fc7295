//! Simulated failovers during the soak: every so often one open packet's keys are put back to
//! what they held a moment earlier (`DUMP`, a pause while traffic goes on, `RESTORE … REPLACE`),
//! as a replica that missed the newest writes holds them when it is promoted.

use std::time::Duration;

use red_packets::adapters::RedisStore;
use red_packets::domain::PacketId;
use red_packets::ports::SettleIndex;
use red_packets::{Clock, SystemClock};

/// How far behind the promoted replica is: about one settle pass, so some of the writes it loses
/// were already recorded in the ledger and others were not.
const LAG: Duration = Duration::from_millis(1_000);

/// One simulated failover: the packet, and the window whose writes it lost (epoch ms).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Failover {
    /// The packet whose keys went back.
    pub packet: String,
    /// When the state it went back to was read.
    pub snapshot_ms: i64,
    /// When it was put back.
    pub restored_ms: i64,
}

/// Fails one packet over every `every` until `duration` is over; the failovers made.
pub async fn run(store: RedisStore, every: Duration, duration: Duration) -> Vec<Failover> {
    let mut failovers = Vec::new();
    let started = std::time::Instant::now();
    while started.elapsed() + every < duration {
        tokio::time::sleep(every).await;
        match fail_over_one(&store).await {
            Ok(Some(failover)) => {
                eprintln!("[soak] failover: {} lost the writes of {} ms", failover.packet, LAG.as_millis());
                failovers.push(failover);
            }
            Ok(None) => eprintln!("[soak] failover: no open packet with grabs and shares left"),
            Err(error) => eprintln!("[soak] failover failed: {error}"),
        }
    }
    failovers
}

/// Picks the newest open packet with grabs and shares left (one the traffic grabs most) and puts
/// its keys back `LAG` later.
async fn fail_over_one(store: &RedisStore) -> Result<Option<Failover>, Box<dyn std::error::Error>> {
    let mut chosen: Option<(i64, PacketId)> = None;
    for shard in 0..store.settle_shards() {
        for id in store.indexed_packets(shard).await? {
            if let Some(live) = store.snapshot(&id).await? {
                let newer = chosen.as_ref().is_none_or(|(created, _)| live.packet.created_at_ms > *created);
                if live.open && !live.grabs.is_empty() && live.remaining_count > 0 && newer {
                    chosen = Some((live.packet.created_at_ms, id));
                }
            }
        }
    }
    let Some((_, id)) = chosen else { return Ok(None) };
    let mut conn = store.connection().await?;
    let keys = store.keys(&id);
    let snapshot_ms = SystemClock.now_ms();
    let mut dumps = Vec::new();
    for key in [keys.packet, keys.pool, keys.grabs] {
        let dump: Option<Vec<u8>> = redis::cmd("DUMP").arg(&key).query_async(&mut conn).await?;
        dumps.push((key, dump));
    }
    tokio::time::sleep(LAG).await;
    // All three keys at once, as a promoted replica holds them.
    let mut restore = redis::pipe();
    restore.atomic();
    for (key, dump) in dumps {
        match dump {
            Some(dump) => restore.cmd("RESTORE").arg(&key).arg(0).arg(dump).arg("REPLACE").ignore(),
            None => restore.cmd("DEL").arg(&key).ignore(),
        };
    }
    let _: () = restore.query_async(&mut conn).await?;
    Ok(Some(Failover { packet: id.to_string(), snapshot_ms, restored_ms: SystemClock.now_ms() }))
}
