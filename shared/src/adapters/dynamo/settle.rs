//! What settle, restore, query and the grab fallback need of the ledger: grabs recorded under
//! conditions that refuse paying a share or a user twice, shares claimed for the refund, the
//! one-time finalisation, a packet's items read back, and the open packets by shard.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, KeysAndAttributes, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use futures::stream::{self, StreamExt};

use super::items::{
    grab_movement_sk, open_partitions, packet_pk, wallet_pk, write_stamp, CasualtyItem, GrabItem, MovementItem,
    NewMovement, RefundItem, ShareItem, META, PACKET_PREFIX, REFUND, SETTLE_LAYOUTS_PK, SETTLE_LAYOUTS_SK,
};
use super::table::{from_item, to_item, unavailable, DynamoLedger, OPEN_INDEX};
use super::transaction::{Transaction, Write};
use crate::clock::{rfc3339, Millis};
use crate::domain::grab::LoggedGrab;
use crate::domain::ledger::Refusal;
use crate::domain::recovery::Casualty;
use crate::domain::settlement::Finalisation;
use crate::domain::wallet::{EventType, LedgerEvent, MovementKind};
use crate::domain::{Cents, Funds, Packet, PacketId, PacketStatus, UserId};
use crate::ports::{SettleLedger, StoreError};

/// Conditional writes one packet's settle keeps in flight at once.
const WRITES_IN_FLIGHT: usize = 32;

/// Grabs credited in one transaction with the wallet: two items each, within
/// TransactWriteItems' 100 items.
const CREDITS_PER_TRANSACTION: usize = 50;

/// How many times a `BatchGetItem` is sent again for the keys DynamoDB left unprocessed.
const UNPROCESSED_ATTEMPTS: u32 = 8;

/// Credit transactions one packet's settle keeps in flight at once.
const BATCHES_IN_FLIGHT: usize = 4;

/// `grabs` in batches of up to [`CREDITS_PER_TRANSACTION`], no user twice in one batch (a
/// transaction may not touch one item twice; a user appears twice in a packet's log only after
/// a failover, and the second is refused).
fn batches_of_distinct_users<'a>(grabs: &[&'a LoggedGrab]) -> Vec<Vec<&'a LoggedGrab>> {
    let mut batches = Vec::new();
    let mut pending = grabs.to_vec();
    while !pending.is_empty() {
        let mut batch: Vec<&LoggedGrab> = Vec::new();
        let mut again = Vec::new();
        for grab in pending {
            if batch.iter().any(|other| other.user == grab.user) {
                again.push(grab);
                continue;
            }
            batch.push(grab);
            if batch.len() == CREDITS_PER_TRANSACTION {
                batches.push(std::mem::take(&mut batch));
            }
        }
        if !batch.is_empty() {
            batches.push(batch);
        }
        pending = again;
    }
    batches
}

impl DynamoLedger {
    /// Claims `grab`'s share, then writes its record. A claim already held by the same
    /// user for the same amount is the same grab (recorded before, or grabbed again after a
    /// failover): it is left as it is, its first time kept.
    async fn record_grab(&self, packet: &Packet, grab: &LoggedGrab) -> Result<Option<Refusal>, StoreError> {
        if let Some(refused) = self.claim_share(packet, grab).await? {
            return Ok(Some(refused));
        }
        Ok(self.put_grab_item(packet, grab).await?.then(|| Refusal::UserPaid(grab.clone())))
    }

