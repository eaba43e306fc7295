//! The DynamoDB ledger: one table holding packets, grabs, refunds and idempotency claims
//! (layout in [`items`]). Every failure to reach DynamoDB is
//! [`StoreError::Unavailable`].

mod books;
pub use books::{item_keys, ledger_item, CollectionFeed, RawItem};

/// `WALLET#<user>`, the partition of `user`'s wallet.
pub fn wallet_key(user: &UserId) -> String {
    items::wallet_pk(user)
}
pub mod client;
mod history;
mod items;
mod settle;
mod transaction;
mod wallet;

use transaction::{Transaction, Write, CONFLICT_ATTEMPTS};

use std::collections::HashMap;

use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, Put, ReturnValuesOnConditionCheckFailure, ScalarAttributeType, TimeToLiveSpecification,
    TransactWriteItem, Update,
};
use aws_sdk_dynamodb::Client;
use serde::{Deserialize, Serialize};

use items::{daily_limit_pk, packet_pk, write_stamp, DailySendsItem, IdempotencyItem, PacketItem, LIMIT, META};

use crate::clock::{rfc3339, Millis};
use crate::config::{Config, ConfigError};
use crate::domain::history::{HistoryPage, Role};
use crate::domain::limits::{utc_day, DailyLimit};
use crate::domain::packet::LedgerPacket;
use crate::domain::wallet::WalletPage;
use crate::domain::{DailyLimits, Funds, Packet, PacketId, PacketStatus, UserId};
use crate::ports::{Conflict, IdempotencyClaim, Ledger, Recorded, StoreError};

/// Name of the history GSI.
pub const HISTORY_INDEX: &str = "history";

/// Name of the sparse GSI of open packets, by settle shard.
pub const OPEN_INDEX: &str = "open";

/// How long an idempotency claim holds.
pub const IDEMPOTENCY_TTL_MS: Millis = 24 * 60 * 60 * 1000;

/// How long a daily-sends counter stays after its day began (TTL): two days.
pub const DAILY_SENDS_KEEP_MS: Millis = 2 * 24 * 60 * 60 * 1000;

/// The longest a ledger write can take to land after its write stamp (`items::write_stamp`):
/// every attempt of [`CONFLICT_ATTEMPTS`] is bounded by the client's operation timeout
/// ([`client::OPERATION_TIMEOUT`], itself covering the SDK's own retry), plus the pauses
/// between them (under 50 ms each), plus a margin for the clocks of the writers and of
/// reconciliation (Lambda's are kept by the Amazon Time Sync Service). Reconciliation reads
/// the ledger as of a cut-off at least this far back, so nothing stamped before it is still in
/// flight.
pub const WRITES_LAND_WITHIN: std::time::Duration = std::time::Duration::from_secs(
    client::OPERATION_TIMEOUT.as_secs() * CONFLICT_ATTEMPTS as u64 + 1 + CLOCK_ALLOWANCE_SECS,
);

/// What reconciliation allows for the difference between two hosts' clocks.
const CLOCK_ALLOWANCE_SECS: u64 = 10;

/// The ledger on a DynamoDB table.
#[derive(Clone, Debug)]
pub struct DynamoLedger {
    client: Client,
    table: String,
    settle_shards: u32,
    daily: DailyLimits,
    funds: Funds,
}

impl DynamoLedger {
    /// A ledger on `config`'s table through `client`.
    pub fn new(client: Client, config: &Config) -> Self {
        DynamoLedger {
            client,
            table: config.table_name.clone(),
            settle_shards: config.settle_shards,
            daily: config.daily,
            funds: config.funds,
        }
    }

    /// A DynamoDB client from the environment ([`client::Connection::from_env`]:
    /// `AWS_ENDPOINT_URL_DYNAMODB` for DynamoDB Local), with short timeouts and two attempts, so
    /// an unreachable DynamoDB is a prompt 503.
    pub fn client_from_env() -> Result<Client, ConfigError> {
        client::client(&client::Connection::from_env())
    }

