//! Corrections in the ledger ([`Adjustments`]): an adjustment is proposed once per reference,
//! approved only while proposed and only by another operator, a chargeback only once per top-up
//! and for no more than it; each step one transaction with its audit entry, whose conditions
//! make it happen once.

use aws_sdk_dynamodb::types::{ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update};

use super::items::{
    adjustment_pk, topup_pk, write_stamp, AdjustmentItem, MovementItem, NewMovement, Queue, TopupItem, ADJUSTMENT,
    TOPUP,
};
use super::table::{n, s, to_item, unavailable, DynamoLedger};
use super::transaction::{Failed, Transaction, Write};
use red_packets_core::clock::{rfc3339, Millis};
use red_packets_core::domain::adjustment::{
    may_approve, may_close, Adjustment, AdjustmentApproval, AdjustmentClosing, AdjustmentProposal, AdjustmentResult,
    AdjustmentStatus, Closing, Direction,
};
use red_packets_core::domain::audit::{AuditAction, AuditEntry, AuditFacts};
use red_packets_core::domain::wallet::MovementKind;
use red_packets_core::ports::{Adjustments, PageRequest, QueuePage, StoreError};

/// A rejected or withdrawn proposal is never approved.
fn refuse_closed(adjustment: &AdjustmentItem) -> Result<(), StoreError> {
    match adjustment.adjustment.status {
        AdjustmentStatus::Rejected | AdjustmentStatus::Withdrawn => {
            let what =
                format!("the adjustment is {}: it can no longer be approved", adjustment.adjustment.status.as_str());
            Err(StoreError::invalid("reference", what))
        }
        AdjustmentStatus::Proposed | AdjustmentStatus::Applied => Ok(()),
    }
}

impl DynamoLedger {
    /// The adjustment `reference` names, or [`StoreError::Invalid`] on `reference` for none.
    async fn adjustment_item(&self, reference: &str) -> Result<AdjustmentItem, StoreError> {
        let item = self.get::<AdjustmentItem>(adjustment_pk(reference), ADJUSTMENT.into()).await?;
        item.ok_or_else(|| StoreError::invalid("reference", "no such adjustment"))
    }
}

impl Adjustments for DynamoLedger {
    /// The proposal's item, new for its reference: the same proposal again changes nothing, a
    /// different one under the same reference is [`StoreError::Invalid`] on `reference`. It
    /// moves no money.
    async fn propose_adjustment(
        &self,
        proposal: &AdjustmentProposal,
        now_ms: Millis,
    ) -> Result<AdjustmentResult, StoreError> {
        proposal.validate()?;
        self.keeps_wallets()?;
        let item = AdjustmentItem::proposed(proposal, rfc3339(now_ms));
        let mut items = Transaction::default();
        items.push(Write::Adjustment, self.put_new(to_item(&item)));
        let entry = AuditEntry {
            at: rfc3339(now_ms),
            action: AuditAction::AdjustmentProposed,
            subject: proposal.reference.clone(),
            actor: proposal.proposer.clone(),
            reason: adjustment_reason(&item),
            user: Some(proposal.user.clone()),
            facts: adjustment_facts(&item, &item.adjustment.proposal.reason),
        };
        items.push(Write::Audit, self.audit_entry(entry, now_ms));
        let (item, applied) = match self.transact(items).await? {
            Ok(()) => (item, true),
            Err(failed) => {
                let Some(reason) = failed.refused_by(Write::Adjustment) else { return Err(unavailable(failed.error)) };
                let earlier: AdjustmentItem = Self::refused_item(reason)?.ok_or_else(|| {
                    StoreError::Corrupt(format!("adjustment {} refused, yet absent", proposal.reference))
                })?;
                if earlier.adjustment.proposal != *proposal {
                    return Err(StoreError::invalid("reference", "this reference names another adjustment"));
                }
                (earlier, false)
            }
        };
        let balance_cents = self.balance(&item.adjustment.proposal.user).await?;
        Ok(AdjustmentResult { applied, adjustment: item.adjustment.clone(), balance_cents })
    }

