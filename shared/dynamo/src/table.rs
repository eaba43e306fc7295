//! The ledger's table: the client and table name every part of the adapter writes through,
//! creating the table locally, the one codec between items and their structs, and what a
//! failed call becomes.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ReturnValuesOnConditionCheckFailure, ScalarAttributeType, TimeToLiveSpecification,
};
use aws_sdk_dynamodb::Client;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::capacity::{write_units, PartitionPace};
use super::client;
use super::items::{packet_pk, PacketItem, META};
use red_packets_core::config::{Config, ConfigError};
use red_packets_core::domain::{BusinessDay, Currency, DailyLimits, Funds, Packet, PacketId};
use red_packets_core::ports::StoreError;

/// Name of the history GSI.
pub const HISTORY_INDEX: &str = "history";

/// Name of the sparse GSI of open packets, by settle shard.
pub const OPEN_INDEX: &str = "open";

/// The ledger on a DynamoDB table. Clones share one client.
#[derive(Clone, Debug)]
pub struct DynamoLedger {
    /// The client once built: at once by [`DynamoLedger::new`], on first use by
    /// [`DynamoLedger::on_first_use`].
    client: Arc<OnceLock<Client>>,
    /// Where a client built on first use connects.
    connection: client::Connection,
    pub(super) table: String,
    pub(super) settle_shards: u32,
    pub(super) daily: DailyLimits,
    pub(super) business_day: BusinessDay,
    pub(super) currency: Currency,
    pub(super) funds: Funds,
    /// Settle's writes per partition key per second, shared by every clone (one invocation's
    /// packets in flight).
    pub(super) partition_pace: Arc<PartitionPace>,
}

impl DynamoLedger {
    /// A ledger on `config`'s table through `client`.
    pub fn new(client: Client, config: &Config) -> Self {
        DynamoLedger { client: Arc::new(client.into()), ..Self::on_first_use(client::Connection::default(), config) }
    }

    /// A ledger on `config`'s table whose client is built from `connection` when first needed:
    /// building it costs nothing at start-up, which matters to `grab`, whose ledger answers only
    /// packets Redis no longer holds. A connection that cannot make a client (no credentials,
    /// an unusable `AWS_CA_BUNDLE`) fails each call as [`StoreError::Corrupt`].
    pub fn on_first_use(connection: client::Connection, config: &Config) -> Self {
        DynamoLedger {
            client: Arc::default(),
            connection,
            table: config.table_name.clone(),
            settle_shards: config.settle_shards,
            daily: config.daily,
            business_day: config.business_day,
            currency: config.currency,
            funds: config.funds,
            partition_pace: Arc::new(PartitionPace::new(config.settle_partition_write_units)),
        }
    }

    /// The client, built now if it is not yet.
    pub(super) fn client(&self) -> Result<&Client, StoreError> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let built = client::client(&self.connection).map_err(|error| StoreError::Corrupt(error.to_string()))?;
        Ok(self.client.get_or_init(|| built))
    }

    /// A DynamoDB client from the environment ([`client::Connection::from_env`]:
    /// `AWS_ENDPOINT_URL_DYNAMODB` for DynamoDB Local), with short timeouts and two attempts, so
    /// an unreachable DynamoDB is promptly [`StoreError::Unavailable`].
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
            .client()?
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
        self.client()?
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

    /// Puts `item` only if its key is new; when it is not, the item in its place comes back
    /// (as DynamoDB returns it on a failed condition). A failed write is [`write_failed`]. Only
    /// settle writes this way, to a packet's partition, so the write goes in settle's pace: it
    /// waits until its partition key has room for its units in this slice of a second
    /// ([`PartitionPace`]); a refused condition costs the same units, so it is paced too. A write
    /// DynamoDB still throttles after the SDK's retry, or that got no answer in time (the
    /// condition makes asking again safe: a write that landed comes back as taken), halves its
    /// key's pace and goes again in it, [`THROTTLED_WRITES_RETRIED`] times at most: settle slows
    /// on a hot or slow key, the others keep their pace; a key still throttled ends the run, a
    /// key still slow leaves its packet for later ([`StoreError::TimedOut`]).
    pub(super) async fn put_if_new_in_pace<T: Serialize + DeserializeOwned>(
        &self,
        item: &T,
    ) -> Result<PutIfNew<T>, StoreError> {
        let item = to_item(item);
        let partition = match item.get("pk") {
            Some(AttributeValue::S(pk)) => pk.clone(),
            _ => String::new(),
        };
        let mut throttled = 0;
        loop {
            self.partition_pace.take(&partition, write_units(&item)).await;
            let written = self
                .client()?
                .put_item()
                .table_name(&self.table)
                .set_item(Some(item.clone()))
                .condition_expression("attribute_not_exists(pk)")
                .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
                .send()
                .await;
            return match written {
                Ok(_) => Ok(PutIfNew::Written),
                Err(error) => match error.as_service_error() {
                    Some(PutItemError::ConditionalCheckFailedException(failed)) => {
                        Ok(PutIfNew::Taken(failed.item().cloned().map(from_item).transpose()?))
                    }
                    Some(service) if is_throttling(service.code()) && throttled < THROTTLED_WRITES_RETRIED => {
                        throttled += 1;
                        self.partition_pace.throttled(&partition);
                        continue;
                    }
                    None if timed_out(&error) && throttled < THROTTLED_WRITES_RETRIED => {
                        metrics::counter!("DynamoTimeoutsRetried").increment(1);
                        throttled += 1;
                        self.partition_pace.throttled(&partition);
                        continue;
                    }
                    _ => Err(write_failed(error)),
                },
            };
        }
    }

    pub(super) async fn get<T: for<'de> Deserialize<'de>>(
        &self,
        pk: String,
        sk: String,
    ) -> Result<Option<T>, StoreError> {
        let output = self
            .client()?
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
}

