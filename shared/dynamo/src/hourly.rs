//! The hourly view in the ledger ([`BusinessHours`]): an hour's figures in [`SHARDS`] items,
//! `HOURS#<day>#<shard>` / `H<hour>` (the shard a partition key of its own, so a burst of events
//! spreads over as many partitions), each measure two numbers, `<measure>_count` and
//! `<measure>_cents`; and each event counted once through a mark, `HOURS#COUNTED#<event id>` /
//! `COUNTED`, put in the same transaction as the hour's update under the condition that no mark
//! is there, kept until the table's TTL takes it.
//!
//! An event costs one `TransactWriteItems` of two small items (4 write units); a day's view one
//! `Query` per shard (at most 24 items each, eventually consistent: 0.5 read units a 4 KB).

use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};

use super::table::{n, number, s, unavailable, write_failed, DynamoLedger};
use super::transaction::{Transaction, Write};
use red_packets_core::clock::Millis;
use red_packets_core::domain::hourly::{Counted, Measure, Tally, COUNTED_MARK_KEPT_MS, SHARDS};
use red_packets_core::ports::{BusinessHours, StoreError};

/// `HOURS#<day>#<shard>`, the partition of one shard of a business day's hours.
fn hours_pk(day: &str, shard: u32) -> String {
    format!("HOURS#{day}#{shard}")
}

/// `H<hour>`, two digits: an hour's item in its shard's partition.
fn hour_sk(hour: u8) -> String {
    format!("H{hour:02}")
}

/// The hour an item's sort key names.
fn hour_of_sk(sk: &str) -> Option<u8> {
    sk.strip_prefix('H')?.parse().ok().filter(|hour| *hour < 24)
}

impl BusinessHours for DynamoLedger {
    async fn count_event(&self, counted: &Counted, now_ms: Millis) -> Result<bool, StoreError> {
        let mark = Put::builder()
            .table_name(&self.table)
            .item("pk", s(&format!("HOURS#COUNTED#{}", counted.event_id)))
            .item("sk", s("COUNTED"))
            .item("expires_at_epoch", n((now_ms + COUNTED_MARK_KEPT_MS) / 1000))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .expect("counted mark");
        let measure = counted.measure.name();
        let hour = Update::builder()
            .table_name(&self.table)
            .key("pk", s(&hours_pk(&counted.hour.day, counted.shard)))
            .key("sk", s(&hour_sk(counted.hour.hour)))
            .update_expression("ADD #count :one, #cents :cents")
            .expression_attribute_names("#count", format!("{measure}_count"))
            .expression_attribute_names("#cents", format!("{measure}_cents"))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":cents", n(counted.amount_cents))
            .build()
            .expect("hour update");
        let items: Transaction = [
            (Write::CountedMark, TransactWriteItem::builder().put(mark).build()),
            (Write::HourFigures, TransactWriteItem::builder().update(hour).build()),
        ]
        .into_iter()
        .collect();
        let Err(failed) = self.transact(items).await? else { return Ok(true) };
        match failed.refused_by(Write::CountedMark) {
            Some(_) => Ok(false),
            None => Err(write_failed(failed.error)),
        }
    }

    async fn day_tallies(&self, day: &str) -> Result<Vec<(u8, Measure, Tally)>, StoreError> {
        let client = self.client()?;
        let mut tallies = Vec::new();
        for shard in 0..SHARDS {
            let mut pages = client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", s(&hours_pk(day, shard)))
                .into_paginator()
                .items()
                .send();
            while let Some(item) = pages.next().await {
                let item = item.map_err(unavailable)?;
                let Some(hour) = item.get("sk").and_then(|sk| sk.as_s().ok()).and_then(|sk| hour_of_sk(sk)) else {
                    continue;
                };
                for measure in Measure::ALL {
                    let tally = Tally {
                        count: number(&item, &format!("{}_count", measure.name())),
                        amount_cents: number(&item, &format!("{}_cents", measure.name())),
                    };
                    if tally != Tally::default() {
                        tallies.push((hour, measure, tally));
                    }
                }
            }
        }
        Ok(tallies)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_hours_key_reads_back() {
        assert_eq!(hour_sk(7), "H07");
        assert_eq!(hour_of_sk(&hour_sk(23)), Some(23));
        assert_eq!(hour_of_sk("H24"), None);
        assert_eq!(hour_of_sk("COUNTED"), None);
        assert_eq!(hours_pk("2026-12-07", 3), "HOURS#2026-12-07#3");
    }
}
