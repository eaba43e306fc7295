//! The Redis layout of a packet and the Lua scripts over it, each loaded once as a
//! [`redis::Script`] (EVALSHA, falling back to EVAL on NOSCRIPT) and called only through a typed
//! function here: no call site passes positional arguments. Every key a script touches carries
//! the packet's hash tag and goes in KEYS. While a slot migrates between a cluster's shards, a
//! script whose KEYS name a key that does not exist is refused (`TRYAGAIN`) until the slot
//! settles, so the grab scripts name only the packet's hash, pool and log: an unknown id's
//! lookup key goes to `lookup.lua`, a call of its own.
//!
//! The keys and the entries' formats are `keys.rs`'s; `record.rs` reads the packet hash's fields.

use std::collections::HashSet;
use std::future::Future;
use std::sync::LazyLock;
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{RedisResult, Script};

use super::keys::{grabber_value, log_entry, parse_log_entry, persisted_grab, share_entry, unplaced_share};
use super::keys::{log_mark, PacketKeys, LIST_MARK};
use super::record::{LoadFields, RawPage, RawSnapshot, RawVersion, SNAPSHOT_FIELDS, VERSION_FIELDS};
use red_packets_core::clock::Millis;
use red_packets_core::domain::grab::LoggedGrab;
use red_packets_core::domain::{PacketId, UserId};
use red_packets_core::ports::{CancelOutcome, CloseOutcome, Frozen, PacketImage};

pub use super::grab_scripts::{grab, grab_many, Lookup, ScriptGrab, GRAB_LUA, GRAB_MANY_LUA, LOOKUP_LUA};

static LOAD: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("../lua/load.lua")));
static CLOSE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("../lua/close.lua")));
static CANCEL: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("../lua/cancel.lua")));
static PERSISTED: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("../lua/persisted.lua")));
static FREEZE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("../lua/freeze.lua")));
static SNAPSHOT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("../lua/snapshot.lua")));
static PAGE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("../lua/page.lua")));

/// How `load.lua` treats a packet Redis already holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadMode<'a> {
    /// Leave it as it is (send, restore).
    Add,
    /// Replace it with the state given, while the re-sync's freeze holds this token (settle's
    /// re-sync from the ledger).
    Replace {
        /// The token `freeze.lua` set.
        token: &'a str,
    },
}

/// What `load.lua` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loaded {
    /// Loaded now.
    Now,
    /// Redis held the packet already: nothing changed.
    Already,
    /// A replace found its freeze gone or another's: nothing changed.
    FreezeLost,
    /// The packet hash is gone but its pool or log is not: nothing changed; settle re-syncs it.
    Partial,
    /// A staged load found its staged keys short of what was staged (one expired, a failover
    /// lost a chunk): nothing changed; the load is tried again.
    StageLost,
    /// Another caller is staging this large packet's add right now: nothing changed; ask again
    /// shortly.
    Staging,
}

/// Entries (shares and grabs) one call carries at most: a packet with more is staged, a
/// bounded command at a time, before `load.lua` renames it into place.
pub const LOAD_CHUNK: usize = 5_000;

/// How long a staged load's keys outlive a loader that stopped before `load.lua` renamed them.
const STAGE_TTL_MS: u64 = 600_000;

/// One round trip of a staged or paged operation, answered within `per_call` or failed as a
/// timeout: each call of a campaign packet's load or read gets the time one call gets.
async fn bounded<T>(per_call: Duration, call: impl Future<Output = RedisResult<T>>) -> RedisResult<T> {
    match tokio::time::timeout(per_call, call).await {
        Ok(answer) => answer,
        Err(_) => Err(redis::RedisError::from((redis::ErrorKind::Io, "no answer", format!("within {per_call:?}")))),
    }
}