    /// One transaction: the adjustment to applied (only while proposed, and only when the
    /// approver is not its proposer), its movement and the balance's change (a debit only when
    /// the balance covers it), and for a chargeback the top-up marked as charged back (only
    /// once, only for its own user, and only up to its amount).
    async fn approve_adjustment(
        &self,
        approval: &AdjustmentApproval,
        now_ms: Millis,
    ) -> Result<AdjustmentResult, StoreError> {
        approval.validate()?;
        let reference = &approval.reference;
        let proposed = self.adjustment_item(reference).await?;
        may_approve(&proposed.adjustment.proposal.proposer, &approval.approver)?;
        refuse_closed(&proposed)?;
        if proposed.adjustment.status == AdjustmentStatus::Applied {
            let balance_cents = self.balance(&proposed.adjustment.proposal.user).await?;
            return Ok(AdjustmentResult { applied: false, adjustment: proposed.adjustment.clone(), balance_cents });
        }
        let (stamp, at) = (write_stamp(), rfc3339(now_ms));
        let kind = match proposed.adjustment.proposal.direction {
            Direction::Credit => MovementKind::AdjustmentCredit,
            Direction::Debit => MovementKind::AdjustmentDebit,
        };
        let movement = NewMovement {
            user: &proposed.adjustment.proposal.user,
            kind,
            amount_cents: proposed.adjustment.proposal.amount_cents,
            packet_id: None,
            reference: Some(reference),
            chat_id: None,
            at_ms: now_ms,
        };
        let mut movement = MovementItem::new(movement, stamp);
        movement.event = movement.event.approved(&proposed.adjustment.proposal.proposer, &approval.approver);
        let mut items = Transaction::default();
        items.push(Write::Adjustment, self.apply(approval, &at, stamp));
        let entry = AuditEntry {
            at: at.clone(),
            action: AuditAction::AdjustmentApproved,
            subject: reference.clone(),
            actor: approval.approver.clone(),
            reason: adjustment_reason(&proposed),
            user: Some(proposed.adjustment.proposal.user.clone()),
            facts: adjustment_facts(&proposed, &proposed.adjustment.proposal.reason),
        };
        items.push(Write::Audit, self.audit_entry(entry, now_ms));
        match proposed.adjustment.proposal.direction {
            Direction::Credit => items.extend(self.credit(&movement)),
            Direction::Debit => items.extend(self.debit(&movement)),
        }
        if let Some(topup) = &proposed.adjustment.proposal.chargeback_of {
            items.push(Write::Topup, self.charge_back(topup, &proposed));
        }
        let mut adjustment = proposed;
        let applied = match self.transact(items).await? {
            Ok(()) => {
                adjustment.adjustment.status = AdjustmentStatus::Applied;
                adjustment.adjustment.approver = Some(approval.approver.clone());
                adjustment.adjustment.approved_at = Some(at);
                true
            }
            Err(failed) => {
                adjustment = self.approval_refused(failed, adjustment, approval).await?;
                false
            }
        };
        let balance_cents = self.balance(&adjustment.adjustment.proposal.user).await?;
        Ok(AdjustmentResult { applied, adjustment: adjustment.adjustment.clone(), balance_cents })
    }

