//! Identifiers: packet ids, users, idempotency keys. Each is validated once, where it enters.

use std::fmt;

use rand::RngCore;
use serde::{Deserialize, Serialize};

/// A packet id: 128 random bits as 32 lowercase hex digits, unguessable and safe in Redis keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PacketId(String);

impl PacketId {
    /// Length of a packet id in hex digits.
    pub const LEN: usize = 32;

    /// A fresh id from the operating system's RNG.
    pub fn random() -> Self {
        let mut bytes = [0u8; 16];
        rand::rng().fill_bytes(&mut bytes);
        PacketId(hex::encode(bytes))
    }

    /// Accepts exactly 32 lowercase hex digits; anything else cannot name a packet.
    pub fn parse(text: &str) -> Option<Self> {
        let valid = text.len() == Self::LEN && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        valid.then(|| PacketId(text.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The settle shard of this packet among `shards`: ids are random, so their first 8 hex
    /// digits are uniform.
    pub fn settle_shard(&self, shards: u32) -> u32 {
        u32::from_str_radix(&self.0[..8], 16).unwrap_or(0) % shards.max(1)
    }
}

impl fmt::Display for PacketId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A user: the `sub` claim of the caller's verified token, never anything from the request.
/// Read from JSON (an operator's command naming a user, a stored item) only when it is one a
/// token could carry ([`UserId::from_claim`]), so no write names a user no token can be.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct UserId(String);

impl UserId {
    /// Longest `sub` accepted; Cognito's are 36 characters.
    pub const MAX_LEN: usize = 256;

    /// A user id from a verified `sub` claim: non-empty, at most [`Self::MAX_LEN`] bytes, no
    /// control characters.
    pub fn from_claim(sub: &str) -> Option<Self> {
        let valid = !sub.is_empty() && sub.len() <= Self::MAX_LEN && !sub.chars().any(char::is_control);
        valid.then(|| UserId(sub.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for UserId {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        UserId::from_claim(&text).ok_or_else(|| {
            format!("not a user id: a user id is 1 to {} bytes with no control character", UserId::MAX_LEN)
        })
    }
}

impl From<UserId> for String {
    fn from(user: UserId) -> String {
        user.0
    }
}

impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The chat a packet was sent into, as the app names it: 1..=128 of `[A-Za-z0-9_.:@-]`. The
/// service keeps it with the packet and its events; the risk rules read packets by chat.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ChatId(String);

impl ChatId {
    /// Longest chat id accepted.
    pub const MAX_LEN: usize = 128;

    /// A chat id: 1..=[`Self::MAX_LEN`] characters of `[A-Za-z0-9_.:@-]`.
    pub fn parse(text: &str) -> Option<Self> {
        let allowed = |b: u8| b.is_ascii_alphanumeric() || b"_.:@-".contains(&b);
        let valid = (1..=Self::MAX_LEN).contains(&text.len()) && text.bytes().all(allowed);
        valid.then(|| ChatId(text.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ChatId {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        ChatId::parse(&text).ok_or_else(|| format!("not a chat id: {text:?}"))
    }
}

impl From<ChatId> for String {
    fn from(chat: ChatId) -> String {
        chat.0
    }
}

impl fmt::Display for ChatId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The value of an `Idempotency-Key` header: 1..=64 of `[A-Za-z0-9_-]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Accepts 1..=64 characters of `[A-Za-z0-9_-]`.
    pub fn parse(text: &str) -> Option<Self> {
        let valid =
            (1..=64).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        valid.then(|| IdempotencyKey(text.to_owned()))
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_ids_are_128_bit_hex_and_distinct() {
        let a = PacketId::random();
        assert_eq!(a.as_str().len(), 32);
        assert_eq!(PacketId::parse(a.as_str()), Some(a.clone()));
        assert_ne!(a, PacketId::random());
    }

    #[test]
    fn hostile_packet_ids_are_refused() {
        for bad in ["", "../../etc/passwd", "ABCDEF0123456789ABCDEF0123456789", "{x}", &"a".repeat(10_000)] {
            assert_eq!(PacketId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn idempotency_keys_follow_the_contract() {
        assert!(IdempotencyKey::parse("order-42_A").is_some());
        assert!(IdempotencyKey::parse(&"k".repeat(64)).is_some());
        for bad in ["", "has space", "ключ", &"k".repeat(65)] {
            assert!(IdempotencyKey::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn user_ids_refuse_empty_and_control_characters() {
        assert!(UserId::from_claim("alice").is_some());
        assert!(UserId::from_claim("").is_none());
        assert!(UserId::from_claim("a\nb").is_none());
    }
}
