//! Write units per grab of settle's money trail, through the real adapter: every write settle
//! issues while persisting is counted by an SDK interceptor, twice.
//!
//! - As DynamoDB reports it (`ReturnConsumedCapacity: INDEXES`, set on every write).
//! - By AWS's pricing rules applied to the items written: a standard write is 1 unit per KB of
//!   its item, a transaction's item 2 per KB, and each GSI the item lands in 1 per KB of the
//!   projected item (`history` projects all attributes, `open` the keys). The figure to price
//!   with: DynamoDB Local reports transactions wrongly (a flat 4.0 per transaction whatever it
//!   holds, seen with 1 to 75 items), while its single writes match AWS's rules.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use aws_sdk_dynamodb::config::interceptors::{
    AfterDeserializationInterceptorContextRef, BeforeSerializationInterceptorContextMut,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::operation::put_item::{PutItemInput, PutItemOutput};
use aws_sdk_dynamodb::operation::transact_write_items::{TransactWriteItemsInput, TransactWriteItemsOutput};
use aws_sdk_dynamodb::operation::update_item::{UpdateItemInput, UpdateItemOutput};
use aws_sdk_dynamodb::types::{AttributeValue, ConsumedCapacity, ReturnConsumedCapacity};
use red_packets::adapters::dynamo::capacity::item_size;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::config::Config;
use red_packets::domain::Funds;
use red_packets::ports::{SettleCursor, SettleIndex, Wallets};
use red_packets::settle::{SettleError, Settler};
use red_packets::{Clock, SystemClock};
use serde::Serialize;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Write units per grab persisted, with the wallet and without.
#[derive(Debug, Clone, Serialize)]
pub struct MoneyTrail {
    /// Grabs each figure was measured over.
    pub grabs: u64,
    /// With the wallet, by AWS's pricing rules: the claim, then the grab's credit (its record)
    /// and the balance in one transaction.
    pub wallet_units_per_grab: f64,
    /// With the wallet, as DynamoDB Local reported it.
    pub wallet_reported_units_per_grab: f64,
    /// Without the wallet (`FUNDS=none`), by AWS's pricing rules.
    pub none_units_per_grab: f64,
    /// Without the wallet, as DynamoDB Local reported it.
    pub none_reported_units_per_grab: f64,
    /// Writes that failed while measuring (a conflict, a condition): 0 for a clean figure.
    pub failed_writes: u64,
    /// Measurements discarded because a settle run stopped on a DynamoDB Local timeout.
    pub discarded_measurements: u64,
}

/// Counts write units in tenths.
#[derive(Debug, Default)]
struct Meter {
    by_rule_tenths: AtomicU64,
    reported_tenths: AtomicU64,
    failed: AtomicU64,
}

impl Meter {
    fn take(&self) -> (f64, f64) {
        let by_rule = self.by_rule_tenths.swap(0, Ordering::Relaxed) as f64 / 10.0;
        let reported = self.reported_tenths.swap(0, Ordering::Relaxed) as f64 / 10.0;
        (by_rule, reported)
    }
}

#[derive(Debug, Clone)]
struct WriteMeter(Arc<Meter>);

impl Intercept for WriteMeter {
    fn name(&self) -> &'static str {
        "WriteMeter"
    }

    fn modify_before_serialization(
        &self,
        context: &mut BeforeSerializationInterceptorContextMut<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let input = context.input_mut();
        let units = if let Some(put) = input.downcast_mut::<PutItemInput>() {
            put.return_consumed_capacity = Some(ReturnConsumedCapacity::Indexes);
            put.item.as_ref().map_or(0, |item| written_units(item, 1))
        } else if let Some(update) = input.downcast_mut::<UpdateItemInput>() {
            update.return_consumed_capacity = Some(ReturnConsumedCapacity::Indexes);
            updated_units(update.key.as_ref(), update.expression_attribute_values.as_ref(), 1)
        } else if let Some(transaction) = input.downcast_mut::<TransactWriteItemsInput>() {
            transaction.return_consumed_capacity = Some(ReturnConsumedCapacity::Indexes);
            let items = transaction.transact_items.iter().flatten();
            items
                .map(|item| {
                    if let Some(put) = item.put() {
                        written_units(put.item(), 2)
                    } else if let Some(update) = item.update() {
                        updated_units(Some(update.key()), update.expression_attribute_values(), 2)
                    } else {
                        2 // a condition check or a delete of a small item
                    }
                })
                .sum()
        } else {
            0
        };
        self.0.by_rule_tenths.fetch_add(units * 10, Ordering::Relaxed);
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Ok(output) = context.output_or_error() else {
            self.0.failed.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        };
        let consumed: Vec<&ConsumedCapacity> = if let Some(put) = output.downcast_ref::<PutItemOutput>() {
            put.consumed_capacity().into_iter().collect()
        } else if let Some(update) = output.downcast_ref::<UpdateItemOutput>() {
            update.consumed_capacity().into_iter().collect()
        } else if let Some(transaction) = output.downcast_ref::<TransactWriteItemsOutput>() {
            transaction.consumed_capacity().iter().collect()
        } else {
            Vec::new()
        };
        let tenths: f64 = consumed.iter().map(|c| c.capacity_units().unwrap_or(0.0) * 10.0).sum();
        self.0.reported_tenths.fetch_add(tenths.round() as u64, Ordering::Relaxed);
        Ok(())
    }
}

