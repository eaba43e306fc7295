//! The Redis layout, declared once: every key's name and every entry's format. Nothing else in
//! the adapter writes a key with `format!` or joins an entry's parts; the Lua scripts receive
//! their keys in KEYS, and the one literal they share with Rust, the list mark, is checked
//! against [`LIST_MARK`] (`the_lua_scripts_name_the_list_mark_by_its_constant`).
//!
//! A packet's keys share the hash tag `{<id>}`, so one slot holds them; the settle index's keys
//! carry their shard's tag, a user's grab counters the user's.
//!
//! Entries are compact strings rather than JSON: a share in the pool is `<seq>:<amount>:<left>`
//! (`left`: shares remaining once it is taken), a grabber's field `:<user>` holds
//! `<seq>:<amount>:<left>:<at_ms>`, and a grab-log entry is that followed by `:<user>` (the user
//! last, so it may hold any character).

use red_packets_core::clock::Millis;
use red_packets_core::domain::grab::LoggedGrab;
use red_packets_core::domain::{Cents, GrabOutcome, PacketId, UserId};

/// The Redis keys of one packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketKeys {
    /// Hash: the packet's fields, and `:<user>` = `<seq>:<amount>:<left>:<at_ms>` per grabber.
    pub packet: String,
    /// List: the shares not yet taken, `<seq>:<amount>:<left>`, in seq order, then two
    /// [`LIST_MARK`]s.
    pub pool: String,
    /// List: a [`LIST_MARK`], then the grab log, every grab as
    /// `<seq>:<amount>:<left>:<at_ms>:<user>`, in grab order; settle persists it.
    pub grabs: String,
    /// String: what the ledger said of an id Redis does not hold (`pending`, `absent`, `recorded`).
    pub lookup: String,
}

impl PacketKeys {
    /// The keys of packet `id` under `prefix` (`REDIS_KEY_PREFIX`, `rp` by default).
    /// Every grab builds them, so each is one allocation of its exact size (`format!` grows
    /// its buffer as it goes: a fifth of a coalesced grab's client time in `make bench`'s flood).
    pub fn of(prefix: &str, id: &PacketId) -> Self {
        let key = |name: &str| {
            let mut key = String::with_capacity(prefix.len() + id.as_str().len() + name.len() + 4);
            for part in [prefix, ":{", id.as_str(), "}:", name] {
                key.push_str(part);
            }
            key
        };
        PacketKeys { packet: key("packet"), pool: key("pool"), grabs: key("grabs"), lookup: key("lookup") }
    }

    /// The keys a load stages a large packet under before `load.lua` renames them into place:
    /// each of the packet's keys with `:stage:<load>`, in the packet's slot.
    pub fn staged(&self, load: &str) -> PacketKeys {
        let stage = |key: &str| format!("{key}:stage:{load}");
        PacketKeys {
            packet: stage(&self.packet),
            pool: stage(&self.pool),
            grabs: stage(&self.grabs),
            lookup: stage(&self.lookup),
        }
    }

    /// The lease one loader of a large packet holds while it stages it.
    pub fn staging_lease(&self) -> String {
        format!("{}:staging", self.packet)
    }

    /// The packet hash's field holding `user`'s grab.
    pub fn grabber_field(user: &UserId) -> String {
        let mut field = String::with_capacity(user.as_str().len() + 1);
        field.push(':');
        field.push_str(user.as_str());
        field
    }
}

