//! Reconciliation's read of the whole ledger: a parallel scan that keeps, of each item, what
//! the books need (balances, movements, top-ups, packets, grabs, refunds).

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::types::AttributeValue;
use futures::stream::{self, StreamExt, TryStreamExt};
use serde::Deserialize;

use super::items::{BalanceItem, MovementItem, TopupItem, BALANCE, META, REFUND, TOPUP};
use super::{from_item, unavailable, DynamoLedger};
use crate::domain::books::{LedgerRecords, MovementRecord, PacketRecord};
use crate::domain::{Cents, PacketId, PacketStatus, UserId};
use crate::error::ApiError;
use crate::ports::Books;

/// Scan segments read at once.
const SEGMENTS: i32 = 4;

/// Items per scan page: small pages answer well within a page's timeout.
const PAGE_ITEMS: i32 = 1_000;

/// How long one page may take: the request path's 2 s suits single items, not a scan of a
/// ledger under load (the soak's 200,000 items on DynamoDB Local timed out at 2 s).
const PAGE_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Deserialize)]
struct PacketMoney {
    packet_id: PacketId,
    sender: UserId,
    total_cents: Cents,
    status: PacketStatus,
}

#[derive(Deserialize)]
struct GrabMoney {
    packet_id: PacketId,
    user: UserId,
    amount_cents: Cents,
}

#[derive(Deserialize)]
struct RefundMoney {
    packet_id: PacketId,
    amount_cents: Cents,
}

type Item = HashMap<String, AttributeValue>;

impl DynamoLedger {
    async fn scan_segment(&self, segment: i32) -> Result<Vec<Item>, ApiError> {
        let patient = aws_sdk_dynamodb::config::Builder::default().timeout_config(
            TimeoutConfig::builder()
                .operation_attempt_timeout(PAGE_TIMEOUT)
                .operation_timeout(2 * PAGE_TIMEOUT)
                .build(),
        );
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let page = self
                .client
                .scan()
                .table_name(&self.table)
                .segment(segment)
                .total_segments(SEGMENTS)
                .consistent_read(true)
                .limit(PAGE_ITEMS)
                .set_exclusive_start_key(start)
                .customize()
                .config_override(patient.clone())
                .send()
                .await
                .map_err(unavailable)?;
            items.extend(page.items.unwrap_or_default());
            start = page.last_evaluated_key;
            if start.is_none() {
                return Ok(items);
            }
        }
    }
}

impl Books for DynamoLedger {
    async fn ledger_records(&self) -> Result<LedgerRecords, ApiError> {
        let segments: Vec<Vec<Item>> = stream::iter((0..SEGMENTS).map(|segment| self.scan_segment(segment)))
            .buffer_unordered(4)
            .try_collect()
            .await?;
        let mut records = LedgerRecords::default();
        let mut grabs: Vec<GrabMoney> = Vec::new();
        let mut refunds: Vec<RefundMoney> = Vec::new();
        for item in segments.into_iter().flatten() {
            let text = |name: &str| item.get(name).and_then(|value| value.as_s().ok()).cloned().unwrap_or_default();
            let (pk, sk) = (text("pk"), text("sk"));
            if pk.starts_with("WALLET#") && sk == BALANCE {
                let user = UserId::from_claim(&pk["WALLET#".len()..])
                    .ok_or_else(|| ApiError::Internal(format!("corrupt wallet key {pk}")))?;
                records.balances.insert(user, from_item::<BalanceItem>(item)?.balance_cents);
            } else if pk.starts_with("WALLET#") && sk.starts_with("MOVE#") {
                let movement: MovementItem = from_item(item)?;
                records.movements.push(MovementRecord {
                    user: movement.user,
                    kind: movement.kind,
                    amount_cents: movement.amount_cents,
                    packet_id: movement.packet_id,
                    reference: movement.reference,
                });
            } else if pk.starts_with("TOPUP#") && sk == TOPUP {
                let topup: TopupItem = from_item(item)?;
                records.topups.push((topup.reference, topup.user, topup.amount_cents));
            } else if pk.starts_with("PKT#") && sk == META {
                let packet: PacketMoney = from_item(item)?;
                records.packets.insert(
                    packet.packet_id,
                    PacketRecord {
                        sender: packet.sender,
                        total_cents: packet.total_cents,
                        status: packet.status,
                        grabs: Vec::new(),
                        refund_cents: None,
                    },
                );
            } else if pk.starts_with("PKT#") && sk.starts_with("GRAB#") {
                grabs.push(from_item(item)?);
            } else if pk.starts_with("PKT#") && sk == REFUND {
                refunds.push(from_item(item)?);
            }
        }
        for grab in grabs {
            match records.packets.get_mut(&grab.packet_id) {
                Some(packet) => packet.grabs.push((grab.user, grab.amount_cents)),
                None => records
                    .orphans
                    .push((grab.packet_id, format!("grab item of {} for {}", grab.user, grab.amount_cents))),
            }
        }
        for refund in refunds {
            match records.packets.get_mut(&refund.packet_id) {
                Some(packet) => packet.refund_cents = Some(refund.amount_cents),
                None => records.orphans.push((refund.packet_id, format!("refund item for {}", refund.amount_cents))),
            }
        }
        Ok(records)
    }
}
