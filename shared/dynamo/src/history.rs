//! `GET /me/packets`: the caller's own packets, newest first, paged with an opaque cursor that
//! only its owner can use. Sent packets come from the history GSI; so do received grabs without
//! the wallet. With the wallet a grab's record is its credit, so the received history reads the
//! caller's wallet and merges in the GSI's few entries (revoked grabs).

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};

use super::items::{
    history_pk, packet_pk, wallet_pk, CasualtyItem, GrabItem, MovementItem, CASUALTY_PREFIX, GRAB_PREFIX, META,
    MOVE_PREFIX, PACKET_PREFIX,
};
use super::table::{from_item, unavailable, DynamoLedger, HISTORY_INDEX};
use red_packets_core::domain::history::{HistoryItem, HistoryPage, Role};
use red_packets_core::domain::wallet::MovementKind;
use red_packets_core::domain::{PacketId, PacketStatus, UserId};
use red_packets_core::ports::{PageRequest, StoreError};

/// The history index's sort key prefix of `role`'s items.
fn sort_key_prefix(role: Role) -> &'static str {
    match role {
        Role::Sent => "SENT#",
        Role::Received => "RECV#",
    }
}

/// The history index's cursor: the last item's key.
pub(super) fn encode_cursor(key: &HashMap<String, AttributeValue>) -> Option<String> {
    let strings: HashMap<&str, &str> =
        key.iter().filter_map(|(name, value)| value.as_s().ok().map(|v| (name.as_str(), v.as_str()))).collect();
    Some(URL_SAFE_NO_PAD.encode(serde_json::to_vec(&strings).ok()?))
}

/// The key a history cursor holds, if it is `owner`'s for `role`.
pub(super) fn decode_cursor(
    cursor: &str,
    owner: &UserId,
    role: Role,
) -> Result<HashMap<String, AttributeValue>, StoreError> {
    let invalid = || StoreError::invalid("cursor", "cursor is not one this endpoint returned to you for this role");
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let strings: HashMap<String, String> = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    // DynamoDB answers a start key outside the query's key condition with a ValidationException:
    // check every part here, so a forged or misplaced cursor is the caller's `Invalid`, never unavailable.
    let owned = strings.get("history_pk") == Some(&history_pk(owner));
    let in_role = strings.get("history_sk").is_some_and(|sk| sk.starts_with(sort_key_prefix(role)));
    let table_key = strings.get("pk").is_some_and(|pk| pk.starts_with(PACKET_PREFIX))
        && strings.get("sk").is_some_and(|sk| match role {
            Role::Sent => sk == "META",
            Role::Received => sk.starts_with(GRAB_PREFIX) || sk.starts_with(CASUALTY_PREFIX),
        });
    if !owned || !in_role || !table_key || strings.len() != 4 {
        return Err(invalid());
    }
    Ok(strings.into_iter().map(|(name, value)| (name, AttributeValue::S(value))).collect())
}

/// The received-history entry of an item of the history index: a grab item, or a casualty
/// (a grab a failover cost its share, with none left to give).
pub(super) fn received_item(item: HashMap<String, AttributeValue>) -> Result<HistoryItem, StoreError> {
    let revoked = item.get("sk").and_then(|sk| sk.as_s().ok()).is_some_and(|sk| sk.starts_with("CASUALTY#"));
    Ok(if revoked {
        let casualty: CasualtyItem = from_item(item)?;
        HistoryItem {
            status: PacketStatus::Open,
            packet_id: casualty.packet_id,
            sender: casualty.sender,
            total_cents: casualty.total_cents,
            count: casualty.count,
            created_at: casualty.packet_created_at,
            amount_cents: None,
            grabbed_at: Some(casualty.acknowledged_at),
            revoked_cents: Some(casualty.acknowledged_cents),
        }
    } else {
        let grab: GrabItem = from_item(item)?;
        HistoryItem {
            status: PacketStatus::Open,
            packet_id: grab.packet_id,
            sender: grab.sender,
            total_cents: grab.total_cents,
            count: grab.count,
            created_at: grab.packet_created_at,
            amount_cents: Some(grab.amount_cents),
            grabbed_at: Some(grab.grabbed_at),
            revoked_cents: None,
        }
    })
}

/// An entry of the received history with the wallet, and its place in that history's order.
type Placed = (String, HistoryItem);

/// The received history's cursor with the wallet: its owner and the last entry's place.
#[derive(Serialize, Deserialize)]
struct WalletCursor {
    user: String,
    before: String,
}

fn encode_wallet_cursor(owner: &UserId, place: &str) -> String {
    let cursor = WalletCursor { user: owner.to_string(), before: place.to_owned() };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&cursor).expect("a cursor serializes"))
}

