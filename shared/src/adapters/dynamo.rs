//! The DynamoDB ledger: one table holding packets, grabs, refunds and idempotency claims.
//!
//! | item | PK | SK |
//! |---|---|---|
//! | packet | `PKT#<id>` | `META` |
//! | idempotency | `IDEM#<sender>#<key>` | `IDEM` |
//!
//! The `history` GSI (`history_pk` = `USER#<user>`, `history_sk` time-ordered) serves
//! `GET /me/packets`.

use std::time::Duration;

use aws_config::timeout::TimeoutConfig;
use aws_config::{retry::RetryConfig, BehaviorVersion};
use aws_sdk_dynamodb::error::{DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, GlobalSecondaryIndex, KeySchemaElement,
    KeyType, Projection, ProjectionType, Put, ScalarAttributeType, TimeToLiveSpecification,
    TransactWriteItem,
};
use aws_sdk_dynamodb::Client;
use serde::{Deserialize, Serialize};

use crate::clock::{rfc3339, Millis};
use crate::domain::{Cents, Packet, PacketId, PacketKind, Seed, SplitRule, UserId};
use crate::error::ApiError;
use crate::ports::{IdempotencyClaim, Ledger, Recorded};

/// Name of the history GSI.
pub const HISTORY_INDEX: &str = "history";

/// How long an idempotency claim holds.
pub const IDEMPOTENCY_TTL_MS: Millis = 24 * 60 * 60 * 1000;

/// The packet item (`PKT#<id>` / `META`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PacketItem {
    pk: String,
    sk: String,
    packet_id: PacketId,
    sender: UserId,
    kind: PacketKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    split: Option<SplitRule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    greeting: Option<String>,
    total_cents: Cents,
    count: u32,
    seed: String,
    status: String,
    created_at: String,
    created_at_ms: Millis,
    expires_at: String,
    expires_at_ms: Millis,
    history_pk: String,
    history_sk: String,
}

impl PacketItem {
    fn from_packet(packet: &Packet) -> Self {
        let created_at = rfc3339(packet.created_at_ms);
        PacketItem {
            pk: packet_pk(&packet.id),
            sk: "META".into(),
            packet_id: packet.id.clone(),
            sender: packet.sender.clone(),
            kind: packet.kind,
            split: packet.split,
            greeting: packet.greeting.clone(),
            total_cents: packet.total_cents,
            count: packet.count,
            seed: packet.seed.to_hex(),
            status: "open".into(),
            history_pk: format!("USER#{}", packet.sender),
            history_sk: format!("SENT#{created_at}#{}", packet.id),
            created_at,
            created_at_ms: packet.created_at_ms,
            expires_at: rfc3339(packet.expires_at_ms),
            expires_at_ms: packet.expires_at_ms,
        }
    }

    fn into_packet(self) -> Result<Packet, ApiError> {
        let seed = Seed::from_hex(&self.seed).ok_or_else(|| {
            ApiError::Internal(format!("packet {} has a corrupt seed", self.packet_id))
        })?;
        Ok(Packet {
            id: self.packet_id,
            sender: self.sender,
            kind: self.kind,
            split: self.split,
            greeting: self.greeting,
            total_cents: self.total_cents,
            count: self.count,
            seed,
            created_at_ms: self.created_at_ms,
            expires_at_ms: self.expires_at_ms,
        })
    }
}

/// The idempotency item (`IDEM#<sender>#<key>` / `IDEM`); DynamoDB's TTL removes it after 24 h.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct IdempotencyItem {
    pk: String,
    sk: String,
    request_hash: String,
    packet_id: PacketId,
    /// Epoch seconds; the table's TTL attribute.
    expires_at_epoch: i64,
}

fn packet_pk(id: &PacketId) -> String {
    format!("PKT#{id}")
}

fn idempotency_pk(sender: &UserId, claim: &IdempotencyClaim) -> String {
    format!("IDEM#{sender}#{}", claim.key.as_str())
}

fn unavailable<E: std::error::Error + 'static, R: std::fmt::Debug>(
    error: SdkError<E, R>,
) -> ApiError {
    ApiError::dynamodb_unavailable(DisplayErrorContext(error))
}

/// The ledger on a DynamoDB table.
#[derive(Clone, Debug)]
pub struct DynamoLedger {
    client: Client,
    table: String,
}

