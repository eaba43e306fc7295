//! The Redis packet layout's one owner: every field of a packet the hash stores is named here,
//! in both directions, and so are the entries of its grabbers and log. [`LoadFields::of`] is
//! what `load.lua` writes (the script stores [`LoadFields::plain`] pair by pair, so a plain
//! field is added here alone), [`SNAPSHOT_FIELDS`] is what `snapshot.lua` reads back (they go to
//! it as its ARGV), and [`live_packet`] turns that read into the domain's packet;
//! [`log_entry`], [`parse_log_entry`] and [`grab_entry`] write and read the entries.
//! `scripts.rs`'s tests hold both scripts to this module.

use std::str::FromStr;

use serde::Serialize;

use super::keys::parse_log_entry;
use red_packets_core::clock::Millis;
use red_packets_core::domain::{
    Access, ChatId, LivePacket, Packet, PacketId, PacketKind, PacketTerms, PassphraseDigest, Seed, SplitRule,
    SplitVersion, UserId,
};
use red_packets_core::ports::{LivePage, LiveVersion, StoreError};

/// The packet hash's fields `snapshot.lua` reads, in the order it answers them: the plain
/// fields [`LoadFields::plain`] writes, then the state `load.lua` and the grab scripts keep.
pub const SNAPSHOT_FIELDS: [&str; 16] = [
    "sender",
    "kind",
    "split",
    "greeting",
    "seed",
    "split_version",
    "total_cents",
    "count",
    "created_at",
    "expires_at",
    "opens_at",
    "open_until",
    "persisted",
    "gate",
    "recipients",
    "chat_id",
];

/// What `load.lua` stores of a packet, besides its shares and grabs (its `ARGV[2]`).
#[derive(Debug, Serialize)]
pub struct LoadFields<'a> {
    /// The fields stored as they are, `[name, value]`: sender, kind, seed, split_version,
    /// total_cents, count, created_at, expires_at, then split, greeting, opens_at (the grab
    /// scripts read it) and chat_id when set.
    pub plain: Vec<(&'static str, String)>,
    /// Epoch ms: `open_until` while the packet is open.
    pub expires_at: Millis,
    /// True once the sender cancelled it: it loads closed.
    pub cancelled: bool,
    /// True when it is closed to grabs (the ledger claimed a share for its refund).
    pub closed: bool,
    /// The recipients as a JSON array, when the packet names them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipients: Option<String>,
    /// The passphrase's digest, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passphrase: Option<&'a str>,
    /// True when only members of its chat (`chat_id`) may grab.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub members_only: bool,
}

impl<'a> LoadFields<'a> {
    /// The fields of `packet`, cancelled or closed as given.
    pub fn of(packet: &'a Packet, cancelled: bool, closed: bool) -> Self {
        let mut plain = vec![
            ("sender", packet.sender.as_str().to_owned()),
            ("kind", packet.terms.kind.as_str().to_owned()),
            ("seed", packet.seed.to_hex()),
            ("split_version", packet.split_version.number().to_string()),
            ("total_cents", packet.terms.total_cents.to_string()),
            ("count", packet.terms.count.to_string()),
            ("created_at", packet.created_at_ms.to_string()),
            ("expires_at", packet.expires_at_ms.to_string()),
        ];
        plain.extend(packet.terms.split.map(|rule| ("split", rule.as_str().to_owned())));
        plain.extend(packet.terms.greeting.clone().map(|greeting| ("greeting", greeting)));
        plain.extend(packet.opens_at_ms.map(|opens_at_ms| ("opens_at", opens_at_ms.to_string())));
        plain.extend(packet.terms.chat_id.as_ref().map(|chat| ("chat_id", chat.as_str().to_owned())));
        let recipients = packet.access.recipients.as_ref();
        LoadFields {
            plain,
            expires_at: packet.expires_at_ms,
            cancelled,
            closed,
            recipients: recipients.map(|recipients| serde_json::to_string(recipients).expect("user ids serialize")),
            passphrase: packet.access.passphrase.as_ref().map(PassphraseDigest::as_str),
            members_only: packet.access.members_of.is_some(),
        }
    }
}