fn decode_wallet_cursor(cursor: &str, owner: &UserId) -> Result<String, StoreError> {
    let invalid = || StoreError::invalid("cursor", "cursor is not one this endpoint returned to you for this role");
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let cursor: WalletCursor = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    let fits = !cursor.before.is_empty() && cursor.before.len() <= 512;
    if cursor.user != owner.as_str() || !fits {
        return Err(invalid());
    }
    Ok(cursor.before)
}

impl DynamoLedger {
    /// A query of `user`'s entries in `role` in the history index.
    pub(super) fn history_query(&self, user: &UserId, role: Role) -> Result<QueryFluentBuilder, StoreError> {
        Ok(self
            .client()?
            .query()
            .table_name(&self.table)
            .index_name(HISTORY_INDEX)
            .key_condition_expression("history_pk = :user AND begins_with(history_sk, :prefix)")
            .expression_attribute_values(":user", AttributeValue::S(history_pk(user)))
            .expression_attribute_values(":prefix", AttributeValue::S(sort_key_prefix(role).into())))
    }

    /// The received history with the wallet, where a grab's record is its credit in the
    /// grabber's wallet (`MOVE#<packet's creation>#grab#<id>`): those credits, newest packet
    /// first, merged with the entries of the history index (the revoked grabs; grab items
    /// written before the credit was the record). The cursor is the last entry's place in that
    /// order, for its owner only. With the page, how many revoked grabs the index listed (all of
    /// the user's, on any page).
    pub(super) async fn received_with_wallet(
        &self,
        user: &UserId,
        page: PageRequest<'_>,
    ) -> Result<(HistoryPage, u64), StoreError> {
        let before = page.cursor.map(|cursor| decode_wallet_cursor(cursor, user)).transpose()?;
        let limit = page.limit as usize;
        let (mut entries, more_credits) = self.received_credits(user, before.as_deref(), limit).await?;
        let (in_index, revoked_listed) = self.received_in_index(user, before.as_deref()).await?;
        entries.extend(in_index);
        entries.sort_by(|a, b| b.0.cmp(&a.0));
        let next_cursor = if entries.len() > limit || more_credits {
            entries.truncate(limit);
            entries.last().map(|(place, _)| encode_wallet_cursor(user, place))
        } else {
            None
        };
        let items = entries.into_iter().map(|(_, entry)| entry).collect();
        Ok((HistoryPage { items: self.with_statuses(items).await?, next_cursor, version: None }, revoked_listed))
    }

    /// `user`'s grab credits placed before `before` (all with none), newest packet first: pages
    /// of them until there are `limit` or no more; true when more may follow. Strongly
    /// consistent: every credit the user's version counts.
    async fn received_credits(
        &self,
        user: &UserId,
        before: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<Placed>, bool), StoreError> {
        let upper = match before {
            Some(place) => format!("{MOVE_PREFIX}{place}"),
            None => "MOVE$".to_owned(),
        };
        let mut entries: Vec<Placed> = Vec::new();
        let mut start = None;
        let mut more_credits = true;
        while entries.len() < limit && more_credits {
            let output = self
                .client()?
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :wallet AND sk BETWEEN :first AND :upper")
                .filter_expression("kind = :grab")
                .expression_attribute_values(":wallet", AttributeValue::S(wallet_pk(user)))
                .expression_attribute_values(":first", AttributeValue::S(MOVE_PREFIX.into()))
                .expression_attribute_values(":upper", AttributeValue::S(upper.clone()))
                .expression_attribute_values(":grab", AttributeValue::S(MovementKind::Grab.as_str().into()))
                .scan_index_forward(false)
                .consistent_read(true)
                .limit(100)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(unavailable)?;
            for item in output.items.unwrap_or_default() {
                let credit: MovementItem = from_item(item)?;
                let place = credit.sk.trim_start_matches(MOVE_PREFIX).to_owned();
                if before.is_some_and(|before| place.as_str() >= before) {
                    continue;
                }
                let Some(grab) = credit.grab else { continue };
                let Some(packet_id) = credit.packet_id else { continue };
                let entry = HistoryItem {
                    status: PacketStatus::Open,
                    packet_id,
                    sender: grab.sender,
                    total_cents: grab.total_cents,
                    count: grab.count,
                    created_at: grab.packet_created_at,
                    amount_cents: Some(credit.amount_cents),
                    grabbed_at: Some(credit.at),
                    revoked_cents: None,
                };
                entries.push((place, entry));
            }
            start = output.last_evaluated_key;
            more_credits = start.is_some();
        }
        Ok((entries, more_credits))
    }