/// A key in `id`'s slot that a grab waiting for replicas writes first (`WAIT` counts the
/// replicas that reached the connection's last write).
pub fn replicas_probe_key(prefix: &str, id: &PacketId) -> String {
    format!("{prefix}:{{{id}}}:replicas")
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

/// `<prefix>:settle:{<shard>}:retired`: the shard's finalised packets, scored by when their
/// keys should have lapsed (a sorted set, in the index's slot).
pub fn settle_retired_key(prefix: &str, shard: u32) -> String {
    format!("{prefix}:settle:{{{shard}}}:retired")
}

/// The keys of settle's own state, one each per deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettleStateKey {
    /// The quarantine index: packets settle set aside for inspection, scored by when.
    Quarantine,
    /// The recovery sweep's state, one field per shard range ([`range_field`]); a Redis
    /// without it is one settle has not swept, or one that lost its data.
    Sweep,
    /// Where each shard range's run resumes, one field per shard range.
    Progress,
    /// Every `SETTLE_SHARDS` value packets were indexed under since its shards last drained.
    Layouts,
}

impl SettleStateKey {
    /// The key under `prefix`.
    pub fn under(self, prefix: &str) -> String {
        let name = match self {
            SettleStateKey::Quarantine => "quarantine",
            SettleStateKey::Sweep => "sweep",
            SettleStateKey::Progress => "progress",
            SettleStateKey::Layouts => "layouts",
        };
        format!("{prefix}:settle:{name}")
    }
}

/// The hash field of settle's run over shards `range` (`<first>-<last>`).
pub fn range_field(range: [u32; 2]) -> String {
    format!("{}-{}", range[0], range[1])
}

/// The sweep's state for one range: `<next_shard>:<due_ms>`.
pub fn sweep_state(next_shard: u32, due_ms: Millis) -> String {
    format!("{next_shard}:{due_ms}")
}

/// Reads [`sweep_state`] back; `None` when it is not one.
pub fn parse_sweep_state(state: &str) -> Option<(u32, Millis)> {
    let (shard, due) = state.split_once(':')?;
    Some((shard.parse().ok()?, due.parse().ok()?))
}

/// The counter of `user`'s grabs in window `window`, in the user's own slot.
pub fn grab_counter_key(prefix: &str, user: &UserId, window: u64) -> String {
    format!("{prefix}:{{u:{user}}}:grabs:{window}")
}

/// The mark at the head of a packet's grab log and, twice, at the end of its pool (load.lua):
/// it keeps both keys in existence from the load to the retirement, so no grab script names a
/// missing key (a migrating slot refuses such a script with `TRYAGAIN`). It is no grab and no
/// share: the readers leave it out ([`log_mark`]).
pub const LIST_MARK: &str = "~";

/// How many entries at the head of `log` are no grab: 1 for the mark a log loaded since the
/// marks carries (which `persisted` counts too), 0 for an older one.
pub fn log_mark(log: &[String]) -> usize {
    usize::from(log.first().is_some_and(|head| head == LIST_MARK))
}

/// Shares left by the pool's head (`LINDEX 0`), as the scripts count them: the head share's
/// `left` + 1; none at the pool's end mark or without a pool.
pub fn shares_left(head: Option<&str>) -> u32 {
    head.filter(|head| *head != LIST_MARK)
        .and_then(|head| head.rsplit(':').next()?.parse::<u32>().ok())
        .map_or(0, |left| left + 1)
}

/// A share as `load.lua` receives it, `<seq>:<amount>`: the script appends its `left`.
pub fn unplaced_share(seq: u32, amount: Cents) -> String {
    format!("{seq}:{amount}")
}

/// A share in the pool: `<seq>:<amount>:<left>`.
pub fn share_entry(seq: u32, amount: Cents, left: usize) -> String {
    format!("{seq}:{amount}:{left}")
}

/// A grabber's field value: `<seq>:<amount>:<left>:<at_ms>`, `left` being what share `seq`
/// left of a packet of `count` shares.
pub fn grabber_value(grab: &LoggedGrab, count: u32) -> String {
    let left = count.saturating_sub(grab.seq);
    format!("{}:{}:{left}:{}", grab.seq, grab.amount_cents, grab.at_ms)
}

/// A grab-log entry: the grabber's value followed by `:<user>`.
pub fn log_entry(grab: &LoggedGrab, count: u32) -> String {
    format!("{}:{}", grabber_value(grab, count), grab.user)
}