/// What the packet hash's `gate` field says beyond the passphrase's digest that follows it: its
/// first character is `'0'` plus 1 for recipients only, plus 2 for members of its chat only
/// (load.lua writes it, grab.lua and grab_many.lua read it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Gate {
    /// Only the recipients may grab.
    pub recipients_only: bool,
    /// Only members of the packet's chat may grab, by ticket.
    pub members_only: bool,
}

impl Gate {
    /// The gate of a `gate` field (none: no gate); `None` for a first character out of `0..=3`.
    pub fn of(field: Option<&str>) -> Option<Self> {
        let Some(first) = field.and_then(|field| field.bytes().next()) else { return Some(Gate::default()) };
        let bits = first.checked_sub(b'0').filter(|bits| *bits <= 3)?;
        Some(Gate { recipients_only: bits & 1 == 1, members_only: bits & 2 == 2 })
    }
}

/// The packet `snapshot.lua` read, as the domain sees it.
pub fn live_packet(id: &PacketId, raw: &RawSnapshot) -> Result<LivePacket, StoreError> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("packet {id} in Redis has a bad {what}"));
    let text = |name: &str| raw.field(name).unwrap_or("");
    fn parsed<T: FromStr>(raw: &RawSnapshot, name: &str) -> Option<T> {
        raw.field(name)?.parse().ok()
    }
    let number = |name: &str| parsed::<Millis>(raw, name).ok_or_else(|| corrupt(name));
    let recipients = raw
        .field("recipients")
        .map(|json| serde_json::from_str::<Vec<UserId>>(json).map_err(|_| corrupt("recipients")))
        .transpose()?;
    let gate = Gate::of(raw.field("gate")).ok_or_else(|| corrupt("gate"))?;
    let passphrase = match raw.field("gate").unwrap_or("").get(1..) {
        None | Some("") => None,
        Some(digest) => Some(PassphraseDigest::parse(digest).ok_or_else(|| corrupt("gate"))?),
    };
    let chat_id = raw.field("chat_id").map(|chat| ChatId::parse(chat).ok_or_else(|| corrupt("chat_id"))).transpose()?;
    let members_of = if gate.members_only { Some(chat_id.clone().ok_or_else(|| corrupt("chat_id"))?) } else { None };
    let packet = Packet {
        id: id.clone(),
        sender: UserId::from_claim(text("sender")).ok_or_else(|| corrupt("sender"))?,
        terms: PacketTerms {
            kind: PacketKind::parse(text("kind")).ok_or_else(|| corrupt("kind"))?,
            split: raw.field("split").map(|name| SplitRule::parse(name).ok_or_else(|| corrupt("split"))).transpose()?,
            greeting: raw.field("greeting").map(str::to_owned),
            total_cents: parsed(raw, "total_cents").ok_or_else(|| corrupt("total_cents"))?,
            count: parsed(raw, "count").ok_or_else(|| corrupt("count"))?,
            chat_id,
        },
        seed: Seed::from_hex(text("seed")).ok_or_else(|| corrupt("seed"))?,
        split_version: match raw.field("split_version") {
            None => SplitVersion::legacy(),
            Some(number) => number
                .parse::<u8>()
                .ok()
                .and_then(|number| number.try_into().ok())
                .ok_or_else(|| corrupt("split_version"))?,
        },
        created_at_ms: number("created_at")?,
        opens_at_ms: raw.field("opens_at").map(|_| number("opens_at")).transpose()?,
        expires_at_ms: number("expires_at")?,
        access: Access { recipients, passphrase, members_of },
    };
    let mark = super::keys::log_mark(&raw.log);
    let persisted = parsed::<usize>(raw, "persisted").unwrap_or(0).saturating_sub(mark);
    let grabs = raw
        .log
        .iter()
        .skip(mark)
        .map(|entry| parse_log_entry(entry).ok_or_else(|| corrupt("log entry")))
        .collect::<Result<Vec<_>, _>>()?;
    let open_until = raw.field("open_until");
    Ok(LivePacket {
        packet,
        open: open_until.is_some_and(|open_until| open_until != "0" && open_until != "-1"),
        frozen: open_until.is_some_and(|open_until| open_until.starts_with('F')),
        cancelled: open_until == Some("-1"),
        remaining_count: raw.shares_left,
        grabs,
        persisted,
    })
}

