//! The Lua scripts, each loaded once as a [`redis::Script`] (EVALSHA, falling back to EVAL on
//! NOSCRIPT) and called only through a typed function here: no call site passes positional
//! arguments. Every key a script touches carries the packet's hash tag and goes in KEYS.

use std::collections::HashMap;
use std::sync::LazyLock;

use redis::aio::ConnectionLike;
use redis::{RedisResult, Script};

use crate::clock::Millis;
use crate::domain::settlement::LoggedGrab;
use crate::domain::{Cents, PacketId, UserId};
use crate::ports::{GrabOutcome, Lookup};

/// The source of `grab.lua` (benchmarks run it through `redis-benchmark` too).
pub const GRAB_LUA: &str = include_str!("../../lua/grab.lua");

static GRAB: LazyLock<Script> = LazyLock::new(|| Script::new(GRAB_LUA));
static LOAD: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("../../lua/load.lua")));
static CLOSE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("../../lua/close.lua")));
static PERSISTED: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("../../lua/persisted.lua")));
static SNAPSHOT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("../../lua/snapshot.lua")));

/// The Redis keys of one packet; all share the hash tag `{<id>}`, so one slot holds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketKeys {
    /// Hash: the packet's fields and counters.
    pub meta: String,
    /// List: shares not yet taken.
    pub shares: String,
    /// Hash: user -> "<amount>:<grabbed_at_ms>".
    pub users: String,
    /// List: every grab as JSON, in grab order; settle persists it.
    pub log: String,
    /// String: what DynamoDB said of an id Redis does not hold (`pending`, `absent`, `recorded`).
    pub lookup: String,
}

impl PacketKeys {
    /// The keys of packet `id` under `prefix` (`REDIS_KEY_PREFIX`, `rp` by default).
    pub fn of(prefix: &str, id: &PacketId) -> Self {
        PacketKeys {
            meta: format!("{prefix}:{{{id}}}:meta"),
            shares: format!("{prefix}:{{{id}}}:shares"),
            users: format!("{prefix}:{{{id}}}:users"),
            log: format!("{prefix}:{{{id}}}:log"),
            lookup: format!("{prefix}:{{{id}}}:lookup"),
        }
    }
}

/// The settle index key of shard `shard` under `prefix`: a sorted set of open packet ids
/// scored by expiry, in a slot of its own.
pub fn settle_index_key(prefix: &str, shard: u32) -> String {
    format!("{prefix}:settle:{{{shard}}}")
}

/// `<prefix>:settle:{<shard>}:dirty`: the shard's packets with grabs settle has not persisted
/// (a set, in the index's slot).
pub fn settle_dirty_key(prefix: &str, shard: u32) -> String {
    format!("{prefix}:settle:{{{shard}}}:dirty")
}

/// What `load.lua` stores of a packet, besides its shares.
#[derive(Debug, serde::Serialize)]
pub struct LoadFields<'a> {
    /// Who sent it.
    pub sender: &'a str,
    /// "lucky" or "fixed".
    pub kind: &'a str,
    /// The lucky rule, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split: Option<&'a str>,
    /// The greeting, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub greeting: Option<&'a str>,
    /// The split seed, hex, so Redis alone can describe the packet.
    pub seed: &'a str,
    /// The whole amount.
    pub total_cents: Cents,
    /// How many shares.
    pub count: u32,
    /// Epoch ms.
    pub created_at: Millis,
    /// Epoch ms.
    pub expires_at: Millis,
    /// Shares gone from the front of the list (the next grab's `seq` is one more).
    pub shares_taken: usize,
}

/// How `load.lua` treats a packet Redis already holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadMode {
    /// Leave it as it is (send, restore).
    Add,
    /// Replace it with the state given (settle's re-sync from the ledger).
    Replace,
}

/// Runs `load.lua`: returns true when the packet was loaded now, false when it already was.
/// `grabs` are the grabs DynamoDB already holds (empty at send, filled on a reload).
pub async fn load<C: ConnectionLike>(
    conn: &mut C,
    keys: &PacketKeys,
    mode: LoadMode,
    fields: &LoadFields<'_>,
    grabs: &[LoggedGrab],
    shares: &[Cents],
) -> RedisResult<bool> {
    let fields = serde_json::to_string(fields).expect("load fields serialize");
    let grabs = serde_json::to_string(grabs).expect("grabs serialize");
    let loaded: i64 = LOAD
        .key(&keys.meta)
        .key(&keys.shares)
        .key(&keys.users)
        .key(&keys.log)
        .arg(match mode {
            LoadMode::Add => "add",
            LoadMode::Replace => "replace",
        })
        .arg(fields)
        .arg(grabs)
        .arg(shares)
        .invoke_async(conn)
        .await?;
    Ok(loaded == 1)
}

/// What `close.lua` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseOutcome {
    /// Redis holds no such packet.
    Missing,
    /// Neither finished nor expired: still open.
    StillOpen,
    /// Closed to grabs, now or earlier.
    Closed,
}

