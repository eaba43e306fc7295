//! The [`Ledger`] port on DynamoDB: a send's one transaction (daily counter, idempotency claim,
//! packet, debit), a cancel's conditional update, and the reads the API serves: a packet's
//! items, a user's history (its cursors and the wallet's received grabs in `history`) and
//! wallet (its cursor in `wallet`).

use std::collections::HashSet;

use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update};

use super::history::{self, received_item};
use super::items::{
    daily_limit_pk, idempotency_pk, packet_pk, write_stamp, DailySendsItem, GrabItem, IdempotencyItem, MovementItem,
    NewMovement, PacketItem, RefundItem, ShareItem, GRAB_PREFIX, IDEM, LIMIT, META, REFUND, SHARE_PREFIX,
};
use super::table::{from_item, newest_first, to_item, unavailable, DynamoLedger};
use super::transaction::{Transaction, Write};
use super::wallet;
use red_packets_core::clock::{rfc3339, Millis};
use red_packets_core::domain::grab::LoggedGrab;
use red_packets_core::domain::history::{HistoryItem, HistoryPage, Role};
use red_packets_core::domain::ledger::{LedgerPacket, ShareClaim, ShareHolder};
use red_packets_core::domain::limits::DailyLimit;
use red_packets_core::domain::wallet::{MovementKind, WalletPage};
use red_packets_core::domain::{Currency, Funds, Packet, PacketId, PacketStatus, UserId};
use red_packets_core::ports::{Conflict, IdempotencyClaim, Ledger, PageRequest, Recorded, SettledPage, StoreError};

/// How long an idempotency claim holds.
pub const IDEMPOTENCY_TTL_MS: Millis = 24 * 60 * 60 * 1000;

/// How long a daily-sends counter stays after its day began (TTL): two days.
pub const DAILY_SENDS_KEEP_MS: Millis = 2 * 24 * 60 * 60 * 1000;

impl DynamoLedger {
    /// The send's transaction: its daily counter (first), its idempotency claim (when it has
    /// one), its packet item, and with the wallet the debit of the sender's balance and its
    /// movement, each under its condition.
    fn send_transaction(&self, packet: &Packet, claim: Option<&IdempotencyClaim>) -> Transaction {
        let day_started_ms = packet.created_at_ms - packet.created_at_ms.rem_euclid(24 * 60 * 60 * 1000);
        let n = |value: String| AttributeValue::N(value);
        // Within the limits after this send: fewer sends than the limit so far, and room left
        // for this total. A counter not yet written is a day's first send (the total alone was
        // checked against the cents limit before).
        let counter = Update::builder()
            .table_name(&self.table)
            .key(
                "pk",
                AttributeValue::S(daily_limit_pk(&packet.sender, &self.business_day.day_of(packet.created_at_ms))),
            )
            .key("sk", AttributeValue::S(LIMIT.into()))
            .update_expression("ADD sends :one, sent_cents :total SET expires_at_epoch = :ttl")
            .condition_expression("attribute_not_exists(sends) OR (sends < :max_sends AND sent_cents <= :room)")
            .expression_attribute_values(":one", n("1".into()))
            .expression_attribute_values(":total", n(packet.terms.total_cents.to_string()))
            .expression_attribute_values(":ttl", n(((day_started_ms + DAILY_SENDS_KEEP_MS) / 1000).to_string()))
            .expression_attribute_values(":max_sends", n(self.daily.max_sends.to_string()))
            .expression_attribute_values(
                ":room",
                n(self.daily.max_sent_cents.saturating_sub(packet.terms.total_cents).to_string()),
            )
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .expect("daily counter update");
        let put = |item, condition: &str, now: Option<AttributeValue>| {
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(item))
                .condition_expression(condition)
                .set_expression_attribute_values(now.map(|now| [(":now".to_owned(), now)].into()))
                .build()
                .expect("transaction put");
            TransactWriteItem::builder().put(put).build()
        };
        let mut items = Transaction::default();
        items.push(Write::DailyCounter, TransactWriteItem::builder().update(counter).build());
        if let Some(claim) = claim {
            let claim_item = to_item(&IdempotencyItem {
                pk: idempotency_pk(&packet.sender, claim),
                sk: IDEM.into(),
                request_hash: claim.request_hash.clone(),
                packet_id: packet.id.clone(),
                expires_at_epoch: (packet.created_at_ms + IDEMPOTENCY_TTL_MS) / 1000,
            });
            let now_epoch = AttributeValue::N((packet.created_at_ms / 1000).to_string());
            // A claim past its TTL that DynamoDB has not yet removed counts as absent.
            items.push(
                Write::IdempotencyClaim,
                put(claim_item, "attribute_not_exists(pk) OR expires_at_epoch < :now", Some(now_epoch)),
            );
        }
        let stamp = write_stamp();
        let packet_item = PacketItem::open(packet, self.settle_shards, stamp);
        items.push(Write::Packet, put(to_item(&packet_item), "attribute_not_exists(pk)", None));
        if self.funds == Funds::Wallet {
            let debit =
                NewMovement::of_sender(packet, MovementKind::Send, packet.terms.total_cents, packet.created_at_ms);
            items.extend(self.debit(&MovementItem::new(debit, stamp)));
        }
        items
    }

    /// The answer to a send whose idempotency claim exists: the packet it made, when the
    /// request is the same; the key reused with another request otherwise.
    async fn replay(&self, packet: &Packet, claim: &IdempotencyClaim) -> Result<Recorded, StoreError> {
        let pk = idempotency_pk(&packet.sender, claim);
        let Some(existing) = self.get::<IdempotencyItem>(pk.clone(), IDEM.into()).await? else {
            // The claim expired between our write and this read: the caller may simply retry.
            return Err(StoreError::dynamodb_unavailable("idempotency claim vanished, retry"));
        };
        if existing.request_hash != claim.request_hash {
            return Err(StoreError::Conflict(Conflict::IdempotencyKeyReused));
        }
        let original = self.packet(&existing.packet_id).await?.ok_or_else(|| {
            StoreError::Corrupt(format!("idempotency claim {pk} names missing packet {}", existing.packet_id))
        })?;
        Ok(Recorded::Replay(Box::new(original)))
    }
}

