//! What settle, restore, query and the grab fallback need of the ledger: grab items written in
//! batches, the one-time finalisation, a packet's items read back, and the open packets by shard.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, Put, PutRequest, TransactWriteItem, Update, WriteRequest};
use rand::Rng;

use super::items::{open_shard_key, packet_pk, GrabItem, PacketItem, RefundItem, META, REFUND};
use super::{condition_failed, from_item, to_item, unavailable, DynamoLedger, OPEN_INDEX};
use crate::clock::{rfc3339, Millis};
use crate::domain::packet::LedgerPacket;
use crate::domain::settlement::{Finalisation, LoggedGrab};
use crate::domain::{Packet, PacketId, PacketStatus};
use crate::error::ApiError;

/// BatchWriteItem takes at most 25 requests.
const BATCH_LIMIT: usize = 25;
/// Attempts at a batch's unprocessed items before the run gives up (and the next run retries).
const BATCH_ATTEMPTS: u32 = 8;

impl DynamoLedger {
    /// Writes one grab item per grab (idempotent: the same grab always writes the same item),
    /// in batches of 25 sent together, retrying unprocessed items with backoff and jitter.
    /// Returns only once DynamoDB confirmed every item.
    pub async fn put_grabs(&self, packet: &Packet, grabs: &[LoggedGrab]) -> Result<(), ApiError> {
        let batches = grabs.chunks(BATCH_LIMIT).map(|chunk| {
            let requests: Vec<WriteRequest> = chunk
                .iter()
                .map(|grab| {
                    let put = PutRequest::builder().set_item(Some(to_item(&GrabItem::new(packet, grab)))).build();
                    WriteRequest::builder().put_request(put.expect("put request")).build()
                })
                .collect();
            self.write_batch(requests)
        });
        futures::future::try_join_all(batches).await?;
        Ok(())
    }

    async fn write_batch(&self, mut requests: Vec<WriteRequest>) -> Result<(), ApiError> {
        let mut attempt = 0;
        while !requests.is_empty() {
            if attempt == BATCH_ATTEMPTS {
                return Err(ApiError::dynamodb_unavailable(format!(
                    "{} grab items still unprocessed after {BATCH_ATTEMPTS} attempts",
                    requests.len()
                )));
            }
            if attempt > 0 {
                tokio::time::sleep(backoff(attempt)).await;
            }
            let output = self
                .client
                .batch_write_item()
                .request_items(&self.table, requests)
                .send()
                .await
                .map_err(unavailable)?;
            requests = output.unprocessed_items.and_then(|mut left| left.remove(&self.table)).unwrap_or_default();
            attempt += 1;
        }
        Ok(())
    }

    /// Finalises a packet once: one transaction writes the refund (when there is one) and moves
    /// the packet out of `open`, conditional on it still being open. Returns false when another
    /// run finalised it first: nothing is written twice.
    pub async fn finalise(&self, packet: &Packet, result: &Finalisation, now_ms: Millis) -> Result<bool, ApiError> {
        let now = rfc3339(now_ms);
        let mut values = HashMap::from([
            (":open".to_owned(), AttributeValue::S(PacketStatus::Open.as_str().into())),
            (":status".to_owned(), AttributeValue::S(result.status.as_str().into())),
            (":refund".to_owned(), AttributeValue::N(result.refund_cents.to_string())),
            (":now".to_owned(), AttributeValue::S(now.clone())),
        ]);
        let mut set = "SET #status = :status, refund_cents = :refund, settled_at = :now".to_owned();
        if let Some(best_luck) = &result.best_luck {
            set.push_str(", best_luck = :best_luck");
            values.insert(
                ":best_luck".into(),
                serde_dynamo::to_attribute_value(best_luck).expect("best luck serializes"),
            );
        }
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(packet_pk(&packet.id)))
            .key("sk", AttributeValue::S(META.into()))
            .update_expression(format!("{set} REMOVE open_shard"))
            .condition_expression("#status = :open")
            .expression_attribute_names("#status", "status")
            .set_expression_attribute_values(Some(values))
            .build()
            .expect("finalise update");
        let mut transaction =
            self.client.transact_write_items().transact_items(TransactWriteItem::builder().update(update).build());
        if result.refund_cents > 0 {
            let refund = RefundItem {
                pk: packet_pk(&packet.id),
                sk: REFUND.into(),
                packet_id: packet.id.clone(),
                sender: packet.sender.clone(),
                amount_cents: result.refund_cents,
                refunded_at: now,
            };
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(to_item(&refund)))
                .condition_expression("attribute_not_exists(pk)")
                .build()
                .expect("refund put");
            transaction = transaction.transact_items(TransactWriteItem::builder().put(put).build());
        }
        match transaction.send().await {
            Ok(_) => Ok(true),
            Err(error) if condition_failed(&error) => Ok(false),
            Err(error) => Err(unavailable(error)),
        }
    }

    /// Every item of packet `id`: record, grabs and refund (strongly consistent).
    pub async fn ledger_packet(&self, id: &PacketId) -> Result<Option<LedgerPacket>, ApiError> {
        let mut meta: Option<PacketItem> = None;
        let mut grabs: Vec<LoggedGrab> = Vec::new();
        let mut refund_item_cents = None;
        let mut pages = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", AttributeValue::S(packet_pk(id)))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send();
        while let Some(item) = pages.next().await {
            let item = item.map_err(unavailable)?;
            match item.get("sk").and_then(|sk| sk.as_s().ok()).map(String::as_str) {
                Some(META) => meta = Some(from_item(item)?),
                Some(REFUND) => refund_item_cents = Some(from_item::<RefundItem>(item)?.amount_cents),
                Some(sk) if sk.starts_with("GRAB#") => grabs.push(from_item::<GrabItem>(item)?.logged()),
                _ => {}
            }
        }
        let Some(meta) = meta else { return Ok(None) };
        grabs.sort_by_key(|grab| grab.seq);
        Ok(Some(LedgerPacket {
            packet: meta.packet()?,
            status: meta.status,
            refund_cents: meta.refund_cents,
            refund_item_cents,
            grabs,
        }))
    }

    /// The packets still open in settle shard `shard`, by the ledger's sparse open index.
    pub async fn open_packets(&self, shard: u32) -> Result<Vec<PacketId>, ApiError> {
        let mut pages = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(OPEN_INDEX)
            .key_condition_expression("open_shard = :shard")
            .expression_attribute_values(":shard", AttributeValue::S(open_shard_key(shard)))
            .projection_expression("pk")
            .into_paginator()
            .items()
            .send();
        let mut ids = Vec::new();
        while let Some(item) = pages.next().await {
            let item = item.map_err(unavailable)?;
            let pk = item.get("pk").and_then(|pk| pk.as_s().ok());
            if let Some(id) = pk.and_then(|pk| pk.strip_prefix("PKT#")).and_then(PacketId::parse) {
                ids.push(id);
            }
        }
        Ok(ids)
    }
}

fn backoff(attempt: u32) -> Duration {
    let base = 25u64 << attempt.min(6);
    Duration::from_millis(base + rand::rng().random_range(0..=base))
}