    /// Creates the table with its GSIs and TTL if it does not exist (local runs and tests; in AWS
    /// the SAM template creates it).
    pub async fn ensure_table(&self) -> Result<(), StoreError> {
        let attribute = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .expect("attribute definition")
        };
        let key = |name: &str, key_type: KeyType| {
            KeySchemaElement::builder().attribute_name(name).key_type(key_type).build().expect("key schema")
        };
        let index = |name: &str, hash: &str, range: &str, projection: ProjectionType| {
            GlobalSecondaryIndex::builder()
                .index_name(name)
                .key_schema(key(hash, KeyType::Hash))
                .key_schema(key(range, KeyType::Range))
                .projection(Projection::builder().projection_type(projection).build())
                .build()
                .expect("index")
        };
        let created = self
            .client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .set_attribute_definitions(Some(
                ["pk", "sk", "history_pk", "history_sk", "open_shard", "expires_at"].map(attribute).to_vec(),
            ))
            .key_schema(key("pk", KeyType::Hash))
            .key_schema(key("sk", KeyType::Range))
            .global_secondary_indexes(index(HISTORY_INDEX, "history_pk", "history_sk", ProjectionType::All))
            .global_secondary_indexes(index(OPEN_INDEX, "open_shard", "expires_at", ProjectionType::KeysOnly))
            .send()
            .await;
        match created {
            Ok(_) => {}
            Err(error) if error.as_service_error().is_some_and(|e| e.is_resource_in_use_exception()) => return Ok(()),
            Err(error) => return Err(unavailable(error)),
        }
        self.client
            .update_time_to_live()
            .table_name(&self.table)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .enabled(true)
                    .attribute_name("expires_at_epoch")
                    .build()
                    .expect("ttl specification"),
            )
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    /// The packet recorded under `id`, if any (strongly consistent).
    pub async fn packet(&self, id: &PacketId) -> Result<Option<Packet>, StoreError> {
        let item: Option<PacketItem> = self.get(packet_pk(id), META.into()).await?;
        item.map(|item| item.packet()).transpose()
    }

    async fn get<T: for<'de> Deserialize<'de>>(&self, pk: String, sk: String) -> Result<Option<T>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(pk))
            .key("sk", AttributeValue::S(sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        output.item.map(from_item).transpose()
    }

    async fn replay(&self, packet: &Packet, claim: &IdempotencyClaim) -> Result<Recorded, StoreError> {
        let pk = idempotency_pk(&packet.sender, claim);
        let Some(existing) = self.get::<IdempotencyItem>(pk.clone(), "IDEM".into()).await? else {
            // The claim expired between our write and this read: the caller may simply retry.
            return Err(StoreError::dynamodb_unavailable("idempotency claim vanished, retry"));
        };
        if existing.request_hash != claim.request_hash {
            return Err(StoreError::Conflict(Conflict::IdempotencyKeyReused));
        }
        let original = self.packet(&existing.packet_id).await?.ok_or_else(|| {
            StoreError::Corrupt(format!("idempotency claim {pk} names missing packet {}", existing.packet_id))
        })?;
        Ok(Recorded::Replay(original))
    }
}

fn idempotency_pk(sender: &UserId, claim: &IdempotencyClaim) -> String {
    format!("IDEM#{sender}#{}", claim.key.as_str())
}

fn unavailable<E: std::error::Error + 'static, R: std::fmt::Debug>(error: SdkError<E, R>) -> StoreError {
    StoreError::dynamodb_unavailable(DisplayErrorContext(error))
}

fn to_item<T: Serialize>(value: &T) -> HashMap<String, AttributeValue> {
    serde_dynamo::to_item(value).expect("ledger items serialize")
}

fn from_item<T: for<'de> Deserialize<'de>>(item: HashMap<String, AttributeValue>) -> Result<T, StoreError> {
    serde_dynamo::from_item(item).map_err(|error| StoreError::Corrupt(format!("corrupt ledger item: {error}")))
}

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
            .key("pk", AttributeValue::S(daily_limit_pk(&packet.sender, &utc_day(packet.created_at_ms))))
            .key("sk", AttributeValue::S(LIMIT.into()))
            .update_expression("ADD sends :one, sent_cents :total SET expires_at_epoch = :ttl")
            .condition_expression("attribute_not_exists(sends) OR (sends < :max_sends AND sent_cents <= :room)")
            .expression_attribute_values(":one", n("1".into()))
            .expression_attribute_values(":total", n(packet.total_cents.to_string()))
            .expression_attribute_values(":ttl", n(((day_started_ms + DAILY_SENDS_KEEP_MS) / 1000).to_string()))
            .expression_attribute_values(":max_sends", n(self.daily.max_sends.to_string()))
            .expression_attribute_values(
                ":room",
                n(self.daily.max_sent_cents.saturating_sub(packet.total_cents).to_string()),
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
                sk: "IDEM".into(),
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
            items.extend(self.debit(&packet.sender, packet.total_cents, &packet.id, packet.created_at_ms, stamp));
        }
        items
    }
}