    /// One transaction: the proposal to rejected or withdrawn (only while proposed, and only by
    /// the operator [`may_close`] allows: the condition says it again), out of the pending queue,
    /// and the audit entry.
    async fn close_adjustment(
        &self,
        closing: &AdjustmentClosing,
        now_ms: Millis,
    ) -> Result<AdjustmentResult, StoreError> {
        closing.validate()?;
        let reference = &closing.reference;
        let proposed = self.adjustment_item(reference).await?;
        may_close(&proposed.adjustment.proposal.proposer, closing)?;
        let closed = closing.how.status();
        let settled = |item: AdjustmentItem, applied: bool| async move {
            if item.adjustment.status == closed {
                let balance_cents = self.balance(&item.adjustment.proposal.user).await?;
                return Ok(AdjustmentResult { applied, adjustment: item.adjustment.clone(), balance_cents });
            }
            let what =
                format!("the adjustment is {}: only a proposed one can be closed", item.adjustment.status.as_str());
            Err(StoreError::invalid("reference", what))
        };
        if proposed.adjustment.status != AdjustmentStatus::Proposed {
            return settled(proposed, false).await;
        }
        let at = rfc3339(now_ms);
        let who = match closing.how {
            Closing::Reject => "proposer <> :operator",
            Closing::Withdraw => "proposer = :operator",
        };
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", s(&adjustment_pk(reference)))
            .key("sk", s(ADJUSTMENT))
            .update_expression(
                "SET #status = :closed, closed_by = :operator, closed_at = :at, close_reason = :reason \
                 REMOVE history_pk, history_sk",
            )
            .condition_expression(format!("#status = :proposed AND {who}"))
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":closed", s(closed.as_str()))
            .expression_attribute_values(":proposed", s(AdjustmentStatus::Proposed.as_str()))
            .expression_attribute_values(":operator", s(&closing.operator))
            .expression_attribute_values(":at", s(&at))
            .expression_attribute_values(":reason", s(&closing.reason))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .expect("adjustment update");
        let mut items = Transaction::default();
        items.push(Write::Adjustment, TransactWriteItem::builder().update(update).build());
        let action = match closing.how {
            Closing::Reject => AuditAction::AdjustmentRejected,
            Closing::Withdraw => AuditAction::AdjustmentWithdrawn,
        };
        let entry = AuditEntry {
            at: at.clone(),
            action,
            subject: reference.clone(),
            actor: closing.operator.clone(),
            reason: closing.reason.clone(),
            user: Some(proposed.adjustment.proposal.user.clone()),
            facts: adjustment_facts(&proposed, &closing.reason),
        };
        items.push(Write::Audit, self.audit_entry(entry, now_ms));
        match self.transact(items).await? {
            Ok(()) => {
                let mut item = proposed;
                item.adjustment.status = closed;
                item.adjustment.closed_by = Some(closing.operator.clone());
                item.adjustment.closed_at = Some(at);
                item.adjustment.close_reason = Some(closing.reason.clone());
                settled(item, true).await
            }
            Err(failed) => {
                // Approved or closed by a concurrent call between the read and the write.
                let Some(reason) = failed.refused_by(Write::Adjustment) else { return Err(unavailable(failed.error)) };
                let now: AdjustmentItem = Self::refused_item(reason)?.unwrap_or(proposed);
                settled(now, false).await
            }
        }
    }

    async fn adjustment(&self, reference: &str) -> Result<Option<Adjustment>, StoreError> {
        let item: Option<AdjustmentItem> = self.get(adjustment_pk(reference), ADJUSTMENT.into()).await?;
        Ok(item.map(|item| item.adjustment.clone()))
    }

    async fn pending_adjustments(&self, page: PageRequest<'_>) -> Result<QueuePage<Adjustment>, StoreError> {
        let page = self.queue_page::<AdjustmentItem>(Queue::PendingAdjustments, page).await?;
        let items = page.items.into_iter().map(|item| item.adjustment).collect();
        Ok(QueuePage { items, next_cursor: page.next_cursor })
    }
}

/// An adjustment's facts for its audit entries: its amount, direction and chargeback, and
/// `words` (its reason, or the reason it was rejected or withdrawn for).
fn adjustment_facts(adjustment: &AdjustmentItem, words: &str) -> AuditFacts {
    let direction = match adjustment.adjustment.proposal.direction {
        Direction::Credit => "credit",
        Direction::Debit => "debit",
    };
    AuditFacts {
        amount_cents: Some(adjustment.adjustment.proposal.amount_cents),
        direction: Some(direction.to_owned()),
        reference: adjustment.adjustment.proposal.chargeback_of.clone(),
        ..AuditFacts::words(words)
    }
}

/// What an adjustment's audit entries say of it: its direction, amount, wallet and reason.
fn adjustment_reason(adjustment: &AdjustmentItem) -> String {
    let direction = match adjustment.adjustment.proposal.direction {
        Direction::Credit => "credit",
        Direction::Debit => "debit",
    };
    let chargeback = adjustment
        .adjustment
        .proposal
        .chargeback_of
        .as_deref()
        .map(|topup| format!(", chargeback of {topup}"))
        .unwrap_or_default();
    format!(
        "{direction} {} to {}{chargeback}: {}",
        adjustment.adjustment.proposal.amount_cents,
        adjustment.adjustment.proposal.user,
        adjustment.adjustment.proposal.reason
    )
}