fn kilobytes(size: usize) -> u64 {
    size.div_ceil(1024).max(1) as u64
}

/// The units of writing `item` at `per_kb` a KB, plus its GSI entries at 1 a KB.
fn written_units(item: &HashMap<String, AttributeValue>, per_kb: u64) -> u64 {
    let size = item_size(item);
    let history = if item.contains_key("history_pk") { kilobytes(size) } else { 0 };
    let open = u64::from(item.contains_key("open_shard"));
    per_kb * kilobytes(size) + history + open
}

/// An update's units: its item taken as its key and the values it writes (the balance and
/// counter items settle updates are far under 1 KB and in no index).
fn updated_units(
    key: Option<&HashMap<String, AttributeValue>>,
    values: Option<&HashMap<String, AttributeValue>>,
    per_kb: u64,
) -> u64 {
    let size = key.map_or(0, item_size) + values.map_or(0, item_size);
    per_kb * kilobytes(size)
}

/// Settles 20 packets of 100 grabs each on a metered client, with the wallet and without.
pub async fn money_trail(config: &Config, client: &aws_sdk_dynamodb::Client) -> MoneyTrail {
    let meter = Arc::new(Meter::default());
    let metered = aws_sdk_dynamodb::Client::from_conf(
        client.config().to_builder().interceptor(WriteMeter(meter.clone())).build(),
    );
    let mut per_grab = Vec::new();
    let mut grabs = 0;
    let (mut discarded, mut failed) = (0, 0);
    for funds in [Funds::Wallet, Funds::None] {
        // A settle run DynamoDB Local timed out on stops, and the next repeats the writes it
        // had in flight (refused by their conditions, which AWS bills too): a figure that
        // includes such a stop is the stop's cost, not a grab's. So it is measured again, on
        // fresh packets, up to three times; the last is kept if every one stopped.
        for measurement in 1..=MEASUREMENTS {
            let measured = settle_metered(config, &metered, &meter, funds, measurement).await;
            if measured.stopped && measurement < MEASUREMENTS {
                eprintln!("[bench] a settle run stopped while its write units were counted; measured again");
                discarded += 1;
                continue;
            }
            grabs = measured.grabs;
            failed += measured.failed;
            per_grab.push(measured.units_per_grab);
            break;
        }
    }
    MoneyTrail {
        grabs,
        wallet_units_per_grab: per_grab[0].0,
        wallet_reported_units_per_grab: per_grab[0].1,
        none_units_per_grab: per_grab[1].0,
        none_reported_units_per_grab: per_grab[1].1,
        failed_writes: failed,
        discarded_measurements: discarded,
    }
}

/// Measurements of one configuration's write units per grab at most (see [`money_trail`]).
const MEASUREMENTS: u32 = 3;