impl DynamoLedger {
    /// One page of `user`'s history in `role` from the history index (sent packets; received
    /// grabs without the wallet), with no version.
    async fn history_page(&self, user: &UserId, role: Role, page: PageRequest<'_>) -> Result<HistoryPage, StoreError> {
        let start = page.cursor.map(|cursor| history::decode_cursor(cursor, user, role)).transpose()?;
        let output = newest_first(self.history_query(user, role)?, page.limit, start).await?;
        let next_cursor = output.last_evaluated_key.as_ref().and_then(history::encode_cursor);
        let found = output.items.unwrap_or_default();
        let items = match role {
            Role::Sent => found
                .into_iter()
                .map(|item| {
                    let packet: PacketItem = from_item(item)?;
                    Ok(HistoryItem {
                        packet_id: packet.packet_id,
                        sender: packet.sender,
                        total_cents: packet.total_cents,
                        count: packet.count,
                        status: packet.status,
                        created_at: packet.created_at,
                        amount_cents: None,
                        grabbed_at: None,
                        revoked_cents: None,
                    })
                })
                .collect::<Result<Vec<_>, StoreError>>()?,
            Role::Received => {
                // Grab items, and the grabs a failover cost their share with none left to give.
                let received = found.into_iter().map(received_item).collect::<Result<Vec<_>, StoreError>>()?;
                self.with_statuses(received).await?
            }
        };
        Ok(HistoryPage { items, next_cursor, version: None })
    }
}

impl Ledger for DynamoLedger {
    fn currency(&self) -> Currency {
        self.currency
    }

