//! Who may grab a packet: its recipients, when it names them, the members of its chat, when it
//! is sent `members_only` (each grab proving membership with a ticket: `membership.rs`), and its
//! passphrase, when it has one. Pure: no I/O.
//!
//! A passphrase is never kept in clear: it is NFC-normalised (so the same words typed on two
//! keyboards match) and hashed with HMAC-SHA256 under the deployment's secret `PASSPHRASE_KEY`.
//! Only that digest reaches Redis, DynamoDB and the idempotency fingerprint; without the key,
//! a stolen digest cannot be tested against guesses. The clear phrase lives only in the request
//! that carries it and is never logged ([`Passphrase`] debug-prints as `<redacted>`).

use std::fmt;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use unicode_normalization::UnicodeNormalization;

use super::ids::{ChatId, UserId};

/// Longest passphrase, in characters (after NFC).
pub const MAX_PASSPHRASE_CHARS: usize = 32;

/// Longest recipient id, in characters.
pub const MAX_RECIPIENT_CHARS: usize = 128;

/// Wrong passphrases one user may try on one packet; from the next try on, every try is
/// `429 too_many_attempts`, the right phrase included (else the lock would still be an oracle).
pub const MAX_WRONG_PASSPHRASES: u32 = 5;

/// A passphrase as a user typed it, NFC-normalised. Never serialised, never logged.
#[derive(Clone, PartialEq, Eq)]
pub struct Passphrase(String);

impl Passphrase {
    /// The phrase `text` in NFC; `None` when it is empty or over [`MAX_PASSPHRASE_CHARS`].
    pub fn new(text: &str) -> Option<Self> {
        let normalised: String = text.nfc().collect();
        let chars = normalised.chars().count();
        (1..=MAX_PASSPHRASE_CHARS).contains(&chars).then_some(Passphrase(normalised))
    }

    /// Any text a grab carried, NFC-normalised, whatever its length: a phrase no packet can
    /// have is simply wrong.
    pub fn offered(text: &str) -> Self {
        Passphrase(text.nfc().collect())
    }
}

impl fmt::Debug for Passphrase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Passphrase(<redacted>)")
    }
}

/// The deployment's secret key for passphrase digests (`PASSPHRASE_KEY`).
#[derive(Clone, PartialEq, Eq)]
pub struct PassphraseKey(Vec<u8>);

impl PassphraseKey {
    /// A key of `secret`'s bytes.
    pub fn new(secret: &str) -> Self {
        PassphraseKey(secret.as_bytes().to_vec())
    }

    /// HMAC-SHA256 of `phrase` under this key, hex.
    pub fn digest(&self, phrase: &Passphrase) -> PassphraseDigest {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        mac.update(phrase.0.as_bytes());
        PassphraseDigest(hex::encode(mac.finalize().into_bytes()))
    }
}

impl fmt::Debug for PassphraseKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PassphraseKey(<redacted>)")
    }
}

/// A passphrase's keyed digest: 64 hex digits, all that is ever stored of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PassphraseDigest(String);

impl PassphraseDigest {
    /// A stored digest read back; `None` when it is not 64 lowercase hex digits.
    pub fn parse(text: &str) -> Option<Self> {
        let valid = text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        valid.then(|| PassphraseDigest(text.to_owned()))
    }

    /// The digest as hex.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Who may grab: everybody, the recipients the sender named, or the members of a chat; with or
/// without a passphrase.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Access {
    /// The only users who may grab, sorted and distinct; `None` for anybody.
    pub recipients: Option<Vec<UserId>>,
    /// The passphrase's digest, when a grab must carry it.
    pub passphrase: Option<PassphraseDigest>,
    /// The chat whose members alone may grab (the packet's `chat_id`, sent `members_only`): a
    /// grab must carry a membership ticket for it; `None` for no such rule.
    pub members_of: Option<ChatId>,
}

impl Access {
    /// True when `user` is one of the recipients, or the packet names none: who may grab as far
    /// as the packet alone tells (a packet's view says it as `eligible`).
    pub fn admits(&self, user: &UserId) -> bool {
        self.recipients.as_ref().is_none_or(|recipients| recipients.binary_search(user).is_ok())
    }

    /// True when a grab whose verified ticket names `member_of` (or none) passes the chat's
    /// rule: the packet has none, or the ticket's chat is its chat.
    pub fn admits_member_of(&self, member_of: Option<&ChatId>) -> bool {
        self.members_of.as_ref().is_none_or(|chat| member_of == Some(chat))
    }

