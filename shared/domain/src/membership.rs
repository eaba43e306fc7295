//! Membership tickets: how a grab proves its caller is a member of a chat, for a packet sent
//! `members_only`. The host app's chat server, which knows who is in a chat, signs a short-lived
//! ticket (the chat, the user, an expiry) with a key the stack holds too; the grab function
//! checks it with no store read. Pure: no I/O.
//!
//! A ticket is `<payload>.<signature>`, each base64url without padding: the payload is the JSON
//! `{"chat": …, "user": …, "exp": <epoch seconds>}`, the signature HMAC-SHA256 of the payload's
//! base64url text under one of the stack's membership keys (`MEMBERSHIP_KEYS`). During a key
//! rotation two keys are in force: the chat server signs with the new one while tickets signed
//! with the old one still pass until the old key is removed.

use std::fmt;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::ids::{ChatId, UserId};
use crate::clock::Millis;

/// The longest a ticket may still have to live when it is checked: a chat server issues tickets
/// for minutes, and one valid for longer than a day is refused as if forged.
pub const MAX_TICKET_SECONDS: u64 = 24 * 3600;

/// Longest ticket text accepted, in bytes (openapi.yaml's `Membership-Ticket`).
pub const MAX_TICKET_LEN: usize = 1024;

/// Most keys in force at once: the current one and the one being retired.
pub const MAX_KEYS: usize = 2;

/// Shortest membership key, in bytes: 128 bits, what HMAC-SHA256 needs to keep its strength.
pub const MIN_KEY_LEN: usize = 16;

/// The stack's membership keys (`MEMBERSHIP_KEYS`): the chat server signs with the first; a
/// ticket signed with any of them passes.
#[derive(Clone, PartialEq, Eq)]
pub struct MembershipKeys(Vec<Vec<u8>>);

impl MembershipKeys {
    /// The keys of `text`, comma-separated, the signing key first. `None` unless there are 1 to
    /// [`MAX_KEYS`] keys, each at least [`MIN_KEY_LEN`] bytes.
    pub fn parse(text: &str) -> Option<Self> {
        let keys: Vec<Vec<u8>> = text.split(',').map(|key| key.trim().as_bytes().to_vec()).collect();
        let valid = (1..=MAX_KEYS).contains(&keys.len()) && keys.iter().all(|key| key.len() >= MIN_KEY_LEN);
        valid.then_some(MembershipKeys(keys))
    }

    /// A ticket for `user` in `chat`, valid until `expires_at_s` (epoch seconds), signed with the
    /// first key: what the host app's chat server does (and the local stand-in of it).
    pub fn sign(&self, chat: &ChatId, user: &UserId, expires_at_s: u64) -> String {
        let claims = Claims { chat: chat.as_str().to_owned(), user: user.as_str().to_owned(), exp: expires_at_s };
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).expect("claims serialize"));
        let signature = URL_SAFE_NO_PAD.encode(mac(&self.0[0], &payload).finalize().into_bytes());
        format!("{payload}.{signature}")
    }

    /// The chat `ticket` admits `caller` to at `now_ms`, or why it admits nobody.
    pub fn verify(&self, ticket: &str, caller: &UserId, now_ms: Millis) -> Result<ChatId, TicketRefusal> {
        if ticket.len() > MAX_TICKET_LEN {
            return Err(TicketRefusal::Malformed);
        }
        let (payload, signature) = ticket.split_once('.').ok_or(TicketRefusal::Malformed)?;
        let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| TicketRefusal::Malformed)?;
        if !self.0.iter().any(|key| mac(key, payload).verify_slice(&signature).is_ok()) {
            return Err(TicketRefusal::NotSigned);
        }
        let json = URL_SAFE_NO_PAD.decode(payload).map_err(|_| TicketRefusal::Malformed)?;
        let claims: Claims = serde_json::from_slice(&json).map_err(|_| TicketRefusal::Malformed)?;
        let chat = ChatId::parse(&claims.chat).ok_or(TicketRefusal::Malformed)?;
        if claims.user != caller.as_str() {
            return Err(TicketRefusal::OtherUser);
        }
        let now_s = u64::try_from(now_ms / 1000).unwrap_or(0);
        if claims.exp <= now_s {
            return Err(TicketRefusal::Expired);
        }
        if claims.exp - now_s > MAX_TICKET_SECONDS {
            return Err(TicketRefusal::TooLong);
        }
        Ok(chat)
    }
}

impl fmt::Debug for MembershipKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MembershipKeys(<{} redacted>)", self.0.len())
    }
}

fn mac(key: &[u8], payload: &str) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(payload.as_bytes());
    mac
}

/// What a ticket says, signed.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Claims {
    chat: String,
    user: String,
    exp: u64,
}