/// A grab as `persisted.lua` compares it with the log's entry: `<seq>:<amount>:<at_ms>:<user>`
/// (the entry less its `left`, which a re-sync may have written otherwise).
pub fn persisted_grab(grab: &LoggedGrab) -> String {
    format!("{}:{}:{}:{}", grab.seq, grab.amount_cents, grab.at_ms, grab.user)
}

/// Reads a grab-log entry back; `None` when it is not one.
pub fn parse_log_entry(entry: &str) -> Option<LoggedGrab> {
    let mut parts = entry.splitn(5, ':');
    let seq = parts.next()?.parse().ok()?;
    let amount_cents = parts.next()?.parse().ok()?;
    let _left: u32 = parts.next()?.parse().ok()?;
    let at_ms = parts.next()?.parse().ok()?;
    let user = UserId::from_claim(parts.next()?)?;
    Some(LoggedGrab { seq, user, amount_cents, at_ms })
}

/// A grabber's `<seq>:<amount>:<left>:<at_ms>`: where a Redis reply becomes a grab's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrabEntry {
    /// The share's number.
    pub seq: u32,
    /// The share taken.
    pub amount_cents: Cents,
    /// Shares left once it was taken.
    pub left: u32,
    /// When.
    pub at_ms: Millis,
}

impl GrabEntry {
    /// The answer to the grab that took this share just now.
    pub fn grabbed(self) -> GrabOutcome {
        GrabOutcome::Grabbed { amount_cents: self.amount_cents, grabbed_at_ms: self.at_ms, remaining_count: self.left }
    }

    /// The answer to a repeat of the grab that took this share, `remaining_count` shares left now.
    pub fn already(self, remaining_count: u32) -> GrabOutcome {
        GrabOutcome::Already { amount_cents: self.amount_cents, grabbed_at_ms: self.at_ms, remaining_count }
    }
}

