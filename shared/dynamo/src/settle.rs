//! The [`SettleLedger`] port on DynamoDB: grabs recorded under conditions that refuse paying a
//! share or a user twice (the writes themselves in `grabs`), casualties, shares claimed for the
//! refund, the one-time finalisation, the layouts settle ran with, and the open packets by
//! shard.

use std::collections::HashMap;
use std::future::Future;

use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};
use futures::stream::{self, StreamExt};

use super::capacity::write_units;
use super::items::{
    open_partitions, packet_pk, write_stamp, CasualtyItem, GrabItem, MovementItem, NewMovement, RefundItem, ShareItem,
    META, PACKET_PREFIX, SETTLE_LAYOUTS_PK, SETTLE_LAYOUTS_SK,
};
use super::table::{
    asked_again_on_timeout, from_item, to_item, unavailable, write_failed, DynamoLedger, PutIfNew, OPEN_INDEX,
};
use super::transaction::{Transaction, Write};
use red_packets_core::clock::{rfc3339, Millis};
use red_packets_core::domain::grab::LoggedGrab;
use red_packets_core::domain::ledger::Refusal;
use red_packets_core::domain::recovery::Casualty;
use red_packets_core::domain::settlement::Finalisation;
use red_packets_core::domain::wallet::{EventType, LedgerEvent, MovementKind};
use red_packets_core::domain::{Cents, Funds, Packet, PacketId, PacketStatus};
use red_packets_core::ports::{SettleLedger, StoreError};

/// Conditional writes one packet's settle keeps in flight at once.
pub(super) const WRITES_IN_FLIGHT: usize = 32;

/// Runs `writes`, `in_flight` at a time, and gathers what they all return once every one has
/// finished; a failure of any is the answer instead.
pub(super) async fn all_of<W, T>(writes: Vec<W>, in_flight: usize) -> Result<Vec<T::Item>, StoreError>
where
    W: Future<Output = Result<T, StoreError>>,
    T: IntoIterator,
{
    let outcomes: Vec<Result<T, StoreError>> = stream::iter(writes).buffer_unordered(in_flight).collect().await;
    let mut gathered = Vec::new();
    for outcome in outcomes {
        gathered.extend(outcome?);
    }
    Ok(gathered)
}

impl DynamoLedger {
    /// The update finalising `packet` as `result` says, at `now_ms`, stamped `stamp`: its
    /// status, refund, best luck, grab count, last grabbed share (what a page of its view reads
    /// besides the page, `settled_page`) and finalisation event set and the packet out of `open`, on
    /// the condition that it is still open.
    fn finalised_packet(&self, packet: &Packet, result: &Finalisation, now_ms: Millis, stamp: Millis) -> Update {
        let now = rfc3339(now_ms);
        let mut values = HashMap::from([
            (":open".to_owned(), AttributeValue::S(PacketStatus::Open.as_str().into())),
            (":status".to_owned(), AttributeValue::S(result.status.as_str().into())),
            (":refund".to_owned(), AttributeValue::N(result.refund_cents.to_string())),
            (":now".to_owned(), AttributeValue::S(now.clone())),
            (":stamp".to_owned(), AttributeValue::N(stamp.to_string())),
            (":grabs".to_owned(), AttributeValue::N(result.grab_count.to_string())),
            (":last".to_owned(), AttributeValue::N(result.last_grab_seq.to_string())),
        ]);
        let event_type = match result.status {
            PacketStatus::Finished => EventType::PacketFinished,
            PacketStatus::Cancelled => EventType::PacketCancelled,
            _ => EventType::PacketExpired,
        };
        let event = LedgerEvent::of_packet(event_type, packet, &packet.sender, result.refund_cents, now);
        values.insert(":event".into(), serde_dynamo::to_attribute_value(&event).expect("event serializes"));
        let mut set =
            "SET #status = :status, refund_cents = :refund, settled_at = :now, settled_at_ms = :stamp, event = :event, \
             grab_count = :grabs, last_grab_seq = :last"
                .to_owned();
        if let Some(best_luck) = &result.best_luck {
            set.push_str(", best_luck = :best_luck");
            values.insert(
                ":best_luck".into(),
                serde_dynamo::to_attribute_value(best_luck).expect("best luck serializes"),
            );
        }
        Update::builder()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(packet_pk(&packet.id)))
            .key("sk", AttributeValue::S(META.into()))
            .update_expression(format!("{set} REMOVE open_shard"))
            .condition_expression("#status = :open")
            .expression_attribute_names("#status", "status")
            .set_expression_attribute_values(Some(values))
            .build()
            .expect("finalise update")
    }
}