    /// Claims `grab`'s share (`SHARE#<seq>`): new, or held by this user for this amount
    /// already. Returns the refusal when another grab holds it.
    async fn claim_share(&self, packet: &Packet, grab: &LoggedGrab) -> Result<Option<Refusal>, StoreError> {
        let claim = self
            .client()?
            .put_item()
            .table_name(&self.table)
            .set_item(Some(to_item(&ShareItem::grabbed(packet, grab))))
            .condition_expression("attribute_not_exists(pk)")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match claim {
            Ok(_) => Ok(None),
            Err(error) if error.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => {
                let held = condition_failed_item(error.as_service_error());
                let held: Option<ShareItem> = held.map(from_item).transpose()?;
                let same = held.map(|item| item.claim()).transpose()?.is_some_and(|claim| claim.holds(grab));
                Ok((!same).then(|| Refusal::ShareHeld(grab.clone())))
            }
            Err(error) => Err(write_failed(error)),
        }
    }

    /// With the wallet: the grabs in batches of up to [`CREDITS_PER_TRANSACTION`] distinct
    /// users, each batch claiming its grabs' shares, then crediting the claimed ones in one
    /// transaction, each grab's credit and balance change under the same conditions as one
    /// grab's own transaction; [`BATCHES_IN_FLIGHT`] batches at a time, so one batch's claims
    /// overlap another's credits. A transaction cancelled for any of its grabs (one recorded
    /// before, a conflict that outlasted the retries) is redone grab by grab, so each gets its
    /// own answer.
    async fn record_grabs_in_batches(&self, packet: &Packet, grabs: &[LoggedGrab]) -> Result<Vec<Refusal>, StoreError> {
        let grabs: Vec<&LoggedGrab> = grabs.iter().collect();
        let batches: Vec<_> =
            batches_of_distinct_users(&grabs).into_iter().map(|batch| self.claim_and_credit(packet, batch)).collect();
        let outcomes: Vec<Result<Vec<Refusal>, StoreError>> =
            stream::iter(batches).buffer_unordered(BATCHES_IN_FLIGHT).collect().await;
        let mut refused = Vec::new();
        for outcome in outcomes {
            refused.extend(outcome?);
        }
        Ok(refused)
    }

    /// Claims the shares of `batch`, then credits the grabs whose claims hold.
    async fn claim_and_credit(&self, packet: &Packet, batch: Vec<&LoggedGrab>) -> Result<Vec<Refusal>, StoreError> {
        let claims: Vec<_> = batch.iter().map(|grab| self.claim_share(packet, grab)).collect();
        let claimed: Vec<Result<Option<Refusal>, StoreError>> =
            stream::iter(claims).buffered(WRITES_IN_FLIGHT / BATCHES_IN_FLIGHT).collect().await;
        let mut refused = Vec::new();
        let mut to_credit = Vec::new();
        for (grab, claim) in batch.into_iter().zip(claimed) {
            match claim? {
                Some(refusal) => refused.push(refusal),
                None => to_credit.push(grab),
            }
        }
        if !to_credit.is_empty() {
            refused.extend(self.credit_grabs(packet, to_credit).await?);
        }
        Ok(refused)
    }

    /// One transaction recording and crediting `batch` (grabs of distinct users whose shares
    /// are claimed); grab by grab when it is cancelled. Returns the grabs refused.
    async fn credit_grabs(&self, packet: &Packet, batch: Vec<&LoggedGrab>) -> Result<Vec<Refusal>, StoreError> {
        let stamp = write_stamp();
        let items: Transaction = batch.iter().flat_map(|grab| self.grab_credit_items(packet, grab, stamp)).collect();
        match self.transact(items).await? {
            Ok(()) => Ok(Vec::new()),
            Err(failed) if failed.cancelled() => {
                let writes: Vec<_> = batch.iter().map(|grab| self.put_grab_item(packet, grab)).collect();
                // In order (`buffered`): each outcome is zipped back to its grab.
                let outcomes: Vec<Result<bool, StoreError>> =
                    stream::iter(writes).buffered(WRITES_IN_FLIGHT).collect().await;
                let mut refused = Vec::new();
                for (grab, outcome) in batch.iter().zip(outcomes) {
                    if outcome? {
                        refused.push(Refusal::UserPaid((*grab).clone()));
                    }
                }
                Ok(refused)
            }
            Err(failed) => Err(write_failed(failed.error)),
        }
    }