/// Runs `load.lua` on `image`: its grabs are the grabs the ledger already holds (none at send,
/// some on a reload), its pool the shares not yet taken, in the order they go out. Up to
/// [`LOAD_CHUNK`] entries go in the call itself; a larger packet (a campaign's) is staged under
/// keys of this load's own first ([`stage`]), so no call carries more than a chunk, and each
/// call is answered within `per_call`. A large add stages only under a lease of its own
/// (`<packet key>:staging`) and only when the packet is not there: the crowd that reloads a
/// lost campaign packet at once gets [`Loaded::Staging`], not a copy each. A staged load
/// `load.lua` finds short of what was staged (a stage key expired, a failover lost a chunk)
/// changes nothing and is [`Loaded::StageLost`].
pub async fn load<C: ConnectionLike>(
    conn: &mut C,
    keys: &PacketKeys,
    mode: LoadMode<'_>,
    image: PacketImage<'_>,
    per_call: Duration,
) -> RedisResult<Loaded> {
    let PacketImage { packet, cancelled, closed, grabs, pool } = image;
    let fields = serde_json::to_string(&LoadFields::of(packet, cancelled, closed)).expect("load fields serialize");
    let large = grabs.len() + pool.len() > LOAD_CHUNK;
    let (mode, token) = match mode {
        LoadMode::Add => ("add", ""),
        LoadMode::Replace { token } => ("replace", token),
    };
    let lease = keys.staging_lease();
    if large && mode == "add" {
        // Every grab of a packet Redis lost reloads it at once: only one stages it, under a
        // lease, and only while it is not there.
        let mut held = redis::pipe();
        held.exists(&keys.packet).exists(&[&keys.pool, &keys.grabs]);
        held.cmd("SET").arg(&lease).arg(1).arg("NX").arg("PX").arg(STAGE_TTL_MS);
        let (packet_held, rest_held, leased): (bool, u32, Option<String>) =
            bounded(per_call, held.query_async(conn)).await?;
        let answer = match (packet_held, rest_held) {
            (true, _) => Some(Loaded::Already),
            (false, 1..) => Some(Loaded::Partial),
            (false, 0) => None,
        };
        match (answer, leased) {
            // Taken now, not needed: given back (another caller's lease is left alone).
            (Some(answer), Some(_)) => {
                let _: RedisResult<()> = bounded(per_call, redis::cmd("DEL").arg(&lease).query_async(conn)).await;
                return Ok(answer);
            }
            (Some(answer), None) => return Ok(answer),
            (None, None) => return Ok(Loaded::Staging),
            (None, Some(_)) => {}
        }
        let loaded = load_once(conn, keys, mode, token, &fields, image, per_call).await;
        let _: RedisResult<()> = bounded(per_call, redis::cmd("DEL").arg(&lease).query_async(conn)).await;
        return loaded;
    }
    load_once(conn, keys, mode, token, &fields, image, per_call).await
}

/// One `load.lua` call on `image`, staged first when it is large.
async fn load_once<C: ConnectionLike>(
    conn: &mut C,
    keys: &PacketKeys,
    mode: &str,
    token: &str,
    fields: &str,
    image: PacketImage<'_>,
    per_call: Duration,
) -> RedisResult<Loaded> {
    let PacketImage { packet, grabs, pool, .. } = image;
    let large = grabs.len() + pool.len() > LOAD_CHUNK;
    let staged = keys.staged(PacketId::random().as_str());
    let mut invocation = LOAD.prepare_invoke();
    invocation.key(&keys.packet).key(&keys.pool).key(&keys.grabs);
    invocation.key(&staged.packet).key(&staged.pool).key(&staged.grabs);
    invocation.arg(mode).arg(fields).arg(token);
    if large {
        stage(conn, &staged, packet.terms.count, grabs, pool, per_call).await?;
        let grabbers: HashSet<&UserId> = grabs.iter().map(|grab| &grab.user).collect();
        invocation.arg("staged").arg(grabbers.len()).arg(pool.len() + 2).arg(grabs.len() + 1);
    } else {
        let entries: Vec<String> = grabs.iter().map(|grab| log_entry(grab, packet.terms.count)).collect();
        let shares: Vec<String> = pool.iter().map(|(seq, amount)| unplaced_share(*seq, *amount)).collect();
        invocation.arg(serde_json::to_string(&entries).expect("grabs serialize")).arg(shares);
    }
    let loaded: i64 = bounded(per_call, invocation.invoke_async(conn)).await?;
    Ok(match loaded {
        1 => Loaded::Now,
        0 => Loaded::Already,
        2 => Loaded::FreezeLost,
        4 => Loaded::StageLost,
        _ => Loaded::Partial,
    })
}

/// Log entries one call returns at most (`snapshot.lua`'s and `freeze.lua`'s `LOG_PAGE`): a
/// page of a campaign's log is about 300 KB, where its whole log of 100,000 is 6 MB in one
/// reply that blocks Redis while it is built.
pub const LOG_PAGE: usize = 5_000;

