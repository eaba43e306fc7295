//! Money out in the ledger ([`Withdrawals`]; corrections, [`red_packets_core::ports::Adjustments`], are
//! `adjustments.rs`), and the audit trail every such step writes in its own transaction
//! ([`AuditTrail`]). Each step is one
//! transaction whose conditions make it happen once: a withdrawal is new (its id comes from the
//! user's idempotency key) and the balance covers it; it is resolved only while pending; an
//! adjustment is proposed once per reference, approved only while proposed and only by another
//! operator, a chargeback only once per top-up and for no more than it. A read before a write
//! only finds what to write (whose wallet, which movement); the write's condition decides.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};

use super::items::{
    audit_pk, history_pk, wallet_pk, withdrawal_pk, write_stamp, AuditItem, MovementItem, NewMovement, Queue,
    ResentItem, WithdrawalItem, RESENT_PREFIX, USER_AUDIT_PREFIX, WITHDRAWAL,
};
use super::queues::Order;
use super::table::{from_item, n, s, to_item, unavailable, DynamoLedger};
use super::transaction::{Transaction, Write};
use red_packets_core::clock::{rfc3339, Millis};
use red_packets_core::domain::audit::{Attribution, AuditAction, AuditEntry, AuditFacts, AUDIT_SHARDS};
use red_packets_core::domain::wallet::{EventType, LedgerEvent, MovementKind};
use red_packets_core::domain::withdrawal::{
    resend_allowed, resend_slot, ResendResult, ResolutionResult, Withdrawal, WithdrawalReceipt, WithdrawalRequest,
    WithdrawalResolution, WithdrawalStatus,
};
use red_packets_core::domain::{Funds, UserId};
use red_packets_core::ports::{AuditTrail, Conflict, PageRequest, QueuePage, StoreError, Withdrawals};

impl DynamoLedger {
    pub(super) fn keeps_wallets(&self) -> Result<(), StoreError> {
        match self.funds {
            Funds::Wallet => Ok(()),
            Funds::None => Err(StoreError::Conflict(Conflict::NoWallets)),
        }
    }

    /// A new item (`attribute_not_exists(pk)`), handing back the item in its place when refused.
    pub(super) fn put_new(&self, item: HashMap<String, AttributeValue>) -> TransactWriteItem {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .expect("new item put");
        TransactWriteItem::builder().put(put).build()
    }

    /// `entry`, at `at_ms`, as a transaction item of the audit trail (its key is unique: its
    /// time, action and subject; the action's own conditions make the transaction happen once).
    pub(super) fn audit_entry(&self, entry: AuditEntry, at_ms: Millis) -> TransactWriteItem {
        let item = AuditItem::new(entry, &self.business_day.day_of(at_ms));
        let put = Put::builder().table_name(&self.table).set_item(Some(to_item(&item))).build().expect("audit put");
        TransactWriteItem::builder().put(put).build()
    }

    /// The item a refused write handed back, read as `T`.
    pub(super) fn refused_item<T: for<'de> serde::Deserialize<'de>>(
        reason: &aws_sdk_dynamodb::types::CancellationReason,
    ) -> Result<Option<T>, StoreError> {
        reason.item().cloned().map(from_item).transpose()
    }
}

