//! Settle's persisting against the bare ceiling of the same DynamoDB calls on the same items,
//! and the whole run against a naive drain: grabs persisted per second into DynamoDB Local.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use red_packets::adapters::{DynamoLedger, RedisStore};
use red_packets::clock::rfc3339;
use red_packets::config::Config;
use red_packets::domain::grab::GrabAttempt;
use red_packets::domain::{Packet, PacketKind, UserId};
use red_packets::packets;
use red_packets::ports::{Ledger, LiveStore, SettleCursor, SettleIndex, SettleLedger, Wallets};
use red_packets::settle::Settler;
use red_packets::{Clock, SystemClock};
use serde::Serialize;
use serde_json::json;

use crate::grab_path::load_packet;

/// Packets per run, each with 100 grabs.
const PACKETS: usize = 100;

/// Rounds of persisting without the wallet and with it, alternating.
const PERSIST_ROUNDS: usize = 3;

fn median(rates: &mut [f64]) -> f64 {
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// Grabs persisted per second by settle, by the bare calls, and by the naive drain, on the same
/// shape of data.
#[derive(Debug, Clone, Serialize)]
pub struct Drain {
    /// Grabs settle persisted from open packets (100 of 200 shares grabbed): persisting only.
    pub settle_items: u64,
    /// Settle's persisting rate: the run over those packets (snapshot, two conditional
    /// PutItems per grab, the persisted mark, the dirty set), grabs per second; the median of
    /// [`PERSIST_ROUNDS`] rounds.
    pub settle_items_per_s: f64,
    /// The same two conditional PutItems per grab on the same shape of items, through the
    /// ledger adapter alone (no Redis, no settle logic), [`PACKETS_IN_FLIGHT`] packets at a time.
    pub settle_ceiling_items_per_s: f64,
    /// Grabs of finished packets a whole run took (persist, close, claim the refund's shares,
    /// finalise, reconcile, retire), per second.
    pub settle_full_run_items_per_s: f64,
    /// Grab items the naive drain wrote.
    pub naive_items: u64,
    /// One PutItem per grab, one grab after another.
    pub naive_items_per_s: f64,
    /// DynamoDB Local's own ceiling: bare BatchWriteItem calls of 25 items, 16 at a time, no settle logic.
    pub batch_ceiling_items_per_s: f64,
    /// Settle's persisting with the wallet on (`FUNDS=wallet`): per grab the share's claim, then
    /// its credit and balance change, in transactions of up to 50 grabs; grabs per second, the
    /// median of [`PERSIST_ROUNDS`] rounds alternating with those without.
    pub settle_wallet_items_per_s: f64,
}

/// 100 packets of `shares` shares with 100 grabs each, recorded in the ledger and grabbed in
/// Redis: finished when `shares` is 100, open (not due) when more.
async fn prepare(store: &RedisStore, ledger: &DynamoLedger, shares: u32) -> Vec<Packet> {
    prepare_packets(store, ledger, PACKETS, shares).await
}

/// `count` packets of `shares` shares with 100 grabs each, as [`prepare`] makes them.
pub async fn prepare_packets(store: &RedisStore, ledger: &DynamoLedger, count: usize, shares: u32) -> Vec<Packet> {
    let mut packets = Vec::new();
    for _ in 0..count {
        let packet = load_packet(store, PacketKind::Lucky, 20_000, shares).await;
        ledger.record_packet(&packet, None).await.expect("record packet");
        for user in 0..100 {
            let user = UserId::from_claim(&format!("drain-u{user}")).expect("user");
            packets::grab(store, ledger, &packet.id, &GrabAttempt::by(user), &SystemClock).await.expect("grab");
        }
        packets.push(packet);
    }
    packets
}

/// Runs both on fresh key prefixes of the same Redis and the same table.
pub async fn compare(config: &Config, ledger: &DynamoLedger, client: &aws_sdk_dynamodb::Client) -> Drain {
    // Each run on a key prefix of its own, whose Redis already holds a sweep record: the table
    // is shared with the other sections' packets, which a first run's recovery sweep would read.
    let on_prefix = |suffix: &str| {
        let mut config = config.clone();
        config.redis.key_prefix = format!("{}-{suffix}", config.redis.key_prefix);
        Arc::new(RedisStore::new(&config))
    };
    let swept = |store: Arc<RedisStore>| async move {
        store.set_sweep_state([0, store.settle_shards() - 1], 0, i64::MAX).await.expect("sweep record");
        store
    };
    // DynamoDB Local (Java) speeds up as it warms: an untimed round of the bare calls first,
    // then the bare calls, then settle, on the same shape of data.
    let bare_calls = |suffix: &'static str| {
        let store = on_prefix(suffix);
        async move {
            let packets = prepare(&store, ledger, 200).await;
            let mut work = Vec::new();
            for packet in packets {
                let live = store.snapshot(&packet.id).await.expect("snapshot").expect("packet in Redis");
                work.push((packet, live.grabs));
            }
            let started = Instant::now();
            let written: usize = futures::stream::iter(&work)
                .map(|(packet, grabs)| async move {
                    // DynamoDB Local under 512 writes in flight now and then takes longer than
                    // an attempt's 2 s: the writes are conditional, so the packet is written again.
                    let mut tries = 1;
                    loop {
                        match ledger.record_grabs(packet, grabs).await {
                            Ok(refused) => return grabs.len() - refused.len(),
                            Err(error) if tries == 4 => panic!("record grabs: {error}"),
                            Err(_) => tries += 1,
                        }
                    }
                })
                .buffer_unordered(red_packets::settle::PACKETS_IN_FLIGHT)
                .fold(0, |sum, n| async move { sum + n })
                .await;
            written as f64 / started.elapsed().as_secs_f64()
        }
    };
    bare_calls("warm-up").await;
    let ceiling = bare_calls("ceiling").await;
    // Persisting without the wallet and with it, in alternating rounds (DynamoDB Local's pace
    // drifts between runs of a few seconds): the median of each.
    let mut wallet_config = config.clone();
    wallet_config.funds = red_packets::domain::Funds::Wallet;
    let wallet = DynamoLedger::new(client.clone(), &wallet_config);
    let funding = red_packets::domain::TopUp {
        user: UserId::from_claim("bench-sender").expect("user"),
        amount_cents: red_packets::domain::wallet::MAX_TOPUP_CENTS,
        reference: format!("bench-{}", red_packets::domain::PacketId::random()),
    };
    wallet.top_up(&funding, SystemClock.now_ms()).await.expect("top-up");
    let persist = |ledger: DynamoLedger, suffix: String| {
        let store = on_prefix(&suffix);
        async move {
            let store = swept(store).await;
            prepare(&store, &ledger, 200).await;
            let settler = Settler::new(store.clone(), ledger.clone());
            let started = Instant::now();
            let summary = settler.run(settler.shards_of(&Default::default()), None).await.expect("settle run");
            (summary.grabs_persisted, summary.grabs_persisted as f64 / started.elapsed().as_secs_f64())
        }
    };
    let (mut without, mut with) = (Vec::new(), Vec::new());
    let mut persisting = 0;
    for round in 0..PERSIST_ROUNDS {
        let (grabs, rate) = persist(ledger.clone(), format!("persist-{round}")).await;
        persisting = grabs;
        without.push(rate);
        with.push(persist(wallet.clone(), format!("wallet-{round}")).await.1);
    }
    let settle_items_per_s = median(&mut without);
    let settle_wallet_items_per_s = median(&mut with);
    let store = swept(on_prefix("settle")).await;
    prepare(&store, ledger, 100).await;
    let settler = Settler::new(store.clone(), ledger.clone());
    let started = Instant::now();
    let summary = settler.run(settler.shards_of(&Default::default()), None).await.expect("settle run");
    let settle_elapsed = started.elapsed();

    let mut naive_config = config.clone();
    naive_config.redis.key_prefix = format!("{}-naive", config.redis.key_prefix);
    let naive_store = RedisStore::new(&naive_config);
    let packets = prepare(&naive_store, ledger, 100).await;
    let started = Instant::now();
    let mut naive_items = 0u64;
    for packet in &packets {
        let live = naive_store.snapshot(&packet.id).await.expect("snapshot").expect("packet in Redis");
        for grab in &live.grabs {
            let item = json!({
                "pk": format!("PKT#{}", packet.id), "sk": format!("GRAB#{}", grab.user),
                "packet_id": packet.id, "user": grab.user, "amount_cents": grab.amount_cents, "seq": grab.seq,
                "grabbed_at": rfc3339(grab.at_ms), "grabbed_at_ms": grab.at_ms, "sender": packet.sender,
                "total_cents": packet.terms.total_cents, "count": packet.terms.count,
                "packet_created_at": rfc3339(packet.created_at_ms),
                "history_pk": format!("USER#{}", grab.user),
                "history_sk": format!("RECV#{}#{}", rfc3339(grab.at_ms), packet.id),
            });
            client
                .put_item()
                .table_name(&config.table_name)
                .set_item(Some(serde_dynamo::to_item(item).expect("item")))
                .send()
                .await
                .expect("PutItem");
            naive_items += 1;
        }
    }
    let naive_elapsed = started.elapsed();
    let batch_ceiling_items_per_s = batch_ceiling(config, client).await;
    Drain {
        settle_items: persisting,
        settle_items_per_s,
        settle_ceiling_items_per_s: ceiling,
        settle_full_run_items_per_s: summary.grabs_persisted as f64 / settle_elapsed.as_secs_f64(),
        naive_items,
        naive_items_per_s: naive_items as f64 / naive_elapsed.as_secs_f64(),
        batch_ceiling_items_per_s,
        settle_wallet_items_per_s,
    }
}