/// The log entries of `keys` after `log` (a script's first page) up to `length`, a page a
/// call, each within `per_call`; `None` when the log ends before `length` (it was rewritten
/// between two pages: a re-sync's replace, a retirement).
async fn rest_of_log<C: ConnectionLike>(
    conn: &mut C,
    keys: &PacketKeys,
    mut log: Vec<String>,
    length: usize,
    per_call: Duration,
) -> RedisResult<Option<Vec<String>>> {
    while log.len() < length {
        let start = log.len();
        let end = (start + LOG_PAGE).min(length) - 1;
        let page: Vec<String> =
            bounded(per_call, redis::cmd("LRANGE").arg(&keys.grabs).arg(start).arg(end).query_async(conn)).await?;
        if page.len() < end + 1 - start {
            return Ok(None);
        }
        log.extend(page);
    }
    log.truncate(length);
    Ok(Some(log))
}

/// Writes a large packet's grabbers, pool and log under `staged`, [`LOAD_CHUNK`] entries a
/// command, each key with a TTL until `load.lua` renames it into place.
async fn stage<C: ConnectionLike>(
    conn: &mut C,
    staged: &PacketKeys,
    count: u32,
    grabs: &[LoggedGrab],
    pool: &[(u32, red_packets_core::domain::Cents)],
    per_call: Duration,
) -> RedisResult<()> {
    // The log's head mark first, and the pool's two marks last (load.lua).
    let mut head = redis::pipe();
    head.rpush(&staged.grabs, LIST_MARK).ignore().cmd("PEXPIRE").arg(&staged.grabs).arg(STAGE_TTL_MS).ignore();
    bounded(per_call, head.exec_async(conn)).await?;
    for chunk in grabs.chunks(LOAD_CHUNK) {
        let mut fields = redis::cmd("HSET");
        fields.arg(&staged.packet);
        let mut log = redis::cmd("RPUSH");
        log.arg(&staged.grabs);
        for grab in chunk {
            fields.arg(PacketKeys::grabber_field(&grab.user)).arg(grabber_value(grab, count));
            log.arg(log_entry(grab, count));
        }
        let mut pipe = redis::pipe();
        pipe.add_command(fields).add_command(log);
        pipe.cmd("PEXPIRE").arg(&staged.packet).arg(STAGE_TTL_MS);
        pipe.cmd("PEXPIRE").arg(&staged.grabs).arg(STAGE_TTL_MS);
        bounded(per_call, pipe.exec_async(conn)).await?;
    }
    for (first, chunk) in pool.chunks(LOAD_CHUNK).enumerate().map(|(n, chunk)| (n * LOAD_CHUNK, chunk)) {
        let mut shares = redis::cmd("RPUSH");
        shares.arg(&staged.pool);
        for (offset, (seq, amount)) in chunk.iter().enumerate() {
            let left = pool.len() - 1 - (first + offset);
            shares.arg(share_entry(*seq, *amount, left));
        }
        let mut pipe = redis::pipe();
        pipe.add_command(shares).cmd("PEXPIRE").arg(&staged.pool).arg(STAGE_TTL_MS);
        bounded(per_call, pipe.exec_async(conn)).await?;
    }
    let mut tail = redis::pipe();
    tail.rpush(&staged.pool, &[LIST_MARK, LIST_MARK]).ignore();
    tail.cmd("PEXPIRE").arg(&staged.pool).arg(STAGE_TTL_MS).ignore();
    bounded(per_call, tail.exec_async(conn)).await
}