impl Withdrawals for DynamoLedger {
    /// One transaction: the withdrawal (new), the balance's debit (it covers the amount) and
    /// the debit's movement. A retry is refused by the withdrawal's condition and answered with
    /// the withdrawal as it is now.
    async fn request_withdrawal(
        &self,
        user: &UserId,
        id: &str,
        request: &WithdrawalRequest,
        now_ms: Millis,
    ) -> Result<WithdrawalReceipt, StoreError> {
        request.validate()?;
        self.keeps_wallets()?;
        let (stamp, at) = (write_stamp(), rfc3339(now_ms));
        let movement = NewMovement {
            user,
            kind: MovementKind::Withdrawal,
            amount_cents: request.amount_cents,
            packet_id: None,
            reference: Some(id),
            chat_id: None,
            at_ms: now_ms,
        };
        let movement = MovementItem::new(movement, stamp);
        let event = LedgerEvent::new(EventType::WithdrawalRequested, id, None, user, request.amount_cents, at.clone());
        let withdrawal = WithdrawalItem {
            pk: withdrawal_pk(id),
            sk: WITHDRAWAL.into(),
            history_pk: Some(Queue::PendingWithdrawals.pk()),
            history_sk: Some(Queue::sk(&at, id)),
            withdrawal: request.pending(id, user, at),
            movement_sk: movement.sk.clone(),
            written_at_ms: stamp,
            resolved_at_ms: None,
            event: event.with_reference(Some(id)),
        };
        let mut items = Transaction::default();
        items.push(Write::Withdrawal, self.put_new(to_item(&withdrawal)));
        items.extend(self.debit(&movement));
        let (withdrawal, created) = match self.transact(items).await? {
            Ok(()) => (withdrawal, true),
            Err(failed) => {
                if let Some(reason) = failed.refused_by(Write::Withdrawal) {
                    let earlier: WithdrawalItem = Self::refused_item(reason)?
                        .ok_or_else(|| StoreError::Corrupt(format!("withdrawal {id} refused, yet absent")))?;
                    if !request.is_retry_of(&earlier.withdrawal, user) {
                        return Err(StoreError::Conflict(Conflict::IdempotencyKeyReused));
                    }
                    (earlier, false)
                } else if failed.refused_by(Write::Balance).is_some() {
                    return Err(StoreError::Conflict(Conflict::InsufficientFunds));
                } else {
                    return Err(unavailable(failed.error));
                }
            }
        };
        Ok(WithdrawalReceipt {
            withdrawal: withdrawal.withdrawal.clone(),
            created,
            balance_cents: self.balance(user).await?,
        })
    }

    async fn withdrawal(&self, id: &str) -> Result<Option<Withdrawal>, StoreError> {
        let item: Option<WithdrawalItem> = self.get(withdrawal_pk(id), WITHDRAWAL.into()).await?;
        Ok(item.map(|item| item.withdrawal.clone()))
    }

    /// One transaction: the withdrawal to `outcome` (only while pending), its debit movement's
    /// state, and for a failure the return of its money (a new movement and the balance's
    /// credit). A second delivery of the same word changes nothing; a contradicting one is
    /// [`StoreError::Invalid`] on `withdrawal_id`.
    async fn resolve_withdrawal(
        &self,
        resolution: &WithdrawalResolution,
        outcome: WithdrawalStatus,
        now_ms: Millis,
    ) -> Result<ResolutionResult, StoreError> {
        resolution.validate()?;
        let id = &resolution.withdrawal_id;
        let Some(pending) = self.get::<WithdrawalItem>(withdrawal_pk(id), WITHDRAWAL.into()).await? else {
            return Err(StoreError::invalid("withdrawal_id", "no such withdrawal"));
        };
        if !resolution.applies_to(&pending.withdrawal, outcome)? {
            return Ok(ResolutionResult { applied: false, withdrawal: pending.withdrawal.clone() });
        }
        let (stamp, at) = (write_stamp(), rfc3339(now_ms));
        let event_type = match outcome {
            WithdrawalStatus::Failed => EventType::WithdrawalFailed,
            _ => EventType::WithdrawalPaid,
        };
        let event = LedgerEvent::new(
            event_type,
            id,
            None,
            &pending.withdrawal.user,
            pending.withdrawal.amount_cents,
            at.clone(),
        )
        .with_reference(Some(id));
        let mut items = Transaction::default();
        items.push(Write::Withdrawal, self.resolve(id, outcome, &resolution.reference, &event, (&at, stamp)));
        items.push(Write::DebitState, self.debit_state(&pending, outcome));
        let entry = AuditEntry::withdrawal_resolved(resolution, &pending.withdrawal, outcome, at.clone());
        items.push(Write::Audit, self.audit_entry(entry, now_ms));
        if outcome == WithdrawalStatus::Failed {
            let returned = NewMovement {
                user: &pending.withdrawal.user,
                kind: MovementKind::WithdrawalReturn,
                amount_cents: pending.withdrawal.amount_cents,
                packet_id: None,
                reference: Some(id),
                chat_id: None,
                at_ms: now_ms,
            };
            items.extend(self.credit(&MovementItem::new(returned, stamp)));
        }
        let mut withdrawal = pending;
        match self.transact(items).await? {
            Ok(()) => {
                withdrawal.withdrawal.resolve(outcome, &resolution.reference, at);
                Ok(ResolutionResult { applied: true, withdrawal: withdrawal.withdrawal.clone() })
            }
            Err(failed) => {
                // Resolved by a concurrent delivery between the read and the write: read by the
                // withdrawal's own condition first, whatever else the cancellation names as failed
                // with it (a failure's return movement, which a delivery at the same instant wrote
                // under the same key).
                if let Some(reason) = failed.refused_by(Write::Withdrawal) {
                    let now: WithdrawalItem = Self::refused_item(reason)?.unwrap_or(withdrawal);
                    resolution.applies_to(&now.withdrawal, outcome)?;
                    return Ok(ResolutionResult { applied: false, withdrawal: now.withdrawal.clone() });
                }
                if failed.refused_by(Write::DebitState).is_some() {
                    let what = format!("withdrawal {id}: its debit movement {} is missing", withdrawal.movement_sk);
                    return Err(StoreError::Corrupt(what));
                }
                Err(unavailable(failed.error))
            }
        }
    }