/// What `snapshot.lua` read at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSnapshot {
    /// The values of [`SNAPSHOT_FIELDS`], in order.
    pub fields: Vec<Option<String>>,
    /// Shares not yet taken.
    pub shares_left: u32,
    /// Every log entry, in grab order, after the log's head mark if it has one
    /// ([`super::keys::LIST_MARK`]).
    pub log: Vec<String>,
}

impl RawSnapshot {
    /// The value of packet field `name`, if set.
    pub fn field(&self, name: &str) -> Option<&str> {
        let index = SNAPSHOT_FIELDS.iter().position(|field| *field == name)?;
        self.fields.get(index)?.as_deref()
    }
}

/// The packet hash's fields its version is read from, in one HMGET: `open_until` (its expiry
/// while open, `0` once closed, `-1` once cancelled, `F:<token>` while frozen) and `last` (the
/// latest grab's log entry, its user's included, written with it by `grab.lua` and
/// `grab_many.lua`; a load or a re-sync's replace writes none).
pub const VERSION_FIELDS: [&str; 2] = ["open_until", "last"];

/// A packet's version as Redis holds it ([`VERSION_FIELDS`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawVersion {
    /// `open_until`; `None` when Redis holds no such packet.
    pub open_until: Option<String>,
    /// `last`; `None` before the first grab since the packet was loaded.
    pub last: Option<String>,
}

impl RawVersion {
    /// The version of [`VERSION_FIELDS`]'s values, in order.
    pub fn of(mut fields: Vec<Option<String>>) -> Self {
        fields.resize(VERSION_FIELDS.len(), None);
        let last = fields.pop().flatten();
        RawVersion { open_until: fields.pop().flatten(), last }
    }

    /// The domain's version: open until its expiry while `open_until` is one; the stamp is both
    /// fields as Redis holds them.
    pub fn version(&self) -> LiveVersion {
        let open_until = self.open_until.as_deref().unwrap_or("");
        LiveVersion {
            open_until_ms: open_until.parse::<Millis>().ok().filter(|expires_at_ms| *expires_at_ms > 0),
            stamp: format!("{open_until}|{}", self.last.as_deref().unwrap_or("")),
        }
    }
}

/// What `page.lua` read of a packet at one instant.
#[derive(Debug, Clone)]
pub struct RawPage {
    /// The packet's fields, its shares left, and the page's log entries as [`RawSnapshot::log`]
    /// (no head mark: the script skips it).
    pub snapshot: RawSnapshot,
    /// The pool's head entry.
    pub head: Option<String>,
    /// How many grabs the log holds.
    pub grabs: u32,
    /// The entry asked for besides the page.
    pub also: Option<String>,
    /// Its version.
    pub version: RawVersion,
}

/// The domain's page of what `page.lua` read.
pub fn live_page(id: &PacketId, raw: RawPage) -> Result<LivePage, StoreError> {
    let corrupt = || StoreError::Corrupt(format!("packet {id} in Redis has a bad log entry"));
    let live = live_packet(id, &raw.snapshot)?;
    let also = raw.also.as_deref().map(|entry| parse_log_entry(entry).ok_or_else(corrupt)).transpose()?;
    let next_share = raw
        .head
        .as_deref()
        .filter(|head| *head != super::keys::LIST_MARK)
        .map(|head| head.split(':').next().and_then(|seq| seq.parse::<u32>().ok()).ok_or_else(corrupt))
        .transpose()?;
    Ok(LivePage {
        open: live.open && !live.frozen,
        cancelled: live.cancelled,
        remaining_count: live.remaining_count,
        next_share,
        grab_count: raw.grabs,
        grabs: live.grabs,
        also,
        version: raw.version.version(),
        packet: live.packet,
    })
}