/// Runs `close.lua` at `now_ms`.
pub async fn close<C: ConnectionLike>(conn: &mut C, keys: &PacketKeys, now_ms: Millis) -> RedisResult<CloseOutcome> {
    let state: i64 = CLOSE.key(&keys.meta).arg(now_ms).invoke_async(conn).await?;
    Ok(match state {
        0 => CloseOutcome::Missing,
        1 => CloseOutcome::StillOpen,
        _ => CloseOutcome::Closed,
    })
}

/// Runs `persisted.lua`: the first `confirmed` log entries are in DynamoDB. Returns the mark.
pub async fn mark_persisted<C: ConnectionLike>(
    conn: &mut C,
    keys: &PacketKeys,
    confirmed: usize,
) -> RedisResult<usize> {
    PERSISTED.key(&keys.meta).arg(confirmed).invoke_async(conn).await
}

/// Runs `snapshot.lua`: the meta fields and the whole log, or `None` when Redis holds no such packet.
pub async fn snapshot<C: ConnectionLike>(
    conn: &mut C,
    keys: &PacketKeys,
) -> RedisResult<Option<(HashMap<String, String>, Vec<String>)>> {
    let (meta, log): (HashMap<String, String>, Vec<String>) =
        SNAPSHOT.key(&keys.meta).key(&keys.log).invoke_async(conn).await?;
    Ok((!meta.is_empty()).then_some((meta, log)))
}

/// What `grab.lua` answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScriptGrab {
    /// The outcome for the caller.
    pub outcome: GrabOutcome,
    /// This grab is the packet's only one not yet persisted: mark the packet for settle.
    pub dirtied: bool,
}

/// Runs `grab.lua` for `user` at `now_ms`; a caller that claims an unknown id's lookup holds it
/// for `lookup_lease_ms`.
pub async fn grab<C: ConnectionLike>(
    conn: &mut C,
    keys: &PacketKeys,
    user: &UserId,
    now_ms: Millis,
    lookup_lease_ms: u64,
) -> RedisResult<ScriptGrab> {
    let (outcome, amount_cents, grabbed_at_ms, remaining_count, dirtied): (i64, Cents, Millis, u32, i64) = GRAB
        .key(&keys.meta)
        .key(&keys.shares)
        .key(&keys.users)
        .key(&keys.log)
        .key(&keys.lookup)
        .arg(user.as_str())
        .arg(now_ms)
        .arg(lookup_lease_ms)
        .invoke_async(conn)
        .await?;
    let outcome = match outcome {
        0 => GrabOutcome::AskLedger(Lookup::Claimed),
        7 => GrabOutcome::AskLedger(Lookup::Recorded),
        6 => GrabOutcome::LookupPending,
        5 => GrabOutcome::NotFound,
        1 => GrabOutcome::Grabbed { amount_cents, grabbed_at_ms, remaining_count },
        2 => GrabOutcome::Already { amount_cents, grabbed_at_ms, remaining_count },
        3 => GrabOutcome::SoldOut,
        4 => GrabOutcome::Expired,
        other => {
            return Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "grab.lua returned an unknown outcome",
                other.to_string(),
            )))
        }
    };
    Ok(ScriptGrab { outcome, dirtied: dirtied == 1 })
}

/// Parses a users-hash value `"<amount>:<grabbed_at_ms>"` of a sold-out packet as the
/// caller's earlier grab.
pub fn parse_prior_grab(value: &str) -> Result<GrabOutcome, String> {
    let parsed = value.split_once(':').and_then(|(amount, at)| Some((amount.parse().ok()?, at.parse().ok()?)));
    let (amount_cents, grabbed_at_ms) = parsed.ok_or_else(|| format!("unreadable grab {value:?} in the users hash"))?;
    Ok(GrabOutcome::Already { amount_cents, grabbed_at_ms, remaining_count: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_of_a_packet_carries_its_hash_tag() {
        let id = PacketId::random();
        let keys = PacketKeys::of("rp", &id);
        let tag = format!("{{{id}}}");
        for key in [&keys.meta, &keys.shares, &keys.users, &keys.log, &keys.lookup] {
            let start = key.find('{').unwrap();
            let end = start + key[start..].find('}').unwrap();
            assert_eq!(&key[start..=end], tag, "{key}: Redis Cluster hashes only the first {{...}}");
        }
    }

    #[test]
    fn a_prior_grab_reads_back_as_already_grabbed() {
        assert_eq!(
            parse_prior_grab("125:1700000000000"),
            Ok(GrabOutcome::Already { amount_cents: 125, grabbed_at_ms: 1_700_000_000_000, remaining_count: 0 })
        );
        assert!(parse_prior_grab("125").is_err());
        assert!(parse_prior_grab("-1:5").is_err());
    }

    #[test]
    fn scripts_declare_their_keys_and_arguments() {
        for source in [include_str!("../../lua/grab.lua"), include_str!("../../lua/load.lua")] {
            assert!(source.contains("-- KEYS[1]") && source.contains("-- ARGV[1]") && source.contains("-- Returns"));
        }
    }
}