    async fn pending_withdrawals(&self, page: PageRequest<'_>) -> Result<QueuePage<Withdrawal>, StoreError> {
        let page = self.queue_page::<WithdrawalItem>(Queue::PendingWithdrawals, page).await?;
        let items = page.items.into_iter().map(|item| item.withdrawal).collect();
        Ok(QueuePage { items, next_cursor: page.next_cursor })
    }

    /// One transaction: a check that the withdrawal is still pending, the hour's resent item
    /// (new only) carrying its event, and the audit entry. The hour's second resend is refused
    /// by the resent item's condition and changes nothing; a withdrawal resolved since the read
    /// is refused by the check.
    async fn resend_withdrawal(&self, id: &str, by: &Attribution, now_ms: Millis) -> Result<ResendResult, StoreError> {
        by.validate()?;
        let Some(pending) = self.get::<WithdrawalItem>(withdrawal_pk(id), WITHDRAWAL.into()).await? else {
            return Err(StoreError::invalid("withdrawal_id", "no such withdrawal"));
        };
        resend_allowed(&pending.withdrawal.clone(), now_ms)?;
        let (slot, at) = (resend_slot(now_ms), rfc3339(now_ms));
        let resent = ResentItem {
            pk: withdrawal_pk(id),
            sk: format!("{RESENT_PREFIX}{slot}"),
            withdrawal_id: id.to_owned(),
            at: at.clone(),
            operator: by.operator.clone(),
            reason: by.reason.clone(),
            event: pending.event.clone(),
        };
        let still_pending = ConditionCheck::builder()
            .table_name(&self.table)
            .key("pk", s(&withdrawal_pk(id)))
            .key("sk", s(WITHDRAWAL))
            .condition_expression("#status = :pending")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":pending", s(WithdrawalStatus::Pending.as_str()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .expect("pending check");
        let entry = AuditEntry {
            at,
            action: AuditAction::WithdrawalResent,
            subject: id.to_owned(),
            actor: by.operator.clone(),
            reason: by.reason.clone(),
            user: Some(pending.withdrawal.user.clone()),
            facts: AuditFacts { amount_cents: Some(pending.withdrawal.amount_cents), ..AuditFacts::words(&by.reason) },
        };
        let mut items = Transaction::default();
        items.push(Write::Withdrawal, TransactWriteItem::builder().condition_check(still_pending).build());
        items.push(Write::Resent, self.put_new(to_item(&resent)));
        items.push(Write::Audit, self.audit_entry(entry, now_ms));
        match self.transact(items).await? {
            Ok(()) => Ok(ResendResult { changed: true, withdrawal: pending.withdrawal.clone(), slot }),
            Err(failed) => {
                if let Some(reason) = failed.refused_by(Write::Withdrawal) {
                    let now: WithdrawalItem = Self::refused_item(reason)?.unwrap_or(pending);
                    resend_allowed(&now.withdrawal.clone(), now_ms)?;
                    return Err(StoreError::Corrupt(format!("withdrawal {id}: pending, yet its check refused")));
                }
                if failed.refused_by(Write::Resent).is_some() {
                    return Ok(ResendResult { changed: false, withdrawal: pending.withdrawal.clone(), slot });
                }
                Err(unavailable(failed.error))
            }
        }
    }
}

impl DynamoLedger {
    /// Withdrawal `id` to `outcome` with the payout's `reference` and `event`, at `(at, stamp)`,
    /// only while pending; the item handed back when refused.
    fn resolve(
        &self,
        id: &str,
        outcome: WithdrawalStatus,
        reference: &str,
        event: &LedgerEvent,
        (at, stamp): (&str, impl ToString),
    ) -> TransactWriteItem {
        let resolved = Update::builder()
            .table_name(&self.table)
            .key("pk", s(&withdrawal_pk(id)))
            .key("sk", s(WITHDRAWAL))
            .update_expression(
                "SET #status = :outcome, resolved_at = :at, resolved_at_ms = :stamp, #reference = :reference, event = :event \
                 REMOVE history_pk, history_sk",
            )
            .condition_expression("#status = :pending")
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#reference", "reference")
            .expression_attribute_values(":outcome", s(outcome.as_str()))
            .expression_attribute_values(":pending", s(WithdrawalStatus::Pending.as_str()))
            .expression_attribute_values(":at", s(at))
            .expression_attribute_values(":stamp", n(stamp))
            .expression_attribute_values(":reference", s(reference))
            .expression_attribute_values(":event", serde_dynamo::to_attribute_value(event).expect("event serializes"))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .expect("withdrawal update");
        TransactWriteItem::builder().update(resolved).build()
    }