impl DynamoLedger {
    /// A ledger on `table` through `client`.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        DynamoLedger {
            client,
            table: table.into(),
        }
    }

    /// A DynamoDB client from the environment (`AWS_ENDPOINT_URL_DYNAMODB` for DynamoDB Local),
    /// with short timeouts and two attempts, so an unreachable DynamoDB is a prompt 503.
    pub async fn client_from_env() -> Client {
        let config = aws_config::defaults(BehaviorVersion::latest())
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(1))
                    .operation_attempt_timeout(Duration::from_secs(2))
                    .operation_timeout(Duration::from_secs(5))
                    .build(),
            )
            .retry_config(RetryConfig::standard().with_max_attempts(2))
            .load()
            .await;
        Client::new(&config)
    }

    /// Creates the table with its GSI and TTL if it does not exist (local runs and tests; in AWS
    /// the SAM template creates it).
    pub async fn ensure_table(&self) -> Result<(), ApiError> {
        let attribute = |name: &str| {
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::S)
                .build()
                .expect("attribute definition")
        };
        let key = |name: &str, key_type: KeyType| {
            KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(key_type)
                .build()
                .expect("key schema")
        };
        let history = GlobalSecondaryIndex::builder()
            .index_name(HISTORY_INDEX)
            .key_schema(key("history_pk", KeyType::Hash))
            .key_schema(key("history_sk", KeyType::Range))
            .projection(
                Projection::builder()
                    .projection_type(ProjectionType::All)
                    .build(),
            )
            .build()
            .expect("history index");
        let created = self
            .client
            .create_table()
            .table_name(&self.table)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(attribute("pk"))
            .attribute_definitions(attribute("sk"))
            .attribute_definitions(attribute("history_pk"))
            .attribute_definitions(attribute("history_sk"))
            .key_schema(key("pk", KeyType::Hash))
            .key_schema(key("sk", KeyType::Range))
            .global_secondary_indexes(history)
            .send()
            .await;
        match created {
            Ok(_) => {}
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|e| e.is_resource_in_use_exception()) =>
            {
                return Ok(())
            }
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
    pub async fn packet(&self, id: &PacketId) -> Result<Option<Packet>, ApiError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(packet_pk(id)))
            .key("sk", AttributeValue::S("META".into()))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        output
            .item
            .map(|item| from_item::<PacketItem>(item)?.into_packet())
            .transpose()
    }

    async fn idempotency_item(&self, pk: &str) -> Result<Option<IdempotencyItem>, ApiError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(pk.to_owned()))
            .key("sk", AttributeValue::S("IDEM".into()))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        output.item.map(from_item).transpose()
    }

    async fn replay(
        &self,
        packet: &Packet,
        claim: &IdempotencyClaim,
    ) -> Result<Recorded, ApiError> {
        let pk = idempotency_pk(&packet.sender, claim);
        let Some(existing) = self.idempotency_item(&pk).await? else {
            // The claim expired between our write and this read: the caller may simply retry.
            return Err(ApiError::dynamodb_unavailable(
                "idempotency claim vanished, retry",
            ));
        };
        if existing.request_hash != claim.request_hash {
            return Err(ApiError::IdempotencyKeyReused);
        }
        let original = self.packet(&existing.packet_id).await?.ok_or_else(|| {
            ApiError::Internal(format!(
                "idempotency claim {pk} names missing packet {}",
                existing.packet_id
            ))
        })?;
        Ok(Recorded::Replay(original))
    }
}

fn to_item<T: Serialize>(value: &T) -> std::collections::HashMap<String, AttributeValue> {
    serde_dynamo::to_item(value).expect("ledger items serialize")
}

fn from_item<T: for<'de> Deserialize<'de>>(
    item: std::collections::HashMap<String, AttributeValue>,
) -> Result<T, ApiError> {
    serde_dynamo::from_item(item)
        .map_err(|error| ApiError::Internal(format!("corrupt ledger item: {error}")))
}

impl Ledger for DynamoLedger {
    async fn record_packet(
        &self,
        packet: &Packet,
        claim: Option<&IdempotencyClaim>,
    ) -> Result<Recorded, ApiError> {
        let packet_item = to_item(&PacketItem::from_packet(packet));
        let Some(claim) = claim else {
            self.client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(packet_item))
                .condition_expression("attribute_not_exists(pk)")
                .send()
                .await
                .map_err(unavailable)?;
            return Ok(Recorded::New);
        };

        let claim_item = to_item(&IdempotencyItem {
            pk: idempotency_pk(&packet.sender, claim),
            sk: "IDEM".into(),
            request_hash: claim.request_hash.clone(),
            packet_id: packet.id.clone(),
            expires_at_epoch: (packet.created_at_ms + IDEMPOTENCY_TTL_MS) / 1000,
        });
        let now_epoch = AttributeValue::N((packet.created_at_ms / 1000).to_string());
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
        // A claim past its TTL that DynamoDB has not yet removed counts as absent.
        let written = self
            .client
            .transact_write_items()
            .transact_items(put(
                claim_item,
                "attribute_not_exists(pk) OR expires_at_epoch < :now",
                Some(now_epoch),
            ))
            .transact_items(put(packet_item, "attribute_not_exists(pk)", None))
            .send()
            .await;
        match written {
            Ok(_) => Ok(Recorded::New),
            Err(error) => {
                let claim_taken = matches!(
                    error.as_service_error(),
                    Some(TransactWriteItemsError::TransactionCanceledException(cancelled))
                        if cancelled.cancellation_reasons().first().and_then(|r| r.code()) == Some("ConditionalCheckFailed")
                );
                if claim_taken {
                    self.replay(packet, claim).await
                } else {
                    Err(unavailable(error))
                }
            }
        }
    }
}
