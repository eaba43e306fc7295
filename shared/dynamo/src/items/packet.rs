//! A packet's own items in its partition (`PKT#<id>`): the packet (`META`), with its keys in
//! the history and open indexes, and its refund (`REFUND`).

use serde::{Deserialize, Serialize};

use super::history_pk;
use red_packets_core::clock::{rfc3339, Millis};
use red_packets_core::domain::grab::BestLuck;
use red_packets_core::domain::wallet::{EventType, LedgerEvent};
use red_packets_core::domain::{
    Access, Cents, ChatId, Packet, PacketId, PacketKind, PacketStatus, PacketTerms, PassphraseDigest, Seed, SplitRule,
    SplitVersion, UserId,
};
use red_packets_core::ports::StoreError;

/// The prefix of a packet's partition (`PKT#<id>`).
pub const PACKET_PREFIX: &str = "PKT#";

/// Sort key of a packet's own item.
pub const META: &str = "META";
/// Sort key of a packet's refund.
pub const REFUND: &str = "REFUND";

/// `PKT#<id>`.
pub fn packet_pk(id: &PacketId) -> String {
    format!("{PACKET_PREFIX}{id}")
}

/// `OPEN#<shard>#<bucket>`, the open GSI's partition of packet `id` in settle shard `shard`:
/// the bucket is the id's last hex digit (the shard comes from its first eight), so sends
/// spread over 16 partitions per shard (256 with the default 16 shards) instead of writing
/// into 16 hot ones.
pub fn open_partition(shard: u32, id: &PacketId) -> String {
    let bucket = id.as_str().chars().last().unwrap_or('0');
    format!("OPEN#{shard}#{bucket}")
}

/// Every open-GSI partition of settle shard `shard`: its 16 buckets, and `OPEN#<shard>`, where
/// packets recorded before the spread sit.
pub fn open_partitions(shard: u32) -> Vec<String> {
    let buckets = "0123456789abcdef".chars().map(|bucket| format!("OPEN#{shard}#{bucket}"));
    buckets.chain([format!("OPEN#{shard}")]).collect()
}

/// The packet item (`PKT#<id>` / `META`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PacketItem {
    pub pk: String,
    pub sk: String,
    pub packet_id: PacketId,
    pub sender: UserId,
    pub kind: PacketKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<SplitRule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub greeting: Option<String>,
    /// The chat it was sent into, when the app named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_id: Option<ChatId>,
    pub total_cents: Cents,
    pub count: u32,
    pub seed: String,
    /// The split's algorithm version; absent in items written before version 2 (version 1).
    #[serde(default = "SplitVersion::legacy")]
    pub split_version: SplitVersion,
    pub status: PacketStatus,
    pub created_at: String,
    pub created_at_ms: Millis,
    /// A scheduled packet's opening.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opens_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opens_at_ms: Option<Millis>,
    pub expires_at: String,
    pub expires_at_ms: Millis,
    pub history_pk: String,
    pub history_sk: String,
    /// Present only while open: the open GSI is sparse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_shard: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refund_cents: Option<Cents>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_luck: Option<BestLuck>,
    /// How many grabs it had, set when finalised (absent on packets finalised before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grab_count: Option<u32>,
    /// The last share a grab took (0 for none), set when finalised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_grab_seq: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_at: Option<String>,
    /// The only users who may grab, when the sender named them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipients: Option<Vec<UserId>>,
    /// The passphrase's keyed digest (never the phrase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passphrase_digest: Option<PassphraseDigest>,
    /// True when only members of its chat may grab (absent when false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub members_only: bool,
    /// Set once the sender cancelled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_at_ms: Option<Millis>,
    /// `PacketSent` when recorded; the finalisation's event once settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<LedgerEvent>,
    /// The send's write stamp ([`write_stamp`](super::write_stamp)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_at_ms: Option<Millis>,
    /// The finalisation's write stamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_at_ms: Option<Millis>,
}

