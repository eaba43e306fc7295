//! The stores: Redis for the live, atomic side; DynamoDB for the durable ledger.

pub mod dynamo;
pub mod redis_store;
pub mod scripts;
pub mod sold_out;

pub use dynamo::{DynamoLedger, LazyLedger};
pub use redis_store::RedisStore;