    /// One transaction: the sender's daily counter, the idempotency claim, the packet item and
    /// (with the wallet) the debit; a balance short of the total is
    /// [`Conflict::InsufficientFunds`] and records nothing.
    /// The counter's condition is the limit, so concurrent sends can never pass it together
    /// (DynamoDB serialises them; a conflict is retried); a replay fails on its claim and is
    /// answered with the original packet, counted once.
    #[tracing::instrument(level = "debug", name = "dynamodb.record_packet", skip_all, fields(packet_id = %packet.id))]
    async fn record_packet(&self, packet: &Packet, claim: Option<&IdempotencyClaim>) -> Result<Recorded, StoreError> {
        if let Some(limit) = self.daily.broken_by(0, 0, packet.terms.total_cents) {
            return Err(StoreError::Conflict(Conflict::LimitExceeded(limit.field())));
        }
        let Err(failed) = self.transact(self.send_transaction(packet, claim)).await? else { return Ok(Recorded::New) };
        if let Some(claim) = claim.filter(|_| failed.refused_by(Write::IdempotencyClaim).is_some()) {
            return self.replay(packet, claim).await;
        }
        if failed.refused_by(Write::Balance).is_some() {
            return Err(StoreError::Conflict(Conflict::InsufficientFunds));
        }
        if let Some(reason) = failed.refused_by(Write::DailyCounter) {
            let counted: DailySendsItem = reason.item().cloned().map(from_item).transpose()?.unwrap_or_default();
            let limit = self
                .daily
                .broken_by(counted.sends, counted.sent_cents, packet.terms.total_cents)
                .unwrap_or(DailyLimit::Sends);
            return Err(StoreError::Conflict(Conflict::LimitExceeded(limit.field())));
        }
        Err(unavailable(failed.error))
    }

    /// One conditional update of the packet item: the caller is its sender, it is open, not
    /// expired and not cancelled yet. When the condition fails, the item as it was says why.
    #[tracing::instrument(level = "debug", name = "dynamodb.cancel", skip_all, fields(packet_id = %id))]
    async fn cancel(&self, id: &PacketId, sender: &UserId, now_ms: Millis) -> Result<(), StoreError> {
        let s = |value: &str| AttributeValue::S(value.to_owned());
        let updated = self
            .client()?
            .update_item()
            .table_name(&self.table)
            .key("pk", s(&packet_pk(id)))
            .key("sk", s(META))
            .update_expression("SET cancelled_at = :at, cancelled_at_ms = :at_ms")
            .condition_expression(
                "attribute_exists(pk) AND sender = :sender AND #status = :open AND expires_at_ms > :at_ms \
                 AND attribute_not_exists(cancelled_at_ms)",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":at", s(&rfc3339(now_ms)))
            .expression_attribute_values(":at_ms", AttributeValue::N(now_ms.to_string()))
            .expression_attribute_values(":sender", s(sender.as_str()))
            .expression_attribute_values(":open", s(PacketStatus::Open.as_str()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let error = match updated {
            Ok(_) => return Ok(()),
            Err(error) => error,
        };
        let Some(UpdateItemError::ConditionalCheckFailedException(failed)) = error.as_service_error() else {
            return Err(unavailable(error));
        };
        let Some(item) = failed.item().cloned() else { return Err(StoreError::Conflict(Conflict::NoSuchPacket)) };
        let recorded: PacketItem = from_item(item)?;
        if &recorded.sender != sender {
            return Err(StoreError::Conflict(Conflict::NotTheSender));
        }
        match (recorded.status, recorded.cancelled_at_ms) {
            (PacketStatus::Cancelled, _) | (PacketStatus::Open, Some(_)) => Ok(()),
            _ => Err(StoreError::Conflict(Conflict::NotOpen)),
        }
    }

    /// Every item of packet `id`: record, grabs and refund (strongly consistent).
    #[tracing::instrument(level = "debug", name = "dynamodb.ledger_packet", skip_all, fields(packet_id = %id))]
    async fn ledger_packet(&self, id: &PacketId) -> Result<Option<LedgerPacket>, StoreError> {
        let mut meta: Option<PacketItem> = None;
        let mut grabs: Vec<LoggedGrab> = Vec::new();
        let mut claims = Vec::new();
        let mut refund_item_cents = None;
        let mut pages = self
            .client()?
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
                Some(sk) if sk.starts_with(GRAB_PREFIX) => grabs.push(from_item::<GrabItem>(item)?.logged()),
                Some(sk) if sk.starts_with(SHARE_PREFIX) => claims.push(from_item::<ShareItem>(item)?.claim()?),
                _ => {}
            }
        }
        let Some(meta) = meta else { return Ok(None) };
        if self.funds == Funds::Wallet {
            // The grabs are the holders' credits, in their wallets.
            let recorded: HashSet<&UserId> = grabs.iter().map(|grab| &grab.user).collect();
            let mut holders: Vec<&UserId> = claims
                .iter()
                .filter_map(|claim: &ShareClaim| match &claim.holder {
                    ShareHolder::Grabber { user, .. } if !recorded.contains(user) => Some(user),
                    _ => None,
                })
                .collect();
            holders.sort();
            holders.dedup();
            let credits = self.grab_credits(meta.created_at_ms, id, &holders).await?;
            grabs.extend(credits);
        }
        grabs.sort_by_key(|grab| grab.seq);
        Ok(Some(LedgerPacket {
            cancelled_at_ms: meta.cancelled_at_ms,
            packet: meta.packet()?,
            status: meta.status,
            refund_cents: meta.refund_cents,
            refund_item_cents,
            grabs,
            claims,
        }))
    }