/// Runs `freeze.lua` with `token`, then reads the rest of the frozen log a page at a time, each
/// call within `per_call` (frozen, the log takes no fresh grab). An unreadable log entry, or a
/// log rewritten meanwhile (another run's re-sync), is an error.
pub async fn freeze<C: ConnectionLike>(
    conn: &mut C,
    keys: &PacketKeys,
    token: &str,
    per_call: Duration,
) -> RedisResult<Frozen> {
    let mut invocation = FREEZE.prepare_invoke();
    invocation.key(&keys.packet).key(&keys.pool).key(&keys.grabs).arg(token);
    let (state, length, first): (i64, usize, Vec<String>) = bounded(per_call, invocation.invoke_async(conn)).await?;
    if state == 0 {
        return Ok(Frozen::Missing);
    }
    let unreadable = |detail: String| redis::RedisError::from((redis::ErrorKind::Client, "freeze.lua", detail));
    let log = rest_of_log(conn, keys, first, length, per_call)
        .await?
        .ok_or_else(|| unreadable(format!("the frozen log changed under its {length} entries")))?;
    let grabs = log
        .iter()
        .skip(log_mark(&log))
        .map(|entry| parse_log_entry(entry).ok_or_else(|| unreadable(format!("unreadable {entry:?}"))))
        .collect::<RedisResult<Vec<_>>>()?;
    Ok(Frozen::Log { grabs, partial: state == 2 })
}

/// Runs `close.lua` at `now_ms`; `whatever_its_state` closes an open or frozen packet too
/// (quarantine).
pub async fn close<C: ConnectionLike>(
    conn: &mut C,
    keys: &PacketKeys,
    now_ms: Millis,
    whatever_its_state: bool,
) -> RedisResult<CloseOutcome> {
    let state: i64 = CLOSE
        .key(&keys.packet)
        .key(&keys.pool)
        .arg(now_ms)
        .arg(if whatever_its_state { "force" } else { "" })
        .invoke_async(conn)
        .await?;
    Ok(match state {
        0 => CloseOutcome::Missing,
        1 => CloseOutcome::StillOpen,
        _ => CloseOutcome::Closed,
    })
}

/// Runs `cancel.lua` at `now_ms`.
pub async fn cancel<C: ConnectionLike>(conn: &mut C, keys: &PacketKeys, now_ms: Millis) -> RedisResult<CancelOutcome> {
    let state: i64 = CANCEL.key(&keys.packet).key(&keys.pool).arg(now_ms).invoke_async(conn).await?;
    Ok(match state {
        0 => CancelOutcome::Missing,
        1 => CancelOutcome::Cancelled,
        2 => CancelOutcome::Finished,
        4 => CancelOutcome::Resyncing,
        _ => CancelOutcome::Expired,
    })
}

/// Runs `persisted.lua`: the first `confirmed` log entries are in the ledger, the last of them
/// `last`. Returns the mark.
pub async fn mark_persisted<C: ConnectionLike>(
    conn: &mut C,
    keys: &PacketKeys,
    confirmed: usize,
    last: &LoggedGrab,
) -> RedisResult<usize> {
    let last = persisted_grab(last);
    PERSISTED.key(&keys.packet).key(&keys.grabs).arg(confirmed).arg(last).invoke_async(conn).await
}

/// Which page `page.lua` reads: `len` log entries from position `from` (1 for the first, in grab
/// order), and the entry at position `also` besides (0 for none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageAsked {
    /// The page's first entry.
    pub from: u32,
    /// How many entries.
    pub len: u32,
    /// One more entry's position, 0 for none.
    pub also: u32,
}

/// `page.lua`'s reply: fields, pool head, grabs, page, the entry asked for besides.
type PageReply = (Vec<Option<String>>, Option<String>, u32, Vec<String>, Option<String>);

/// Runs `page.lua`: the packet's fields ([`SNAPSHOT_FIELDS`], then [`VERSION_FIELDS`]), its
/// pool's head, how many grabs its log holds and the page asked for, in one call; `None` when
/// Redis holds no such packet.
pub async fn page<C: ConnectionLike>(
    conn: &mut C,
    keys: &PacketKeys,
    asked: PageAsked,
    per_call: Duration,
) -> RedisResult<Option<RawPage>> {
    let mut invocation = PAGE.prepare_invoke();
    invocation.key(&keys.packet).key(&keys.pool).key(&keys.grabs).arg(asked.from).arg(asked.len).arg(asked.also);
    invocation.arg(&SNAPSHOT_FIELDS[..]).arg(&VERSION_FIELDS[..]);
    let (mut fields, head, grabs, log, also): PageReply = bounded(per_call, invocation.invoke_async(conn)).await?;
    let version = fields.split_off(SNAPSHOT_FIELDS.len());
    let snapshot = RawSnapshot { fields, shares_left: super::keys::shares_left(head.as_deref()), log };
    if snapshot.field("sender").is_none() {
        return Ok(None);
    }
    Ok(Some(RawPage { snapshot, head, grabs, also, version: RawVersion::of(version) }))
}