    /// The grabs of packet `id` (created at `created_at_ms`) recorded as `users`' credits,
    /// read by key (`BatchGetItem`, strongly consistent, 100 keys a request).
    pub(super) async fn grab_credits(
        &self,
        created_at_ms: Millis,
        id: &PacketId,
        users: &[&UserId],
    ) -> Result<Vec<LoggedGrab>, StoreError> {
        let sk = grab_movement_sk(created_at_ms, id);
        let mut grabs = Vec::new();
        for chunk in users.chunks(100) {
            let keys = chunk.iter().map(|user| {
                HashMap::from([
                    ("pk".to_owned(), AttributeValue::S(wallet_pk(user))),
                    ("sk".to_owned(), AttributeValue::S(sk.clone())),
                ])
            });
            let mut request = Some(
                KeysAndAttributes::builder()
                    .set_keys(Some(keys.collect()))
                    .consistent_read(true)
                    .build()
                    .expect("credit keys"),
            );
            let mut attempt = 0;
            while let Some(keys) = request.take() {
                attempt += 1;
                let read = self
                    .client()?
                    .batch_get_item()
                    .request_items(&self.table, keys)
                    .send()
                    .await
                    .map_err(unavailable)?;
                for item in read.responses.and_then(|mut tables| tables.remove(&self.table)).unwrap_or_default() {
                    let credit: MovementItem = from_item(item)?;
                    grabs.extend(credit.logged());
                }
                request = read.unprocessed_keys.and_then(|mut tables| tables.remove(&self.table));
                if request.is_some() {
                    if attempt >= UNPROCESSED_ATTEMPTS {
                        return Err(StoreError::dynamodb_unavailable("BatchGetItem kept leaving keys unprocessed"));
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(20 * u64::from(attempt))).await;
                }
            }
        }
        Ok(grabs)
    }

    /// A grab's two transaction items with the wallet: its credit, which is also its record
    /// (`WALLET#<user>` / `MOVE#<packet's creation>#grab#<id>`, only if new: one per user and
    /// packet), and the grabber's balance change, stamped `stamp`.
    fn grab_credit_items(&self, packet: &Packet, grab: &LoggedGrab, stamp: Millis) -> [(Write, TransactWriteItem); 2] {
        let credit = Put::builder()
            .table_name(&self.table)
            .set_item(Some(to_item(&MovementItem::grab(packet, grab, stamp))))
            .condition_expression("attribute_not_exists(pk)")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .expect("grab credit put");
        [
            (Write::Movement, TransactWriteItem::builder().put(credit).build()),
            self.balance_credit(&grab.user, grab.amount_cents),
        ]
    }