    /// One page of `user`'s history in `role`, newest first. With the wallet, the user's version
    /// is read first (strongly consistent) and the page carries it when nothing on the page can
    /// change but by a new version ([`HistoryPage::settled`]) and the history index, eventually
    /// consistent, already lists what the version counts: the latest send on the sent history's
    /// first page, every revoked grab in the received history.
    async fn history(&self, user: &UserId, role: Role, page: PageRequest<'_>) -> Result<HistoryPage, StoreError> {
        if self.funds == Funds::None {
            return self.history_page(user, role, page).await;
        }
        let balance = self.balance_item(user).await?.unwrap_or_default();
        let first_page = page.cursor.is_none();
        let (mut found, caught_up) = match role {
            Role::Received => {
                let (found, revoked_listed) = self.received_with_wallet(user, page).await?;
                (found, revoked_listed >= balance.revoked.unwrap_or(0))
            }
            Role::Sent => {
                let found = self.history_page(user, role, page).await?;
                let listed = |id: &PacketId| found.items.iter().any(|item| &item.packet_id == id);
                let caught_up = !first_page || balance.last_sent.as_ref().is_none_or(listed);
                (found, caught_up)
            }
        };
        if caught_up && found.settled() {
            found.version = Some(wallet::version_of(Some(&balance)));
        }
        Ok(found)
    }

    /// `user`'s balance and one page of their movements, newest first; [`Conflict::NoWallets`] with `FUNDS=none`.
    /// The balance first, then its movements, both strongly consistent: the page is at least as
    /// new as the balance's version it carries, so a tag from that version never names an older
    /// page.
    async fn wallet(&self, user: &UserId, page: PageRequest<'_>) -> Result<WalletPage, StoreError> {
        if self.funds == Funds::None {
            return Err(StoreError::Conflict(Conflict::NoWallets));
        }
        let start = page.cursor.map(|cursor| wallet::decode_cursor(cursor, user)).transpose()?;
        let balance = self.balance_item(user).await?;
        let output = newest_first(self.movements_query(user)?.consistent_read(true), page.limit, start).await?;
        let next_cursor = output.last_evaluated_key.as_ref().and_then(wallet::encode_cursor);
        let items = output
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|item| from_item::<MovementItem>(item).map(|movement| movement.movement()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(WalletPage {
            balance_cents: balance.as_ref().map_or(0, |balance| balance.balance_cents),
            items,
            next_cursor,
            version: Some(wallet::version_of(balance.as_ref())),
        })
    }

    async fn settled_page(&self, id: &PacketId, from: u32, len: u32) -> Result<Option<SettledPage>, StoreError> {
        self.settled_page_of(id, from, len).await
    }

    /// The balance item's count of movements, strongly consistent: one key read.
    async fn user_version(&self, user: &UserId) -> Result<Option<String>, StoreError> {
        if self.funds == Funds::None {
            return Ok(None);
        }
        Ok(Some(wallet::version_of(self.balance_item(user).await?.as_ref())))
    }
}