    /// The state of `pending`'s debit movement to `outcome` (the movement must be there).
    fn debit_state(&self, pending: &WithdrawalItem, outcome: WithdrawalStatus) -> TransactWriteItem {
        let debit_state = Update::builder()
            .table_name(&self.table)
            .key("pk", s(&wallet_pk(&pending.withdrawal.user)))
            .key("sk", s(&pending.movement_sk))
            .update_expression("SET #status = :outcome")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":outcome", s(outcome.as_str()))
            .build()
            .expect("movement state update");
        TransactWriteItem::builder().update(debit_state).build()
    }
}

impl AuditTrail for DynamoLedger {
    /// Each of the day's [`AUDIT_SHARDS`] partitions (strongly consistent), merged in time order.
    async fn audit_of_day(&self, day: &str) -> Result<Vec<AuditEntry>, StoreError> {
        let mut entries: Vec<(String, AuditEntry)> = Vec::new();
        for shard in 0..AUDIT_SHARDS {
            let mut pages = self
                .client()?
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", s(&audit_pk(day, shard)))
                .consistent_read(true)
                .into_paginator()
                .items()
                .send();
            while let Some(item) = pages.next().await {
                let item: AuditItem = from_item(item.map_err(unavailable)?)?;
                entries.push((item.sk, item.entry));
            }
        }
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(entries.into_iter().map(|(_, entry)| entry).collect())
    }

    async fn audit_of_user(&self, user: &UserId, page: PageRequest<'_>) -> Result<QueuePage<AuditEntry>, StoreError> {
        let items: QueuePage<AuditItem> =
            self.index_page(history_pk(user), Some(USER_AUDIT_PREFIX), Order::NewestFirst, page).await?;
        Ok(QueuePage {
            items: items.items.into_iter().map(|item| item.entry).collect(),
            next_cursor: items.next_cursor,
        })
    }

    /// One put, after the release it records (Redis holds the quarantine).
    async fn record(&self, entry: AuditEntry, at_ms: Millis) -> Result<(), StoreError> {
        let item = AuditItem::new(entry, &self.business_day.day_of(at_ms));
        self.client()?
            .put_item()
            .table_name(&self.table)
            .set_item(Some(to_item(&item)))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }
}
