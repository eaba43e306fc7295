//! The stores, each a crate of its own on the ports of `red-packets-core`: Redis for the live,
//! atomic side (`red-packets-redis`, with its Lua scripts), DynamoDB for the durable ledger and
//! its exports (`red-packets-dynamo`). Neither depends on the other, nor on this crate; here
//! they are named as they always were (`red_packets::adapters::redis::keys`, ...).

pub use red_packets_dynamo as dynamo;
pub use red_packets_dynamo::export;
pub use red_packets_redis as redis;

pub use self::redis::RedisStore;
pub use dynamo::{item_keys, ledger_item, CollectionFeed, DynamoLedger, RawItem};
pub use export::{ExportFile, ExportWriter, ReportDirectory};

/// Settle on the deployed stores: ElastiCache (Redis, Valkey) and DynamoDB.
pub type DeployedSettler = crate::settle::Settler<RedisStore, DynamoLedger>;