    /// True for a packet anybody may grab without a passphrase.
    pub fn is_open_to_all(&self) -> bool {
        self.recipients.is_none() && self.passphrase.is_none() && self.members_of.is_none()
    }
}

/// What a grab's passphrase check comes to, given the wrong tries this user already made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassphraseCheck {
    /// No passphrase needed, or the right one.
    Passed,
    /// Wrong or missing: one more wrong try is counted.
    Wrong,
    /// Locked: this user made [`MAX_WRONG_PASSPHRASES`] wrong tries already.
    Locked,
}

impl PassphraseCheck {
    /// The check of `offered` against `required` after `wrong_tries` wrong tries (the rule
    /// `grab.lua` applies; the pure statement, for the model tests and the ledger's answers).
    pub fn of(required: Option<&PassphraseDigest>, offered: Option<&PassphraseDigest>, wrong_tries: u32) -> Self {
        match required {
            None => PassphraseCheck::Passed,
            Some(_) if wrong_tries >= MAX_WRONG_PASSPHRASES => PassphraseCheck::Locked,
            Some(required) if offered == Some(required) => PassphraseCheck::Passed,
            Some(_) => PassphraseCheck::Wrong,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nfc_equivalent_phrases_have_one_digest_and_the_key_matters() {
        let key = PassphraseKey::new("k1");
        let composed = Passphrase::new("caf\u{e9}").unwrap();
        let decomposed = Passphrase::new("cafe\u{301}").unwrap();
        assert_eq!(key.digest(&composed), key.digest(&decomposed));
        assert_ne!(key.digest(&composed), PassphraseKey::new("k2").digest(&composed));
        assert_ne!(key.digest(&composed), key.digest(&Passphrase::new("cafe").unwrap()));
        assert!(PassphraseDigest::parse(key.digest(&composed).as_str()).is_some());
    }

    #[test]
    fn phrases_are_one_to_thirty_two_characters_and_never_printed() {
        assert!(Passphrase::new("").is_none());
        assert!(Passphrase::new(&"福".repeat(32)).is_some());
        assert!(Passphrase::new(&"福".repeat(33)).is_none());
        let phrase = Passphrase::new("open sesame").unwrap();
        assert!(!format!("{phrase:?}").contains("sesame"));
        assert!(!format!("{:?}", PassphraseKey::new("secret-key")).contains("secret"));
    }

    #[test]
    fn the_sixth_try_is_locked_whatever_it_says() {
        let key = PassphraseKey::new("k");
        let right = key.digest(&Passphrase::new("right").unwrap());
        let wrong = key.digest(&Passphrase::new("wrong").unwrap());
        assert_eq!(PassphraseCheck::of(None, None, 9), PassphraseCheck::Passed);
        assert_eq!(PassphraseCheck::of(Some(&right), Some(&right), 4), PassphraseCheck::Passed);
        assert_eq!(PassphraseCheck::of(Some(&right), Some(&wrong), 4), PassphraseCheck::Wrong);
        assert_eq!(PassphraseCheck::of(Some(&right), None, 0), PassphraseCheck::Wrong);
        assert_eq!(PassphraseCheck::of(Some(&right), Some(&right), 5), PassphraseCheck::Locked);
    }

    #[test]
    fn recipients_admit_only_themselves() {
        let user = |name: &str| UserId::from_claim(name).unwrap();
        let chat = Access { recipients: Some(vec![user("bob"), user("carol")]), ..Access::default() };
        assert!(chat.admits(&user("carol")) && !chat.admits(&user("mallory")));
        assert!(Access::default().admits(&user("anyone")));
        assert!(Access::default().is_open_to_all() && !chat.is_open_to_all());
    }

    #[test]
    fn a_members_only_packet_admits_a_ticket_for_its_own_chat_only() {
        let user = |name: &str| UserId::from_claim(name).unwrap();
        let family = ChatId::parse("family").unwrap();
        let office = ChatId::parse("office").unwrap();
        let members = Access { members_of: Some(family.clone()), ..Access::default() };
        assert!(members.admits_member_of(Some(&family)));
        assert!(!members.admits_member_of(Some(&office)));
        assert!(!members.admits_member_of(None));
        assert!(members.admits(&user("bob")) && !members.is_open_to_all());
        assert!(Access::default().admits_member_of(Some(&office)), "a ticket is not needed elsewhere");
    }
}