/// Reads a packet's version ([`VERSION_FIELDS`] of its hash) in one command: `None` when Redis
/// holds no such packet.
pub async fn version<C: ConnectionLike>(
    conn: &mut C,
    keys: &PacketKeys,
    per_call: Duration,
) -> RedisResult<Option<RawVersion>> {
    let mut read = redis::cmd("HMGET");
    read.arg(&keys.packet).arg(&VERSION_FIELDS[..]);
    let fields: Vec<Option<String>> = bounded(per_call, read.query_async(conn)).await?;
    let version = RawVersion::of(fields);
    Ok(version.open_until.is_some().then_some(version))
}

/// How many times a snapshot is read again when its log was rewritten between two pages.
const SNAPSHOT_ATTEMPTS: u32 = 3;

/// Runs `snapshot.lua`, then reads the rest of the log it measured a page at a time, each call
/// within `per_call`: `None` when Redis holds no such packet. A log rewritten between two pages
/// (a re-sync's replace, a retirement) is read again from the start.
pub async fn snapshot<C: ConnectionLike>(
    conn: &mut C,
    keys: &PacketKeys,
    per_call: Duration,
) -> RedisResult<Option<RawSnapshot>> {
    for _ in 0..SNAPSHOT_ATTEMPTS {
        let mut invocation = SNAPSHOT.prepare_invoke();
        invocation.key(&keys.packet).key(&keys.pool).key(&keys.grabs).arg(&SNAPSHOT_FIELDS[..]);
        let (fields, shares_left, length, first): (Vec<Option<String>>, u32, usize, Vec<String>) =
            bounded(per_call, invocation.invoke_async(conn)).await?;
        let mut snapshot = RawSnapshot { fields, shares_left, log: Vec::new() };
        if snapshot.field("sender").is_none() {
            return Ok(None);
        }
        if let Some(log) = rest_of_log(conn, keys, first, length, per_call).await? {
            snapshot.log = log;
            return Ok(Some(snapshot));
        }
    }
    let detail = format!("the log kept changing between its pages, {SNAPSHOT_ATTEMPTS} reads in a row");
    Err(redis::RedisError::from((redis::ErrorKind::Client, "snapshot.lua", detail)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::LOOKUP_LEASE;
    use red_packets_core::domain::access::MAX_WRONG_PASSPHRASES;

    #[test]
    fn every_key_of_a_packet_carries_its_hash_tag() {
        let id = PacketId::random();
        let keys = PacketKeys::of("rp", &id);
        assert_eq!(
            [keys.packet.as_str(), &keys.pool, &keys.grabs, &keys.lookup],
            ["packet", "pool", "grabs", "lookup"].map(|name| format!("rp:{{{id}}}:{name}")),
        );
        assert_eq!(PacketKeys::grabber_field(&UserId::from_claim("bob").unwrap()), ":bob");
        let tag = format!("{{{id}}}");
        for key in [&keys.packet, &keys.pool, &keys.grabs, &keys.lookup] {
            let start = key.find('{').unwrap();
            let end = start + key[start..].find('}').unwrap();
            assert_eq!(&key[start..=end], tag, "{key}: Redis Cluster hashes only the first {{...}}");
        }
    }

    /// `load.lua` reads exactly the fields `LoadFields` sends (`packet.<name>`), stores every
    /// plain field pair by pair, and writes every field `snapshot.lua` reads back; `snapshot.lua`
    /// reads the fields it is given (`SNAPSHOT_FIELDS`), and every plain field is among them.
    #[test]
    fn the_scripts_store_and_read_back_the_fields_record_rs_names() {
        use red_packets_core::domain::packet::{PacketKind, PacketSpec, PacketTerms};
        use red_packets_core::domain::split::Seed;
        use red_packets_core::domain::{Packet, PassphraseDigest};
        let script = include_str!("../lua/load.lua");
        let terms = PacketTerms {
            greeting: Some("hi".into()),
            chat_id: red_packets_core::domain::ChatId::parse("family"),
            ..PacketTerms::new(PacketKind::Lucky, 100, 2)
        };
        let spec = PacketSpec {
            recipients: Some(vec![UserId::from_claim("bob").unwrap()]),
            passphrase: PassphraseDigest::parse(&"ab".repeat(32)),
            opens_at_ms: Some(60_000),
            members_only: true,
            ..PacketSpec::open_to_all(terms, 60)
        };
        let packet = Packet::new(PacketId::random(), UserId::from_claim("alice").unwrap(), &spec, Seed::random(), 1);
        let fields = LoadFields::of(&packet, false, false);
        let sent: std::collections::BTreeSet<String> =
            serde_json::to_value(&fields).unwrap().as_object().unwrap().keys().cloned().collect();
        let read: std::collections::BTreeSet<String> = script
            .split("packet.")
            .skip(1)
            .map(|rest| rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect())
            .collect();
        assert_eq!(sent, read, "LoadFields' JSON keys against what load.lua reads of ARGV[2]");
        assert!(script.contains("for _, pair in ipairs(packet.plain)"), "load.lua stores every plain field");
        let plain: Vec<&str> = fields.plain.iter().map(|(name, _)| *name).collect();
        assert_eq!(plain.len(), 12, "a packet with every optional field set stores all twelve plain fields");
        for field in SNAPSHOT_FIELDS {
            assert!(
                plain.contains(&field) || script.contains(&format!("'{field}'")),
                "load.lua writes no {field}, which snapshot.lua reads"
            );
        }
        assert!(plain.iter().all(|name| SNAPSHOT_FIELDS.contains(name)), "snapshot.lua reads back every plain field");
        let snapshot = include_str!("../lua/snapshot.lua");
        assert!(snapshot.contains("redis.call('HMGET', KEYS[1], unpack(ARGV))"), "snapshot.lua reads the fields given");
    }

    #[test]
    fn the_grab_scripts_constants_are_the_librarys() {
        let constant = format!("local WRONG_TRIES_ALLOWED = {MAX_WRONG_PASSPHRASES}\n");
        for source in [GRAB_LUA, GRAB_MANY_LUA] {
            assert!(source.contains(&constant), "{constant}");
        }
        let lease = format!("local LOOKUP_LEASE_MS = {}\n", LOOKUP_LEASE.as_millis());
        assert!(LOOKUP_LUA.contains(&lease), "{lease}");
        let page = format!("local LOG_PAGE = {LOG_PAGE}\n");
        for source in [include_str!("../lua/snapshot.lua"), include_str!("../lua/freeze.lua")] {
            assert!(source.contains(&page), "{page}");
        }
    }

    #[test]
    fn a_logs_head_mark_is_no_grab() {
        let log = |entries: &[&str]| entries.iter().map(|entry| entry.to_string()).collect::<Vec<_>>();
        assert_eq!(log_mark(&log(&["~", "1:100:2:1700000000000:bob"])), 1, "a log loaded since the marks");
        assert_eq!(log_mark(&log(&["~"])), 1, "no grab yet");
        assert_eq!(log_mark(&log(&["1:100:2:1700000000000:bob"])), 0, "a log loaded before the marks");
        assert_eq!(log_mark(&[]), 0);
    }

    #[test]
    fn every_script_reading_the_pools_length_reads_its_head_instead() {
        for source in [
            GRAB_LUA,
            GRAB_MANY_LUA,
            include_str!("../lua/cancel.lua"),
            include_str!("../lua/close.lua"),
            include_str!("../lua/snapshot.lua"),
        ] {
            assert!(!source.contains("'LLEN', KEYS[2]"), "the pool's length counts its end marks: {source}");
        }
    }

    #[test]
    fn both_grab_scripts_are_refused_whole_over_maxmemory() {
        for source in [GRAB_LUA, GRAB_MANY_LUA] {
            assert!(source.starts_with("#!lua\n"), "the shebang makes Redis check memory before the script runs");
        }
    }

    #[test]
    fn scripts_declare_their_keys_arguments_and_answers() {
        for source in [
            GRAB_LUA,
            GRAB_MANY_LUA,
            LOOKUP_LUA,
            include_str!("../lua/load.lua"),
            include_str!("../lua/close.lua"),
            include_str!("../lua/cancel.lua"),
            include_str!("../lua/persisted.lua"),
            include_str!("../lua/snapshot.lua"),
            include_str!("../lua/freeze.lua"),
        ] {
            assert!(source.contains("-- KEYS[1]") && source.contains("-- Returns"), "{source}");
        }
    }
}