impl SettleLedger for DynamoLedger {
    /// Records grabs: first the claim on each one's share (`SHARE#<seq>`: new, or held by this
    /// user for this amount), then its grab item (`GRAB#<user>`: new, or the same share and
    /// amount), up to [`WRITES_IN_FLIGHT`] writes at a time; with the wallet, the grab items
    /// and their credits go in transactions of several grabs. The conditions make the writes
    /// idempotent for the same grab and refuse any other: no share is paid to two users, no
    /// user is paid two shares, no amount changes. Returns the grabs refused.
    #[tracing::instrument(level = "debug", name = "dynamodb.record_grabs", skip_all, fields(packet_id = %packet.id, grabs = grabs.len()))]
    async fn record_grabs(&self, packet: &Packet, grabs: &[LoggedGrab]) -> Result<Vec<Refusal>, StoreError> {
        if self.funds == Funds::Wallet {
            return self.record_grabs_in_batches(packet, grabs).await;
        }
        // The futures are built first: a stream holding a closure over borrowed items trips
        // rustc's higher-ranked `Send` inference (rust-lang/rust#102211) in callers.
        let writes: Vec<_> = grabs.iter().map(|grab| self.record_grab(packet, grab)).collect();
        all_of(writes, WRITES_IN_FLIGHT).await
    }

    /// Records a grab whose share claim is written: returns true when the user already holds
    /// a grab of this packet for another share or amount (nothing is written then). Without
    /// the wallet, the record is the grab item (`PKT#<id>` / `GRAB#<user>`). With it, the
    /// record is the grabber's credit, written with their balance change in one transaction:
    /// the credit's condition (new, one per user and packet) guards the balance, so a grab
    /// recorded again (a retry, a parallel run) is never credited twice.
    async fn put_grab_item(&self, packet: &Packet, grab: &LoggedGrab) -> Result<bool, StoreError> {
        let stamp = write_stamp();
        if self.funds == Funds::Wallet {
            let items: Transaction = self.grab_credit_items(packet, grab, stamp).into_iter().collect();
            let Err(failed) = self.transact(items).await? else { return Ok(false) };
            if !failed.cancelled() {
                return Err(write_failed(failed.error));
            }
            // Recorded before (its credit): the same grab is done; another is refused.
            let Some(reason) = failed.refused_by(Write::Movement) else { return Err(unavailable(failed.error)) };
            let recorded: Option<MovementItem> = reason.item().cloned().map(from_item).transpose()?;
            let recorded = recorded.and_then(|credit| credit.logged());
            return Ok(!recorded.is_some_and(|item| item.seq == grab.seq && item.amount_cents == grab.amount_cents));
        }
        // Recorded before (kept as it was, its first time too); another share is refused.
        let PutIfNew::Taken(recorded) = self.put_if_new_in_pace(&GrabItem::new(packet, grab, stamp)).await? else {
            return Ok(false);
        };
        Ok(!recorded.is_some_and(|item| item.seq == grab.seq && item.amount_cents == grab.amount_cents))
    }