    /// The events of packet `id`'s casualties (`GrabRegranted`, `GrabRevoked`), for operators
    /// and checks: one per grab Redis acknowledged and the ledger refused.
    pub async fn casualties(&self, id: &PacketId) -> Result<Vec<LedgerEvent>, StoreError> {
        let mut pages = self
            .client()?
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :casualty)")
            .expression_attribute_values(":pk", AttributeValue::S(packet_pk(id)))
            .expression_attribute_values(":casualty", AttributeValue::S("CASUALTY#".into()))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send();
        let mut events = Vec::new();
        while let Some(item) = pages.next().await {
            let casualty: CasualtyItem = from_item(item.map_err(unavailable)?)?;
            events.extend(casualty.event);
        }
        Ok(events)
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
        let outcomes: Vec<Result<Option<Refusal>, StoreError>> =
            stream::iter(writes).buffer_unordered(WRITES_IN_FLIGHT).collect().await;
        let mut refused = Vec::new();
        for outcome in outcomes {
            refused.extend(outcome?);
        }
        Ok(refused)
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
        let written = self
            .client()?
            .put_item()
            .table_name(&self.table)
            .set_item(Some(to_item(&GrabItem::new(packet, grab, stamp))))
            .condition_expression("attribute_not_exists(pk)")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match written {
            Ok(_) => Ok(false),
            Err(error) if error.as_service_error().is_some_and(|e| e.is_conditional_check_failed_exception()) => {
                // Recorded before (kept as it was, its first time too); another share is refused.
                let recorded = condition_failed_item(error.as_service_error());
                let recorded: Option<GrabItem> = recorded.map(from_item).transpose()?;
                Ok(!recorded.is_some_and(|item| item.seq == grab.seq && item.amount_cents == grab.amount_cents))
            }
            Err(error) => Err(write_failed(error)),
        }
    }

    /// Records a casualty of a disagreement between Redis and the ledger, once (its item's
    /// condition): `GrabRegranted` or `GrabRevoked`, in the grabber's history. The money, if
    /// any, moved with the regranted grab's own item.
    async fn record_casualty(&self, packet: &Packet, casualty: &Casualty, now_ms: Millis) -> Result<(), StoreError> {
        let written = self
            .client()?
            .put_item()
            .table_name(&self.table)
            .set_item(Some(to_item(&CasualtyItem::new(packet, casualty, now_ms))))
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
    /// claimed first.
    #[tracing::instrument(level = "debug", name = "dynamodb.claim_for_refund", skip_all, fields(packet_id = %packet.id, shares = shares.len()))]
    async fn claim_for_refund(&self, packet: &Packet, shares: &[(u32, Cents)]) -> Result<Vec<u32>, StoreError> {
        let writes: Vec<_> = shares
            .iter()
            .map(|&(seq, amount_cents)| async move {
                let written = self
                    .client()?
                    .put_item()
                    .table_name(&self.table)
                    .set_item(Some(to_item(&ShareItem::refunded(packet, seq, amount_cents))))
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
        let outcomes: Vec<Result<Option<u32>, StoreError>> =
            stream::iter(writes).buffer_unordered(WRITES_IN_FLIGHT).collect().await;
        let mut taken = Vec::new();
        for outcome in outcomes {
            taken.extend(outcome?);
        }
        Ok(taken)
    }

    /// Finalises a packet once: one transaction writes the refund (when there is one) with its
    /// credit to the sender's wallet, sets the packet's finalisation event and moves the packet
    /// out of `open`, conditional on it still being open. Returns false when another
    /// run finalised it first: nothing is written twice.
    #[tracing::instrument(level = "debug", name = "dynamodb.finalise", skip_all, fields(packet_id = %packet.id))]
    async fn finalise(&self, packet: &Packet, result: &Finalisation, now_ms: Millis) -> Result<bool, StoreError> {
        let now = rfc3339(now_ms);
        let stamp = write_stamp();
        let mut values = HashMap::from([
            (":open".to_owned(), AttributeValue::S(PacketStatus::Open.as_str().into())),
            (":status".to_owned(), AttributeValue::S(result.status.as_str().into())),
            (":refund".to_owned(), AttributeValue::N(result.refund_cents.to_string())),
            (":now".to_owned(), AttributeValue::S(now.clone())),
            (":stamp".to_owned(), AttributeValue::N(stamp.to_string())),
        ]);
        let event_type = match result.status {
            PacketStatus::Finished => EventType::PacketFinished,
            PacketStatus::Cancelled => EventType::PacketCancelled,
            _ => EventType::PacketExpired,
        };
        let event = LedgerEvent::new(
            event_type,
            packet.id.as_str(),
            Some(&packet.id),
            &packet.sender,
            result.refund_cents,
            now.clone(),
        );
        values.insert(":event".into(), serde_dynamo::to_attribute_value(&event).expect("event serializes"));
        let mut set =
            "SET #status = :status, refund_cents = :refund, settled_at = :now, settled_at_ms = :stamp, event = :event"
                .to_owned();
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
        let mut items = Transaction::default();
        items.push(Write::Packet, TransactWriteItem::builder().update(update).build());
        if result.refund_cents > 0 {
            let refund = RefundItem {
                pk: packet_pk(&packet.id),
                sk: REFUND.into(),
                packet_id: packet.id.clone(),
                sender: packet.sender.clone(),
                amount_cents: result.refund_cents,
                event: Some(LedgerEvent::new(
                    EventType::PacketRefunded,
                    packet.id.as_str(),
                    Some(&packet.id),
                    &packet.sender,
                    result.refund_cents,
                    now.clone(),
                )),
                refunded_at: now,
                written_at_ms: Some(stamp),
            };
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(to_item(&refund)))
                .condition_expression("attribute_not_exists(pk)")
                .build()
                .expect("refund put");
            items.push(Write::Refund, TransactWriteItem::builder().put(put).build());
            if self.funds == Funds::Wallet {
                // The refund's credit rides on the packet's condition (still open): once only.
                let refund = NewMovement {
                    user: &packet.sender,
                    kind: MovementKind::Refund,
                    amount_cents: result.refund_cents,
                    packet_id: Some(&packet.id),
                    reference: None,
                    at_ms: now_ms,
                };
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

    /// The packets still open in settle shard `shard`, by the ledger's sparse open index (one
    /// query per partition of the shard; only the recovery sweep reads it).
    async fn open_packets(&self, shard: u32) -> Result<Vec<PacketId>, StoreError> {
        let mut ids = Vec::new();
        for partition in open_partitions(shard) {
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
        }
        Ok(ids)
    }
}

/// The item a `PutItem` found in place when its condition failed (`ReturnValuesOnConditionCheckFailure`).
fn condition_failed_item(error: Option<&PutItemError>) -> Option<HashMap<String, AttributeValue>> {
    match error? {
        PutItemError::ConditionalCheckFailedException(failed) => failed.item().cloned(),
        _ => None,
    }
}

/// A failed ledger write in settle: DynamoDB rejecting the item itself (a poison packet) is
/// [`StoreError::Rejected`], so settle skips that packet; anything else is
/// [`StoreError::Unavailable`], which ends the run.
fn write_failed<E, R>(error: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let code = error.as_service_error().and_then(|service| service.code()).map(str::to_owned);
    match code.as_deref() {
        Some("ValidationException" | "ItemCollectionSizeLimitExceededException") => {
            StoreError::Rejected(DisplayErrorContext(&error).to_string())
        }
        _ => unavailable(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::UserId;

    fn grab(seq: u32, user: &str) -> LoggedGrab {
        LoggedGrab { seq, user: UserId::from_claim(user).unwrap(), amount_cents: 10, at_ms: 0 }
    }

    #[test]
    fn credit_batches_hold_each_user_once_and_every_grab_exactly_once() {
        let mut grabs: Vec<LoggedGrab> = (1..=120).map(|seq| grab(seq, &format!("u{seq}"))).collect();
        // After a failover a user can appear twice in one packet's log.
        grabs.push(grab(121, "u7"));
        grabs.push(grab(122, "u7"));
        let refs: Vec<&LoggedGrab> = grabs.iter().collect();
        let batches = batches_of_distinct_users(&refs);
        for batch in &batches {
            assert!(batch.len() <= CREDITS_PER_TRANSACTION);
            let users: std::collections::HashSet<_> = batch.iter().map(|grab| &grab.user).collect();
            assert_eq!(users.len(), batch.len(), "a user twice in one transaction");
        }
        let mut seqs: Vec<u32> = batches.iter().flatten().map(|grab| grab.seq).collect();
        seqs.sort();
        assert_eq!(seqs, (1..=122).collect::<Vec<_>>());
        assert_eq!(batches.len(), 4, "120 in three batches, the two repeats of u7 after them");
    }
}
