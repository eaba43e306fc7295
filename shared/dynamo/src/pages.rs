//! A finalised packet's view a page at a time: its packet item (with the totals settle wrote
//! when it finalised it) and the share claims of the page's shares, one key-conditioned query
//! (`SHARE#<from>` to `SHARE#<from + len - 1>`), whatever the packet's size. The claims are in
//! the packet's partition in both funds modes, one per grabbed share (and one per refunded
//! share, which a page leaves out), sorted by share.

use aws_sdk_dynamodb::types::AttributeValue;

use super::items::{packet_pk, share_sk, PacketItem, ShareItem, META};
use super::table::{from_item, unavailable, DynamoLedger};
use red_packets_core::domain::limits::Limits;
use red_packets_core::domain::PacketStatus;
use red_packets_core::domain::{grab::LoggedGrab, PacketId};
use red_packets_core::ports::{SettledPage, StoreError};

/// The shares whose claims' keys sort by share: `SHARE#<seq, 5 digits>` holds up to 99,999; the
/// one share past it a packet may have ([`Limits::LARGEST_COUNT`]) is read by its key.
const LAST_FIVE_DIGIT_SHARE: u32 = 99_999;

const _: () = assert!(Limits::LARGEST_COUNT <= LAST_FIVE_DIGIT_SHARE + 1);

impl DynamoLedger {
    /// The page of a finalised packet's grabs of shares `from` to `from + len - 1`, with its
    /// totals; `None` when the packet is unknown, open, or finalised before its totals were kept.
    /// The packet item is read eventually consistent (one read before its finalisation reached
    /// it says `open`, which sends the caller to the whole read); the claims strongly
    /// consistent, since a replica behind the one that answered `finalised` might lack the last
    /// claims settle wrote before it, and this page is kept a year at the edge.
    pub(super) async fn settled_page_of(
        &self,
        id: &PacketId,
        from: u32,
        len: u32,
    ) -> Result<Option<SettledPage>, StoreError> {
        let last = from.saturating_add(len).saturating_sub(1);
        let (meta, claims, past) = tokio::try_join!(
            self.packet_item(id),
            self.share_claims(id, from, last.min(LAST_FIVE_DIGIT_SHARE)),
            self.last_share_claim(id, from, last),
        )?;
        let Some(meta) = meta else { return Ok(None) };
        let (Some(grab_count), Some(last_grab_seq), Some(refund_cents)) =
            (meta.grab_count, meta.last_grab_seq, meta.refund_cents)
        else {
            return Ok(None);
        };
        if meta.status == PacketStatus::Open {
            return Ok(None);
        }
        let grabs = claims
            .into_iter()
            .chain(past)
            .filter_map(|claim| claim.claim().map(|claim| claim.grab()).transpose())
            .collect::<Result<Vec<LoggedGrab>, _>>()?;
        Ok(Some(SettledPage {
            packet: meta.packet()?,
            status: meta.status,
            refund_cents,
            grab_count,
            best_luck: meta.best_luck,
            grabs,
            more: last_grab_seq > last,
        }))
    }

    async fn packet_item(&self, id: &PacketId) -> Result<Option<PacketItem>, StoreError> {
        let output = self
            .client()?
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(packet_pk(id)))
            .key("sk", AttributeValue::S(META.into()))
            .send()
            .await
            .map_err(unavailable)?;
        output.item.map(from_item).transpose()
    }

    /// The claims of shares `first` to `last` (both up to [`LAST_FIVE_DIGIT_SHARE`]), by share.
    async fn share_claims(&self, id: &PacketId, first: u32, last: u32) -> Result<Vec<ShareItem>, StoreError> {
        if first > last {
            return Ok(Vec::new());
        }
        let mut claims = Vec::new();
        let mut pages = self
            .client()?
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :first AND :last")
            .expression_attribute_values(":pk", AttributeValue::S(packet_pk(id)))
            .expression_attribute_values(":first", AttributeValue::S(share_sk(first)))
            .expression_attribute_values(":last", AttributeValue::S(share_sk(last)))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send();
        while let Some(item) = pages.next().await {
            claims.push(from_item(item.map_err(unavailable)?)?);
        }
        Ok(claims)
    }

    /// The claim of the share past [`LAST_FIVE_DIGIT_SHARE`], when `first..=last` holds it.
    async fn last_share_claim(&self, id: &PacketId, first: u32, last: u32) -> Result<Option<ShareItem>, StoreError> {
        let share = LAST_FIVE_DIGIT_SHARE + 1;
        if !(first..=last).contains(&share) {
            return Ok(None);
        }
        let output = self
            .client()?
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(packet_pk(id)))
            .key("sk", AttributeValue::S(share_sk(share)))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        output.item.map(from_item).transpose()
    }
}