/// Why a ticket admits nobody: said in a `not_eligible` answer's message, so the app team sees
/// what to fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TicketRefusal {
    /// Not `<payload>.<signature>` of base64url and the payload's JSON.
    Malformed,
    /// Signed with no key the stack holds.
    NotSigned,
    /// Issued to another user.
    OtherUser,
    /// Past its expiry.
    Expired,
    /// Valid for longer than [`MAX_TICKET_SECONDS`] from now.
    TooLong,
}

impl TicketRefusal {
    /// The reason, as the error message's end.
    pub fn reason(self) -> &'static str {
        match self {
            TicketRefusal::Malformed => "the membership ticket is malformed",
            TicketRefusal::NotSigned => "the membership ticket is not signed with a key this stack holds",
            TicketRefusal::OtherUser => "the membership ticket was issued to another user",
            TicketRefusal::Expired => "the membership ticket has expired",
            TicketRefusal::TooLong => "the membership ticket is valid for longer than a day",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str) -> UserId {
        UserId::from_claim(name).unwrap()
    }

    const NOW_MS: Millis = 1_800_000_000_000;
    const NOW_S: u64 = 1_800_000_000;

    #[test]
    fn a_ticket_admits_its_user_to_its_chat_until_it_expires() {
        let keys = MembershipKeys::parse("first-key-0123456789").unwrap();
        let family = ChatId::parse("family-2026").unwrap();
        let ticket = keys.sign(&family, &user("bob"), NOW_S + 300);
        assert_eq!(keys.verify(&ticket, &user("bob"), NOW_MS), Ok(family));
        assert_eq!(keys.verify(&ticket, &user("carol"), NOW_MS), Err(TicketRefusal::OtherUser));
        assert_eq!(keys.verify(&ticket, &user("bob"), NOW_MS + 300_000), Err(TicketRefusal::Expired));
        let forever = keys.sign(&ChatId::parse("x").unwrap(), &user("bob"), NOW_S + MAX_TICKET_SECONDS + 1);
        assert_eq!(keys.verify(&forever, &user("bob"), NOW_MS), Err(TicketRefusal::TooLong));
    }

    #[test]
    fn a_changed_or_foreign_ticket_is_refused() {
        let keys = MembershipKeys::parse("first-key-0123456789").unwrap();
        let other = MembershipKeys::parse("someone-elses-key-000").unwrap();
        let family = ChatId::parse("family").unwrap();
        let forged = other.sign(&family, &user("bob"), NOW_S + 60);
        assert_eq!(keys.verify(&forged, &user("bob"), NOW_MS), Err(TicketRefusal::NotSigned));
        let ticket = keys.sign(&family, &user("bob"), NOW_S + 60);
        let (_, signature) = ticket.split_once('.').unwrap();
        let claims = URL_SAFE_NO_PAD.encode(br#"{"chat":"office","user":"bob","exp":9999999999}"#);
        assert_eq!(keys.verify(&format!("{claims}.{signature}"), &user("bob"), NOW_MS), Err(TicketRefusal::NotSigned));
        for garbage in ["", "no-dot", "a.b.c", "!!.!!", &"a".repeat(MAX_TICKET_LEN + 1)] {
            assert!(keys.verify(garbage, &user("bob"), NOW_MS).is_err(), "{garbage}");
        }
    }

    /// Rotation: the new key is added beside the old, the chat server moves to it, then the old
    /// key goes; no ticket fails while both are in force.
    #[test]
    fn a_rotation_keeps_both_keys_tickets_until_the_old_one_goes() {
        let family = ChatId::parse("family").unwrap();
        let old = MembershipKeys::parse("old-key-0123456789ab").unwrap();
        let both = MembershipKeys::parse("new-key-0123456789ab, old-key-0123456789ab").unwrap();
        let new = MembershipKeys::parse("new-key-0123456789ab").unwrap();
        let by_old = old.sign(&family, &user("bob"), NOW_S + 60);
        let by_new = both.sign(&family, &user("bob"), NOW_S + 60);
        assert_eq!(by_new, new.sign(&family, &user("bob"), NOW_S + 60), "the first key signs");
        for ticket in [&by_old, &by_new] {
            assert!(both.verify(ticket, &user("bob"), NOW_MS).is_ok());
        }
        assert_eq!(new.verify(&by_old, &user("bob"), NOW_MS), Err(TicketRefusal::NotSigned));
    }

    #[test]
    fn keys_are_one_or_two_of_sixteen_bytes_or_more_and_never_printed() {
        assert!(MembershipKeys::parse("short").is_none());
        assert!(MembershipKeys::parse("a-key-of-16-byte,b-key-of-16-byte,c-key-of-16-byte").is_none());
        assert!(MembershipKeys::parse("").is_none());
        let keys = MembershipKeys::parse("secret-key-0123456789").unwrap();
        assert!(!format!("{keys:?}").contains("secret"));
    }
}
