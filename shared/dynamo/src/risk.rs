//! The pattern rules' state and flags in the ledger ([`RiskLedger`], [`Flags`]). A chat's log
//! is saved over its version (optimistic: a writer that lost reads it again); a chat counted
//! for a user's day and a grab counted in a pair's flow are each one update whose condition is
//! that it was not counted yet; a flag is put only where none is; a resolution is one
//! transaction of the flag (while open) and its audit entry.

use std::collections::HashMap;

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::{UpdateItemError, UpdateItemOutput};
use aws_sdk_dynamodb::types::{
    AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};

use super::items::{
    chat_count_pk, chat_log_pk, flag_sk, history_pk, pair_pk, ChatLogItem, FlagItem, FlagMentionItem, Queue, FLAGS_PK,
    USER_FLAG_PREFIX,
};
use super::queues::Order;
use super::table::{from_item, n, number, s, to_item, unavailable, DynamoLedger};
use super::transaction::{Transaction, Write};
use red_packets_core::clock::{rfc3339, Millis};
use red_packets_core::domain::patterns::{
    ChatLog, FlagAssignment, FlagResolution, FlagResolved, FlagStatus, Flow, PairFlow, PairGrab, RiskFlag,
};
use red_packets_core::domain::{ChatId, Packet, PacketId, UserId};
use red_packets_core::ports::{Flags, PageRequest, QueuePage, RiskLedger, StoreError};

/// The item a counting update leaves: the one it wrote, or, when its condition found the count
/// taken already, the one that stood.
fn counted(
    updated: Result<UpdateItemOutput, SdkError<UpdateItemError, HttpResponse>>,
) -> Result<HashMap<String, AttributeValue>, StoreError> {
    match updated {
        Ok(output) => Ok(output.attributes.unwrap_or_default()),
        Err(error) => match error.as_service_error() {
            Some(UpdateItemError::ConditionalCheckFailedException(failed)) => {
                Ok(failed.item.clone().unwrap_or_default())
            }
            _ => Err(unavailable(error)),
        },
    }
}

/// How long a user's chat count is kept past the start of its day.
const COUNTS_KEPT_MS: Millis = 2 * 86_400_000;

impl RiskLedger for DynamoLedger {
    async fn sent_packet(&self, id: &PacketId) -> Result<Option<Packet>, StoreError> {
        self.packet(id).await
    }

    async fn chat_log(&self, chat: &ChatId) -> Result<(ChatLog, u64), StoreError> {
        let item: Option<ChatLogItem> = self.get(chat_log_pk(chat), "LOG".into()).await?;
        Ok(item.map_or_else(Default::default, |item| (ChatLog { packets: item.packets }, item.version)))
    }

    async fn save_chat_log(
        &self,
        chat: &ChatId,
        log: &ChatLog,
        version: u64,
        keep_until_ms: Millis,
    ) -> Result<bool, StoreError> {
        let item = ChatLogItem::new(chat, log.packets.clone(), version + 1, keep_until_ms);
        let put = self.client()?.put_item().table_name(&self.table).set_item(Some(to_item(&item)));
        let put = if version == 0 {
            put.condition_expression("attribute_not_exists(pk)")
        } else {
            put.condition_expression("version = :version").expression_attribute_values(":version", n(version))
        };
        match put.send().await {
            Ok(_) => Ok(true),
            Err(error)
                if matches!(error.as_service_error(), Some(PutItemError::ConditionalCheckFailedException(_))) =>
            {
                Ok(false)
            }
            Err(error) => Err(unavailable(error)),
        }
    }

    async fn count_chat(&self, user: &UserId, day: &str, chat: &ChatId, limit: u32) -> Result<u32, StoreError> {
        let keep_until =
            red_packets_core::clock::parse_rfc3339(&format!("{day}T00:00:00Z")).unwrap_or(0) + COUNTS_KEPT_MS;
        let updated = self
            .client()?
            .update_item()
            .table_name(&self.table)
            .key("pk", s(&chat_count_pk(day, user)))
            .key("sk", s("COUNT"))
            .update_expression("ADD chats :one, seen :chat SET expires_at_epoch = :keep")
            .condition_expression("attribute_not_exists(pk) OR (NOT contains(seen, :name) AND chats <= :limit)")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":chat", AttributeValue::Ss(vec![chat.as_str().to_owned()]))
            .expression_attribute_values(":name", s(chat.as_str()))
            .expression_attribute_values(":limit", n(limit))
            .expression_attribute_values(":keep", n(keep_until / 1000))
            .return_values(ReturnValue::UpdatedNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let item = counted(updated)?;
        Ok(number(&item, "chats") as u32)
    }

