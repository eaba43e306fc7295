//! Reconciliation's read of the ledger: a parallel scan streamed into the books' fold, one item
//! collection at a time (a scan returns each partition key's items together, in sort-key order),
//! the reading of one item into what the books need (shared with the export file), and the
//! exact read of one wallet.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::types::AttributeValue;
use futures::stream::{self, StreamExt};
use serde::de::IgnoredAny;
use serde::Deserialize;

use super::items::{
    wallet_pk, BalanceItem, ADJUSTMENT, ADJUSTMENT_PREFIX, BALANCE, GRAB_PREFIX, META, MOVE_PREFIX, PACKET_PREFIX,
    REFUND, SHARE_PREFIX, TOPUP, TOPUP_PREFIX, WALLET_PREFIX, WITHDRAWAL, WITHDRAWAL_PREFIX,
};
use super::table::{unavailable, DynamoLedger};
use red_packets_core::clock::Millis;
use red_packets_core::domain::adjustment::Direction;
use red_packets_core::domain::books::{BooksFold, LedgerItem, MovementRecord, Reread, WalletTally};
use red_packets_core::domain::wallet::MovementKind;
use red_packets_core::domain::withdrawal::WithdrawalStatus;
use red_packets_core::domain::{BusinessDay, Cents, Currency, PacketId, PacketStatus, UserId};
use red_packets_core::ports::{Books, StoreError};

/// Scan segments read at once.
const SEGMENTS: i32 = 4;

/// Items per scan page: small pages answer well within a page's timeout.
const PAGE_ITEMS: i32 = 1_000;

/// How long one page may take: the request path's 2 s suits single items, not a scan of a
/// ledger under load (the soak's 200,000 items on DynamoDB Local timed out at 2 s).
const PAGE_TIMEOUT: Duration = Duration::from_secs(30);

/// How many times a wallet is read again while it keeps moving.
const EXACT_READ_ATTEMPTS: u32 = 20;

#[derive(Deserialize)]
struct BalanceMoney {
    #[serde(default)]
    balance_cents: Cents,
}