/// 10,000 grab-sized items in 400 BatchWriteItem calls of 25, 16 in flight: items per second.
async fn batch_ceiling(config: &Config, client: &aws_sdk_dynamodb::Client) -> f64 {
    use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
    let batches: Vec<Vec<WriteRequest>> = (0..400)
        .map(|batch| {
            (0..25)
                .map(|n| {
                    let item = json!({
                        "pk": format!("CEILING#{batch}"), "sk": format!("GRAB#u{n}"), "amount_cents": 100 + n,
                        "seq": n, "grabbed_at": rfc3339(SystemClock.now_ms()), "user": format!("u{n}"),
                        "history_pk": format!("USER#ceiling-u{n}"), "history_sk": format!("RECV#{batch}"),
                    });
                    let put = PutRequest::builder().set_item(Some(serde_dynamo::to_item(item).expect("item"))).build();
                    WriteRequest::builder().put_request(put.expect("put")).build()
                })
                .collect()
        })
        .collect();
    let started = Instant::now();
    let written: usize = futures::stream::iter(batches)
        .map(|batch| async move {
            let output =
                client.batch_write_item().request_items(&config.table_name, batch).send().await.expect("batch");
            let left =
                output.unprocessed_items.and_then(|mut left| left.remove(&config.table_name)).map_or(0, |l| l.len());
            25 - left
        })
        .buffer_unordered(16)
        .fold(0, |sum, n| async move { sum + n })
        .await;
    written as f64 / started.elapsed().as_secs_f64()
}