    /// Records a casualty of a disagreement between Redis and the ledger, once (its item's
    /// condition): `GrabRegranted` or `GrabRevoked`, in the grabber's history. The money, if
    /// any, moved with the regranted grab's own item. With the wallet, a revoked grab counts in
    /// the grabber's balance item in the same transaction (`revoked`: their history's version).
    async fn record_casualty(&self, packet: &Packet, casualty: &Casualty, now_ms: Millis) -> Result<(), StoreError> {
        let item = CasualtyItem::new(packet, casualty, now_ms);
        if self.funds == Funds::Wallet && item.history_pk.is_some() {
            let user = item.user.clone();
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(to_item(&item)))
                .condition_expression("attribute_not_exists(pk)")
                .build()
                .expect("casualty put");
            let items: Transaction =
                [(Write::Casualty, TransactWriteItem::builder().put(put).build()), self.revoked_count(&user)]
                    .into_iter()
                    .collect();
            let Err(failed) = self.transact(items).await? else { return Ok(()) };
            // Recorded before: the same casualty, counted then.
            return match failed.refused_by(Write::Casualty) {
                Some(_) => Ok(()),
                None => Err(write_failed(failed.error)),
            };
        }
        let written = self
            .client()?
            .put_item()
            .table_name(&self.table)
            .set_item(Some(to_item(&item)))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match written {
            Ok(_) => Ok(()),
            Err(error) if error.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => Ok(()),
            Err(error) => Err(write_failed(error)),
        }
    }

    /// Claims shares `(seq, amount)` for the sender's refund, each under the condition that
    /// nobody holds it: after this no grab of them can be recorded. Returns the shares a grab
    /// claimed first. In settle's pace, as the grabs' claims are: an expired campaign's refund
    /// claims every share nobody took, in the packet's partition.
    #[tracing::instrument(level = "debug", name = "dynamodb.claim_for_refund", skip_all, fields(packet_id = %packet.id, shares = shares.len()))]
    async fn claim_for_refund(&self, packet: &Packet, shares: &[(u32, Cents)]) -> Result<Vec<u32>, StoreError> {
        let writes: Vec<_> = shares
            .iter()
            .map(|&(seq, amount_cents)| async move {
                let claim = to_item(&ShareItem::refunded(packet, seq, amount_cents));
                self.partition_pace.take(&packet_pk(&packet.id), write_units(&claim)).await;
                let written = self
                    .client()?
                    .put_item()
                    .table_name(&self.table)
                    .set_item(Some(claim))
                    .condition_expression("attribute_not_exists(pk) OR refund = :refund")
                    .expression_attribute_values(":refund", AttributeValue::Bool(true))
                    .send()
                    .await;
                match written {
                    Ok(_) => Ok(None),
                    Err(error)
                        if error.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) =>
                    {
                        Ok(Some(seq))
                    }
                    Err(error) => Err(write_failed(error)),
                }
            })
            .collect();
        all_of(writes, WRITES_IN_FLIGHT).await
    }

    /// Finalises a packet once: one transaction writes the refund (when there is one) with its
    /// credit to the sender's wallet, sets the packet's finalisation event and moves the packet
    /// out of `open`, conditional on it still being open. Returns false when another
    /// run finalised it first: nothing is written twice.
    #[tracing::instrument(level = "debug", name = "dynamodb.finalise", skip_all, fields(packet_id = %packet.id))]
    async fn finalise(&self, packet: &Packet, result: &Finalisation, now_ms: Millis) -> Result<bool, StoreError> {
        let stamp = write_stamp();
        let mut items = Transaction::default();
        let update = self.finalised_packet(packet, result, now_ms, stamp);
        items.push(Write::Packet, TransactWriteItem::builder().update(update).build());
        if result.refund_cents > 0 {
            let refund = RefundItem::new(packet, result.refund_cents, now_ms, stamp);
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(to_item(&refund)))
                .condition_expression("attribute_not_exists(pk)")
                .build()
                .expect("refund put");
            items.push(Write::Refund, TransactWriteItem::builder().put(put).build());
            if self.funds == Funds::Wallet {
                // The refund's credit rides on the packet's condition (still open): once only.
                let refund = NewMovement::of_sender(packet, MovementKind::Refund, result.refund_cents, now_ms);
                items.extend(self.credit(&MovementItem::new(refund, stamp)));
            }
        }
        match self.transact(items).await? {
            Ok(()) => Ok(true),
            // Finalised before (the packet's condition), or a refund already there for a packet
            // still open: nothing is written twice, and settle's books check says which.
            Err(failed) if failed.condition_failed() => Ok(false),
            Err(failed) => Err(unavailable(failed.error)),
        }
    }

    /// One `UpdateItem` adding `current` to the layouts item's number set, returning the set.
    async fn settle_layouts(&self, current: u32) -> Result<Vec<u32>, StoreError> {
        let updated = self
            .client()?
            .update_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(SETTLE_LAYOUTS_PK.into()))
            .key("sk", AttributeValue::S(SETTLE_LAYOUTS_SK.into()))
            .update_expression("ADD shards :current")
            .expression_attribute_values(":current", AttributeValue::Ns(vec![current.to_string()]))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllNew)
            .send()
            .await
            .map_err(unavailable)?;
        let recorded = updated.attributes.and_then(|mut item| item.remove("shards"));
        let numbers = recorded.and_then(|shards| shards.as_ns().ok().cloned()).unwrap_or_default();
        Ok(numbers.iter().filter_map(|number| number.parse().ok()).collect())
    }

    /// The packets still open in settle shard `shard`, by the ledger's sparse open index: one
    /// query per partition of the shard, all at once (only the recovery sweep reads it, and a
    /// slow answer to one partition delays none of the others).
    async fn open_packets(&self, shard: u32) -> Result<Vec<PacketId>, StoreError> {
        let partitions = open_partitions(shard);
        let reads: Vec<_> = partitions
            .into_iter()
            .map(|partition| asked_again_on_timeout(move || self.open_packets_in(partition.clone())))
            .collect();
        let in_flight = reads.len();
        all_of(reads, in_flight).await
    }
}

impl DynamoLedger {
    /// The packets of one partition of the open index, every page.
    async fn open_packets_in(&self, partition: String) -> Result<Vec<PacketId>, StoreError> {
        let mut ids = Vec::new();
        let mut pages = self
            .client()?
            .query()
            .table_name(&self.table)
            .index_name(OPEN_INDEX)
            .key_condition_expression("open_shard = :partition")
            .expression_attribute_values(":partition", AttributeValue::S(partition))
            .projection_expression("pk")
            .into_paginator()
            .items()
            .send();
        while let Some(item) = pages.next().await {
            let item = item.map_err(unavailable)?;
            let pk = item.get("pk").and_then(|pk| pk.as_s().ok());
            if let Some(id) = pk.and_then(|pk| pk.strip_prefix(PACKET_PREFIX)).and_then(PacketId::parse) {
                ids.push(id);
            }
        }
        Ok(ids)
    }
}