    async fn count_flow(&self, grab: PairGrab<'_>) -> Result<PairFlow, StoreError> {
        let PairGrab { window, packet, sender, grabber, amount_cents, keep_until_ms, most_grabs } = grab;
        let (first, second) = if grabber <= sender { (grabber, sender) } else { (sender, grabber) };
        let took = if grabber == first { "first" } else { "second" };
        // The packet names the grab: its sender is one of the two, its grabber the other.
        let grab = packet.to_string();
        let updated = self
            .client()?
            .update_item()
            .table_name(&self.table)
            .key("pk", s(&pair_pk(first, second)))
            .key("sk", s(&format!("W#{window}")))
            .update_expression(format!(
                "ADD {took}_grabs :one, {took}_cents :cents, seen :grab SET expires_at_epoch = :keep, first_user = :first, second_user = :second"
            ))
            .condition_expression("attribute_not_exists(pk) OR (NOT contains(seen, :name) AND size(seen) < :most)")
            .expression_attribute_values(":most", n(most_grabs))
            .expression_attribute_values(":first", s(first.as_str()))
            .expression_attribute_values(":second", s(second.as_str()))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":cents", n(amount_cents))
            .expression_attribute_values(":grab", AttributeValue::Ss(vec![grab.clone()]))
            .expression_attribute_values(":name", s(&grab))
            .expression_attribute_values(":keep", n(keep_until_ms / 1000))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let item = counted(updated)?;
        let flow = |side: &str| Flow {
            grabs: number(&item, &format!("{side}_grabs")) as u32,
            cents: number(&item, &format!("{side}_cents")),
        };
        Ok(PairFlow { first_took: flow("first"), second_took: flow("second") })
    }

    async fn flag(&self, flag_id: &str) -> Result<Option<RiskFlag>, StoreError> {
        let item: Option<FlagItem> = self.get(FLAGS_PK.into(), flag_sk(flag_id)).await?;
        Ok(item.map(|item| item.flag))
    }

    /// The user's mentions first (idempotent puts), then the flag, once: a failure between them
    /// leaves mentions of a flag not raised yet, which the user's page skips and the event's
    /// redelivery completes; never a flag its users' pages miss.
    async fn raise_flag(&self, flag: &RiskFlag) -> Result<bool, StoreError> {
        for mention in FlagMentionItem::of(flag) {
            let put = self.client()?.put_item().table_name(&self.table).set_item(Some(to_item(&mention)));
            put.send().await.map_err(unavailable)?;
        }
        let put = self
            .client()?
            .put_item()
            .table_name(&self.table)
            .set_item(Some(to_item(&FlagItem::new(flag))))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        match put {
            Ok(_) => Ok(true),
            Err(error)
                if matches!(error.as_service_error(), Some(PutItemError::ConditionalCheckFailedException(_))) =>
            {
                Ok(false)
            }
            Err(error) => Err(unavailable(error)),
        }
    }
}

impl Flags for DynamoLedger {
    async fn flags_of_user(&self, user: &UserId, page: PageRequest<'_>) -> Result<QueuePage<RiskFlag>, StoreError> {
        let mentions: QueuePage<FlagMentionItem> =
            self.index_page(history_pk(user), Some(USER_FLAG_PREFIX), Order::NewestFirst, page).await?;
        let mut flags = Vec::with_capacity(mentions.items.len());
        for mention in &mentions.items {
            flags.extend(self.flag(&mention.flag_id).await?);
        }
        Ok(QueuePage { items: flags, next_cursor: mentions.next_cursor })
    }

    async fn flags(&self, status: FlagStatus, page: PageRequest<'_>) -> Result<QueuePage<RiskFlag>, StoreError> {
        let page = self.queue_page::<FlagItem>(Queue::Flags(status), page).await?;
        Ok(QueuePage { items: page.items.into_iter().map(|item| item.flag).collect(), next_cursor: page.next_cursor })
    }

    /// One transaction: the assignee onto the flag (only while it is open) and the audit entry.
    async fn assign_flag(&self, assignment: &FlagAssignment, now_ms: Millis) -> Result<FlagResolved, StoreError> {
        assignment.validate()?;
        let at = rfc3339(now_ms);
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", s(FLAGS_PK))
            .key("sk", s(&flag_sk(&assignment.flag_id)))
            .update_expression("SET assignee = :assignee, assigned_at = :at")
            .condition_expression("#status = :open")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":assignee", s(&assignment.assignee))
            .expression_attribute_values(":at", s(&at))
            .expression_attribute_values(":open", s(FlagStatus::Open.as_str()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .expect("flag update");
        let mut items = Transaction::default();
        items.push(Write::Flag, TransactWriteItem::builder().update(update).build());
        items.push(Write::Audit, self.audit_entry(assignment.entry(at), now_ms));
        match self.transact(items).await? {
            Ok(()) => Ok(FlagResolved { flag: self.flag(&assignment.flag_id).await?, changed: true }),
            Err(failed) => {
                let Some(reason) = failed.refused_by(Write::Flag) else { return Err(unavailable(failed.error)) };
                let current: Option<FlagItem> = reason.item().cloned().map(from_item).transpose()?;
                Ok(FlagResolved { flag: current.map(|item| item.flag), changed: false })
            }
        }
    }

    async fn resolve_flag(&self, resolution: &FlagResolution, now_ms: Millis) -> Result<FlagResolved, StoreError> {
        resolution.validate()?;
        let at = rfc3339(now_ms);
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", s(FLAGS_PK))
            .key("sk", s(&flag_sk(&resolution.flag_id)))
            .update_expression(
                "SET #status = :outcome, resolved_by = :by, resolved_at = :at, note = :note, history_pk = :queue",
            )
            .condition_expression("#status = :open")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":outcome", s(resolution.outcome.as_str()))
            .expression_attribute_values(":by", s(&resolution.operator))
            .expression_attribute_values(":at", s(&at))
            .expression_attribute_values(":note", s(&resolution.note))
            .expression_attribute_values(":open", s(FlagStatus::Open.as_str()))
            .expression_attribute_values(":queue", s(&Queue::Flags(resolution.outcome).pk()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .expect("flag update");
        let mut items = Transaction::default();
        items.push(Write::Flag, TransactWriteItem::builder().update(update).build());
        items.push(Write::Audit, self.audit_entry(resolution.entry(at), now_ms));
        match self.transact(items).await? {
            Ok(()) => Ok(FlagResolved { flag: self.flag(&resolution.flag_id).await?, changed: true }),
            Err(failed) => {
                let Some(reason) = failed.refused_by(Write::Flag) else { return Err(unavailable(failed.error)) };
                let current: Option<FlagItem> = reason.item().cloned().map(from_item).transpose()?;
                Ok(FlagResolved { flag: current.map(|item| item.flag), changed: false })
            }
        }
    }
}