impl Ledger for DynamoLedger {
    /// One transaction: the sender's daily counter, the idempotency claim, the packet item and
    /// (with the wallet) the debit; a balance short of the total is
    /// [`Conflict::InsufficientFunds`] and records nothing.
    /// The counter's condition is the limit, so concurrent sends can never pass it together
    /// (DynamoDB serialises them; a conflict is retried); a replay fails on its claim and is
    /// answered with the original packet, counted once.
    async fn record_packet(&self, packet: &Packet, claim: Option<&IdempotencyClaim>) -> Result<Recorded, StoreError> {
        if let Some(limit) = self.daily.broken_by(0, 0, packet.total_cents) {
            return Err(StoreError::Conflict(Conflict::LimitExceeded(limit.field())));
        }
        let Err(failed) = self.transact(self.send_transaction(packet, claim)).await else { return Ok(Recorded::New) };
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
                .broken_by(counted.sends, counted.sent_cents, packet.total_cents)
                .unwrap_or(DailyLimit::Sends);
            return Err(StoreError::Conflict(Conflict::LimitExceeded(limit.field())));
        }
        Err(unavailable(failed.error))
    }

    /// One conditional update of the packet item: the caller is its sender, it is open, not
    /// expired and not cancelled yet. When the condition fails, the item as it was says why.
    async fn cancel(&self, id: &PacketId, sender: &UserId, now_ms: Millis) -> Result<(), StoreError> {
        let s = |value: &str| AttributeValue::S(value.to_owned());
        let updated = self
            .client
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

    async fn ledger_packet(&self, id: &PacketId) -> Result<Option<LedgerPacket>, StoreError> {
        Self::ledger_packet(self, id).await
    }

    async fn history(
        &self,
        user: &UserId,
        role: Role,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<HistoryPage, StoreError> {
        Self::history(self, user, role, limit, cursor).await
    }

    async fn wallet(&self, user: &UserId, limit: u32, cursor: Option<&str>) -> Result<WalletPage, StoreError> {
        Self::wallet(self, user, limit, cursor).await
    }
}

/// A ledger whose DynamoDB client is built on first use. `grab` reads the ledger only for a
/// packet Redis no longer holds, so most grab instances never pay for building a client at init.
pub struct LazyLedger {
    config: Config,
    connection: client::Connection,
    ledger: tokio::sync::OnceCell<DynamoLedger>,
}

impl LazyLedger {
    /// A ledger on `config`'s table through `connection`, connecting when first needed.
    pub fn new(config: &Config, connection: client::Connection) -> Self {
        LazyLedger { config: config.clone(), connection, ledger: tokio::sync::OnceCell::new() }
    }

    async fn ledger(&self) -> Result<&DynamoLedger, StoreError> {
        self.ledger
            .get_or_try_init(|| async {
                let client =
                    client::client(&self.connection).map_err(|error| StoreError::Corrupt(error.to_string()))?;
                Ok(DynamoLedger::new(client, &self.config))
            })
            .await
    }
}

impl Ledger for LazyLedger {
    async fn record_packet(&self, packet: &Packet, claim: Option<&IdempotencyClaim>) -> Result<Recorded, StoreError> {
        self.ledger().await?.record_packet(packet, claim).await
    }

    async fn ledger_packet(&self, id: &PacketId) -> Result<Option<LedgerPacket>, StoreError> {
        DynamoLedger::ledger_packet(self.ledger().await?, id).await
    }

    async fn cancel(&self, id: &PacketId, sender: &UserId, now_ms: Millis) -> Result<(), StoreError> {
        self.ledger().await?.cancel(id, sender, now_ms).await
    }

    async fn history(
        &self,
        user: &UserId,
        role: Role,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<HistoryPage, StoreError> {
        DynamoLedger::history(self.ledger().await?, user, role, limit, cursor).await
    }

    async fn wallet(&self, user: &UserId, limit: u32, cursor: Option<&str>) -> Result<WalletPage, StoreError> {
        DynamoLedger::wallet(self.ledger().await?, user, limit, cursor).await
    }
}
