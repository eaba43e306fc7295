//! The stores: Redis for the live, atomic side; DynamoDB for the durable ledger. Adapters
//! depend on the ports and the domain, never the reverse.

pub mod dynamo;
pub mod export;
pub mod redis;

pub use self::redis::RedisStore;
pub use dynamo::{item_keys, ledger_item, CollectionFeed, DynamoLedger, RawItem};
pub use export::{ExportFile, ExportWriter, ReportDirectory};

/// Settle on the deployed stores: ElastiCache (Redis, Valkey) and DynamoDB.
pub type DeployedSettler = crate::settle::Settler<RedisStore, DynamoLedger>;