    /// Every entry of `user`'s received history in the history index placed before `before`
    /// (all with none), in the credits' order: they are few (a revoked grab is rare). With them,
    /// how many revoked grabs the index lists, before `before` or not.
    async fn received_in_index(&self, user: &UserId, before: Option<&str>) -> Result<(Vec<Placed>, u64), StoreError> {
        let mut pages = self.history_query(user, Role::Received)?.into_paginator().items().send();
        let mut entries = Vec::new();
        let mut revoked = 0;
        while let Some(item) = pages.next().await {
            let item = item.map_err(unavailable)?;
            let suffix = match item.get("sk").and_then(|sk| sk.as_s().ok()) {
                Some(sk) if sk.starts_with(CASUALTY_PREFIX) => {
                    revoked += 1;
                    format!("#{sk}")
                }
                _ => String::new(),
            };
            let entry = received_item(item)?;
            let place = format!("{}#grab#{}{suffix}", entry.created_at, entry.packet_id);
            if before.is_none_or(|before| place.as_str() < before) {
                entries.push((place, entry));
            }
        }
        Ok((entries, revoked))
    }

    /// `received` with each packet's current status.
    pub(super) async fn with_statuses(&self, received: Vec<HistoryItem>) -> Result<Vec<HistoryItem>, StoreError> {
        let statuses = self.statuses(received.iter().map(|item| &item.packet_id)).await?;
        Ok(received
            .into_iter()
            .map(|item| HistoryItem {
                status: statuses.get(&item.packet_id).copied().unwrap_or(PacketStatus::Open),
                ..item
            })
            .collect())
    }

    /// The current status of each packet (one BatchGetItem; at most 100 ids, the page limit).
    async fn statuses<'a>(
        &self,
        ids: impl Iterator<Item = &'a PacketId>,
    ) -> Result<HashMap<PacketId, PacketStatus>, StoreError> {
        let keys: Vec<HashMap<String, AttributeValue>> = ids
            .map(|id| {
                HashMap::from([
                    ("pk".to_owned(), AttributeValue::S(packet_pk(id))),
                    ("sk".to_owned(), AttributeValue::S(META.into())),
                ])
            })
            .collect();
        if keys.is_empty() {
            return Ok(HashMap::new());
        }
        let mut statuses = HashMap::new();
        let mut request = Some(
            KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .projection_expression("packet_id, #status")
                .expression_attribute_names("#status", "status")
                .build()
                .expect("batch get keys"),
        );
        for _ in 0..4 {
            let Some(keys) = request.take() else { break };
            let output =
                self.client()?.batch_get_item().request_items(&self.table, keys).send().await.map_err(unavailable)?;
            for item in output.responses.and_then(|mut tables| tables.remove(&self.table)).unwrap_or_default() {
                #[derive(Deserialize)]
                struct Status {
                    packet_id: PacketId,
                    status: PacketStatus,
                }
                let Status { packet_id, status } = from_item(item)?;
                statuses.insert(packet_id, status);
            }
            request = output.unprocessed_keys.and_then(|mut left| left.remove(&self.table));
        }
        Ok(statuses)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_for_its_owner_only() {
        let alice = UserId::from_claim("alice").unwrap();
        let key: HashMap<String, AttributeValue> = [
            ("pk", "PKT#1"),
            ("sk", "META"),
            ("history_pk", "USER#alice"),
            ("history_sk", "SENT#2026-11-21T08:00:00.000Z#1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), AttributeValue::S(v.to_owned())))
        .collect();
        let cursor = encode_cursor(&key).unwrap();
        assert_eq!(decode_cursor(&cursor, &alice, Role::Sent).unwrap(), key);
        assert!(decode_cursor(&cursor, &alice, Role::Received).is_err(), "a sent cursor replayed as received");
        assert!(decode_cursor(&cursor, &UserId::from_claim("mallory").unwrap(), Role::Sent).is_err());
        assert!(decode_cursor("not base64!", &alice, Role::Sent).is_err());
        assert!(decode_cursor(&URL_SAFE_NO_PAD.encode(b"[]"), &alice, Role::Sent).is_err());
    }

    #[test]
    fn a_wallet_cursor_round_trips_for_its_owner_only() {
        let alice = UserId::from_claim("alice").unwrap();
        let place = "2026-11-21T08:00:00.000Z#grab#0123";
        let cursor = encode_wallet_cursor(&alice, place);
        assert_eq!(decode_wallet_cursor(&cursor, &alice).unwrap(), place);
        assert!(decode_wallet_cursor(&cursor, &UserId::from_claim("mallory").unwrap()).is_err());
        assert!(decode_wallet_cursor("not base64!", &alice).is_err());
        let empty = URL_SAFE_NO_PAD.encode(br#"{"user":"alice","before":""}"#);
        assert!(decode_wallet_cursor(&empty, &alice).is_err());
    }
}
