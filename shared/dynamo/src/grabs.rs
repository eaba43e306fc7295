//! A packet's grabs in the ledger: each recorded by claiming its share (`SHARE#<seq>`) then
//! writing its record under a condition that refuses paying a user twice; with the wallet the
//! record is the grabber's credit, written with their balance in transactions of many grabs;
//! and read back (the credits of a packet's holders, its casualties).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{
    AttributeValue, KeysAndAttributes, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
};
use futures::stream::{self, StreamExt};

use super::items::{grab_movement_sk, packet_pk, wallet_pk, write_stamp, CasualtyItem, MovementItem, ShareItem};
use super::settle::{all_of, WRITES_IN_FLIGHT};
use super::table::{from_item, to_item, unavailable, write_failed, DynamoLedger, PutIfNew};
use super::transaction::{Transaction, Write};
use red_packets_core::clock::Millis;
use red_packets_core::domain::grab::LoggedGrab;
use red_packets_core::domain::ledger::Refusal;
use red_packets_core::domain::wallet::LedgerEvent;
use red_packets_core::domain::{Packet, PacketId, UserId};
use red_packets_core::ports::{SettleLedger, StoreError};

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
    pub(super) async fn record_grab(&self, packet: &Packet, grab: &LoggedGrab) -> Result<Option<Refusal>, StoreError> {
        if let Some(refused) = self.claim_share(packet, grab).await? {
            return Ok(Some(refused));
        }
        Ok(self.put_grab_item(packet, grab).await?.then(|| Refusal::UserPaid(grab.clone())))
    }

    /// Claims `grab`'s share (`SHARE#<seq>`): new, or held by this user for this amount
    /// already. Returns the refusal when another grab holds it.
    async fn claim_share(&self, packet: &Packet, grab: &LoggedGrab) -> Result<Option<Refusal>, StoreError> {
        let PutIfNew::Taken(held) = self.put_if_new_in_pace(&ShareItem::grabbed(packet, grab)).await? else {
            return Ok(None);
        };
        let same = held.map(|item| item.claim()).transpose()?.is_some_and(|claim| claim.holds(grab));
        Ok((!same).then(|| Refusal::ShareHeld(grab.clone())))
    }

    /// With the wallet: the grabs in batches of up to [`CREDITS_PER_TRANSACTION`] distinct
    /// users, each batch claiming its grabs' shares, then crediting the claimed ones in one
    /// transaction, each grab's credit and balance change under the same conditions as one
    /// grab's own transaction; [`BATCHES_IN_FLIGHT`] batches at a time, so one batch's claims
    /// overlap another's credits. A transaction cancelled for any of its grabs (one recorded
    /// before, a conflict that outlasted the retries) is redone grab by grab, so each gets its
    /// own answer.
    pub(super) async fn record_grabs_in_batches(
        &self,
        packet: &Packet,
        grabs: &[LoggedGrab],
    ) -> Result<Vec<Refusal>, StoreError> {
        let grabs: Vec<&LoggedGrab> = grabs.iter().collect();
        let batches: Vec<_> =
            batches_of_distinct_users(&grabs).into_iter().map(|batch| self.claim_and_credit(packet, batch)).collect();
        all_of(batches, BATCHES_IN_FLIGHT).await
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
    pub(super) fn grab_credit_items(
        &self,
        packet: &Packet,
        grab: &LoggedGrab,
        stamp: Millis,
    ) -> [(Write, TransactWriteItem); 2] {
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

#[cfg(test)]
mod tests {
    use super::*;
    use red_packets_core::domain::UserId;

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