#[derive(Deserialize)]
struct MovementMoney {
    user: UserId,
    kind: MovementKind,
    amount_cents: Cents,
    #[serde(default)]
    packet_id: Option<PacketId>,
    #[serde(default)]
    reference: Option<String>,
    #[serde(default)]
    written_at_ms: Option<Millis>,
    #[serde(default)]
    event: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct TopupMoney {
    user: UserId,
    amount_cents: Cents,
    reference: String,
    #[serde(default)]
    written_at_ms: Option<Millis>,
}

#[derive(Deserialize)]
struct WithdrawalMoney {
    withdrawal_id: String,
    user: UserId,
    amount_cents: Cents,
    status: WithdrawalStatus,
    written_at_ms: Millis,
    #[serde(default)]
    resolved_at_ms: Option<Millis>,
}

#[derive(Deserialize)]
struct AdjustmentMoney {
    reference: String,
    user: UserId,
    direction: Direction,
    amount_cents: Cents,
    #[serde(default)]
    written_at_ms: Option<Millis>,
}

#[derive(Deserialize)]
struct PacketMoney {
    packet_id: PacketId,
    sender: UserId,
    total_cents: Cents,
    status: PacketStatus,
    #[serde(default)]
    written_at_ms: Option<Millis>,
    #[serde(default)]
    settled_at_ms: Option<Millis>,
}

#[derive(Deserialize)]
struct GrabMoney {
    packet_id: PacketId,
    user: UserId,
    seq: u32,
    amount_cents: Cents,
    #[serde(default)]
    written_at_ms: Option<Millis>,
}

#[derive(Deserialize)]
struct ShareMoney {
    packet_id: PacketId,
    seq: u32,
    amount_cents: Cents,
    #[serde(default)]
    user: Option<UserId>,
}

#[derive(Deserialize)]
struct RefundMoney {
    packet_id: PacketId,
    amount_cents: Cents,
    #[serde(default)]
    written_at_ms: Option<Millis>,
}

/// One ledger item in DynamoDB's JSON shape, as a scan returns it or an export file holds it.
pub type RawItem = HashMap<String, serde_dynamo::AttributeValue>;

/// The partition and sort keys of `item`.
pub fn item_keys(item: &RawItem) -> (String, String) {
    let text = |name: &str| match item.get(name) {
        Some(serde_dynamo::AttributeValue::S(text)) => text.clone(),
        _ => String::new(),
    };
    (text("pk"), text("sk"))
}

/// `item` read as `T`, or why not.
fn read<T: for<'de> Deserialize<'de>>(item: RawItem) -> Result<T, String> {
    serde_dynamo::from_item(item).map_err(|error| error.to_string())
}

/// What the books need of one item: `Ok(None)` for items they do not read (claims of idempotency,
/// daily counters, casualties, …); `Err` names an item the books cannot read.
pub fn ledger_item(item: RawItem) -> Result<Option<LedgerItem>, String> {
    let (pk, sk) = item_keys(&item);
    let stamp = |at: Option<Millis>| at.unwrap_or(0);
    Ok(Some(if let Some(user) = pk.strip_prefix(WALLET_PREFIX) {
        let user = UserId::from_claim(user).ok_or("corrupt wallet key")?;
        if sk == BALANCE {
            let balance: BalanceMoney = read(item)?;
            LedgerItem::Balance { user, balance_cents: balance.balance_cents }
        } else if sk.starts_with(MOVE_PREFIX) {
            let movement: MovementMoney = read(item)?;
            LedgerItem::Movement(MovementRecord {
                user: movement.user,
                kind: movement.kind,
                amount_cents: movement.amount_cents,
                packet_id: movement.packet_id,
                reference: movement.reference,
                written_at_ms: stamp(movement.written_at_ms),
                key: sk,
                has_event: movement.event.is_some(),
            })
        } else {
            return Ok(None);
        }
    } else if pk.starts_with(TOPUP_PREFIX) && sk == TOPUP {
        let topup: TopupMoney = read(item)?;
        LedgerItem::Topup {
            reference: topup.reference,
            user: topup.user,
            amount_cents: topup.amount_cents,
            written_at_ms: stamp(topup.written_at_ms),
        }
    } else if pk.starts_with(WITHDRAWAL_PREFIX) && sk == WITHDRAWAL {
        let withdrawal: WithdrawalMoney = read(item)?;
        LedgerItem::Withdrawal {
            id: withdrawal.withdrawal_id,
            user: withdrawal.user,
            amount_cents: withdrawal.amount_cents,
            status: withdrawal.status,
            written_at_ms: withdrawal.written_at_ms,
            resolved_at_ms: withdrawal.resolved_at_ms,
        }
    } else if pk.starts_with(ADJUSTMENT_PREFIX) && sk == ADJUSTMENT {
        let adjustment: AdjustmentMoney = read(item)?;
        LedgerItem::Adjustment {
            reference: adjustment.reference,
            user: adjustment.user,
            direction: adjustment.direction,
            amount_cents: adjustment.amount_cents,
            applied_at_ms: adjustment.written_at_ms,
        }
    } else if pk.starts_with(PACKET_PREFIX) {
        return packet_item(&sk, item);
    } else {
        return Ok(None);
    }))
}

/// What the books read of an item of a packet's partition (`sk`): its record, a grab, a claim
/// of a share, its refund; `Ok(None)` for the others.
fn packet_item(sk: &str, item: RawItem) -> Result<Option<LedgerItem>, String> {
    let stamp = |at: Option<Millis>| at.unwrap_or(0);
    Ok(Some(if sk == META {
        let packet: PacketMoney = read(item)?;
        LedgerItem::Packet {
            id: packet.packet_id,
            sender: packet.sender,
            total_cents: packet.total_cents,
            status: packet.status,
            written_at_ms: stamp(packet.written_at_ms),
            settled_at_ms: packet.settled_at_ms,
        }
    } else if sk.starts_with(GRAB_PREFIX) {
        let grab: GrabMoney = read(item)?;
        LedgerItem::Grab {
            packet_id: grab.packet_id,
            user: grab.user,
            seq: grab.seq,
            amount_cents: grab.amount_cents,
            written_at_ms: stamp(grab.written_at_ms),
        }
    } else if sk.starts_with(SHARE_PREFIX) {
        let share: ShareMoney = read(item)?;
        LedgerItem::Claim {
            packet_id: share.packet_id,
            seq: share.seq,
            amount_cents: share.amount_cents,
            user: share.user,
        }
    } else if sk == REFUND {
        let refund: RefundMoney = read(item)?;
        LedgerItem::Refund {
            packet_id: refund.packet_id,
            amount_cents: refund.amount_cents,
            written_at_ms: stamp(refund.written_at_ms),
        }
    } else {
        return Ok(None);
    }))
}

/// Feeds items to `fold` collection by collection, from one ordered source (a scan segment, a
/// file): the items of one partition key arrive together.
#[derive(Default)]
pub struct CollectionFeed {
    pk: String,
    items: Vec<LedgerItem>,
}

impl CollectionFeed {
    /// Adds one item; hands the collection before it to `fold` when its key changes.
    pub fn push(&mut self, fold: &mut BooksFold, item: RawItem) {
        let (pk, sk) = item_keys(&item);
        if pk != self.pk {
            self.flush(fold);
            self.pk = pk.clone();
        }
        match ledger_item(item) {
            Ok(Some(item)) => self.items.push(item),
            Ok(None) => {}
            Err(why) => fold.unreadable(&pk, &sk, &why),
        }
    }

