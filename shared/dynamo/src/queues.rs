//! The operators' queues ([`Queue`]): pending adjustments, pending withdrawals and the flags of
//! each status, read a page at a time through the history index, oldest first. An item is in a
//! queue while its `history_pk` names it; the write that takes it out (an approval, a
//! resolution) removes or moves that key in the same transaction, so a page reads only what
//! still waits. The index is eventually consistent: an item may show for a moment after it left.
//! A user's audit entries and flag mentions are read the same way from their own partition
//! (`USER#<user>`, the sort keys `AUDIT#…` and `FLAG#…`), newest first.

use aws_sdk_dynamodb::types::AttributeValue;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::items::Queue;
use super::table::{from_item, unavailable, DynamoLedger, HISTORY_INDEX};
use red_packets_core::ports::{PageRequest, QueuePage, StoreError};

/// Where a page of a queue stopped: the last item's keys in the table and in the index.
#[derive(Serialize, Deserialize)]
struct QueueCursor {
    queue: String,
    pk: String,
    sk: String,
    at: String,
}

fn encode(cursor: &QueueCursor) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(cursor).expect("a cursor serializes"))
}

fn decode(text: &str, queue: &str) -> Result<QueueCursor, StoreError> {
    let invalid = || StoreError::invalid("cursor", "cursor is not one this list returned");
    let bytes = URL_SAFE_NO_PAD.decode(text).map_err(|_| invalid())?;
    let cursor: QueueCursor = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    let fits = [&cursor.pk, &cursor.sk, &cursor.at].iter().all(|key| (1..=1024).contains(&key.len()));
    if cursor.queue != queue || !fits {
        return Err(invalid());
    }
    Ok(cursor)
}

impl DynamoLedger {
    /// A page of `queue`'s items (as `T`, the item type), oldest first.
    pub(super) async fn queue_page<T: DeserializeOwned>(
        &self,
        queue: Queue,
        page: PageRequest<'_>,
    ) -> Result<QueuePage<T>, StoreError> {
        self.index_page(queue.pk(), None, Order::OldestFirst, page).await
    }

    /// A page of the history index's `partition` (its sort keys starting with `prefix`, if
    /// given), in `order`, as `T`.
    pub(super) async fn index_page<T: DeserializeOwned>(
        &self,
        partition: String,
        prefix: Option<&str>,
        order: Order,
        page: PageRequest<'_>,
    ) -> Result<QueuePage<T>, StoreError> {
        let start = page.cursor.map(|cursor| decode(cursor, &partition)).transpose()?.map(|cursor| {
            [("pk", cursor.pk), ("sk", cursor.sk), ("history_pk", partition.clone()), ("history_sk", cursor.at)]
                .into_iter()
                .map(|(name, value)| (name.to_owned(), AttributeValue::S(value)))
                .collect()
        });
        let mut query = self
            .client()?
            .query()
            .table_name(&self.table)
            .index_name(HISTORY_INDEX)
            .expression_attribute_values(":partition", AttributeValue::S(partition.clone()))
            .scan_index_forward(order == Order::OldestFirst)
            .limit(page.limit as i32)
            .set_exclusive_start_key(start);
        query = match prefix {
            Some(prefix) => query
                .key_condition_expression("history_pk = :partition AND begins_with(history_sk, :prefix)")
                .expression_attribute_values(":prefix", AttributeValue::S(prefix.to_owned())),
            None => query.key_condition_expression("history_pk = :partition"),
        };
        let answer = query.send().await.map_err(unavailable)?;
        let text = |item: &std::collections::HashMap<String, AttributeValue>, name: &str| {
            item.get(name).and_then(|value| value.as_s().ok()).cloned().unwrap_or_default()
        };
        let next_cursor = answer.last_evaluated_key().map(|last| {
            encode(&QueueCursor {
                queue: partition.clone(),
                pk: text(last, "pk"),
                sk: text(last, "sk"),
                at: text(last, "history_sk"),
            })
        });
        let items = answer.items.unwrap_or_default().into_iter().map(from_item).collect::<Result<_, _>>()?;
        Ok(QueuePage { items, next_cursor })
    }
}

/// Which end of an index partition a page starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Order {
    /// A queue: what waits longest first.
    OldestFirst,
    /// A user's trail: the latest first.
    NewestFirst,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_serves_only_its_own_queue() {
        let cursor = QueueCursor {
            queue: "QUEUE#flags#open".into(),
            pk: "RISK#FLAGS".into(),
            sk: "FLAG#x".into(),
            at: "t#x".into(),
        };
        let text = encode(&cursor);
        assert_eq!(decode(&text, "QUEUE#flags#open").unwrap().sk, "FLAG#x");
        assert!(decode(&text, "QUEUE#adjustments").is_err(), "another queue's cursor");
        assert!(decode("not base64!", "QUEUE#flags#open").is_err());
    }
}