/// Settles 20 fresh packets of 100 grabs each with `funds` on the metered client: the write
/// units per grab, the grabs persisted, the writes that failed, and whether a settle run stopped.
async fn settle_metered(
    config: &Config,
    metered: &aws_sdk_dynamodb::Client,
    meter: &Meter,
    funds: Funds,
    measurement: u32,
) -> Metered {
    let mut config = config.clone();
    config.funds = funds;
    config.redis.key_prefix = format!("{}-units-{funds:?}-{measurement}", config.redis.key_prefix);
    let ledger = DynamoLedger::new(metered.clone(), &config);
    if funds == Funds::Wallet {
        let funding = red_packets::domain::TopUp {
            user: red_packets::domain::UserId::from_claim("bench-sender").expect("user"),
            amount_cents: red_packets::domain::wallet::MAX_TOPUP_CENTS,
            reference: format!("bench-units-{}", red_packets::domain::PacketId::random()),
        };
        ledger.top_up(&funding, SystemClock.now_ms()).await.expect("top-up");
    }
    let store = Arc::new(RedisStore::new(&config));
    store.set_sweep_state([0, store.settle_shards() - 1], 0, i64::MAX).await.expect("sweep record");
    crate::drain::prepare_packets(&store, &ledger, 20, 200).await;
    meter.take();
    let failed_before = meter.failed.load(Ordering::Relaxed);
    let settler = Settler::new(store.clone(), ledger.clone());
    // A run DynamoDB Local timed out on stops; the next goes on from the persisted marks, as
    // the next scheduled run does in AWS (its repeated writes are refused by their
    // conditions, which AWS bills too).
    let mut persisted_grabs = 0;
    let mut stopped = false;
    for attempt in 1..=10 {
        match settler.run(settler.shards_of(&Default::default()), None).await {
            Ok(summary) => {
                persisted_grabs += summary.grabs_persisted;
                break;
            }
            Err(SettleError::Unavailable { error, summary }) if attempt < 10 => {
                eprintln!("[bench] a settle run stopped ({error}); the next goes on");
                stopped = true;
                persisted_grabs += summary.grabs_persisted;
            }
            Err(error) => panic!("settle run: {error:?}"),
        }
    }
    let (by_rule, reported) = meter.take();
    let persisted = persisted_grabs.max(1) as f64;
    let failed = meter.failed.load(Ordering::Relaxed) - failed_before;
    Metered { units_per_grab: (by_rule / persisted, reported / persisted), grabs: persisted_grabs, failed, stopped }
}

/// One measurement of [`settle_metered`].
struct Metered {
    /// Write units per grab: by AWS's rules, as DynamoDB Local reported.
    units_per_grab: (f64, f64),
    /// Grabs persisted.
    grabs: u64,
    /// Writes that failed.
    failed: u64,
    /// Whether a settle run stopped on the way.
    stopped: bool,
}

/// Write units per send, with the wallet and without: 50 packets recorded through the ledger as
/// the send handler records them (the packet, its idempotency key, the sender's daily counter;
/// with the wallet the debit and its movement), on the metered client, by AWS's pricing rules.
pub async fn per_send(config: &Config, client: &aws_sdk_dynamodb::Client) -> (f64, f64) {
    use red_packets::domain::{Packet, PacketId, PacketKind, PacketSpec, PacketTerms, Seed, UserId};
    use red_packets::ports::{IdempotencyClaim, Ledger};
    const SENDS: u32 = 50;
    let meter = Arc::new(Meter::default());
    let metered = aws_sdk_dynamodb::Client::from_conf(
        client.config().to_builder().interceptor(WriteMeter(meter.clone())).build(),
    );
    let mut per_send = Vec::new();
    for funds in [Funds::Wallet, Funds::None] {
        let mut config = config.clone();
        config.funds = funds;
        let ledger = DynamoLedger::new(metered.clone(), &config);
        let sender = UserId::from_claim(&format!("bench-sends-{}", PacketId::random())).expect("user");
        if funds == Funds::Wallet {
            let funding = red_packets::domain::TopUp {
                user: sender.clone(),
                amount_cents: red_packets::domain::wallet::MAX_TOPUP_CENTS,
                reference: format!("bench-sends-{}", PacketId::random()),
            };
            ledger.top_up(&funding, SystemClock.now_ms()).await.expect("top-up");
        }
        meter.take();
        for _ in 0..SENDS {
            let spec = PacketSpec::open_to_all(PacketTerms::new(PacketKind::Lucky, 1_000, 10), 86_400);
            let packet = Packet::new(PacketId::random(), sender.clone(), &spec, Seed::random(), SystemClock.now_ms());
            let key = red_packets::domain::IdempotencyKey::parse(PacketId::random().as_str()).expect("a key");
            let claim = IdempotencyClaim { key, request_hash: spec.fingerprint() };
            ledger.record_packet(&packet, Some(&claim)).await.expect("record a send");
        }
        per_send.push(meter.take().0 / f64::from(SENDS));
    }
    (per_send[0], per_send[1])
}