/// Reads a grabber's `<seq>:<amount>:<left>:<at_ms>`; `None` when it is not one.
pub fn grab_entry(value: &str) -> Option<GrabEntry> {
    let mut parts = value.split(':');
    let seq = parts.next()?.parse().ok()?;
    let amount_cents = parts.next()?.parse().ok()?;
    let left = parts.next()?.parse().ok()?;
    let at_ms = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some(GrabEntry { seq, amount_cents, left, at_ms })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every Lua script of the crate, by name.
    const LUA: [(&str, &str); 10] = [
        ("cancel.lua", include_str!("../lua/cancel.lua")),
        ("close.lua", include_str!("../lua/close.lua")),
        ("freeze.lua", include_str!("../lua/freeze.lua")),
        ("grab.lua", include_str!("../lua/grab.lua")),
        ("grab_many.lua", include_str!("../lua/grab_many.lua")),
        ("load.lua", include_str!("../lua/load.lua")),
        ("lookup.lua", include_str!("../lua/lookup.lua")),
        ("page.lua", include_str!("../lua/page.lua")),
        ("persisted.lua", include_str!("../lua/persisted.lua")),
        ("snapshot.lua", include_str!("../lua/snapshot.lua")),
    ];

    #[test]
    fn the_lua_scripts_name_the_list_mark_by_its_constant() {
        let declaration = format!("local LIST_MARK = '{LIST_MARK}'\n");
        let literal = format!("'{LIST_MARK}'");
        for (name, source) in LUA {
            let code: Vec<&str> = source.lines().filter(|line| !line.trim_start().starts_with("--")).collect();
            let declared = source.contains(&declaration);
            let used = code.iter().any(|line| line.contains("LIST_MARK"));
            assert_eq!(declared, used, "{name}: declares {declaration:?} exactly when it uses the mark");
            let literals = code.iter().filter(|line| line.contains(&literal)).count();
            assert_eq!(literals, usize::from(declared), "{name}: the mark's literal only in its declaration");
        }
        let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/lua")).unwrap().count();
        let listed: std::collections::HashSet<&str> = LUA.iter().map(|(name, _)| *name).collect();
        assert_eq!(listed.len(), files, "every script in shared/redis/lua is listed here");
    }

    #[test]
    fn a_log_entry_reads_back_as_the_grab_even_with_colons_in_the_user() {
        for user in ["bob", "auth0|abc:def", "a:b:c:d"] {
            let grab = LoggedGrab {
                seq: 7,
                user: UserId::from_claim(user).unwrap(),
                amount_cents: 125,
                at_ms: 1_700_000_000_000,
            };
            assert_eq!(log_entry(&grab, 10), format!("7:125:3:1700000000000:{user}"));
            assert_eq!(parse_log_entry(&log_entry(&grab, 10)), Some(grab));
        }
        for bad in ["", "7:125:3:1700", "x:1:0:2:bob", "7:-1:0:2:bob", "7:1:2:bob", "{\"seq\":1}"] {
            assert_eq!(parse_log_entry(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_grabber_field_reads_back_as_amount_left_and_time() {
        assert_eq!(
            grab_entry("3:125:7:1700000000000"),
            Some(GrabEntry { seq: 3, amount_cents: 125, left: 7, at_ms: 1_700_000_000_000 })
        );
        for bad in ["125:1700000000000", "3:125:1700000000000", "3:125:7:17:9", "3:-1:0:5", ""] {
            assert_eq!(grab_entry(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn shares_left_are_read_off_the_pools_head() {
        assert_eq!(shares_left(Some("3:120:4")), 5, "the head's left + 1");
        assert_eq!(shares_left(Some("9:50:0")), 1, "the last share");
        assert_eq!(shares_left(Some("~")), 0, "the end mark: sold out");
        assert_eq!(shares_left(None), 0, "no pool (a packet loaded before the marks, sold out)");
    }

    #[test]
    fn the_formats_written_are_the_formats_read() {
        let grab = LoggedGrab { seq: 2, user: UserId::from_claim("bob").unwrap(), amount_cents: 40, at_ms: 9 };
        assert_eq!(
            grab_entry(&grabber_value(&grab, 5)),
            Some(GrabEntry { seq: 2, amount_cents: 40, left: 3, at_ms: 9 })
        );
        assert_eq!(persisted_grab(&grab), "2:40:9:bob");
        assert_eq!(shares_left(Some(&share_entry(4, 100, 6))), 7);
        assert_eq!(unplaced_share(4, 100), "4:100");
        assert_eq!(log_mark(&[LIST_MARK.to_owned(), "1:2:0:3:a".to_owned()]), 1);
        assert_eq!(log_mark(&["1:2:0:3:a".to_owned()]), 0);
    }

    #[test]
    fn every_key_carries_the_hash_tag_of_its_slot() {
        let id = PacketId::parse("0123456789abcdef0123456789abcdef").unwrap();
        let keys = PacketKeys::of("rp", &id);
        let tag = format!("{{{id}}}");
        for key in [&keys.packet, &keys.pool, &keys.grabs, &keys.lookup, &keys.staging_lease()] {
            assert!(key.starts_with(&format!("rp:{tag}:")), "{key}");
        }
        assert!(replicas_probe_key("rp", &id).contains(&tag));
        assert_eq!(settle_index_key("rp", 3), "rp:settle:{3}");
        assert_eq!(settle_dirty_key("rp", 3), "rp:settle:{3}:dirty");
        assert_eq!(settle_retired_key("rp", 3), "rp:settle:{3}:retired");
        assert_eq!(SettleStateKey::Sweep.under("rp"), "rp:settle:sweep");
        let alice = UserId::from_claim("alice").unwrap();
        assert_eq!(grab_counter_key("rp", &alice, 29_000_000), "rp:{u:alice}:grabs:29000000");
        assert_eq!(parse_sweep_state(&sweep_state(4, 99)), Some((4, 99)));
        assert_eq!(range_field([0, 15]), "0-15");
    }
}
