//! The pattern rules' items: a chat's log (`RISK#CHAT#<chat>` / `LOG`), a user's chats of a
//! business day (`RISK#CHATS#<day>#<user>` / `COUNT`), two users' flow in a cycle window
//! (`RISK#PAIR#<digest of the two>` / `W#<window>`), each kept until the table's TTL takes it, and
//! the flags (`RISK#FLAGS` / `FLAG#<id>`), kept, each carrying its `RiskFlagged` event.

use serde::{Deserialize, Serialize};

use red_packets_core::clock::Millis;
use red_packets_core::domain::patterns::{ChatPacket, RiskFlag};
use red_packets_core::domain::wallet::{EventType, LedgerEvent};
use red_packets_core::domain::{ChatId, UserId};

use super::{history_pk, Queue};

/// The flags' partition.
pub const FLAGS_PK: &str = "RISK#FLAGS";

/// The sort key prefix of a flag.
pub const FLAG_PREFIX: &str = "FLAG#";

/// `FLAG#<id>`.
pub fn flag_sk(flag_id: &str) -> String {
    format!("{FLAG_PREFIX}{flag_id}")
}

/// The history index's sort key prefix of a user's flag mentions.
pub const USER_FLAG_PREFIX: &str = "FLAG#";

/// A flag's mention of one user it names (`RISK#MENTION#<flag id>` / `USER#<user>`), in the
/// history index under that user (`USER#<user>` / `FLAG#<raised at>#<flag id>`): their page lists
/// the flags naming them, each read from its flag item (its status now).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FlagMentionItem {
    pub pk: String,
    pub sk: String,
    pub flag_id: String,
    pub history_pk: String,
    pub history_sk: String,
}

impl FlagMentionItem {
    /// One mention per user `flag` names.
    pub fn of(flag: &RiskFlag) -> Vec<Self> {
        flag.users
            .iter()
            .map(|user| FlagMentionItem {
                pk: format!("RISK#MENTION#{}", flag.flag_id),
                sk: history_pk(user),
                flag_id: flag.flag_id.clone(),
                history_pk: history_pk(user),
                history_sk: format!("{USER_FLAG_PREFIX}{}#{}", flag.raised_at, flag.flag_id),
            })
            .collect()
    }
}

/// `RISK#CHAT#<chat>`, the partition of a chat's log (sort key `LOG`).
pub fn chat_log_pk(chat: &ChatId) -> String {
    format!("RISK#CHAT#{chat}")
}

/// `RISK#CHATS#<day>#<user>`, the partition of a user's chats of a day (sort key `COUNT`).
pub fn chat_count_pk(day: &str, user: &UserId) -> String {
    format!("RISK#CHATS#{day}#{user}")
}

/// `RISK#PAIR#<32 hex>`, the partition of two users' flows (sort key `W#<window>`): a digest of
/// the two ids in id order, the first length-prefixed, since a user id may hold any separator.
pub fn pair_pk(first: &UserId, second: &UserId) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{}:{first}{second}", first.as_str().len()));
    format!("RISK#PAIR#{}", &hex::encode(digest)[..32])
}

/// A chat's log: its recent packets and the version each save adds one to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatLogItem {
    pub pk: String,
    pub sk: String,
    pub packets: Vec<ChatPacket>,
    pub version: u64,
    /// The table's TTL attribute: the log goes once no chain can reach its newest packet.
    pub expires_at_epoch: i64,
}

impl ChatLogItem {
    /// The log of `chat` at `version`, kept until `keep_until_ms`.
    pub fn new(chat: &ChatId, packets: Vec<ChatPacket>, version: u64, keep_until_ms: Millis) -> Self {
        ChatLogItem {
            pk: chat_log_pk(chat),
            sk: "LOG".into(),
            packets,
            version,
            expires_at_epoch: keep_until_ms / 1000,
        }
    }
}

/// A flag (`RISK#FLAGS` / `FLAG#<id>`): put once, its attributes the flag's own; its `event`
/// publishes it as `RiskFlagged`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FlagItem {
    pub pk: String,
    pub sk: String,
    #[serde(flatten)]
    pub flag: RiskFlag,
    /// `RiskFlagged`: user, the first user named; reference, the flag's id.
    pub event: LedgerEvent,
    /// [`Queue::Flags`] of its status (`QUEUE#flags#open` when raised): its resolution moves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_pk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_sk: Option<String>,
}

impl FlagItem {
    /// The item of `flag`.
    pub fn new(flag: &RiskFlag) -> Self {
        let first = flag.users.first().cloned().unwrap_or_else(|| UserId::from_claim("-").expect("a user id"));
        let event = LedgerEvent::new(
            EventType::RiskFlagged,
            &flag.flag_id,
            flag.packets.last(),
            &first,
            flag.amount_cents,
            flag.raised_at.clone(),
        )
        .with_reference(Some(&flag.flag_id))
        .in_chat(flag.chat_id.as_ref());
        FlagItem {
            pk: FLAGS_PK.into(),
            sk: flag_sk(&flag.flag_id),
            flag: flag.clone(),
            event,
            history_pk: Some(Queue::Flags(flag.status).pk()),
            history_sk: Some(Queue::sk(&flag.raised_at, &flag.flag_id)),
        }
    }
}