impl DynamoLedger {
    /// The adjustment to applied by `approval`'s approver, only while proposed and only when the
    /// approver is not its proposer; the item handed back when refused.
    fn apply(&self, approval: &AdjustmentApproval, at: &str, stamp: impl ToString) -> TransactWriteItem {
        let applied = Update::builder()
            .table_name(&self.table)
            .key("pk", s(&adjustment_pk(&approval.reference)))
            .key("sk", s(ADJUSTMENT))
            .update_expression(
                "SET #status = :applied, approver = :approver, approved_at = :at, written_at_ms = :stamp \
                 REMOVE history_pk, history_sk",
            )
            .condition_expression("#status = :proposed AND proposer <> :approver")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":applied", s("applied"))
            .expression_attribute_values(":proposed", s("proposed"))
            .expression_attribute_values(":approver", s(&approval.approver))
            .expression_attribute_values(":at", s(at))
            .expression_attribute_values(":stamp", n(stamp))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .expect("adjustment update");
        TransactWriteItem::builder().update(applied).build()
    }

    /// `topup` marked as charged back by `adjustment`: only once, only for its own user, and
    /// only up to its amount; the top-up handed back when refused.
    fn charge_back(&self, topup: &str, adjustment: &AdjustmentItem) -> TransactWriteItem {
        let charged_back = Update::builder()
            .table_name(&self.table)
            .key("pk", s(&topup_pk(topup)))
            .key("sk", s(TOPUP))
            .update_expression("SET charged_back_by = :reference")
            .condition_expression(
                "attribute_exists(pk) AND #user = :user AND amount_cents >= :amount AND attribute_not_exists(charged_back_by)",
            )
            .expression_attribute_names("#user", "user")
            .expression_attribute_values(":reference", s(&adjustment.adjustment.proposal.reference))
            .expression_attribute_values(":user", s(adjustment.adjustment.proposal.user.as_str()))
            .expression_attribute_values(":amount", n(adjustment.adjustment.proposal.amount_cents))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .expect("chargeback update");
        TransactWriteItem::builder().update(charged_back).build()
    }

    /// Why an approval's transaction was refused: approved by a concurrent call between the
    /// read and the write (the adjustment as it is now, when the caller may approve it), or a
    /// chargeback or a debit the ledger does not allow ([`StoreError::Invalid`]).
    async fn approval_refused(
        &self,
        failed: Failed,
        adjustment: AdjustmentItem,
        approval: &AdjustmentApproval,
    ) -> Result<AdjustmentItem, StoreError> {
        if let Some(reason) = failed.refused_by(Write::Adjustment) {
            // Approved by a concurrent call between the read and the write.
            let now = Self::refused_item(reason)?.unwrap_or(adjustment);
            may_approve(&now.adjustment.proposal.proposer, &approval.approver)?;
            refuse_closed(&now)?;
            return Ok(now);
        }
        if let Some(reason) = failed.refused_by(Write::Topup) {
            let topup: Option<TopupItem> = Self::refused_item(reason)?;
            let what = match topup {
                None => "no such top-up".to_owned(),
                Some(topup) if topup.user != adjustment.adjustment.proposal.user => {
                    "the top-up credited another user".to_owned()
                }
                Some(topup) if topup.amount_cents < adjustment.adjustment.proposal.amount_cents => {
                    format!("more than the top-up's {} cents", topup.amount_cents)
                }
                Some(_) => "the top-up was charged back already".to_owned(),
            };
            return Err(StoreError::invalid("chargeback_of", what));
        }
        if failed.refused_by(Write::Balance).is_some() {
            let balance = self.balance(&adjustment.adjustment.proposal.user).await?;
            let what = format!(
                "the balance {balance} does not cover the debit {}: no balance goes below zero; it stays proposed",
                adjustment.adjustment.proposal.amount_cents
            );
            return Err(StoreError::invalid("amount_cents", what));
        }
        Err(unavailable(failed.error))
    }
}