/// One page of `query`, newest first: at most `limit` items, from `start`.
pub(super) async fn newest_first(
    query: QueryFluentBuilder,
    limit: u32,
    start: Option<HashMap<String, AttributeValue>>,
) -> Result<QueryOutput, StoreError> {
    query.scan_index_forward(false).limit(limit as i32).set_exclusive_start_key(start).send().await.map_err(unavailable)
}

/// What putting an item only if its key is new came to.
pub(super) enum PutIfNew<T> {
    /// Written.
    Written,
    /// The key was taken: the item in its place, when DynamoDB returned it.
    Taken(Option<T>),
}

/// How many times settle's paced write goes again after DynamoDB throttled it (past the SDK's
/// own retry), each time in its key's halved pace.
pub(super) const THROTTLED_WRITES_RETRIED: u32 = 4;

/// Whether an error code is one of DynamoDB's throttling answers.
pub(super) fn is_throttling(code: Option<&str>) -> bool {
    code.is_some_and(|code| super::metered::THROTTLING_CODES.contains(&code))
}

/// DynamoDB could not be reached, or failed to answer: [`StoreError::TimedOut`] when no answer
/// came within the client's timeouts (a slow ledger, not an unreachable one).
pub(super) fn unavailable<E: std::error::Error + 'static, R: std::fmt::Debug>(error: SdkError<E, R>) -> StoreError {
    if timed_out(&error) {
        return StoreError::TimedOut { store: "dynamodb", detail: DisplayErrorContext(error).to_string() };
    }
    StoreError::dynamodb_unavailable(DisplayErrorContext(error))
}

/// How many times a read that got no answer in time is asked again ([`asked_again_on_timeout`]).
pub(super) const TIMED_OUT_READS_RETRIED: u32 = 4;

/// Runs `call` (a read, which asking again cannot double) again while DynamoDB does not answer
/// it in time, [`TIMED_OUT_READS_RETRIED`] times at most, after 200 ms doubling: one slow answer
/// among many reads (the recovery sweep's) costs a pause, not the whole run.
pub(super) async fn asked_again_on_timeout<T, F, Fut>(mut call: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, StoreError>>,
{
    let mut tries = 0;
    loop {
        match call().await {
            Err(error) if error.timed_out() && tries < TIMED_OUT_READS_RETRIED => {
                tries += 1;
                metrics::counter!("DynamoTimeoutsRetried").increment(1);
                tokio::time::sleep(std::time::Duration::from_millis(100 << tries)).await;
            }
            answered => return answered,
        }
    }
}

/// Whether the SDK gave up waiting for an answer: its attempt or operation timeout, or a
/// connection that timed out.
pub(super) fn timed_out<E, R>(error: &SdkError<E, R>) -> bool {
    match error {
        SdkError::TimeoutError(_) => true,
        SdkError::DispatchFailure(failure) => failure.is_timeout(),
        _ => false,
    }
}

/// An item's attributes (every item struct serializes).
pub(super) fn to_item<T: Serialize>(value: &T) -> HashMap<String, AttributeValue> {
    serde_dynamo::to_item(value).expect("ledger items serialize")
}

/// An item read back into its struct; one that does not fit is corrupt.
pub(super) fn from_item<T: for<'de> Deserialize<'de>>(item: HashMap<String, AttributeValue>) -> Result<T, StoreError> {
    serde_dynamo::from_item(item).map_err(|error| StoreError::Corrupt(format!("corrupt ledger item: {error}")))
}

/// A string attribute, for the expressions' values and the keys built by hand.
pub(super) fn s(text: &str) -> AttributeValue {
    AttributeValue::S(text.to_owned())
}

/// A number attribute.
pub(super) fn n(number: impl ToString) -> AttributeValue {
    AttributeValue::N(number.to_string())
}

/// The number attribute `name` of `item`: 0 when the item lacks it (a count never added to).
pub(super) fn number(item: &HashMap<String, AttributeValue>, name: &str) -> u64 {
    item.get(name).and_then(|value| value.as_n().ok()).and_then(|text| text.parse().ok()).unwrap_or(0)
}

/// A failed ledger write in settle: DynamoDB rejecting the item itself (a poison packet) is
/// [`StoreError::Rejected`], so settle skips that packet; no answer in time is
/// [`StoreError::TimedOut`], which slows the run; anything else is
/// [`StoreError::Unavailable`], which ends it.
pub(super) fn write_failed<E, R>(error: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let code = error.as_service_error().and_then(|service| service.code()).map(str::to_owned);
    match code.as_deref() {
        Some("ValidationException" | "ItemCollectionSizeLimitExceededException") => {
            StoreError::Rejected(DisplayErrorContext(&error).to_string())
        }
        _ => unavailable(error),
    }
}