impl PacketItem {
    /// The item of a packet just sent, written at `written_at_ms`.
    pub fn open(packet: &Packet, settle_shards: u32, written_at_ms: Millis) -> Self {
        let created_at = rfc3339(packet.created_at_ms);
        PacketItem {
            pk: packet_pk(&packet.id),
            sk: META.into(),
            packet_id: packet.id.clone(),
            sender: packet.sender.clone(),
            kind: packet.terms.kind,
            split: packet.terms.split,
            greeting: packet.terms.greeting.clone(),
            chat_id: packet.terms.chat_id.clone(),
            total_cents: packet.terms.total_cents,
            count: packet.terms.count,
            seed: packet.seed.to_hex(),
            split_version: packet.split_version,
            status: PacketStatus::Open,
            history_pk: history_pk(&packet.sender),
            history_sk: format!("SENT#{created_at}#{}", packet.id),
            created_at,
            created_at_ms: packet.created_at_ms,
            opens_at: packet.opens_at_ms.map(rfc3339),
            opens_at_ms: packet.opens_at_ms,
            expires_at: rfc3339(packet.expires_at_ms),
            expires_at_ms: packet.expires_at_ms,
            open_shard: Some(open_partition(packet.id.settle_shard(settle_shards), &packet.id)),
            refund_cents: None,
            best_luck: None,
            grab_count: None,
            last_grab_seq: None,
            settled_at: None,
            recipients: packet.access.recipients.clone(),
            passphrase_digest: packet.access.passphrase.clone(),
            members_only: packet.access.members_of.is_some(),
            cancelled_at: None,
            cancelled_at_ms: None,
            event: Some(LedgerEvent::of_packet(
                EventType::PacketSent,
                packet,
                &packet.sender,
                packet.terms.total_cents,
                rfc3339(packet.created_at_ms),
            )),
            written_at_ms: Some(written_at_ms),
            settled_at_ms: None,
        }
    }

    /// The packet this item records.
    pub fn packet(&self) -> Result<Packet, StoreError> {
        let seed = Seed::from_hex(&self.seed)
            .ok_or_else(|| StoreError::Corrupt(format!("packet {} has a corrupt seed", self.packet_id)))?;
        Ok(Packet {
            id: self.packet_id.clone(),
            sender: self.sender.clone(),
            terms: PacketTerms {
                kind: self.kind,
                split: self.split,
                greeting: self.greeting.clone(),
                total_cents: self.total_cents,
                count: self.count,
                chat_id: self.chat_id.clone(),
            },
            seed,
            split_version: self.split_version,
            created_at_ms: self.created_at_ms,
            opens_at_ms: self.opens_at_ms,
            expires_at_ms: self.expires_at_ms,
            access: Access {
                recipients: self.recipients.clone(),
                passphrase: self.passphrase_digest.clone(),
                members_of: self.chat_id.clone().filter(|_| self.members_only),
            },
        })
    }
}

/// The refund item (`PKT#<id>` / `REFUND`): money returned to the sender, at most once.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RefundItem {
    pub pk: String,
    pub sk: String,
    pub packet_id: PacketId,
    pub sender: UserId,
    pub amount_cents: Cents,
    pub refunded_at: String,
    /// `PacketRefunded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<LedgerEvent>,
    /// The finalisation's write stamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_at_ms: Option<Millis>,
}

impl RefundItem {
    /// The refund of `amount_cents` of `packet` to its sender at `at_ms`, written at
    /// `written_at_ms`.
    pub fn new(packet: &Packet, amount_cents: Cents, at_ms: Millis, written_at_ms: Millis) -> Self {
        let refunded_at = rfc3339(at_ms);
        RefundItem {
            pk: packet_pk(&packet.id),
            sk: REFUND.into(),
            packet_id: packet.id.clone(),
            sender: packet.sender.clone(),
            amount_cents,
            event: Some(LedgerEvent::of_packet(
                EventType::PacketRefunded,
                packet,
                &packet.sender,
                amount_cents,
                refunded_at.clone(),
            )),
            refunded_at,
            written_at_ms: Some(written_at_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn open_packets_spread_over_sixteen_partitions_per_shard_and_the_sweep_reads_them_all() {
        // Ids of shard 0 (first eight hex digits 0) ending in each hex digit: deterministic, where
        // 2,000 random ids left one of the 16 buckets empty about once in 150 runs.
        let ids: Vec<PacketId> = "0123456789abcdef"
            .chars()
            .map(|last| PacketId::parse(&format!("{}{last}", "0".repeat(31))).expect("a valid id"))
            .collect();
        let shard0: Vec<&PacketId> = ids.iter().filter(|id| id.settle_shard(16) == 0).collect();
        let partitions: HashSet<String> = shard0.iter().map(|id| open_partition(0, id)).collect();
        assert_eq!(partitions.len(), 16, "one shard's packets use all 16 of its partitions");
        let swept: HashSet<String> = open_partitions(0).into_iter().collect();
        assert!(partitions.is_subset(&swept));
        assert!(swept.contains("OPEN#0"), "packets recorded before the spread are still swept");
    }
}
