//! The Redis packet hash's one owner: every field of a packet the hash stores is named here,
//! in both directions. [`LoadFields::of`] is what `load.lua` writes (the script stores
//! [`LoadFields::plain`] pair by pair, so a plain field is added here alone), [`SNAPSHOT_FIELDS`]
//! is what `snapshot.lua` reads back (they go to it as its ARGV), and [`live_packet`] turns
//! that read into the domain's packet. `scripts.rs`'s tests hold both scripts to this module.

use std::str::FromStr;

use serde::Serialize;

use super::scripts::{parse_log_entry, RawSnapshot};
use crate::clock::Millis;
use crate::domain::{
    Access, LivePacket, Packet, PacketId, PacketKind, PacketTerms, PassphraseDigest, Seed, SplitRule, UserId,
};
use crate::ports::StoreError;

/// The packet hash's fields `snapshot.lua` reads, in the order it answers them: the plain
/// fields [`LoadFields::plain`] writes, then the state `load.lua` and the grab scripts keep.
pub const SNAPSHOT_FIELDS: [&str; 13] = [
    "sender",
    "kind",
    "split",
    "greeting",
    "seed",
    "total_cents",
    "count",
    "created_at",
    "expires_at",
    "open_until",
    "persisted",
    "gate",
    "recipients",
];

/// What `load.lua` stores of a packet, besides its shares and grabs (its `ARGV[2]`).
#[derive(Debug, Serialize)]
pub struct LoadFields<'a> {
    /// The fields stored as they are, `[name, value]`: sender, kind, seed, total_cents, count,
    /// created_at, expires_at, then split and greeting when set.
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
    /// How many shares (for the grab-log entries; not sent as a field of its own).
    #[serde(skip)]
    pub count: u32,
}

impl<'a> LoadFields<'a> {
    /// The fields of `packet`, cancelled or closed as given.
    pub fn of(packet: &'a Packet, cancelled: bool, closed: bool) -> Self {
        let mut plain = vec![
            ("sender", packet.sender.as_str().to_owned()),
            ("kind", packet.terms.kind.as_str().to_owned()),
            ("seed", packet.seed.to_hex()),
            ("total_cents", packet.terms.total_cents.to_string()),
            ("count", packet.terms.count.to_string()),
            ("created_at", packet.created_at_ms.to_string()),
            ("expires_at", packet.expires_at_ms.to_string()),
        ];
        plain.extend(packet.terms.split.map(|rule| ("split", rule.as_str().to_owned())));
        plain.extend(packet.terms.greeting.clone().map(|greeting| ("greeting", greeting)));
        let recipients = packet.access.recipients.as_ref();
        LoadFields {
            plain,
            expires_at: packet.expires_at_ms,
            cancelled,
            closed,
            recipients: recipients.map(|recipients| serde_json::to_string(recipients).expect("user ids serialize")),
            passphrase: packet.access.passphrase.as_ref().map(PassphraseDigest::as_str),
            count: packet.terms.count,
        }
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
    let passphrase = match raw.field("gate").unwrap_or("").get(1..) {
        None | Some("") => None,
        Some(digest) => Some(PassphraseDigest::parse(digest).ok_or_else(|| corrupt("gate"))?),
    };
    let packet = Packet {
        id: id.clone(),
        sender: UserId::from_claim(text("sender")).ok_or_else(|| corrupt("sender"))?,
        terms: PacketTerms {
            kind: PacketKind::parse(text("kind")).ok_or_else(|| corrupt("kind"))?,
            split: raw.field("split").map(|name| SplitRule::parse(name).ok_or_else(|| corrupt("split"))).transpose()?,
            greeting: raw.field("greeting").map(str::to_owned),
            total_cents: parsed(raw, "total_cents").ok_or_else(|| corrupt("total_cents"))?,
            count: parsed(raw, "count").ok_or_else(|| corrupt("count"))?,
        },
        seed: Seed::from_hex(text("seed")).ok_or_else(|| corrupt("seed"))?,
        created_at_ms: number("created_at")?,
        expires_at_ms: number("expires_at")?,
        access: Access { recipients, passphrase },
    };
    let grabs = raw
        .log
        .iter()
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
        persisted: parsed(raw, "persisted").unwrap_or(0),
    })
}