    /// Hands the last collection to `fold`.
    pub fn flush(&mut self, fold: &mut BooksFold) {
        if !self.items.is_empty() {
            fold.collection(std::mem::take(&mut self.items));
        }
    }
}

impl DynamoLedger {
    /// One page of the parallel scan's `segment` from `start` (strongly consistent, with a
    /// timeout of its own), and where the next page starts.
    async fn scan_page(
        &self,
        segment: i32,
        start: Option<HashMap<String, AttributeValue>>,
    ) -> Result<(Vec<HashMap<String, AttributeValue>>, Option<HashMap<String, AttributeValue>>), StoreError> {
        let patient = aws_sdk_dynamodb::config::Builder::default().timeout_config(
            TimeoutConfig::builder()
                .operation_attempt_timeout(PAGE_TIMEOUT)
                .operation_timeout(2 * PAGE_TIMEOUT)
                .build(),
        );
        let page = self
            .client()?
            .scan()
            .table_name(&self.table)
            .segment(segment)
            .total_segments(SEGMENTS)
            .consistent_read(true)
            .limit(PAGE_ITEMS)
            .set_exclusive_start_key(start)
            .customize()
            .config_override(patient)
            .send()
            .await
            .map_err(unavailable)?;
        Ok((page.items.unwrap_or_default(), page.last_evaluated_key))
    }

    /// Every movement of `user`'s wallet (strongly consistent); `None` for one the books cannot read.
    async fn movement_records(&self, user: &UserId) -> Result<Vec<Option<MovementRecord>>, StoreError> {
        let mut pages = self.movements_query(user)?.consistent_read(true).into_paginator().items().send();
        let mut movements = Vec::new();
        while let Some(item) = pages.next().await {
            let item = serde_dynamo::Item::from(item.map_err(unavailable)?).into();
            movements.push(match ledger_item(item) {
                Ok(Some(LedgerItem::Movement(movement))) => Some(movement),
                _ => None,
            });
        }
        Ok(movements)
    }

    /// Hands every item of the table to `each`, segment after segment, each partition key's items
    /// together: what `local export` writes, in DynamoDB's export shape, and what tests read.
    pub async fn export_items(&self, mut each: impl FnMut(RawItem)) -> Result<u64, StoreError> {
        let mut count = 0;
        for segment in 0..SEGMENTS {
            let mut start = None;
            loop {
                let (items, last) = self.scan_page(segment, start).await?;
                for item in items {
                    count += 1;
                    each(serde_dynamo::Item::from(item).into());
                }
                start = last;
                if start.is_none() {
                    break;
                }
            }
        }
        Ok(count)
    }

    /// Every item the books read, in memory (for tests and small tables).
    pub async fn books_items(&self) -> Result<Vec<LedgerItem>, StoreError> {
        let mut items = Vec::new();
        self.export_items(|item| items.extend(ledger_item(item).ok().flatten())).await?;
        Ok(items)
    }
}

impl Books for DynamoLedger {
    fn business_day(&self) -> BusinessDay {
        self.business_day
    }

    fn currency(&self) -> Currency {
        self.currency
    }

    /// Scans [`SEGMENTS`] segments at once, one page in flight each, feeding each segment's
    /// items to `fold` in order.
    async fn read_into(&self, fold: &mut BooksFold) -> Result<(), StoreError> {
        type Page = (i32, Vec<HashMap<String, AttributeValue>>);
        let segments = (0..SEGMENTS).map(|segment| {
            stream::unfold(Some(None), move |next| async move {
                let start = next?;
                Some(match self.scan_page(segment, start).await {
                    Ok((items, last)) => (Ok::<Page, StoreError>((segment, items)), last.map(Some)),
                    Err(error) => (Err(error), None),
                })
            })
            .boxed()
        });
        let mut pages = stream::select_all(segments);
        let mut feeds: HashMap<i32, CollectionFeed> = HashMap::new();
        while let Some(page) = pages.next().await {
            let (segment, items) = page?;
            let feed = feeds.entry(segment).or_default();
            for item in items {
                feed.push(fold, serde_dynamo::Item::from(item).into());
            }
        }
        feeds.values_mut().for_each(|feed| feed.flush(fold));
        Ok(())
    }

    /// `user`'s balance and its movements, read so that they agree in time: the balance, then
    /// the movements, then the balance again, accepted when both reads of the balance are the
    /// same, count of movements (`moves`, bumped by every change) included: no change committed
    /// between them, so the movements read in between are the ones the balance reflects.
    /// Retried while the wallet keeps moving; a movement the books cannot read leaves the scan's
    /// reading standing (the scan reported it).
    async fn wallet_exact(&self, user: &UserId) -> Result<Reread, StoreError> {
        let balance = || async {
            let item: Option<BalanceItem> = self.get(wallet_pk(user), BALANCE.into()).await?;
            let item = item.unwrap_or_default();
            Ok::<_, StoreError>((item.balance_cents, item.moves))
        };
        for attempt in 0..EXACT_READ_ATTEMPTS {
            let before = balance().await?;
            let mut sum = 0i128;
            for movement in self.movement_records(user).await? {
                match movement {
                    Some(movement) => sum += movement.kind.delta(movement.amount_cents),
                    None => return Ok(Reread::Impossible),
                }
            }
            if balance().await? == before {
                return Ok(Reread::Exact(WalletTally { balance_cents: before.0, movements_cents: sum }));
            }
            tokio::time::sleep(Duration::from_millis(5 * u64::from(attempt + 1))).await;
        }
        Ok(Reread::KeptMoving)
    }

    async fn movements_of(&self, user: &UserId) -> Result<Vec<MovementRecord>, StoreError> {
        Ok(self.movement_records(user).await?.into_iter().flatten().collect())
    }
}
