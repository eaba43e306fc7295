//! Counting what a piece of code sends to the stores, for tests and benchmarks that assert or
//! report on it: DynamoDB requests through an SDK interceptor, Redis commands from `INFO commandstats`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use red_packets::adapters::RedisStore;

/// Counts the DynamoDB requests (attempts) of every client it is installed on.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter(Arc<AtomicU64>);

impl RequestCounter {
    /// Requests counted so far.
    pub fn count(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// `client` with this counter installed.
    pub fn on(&self, client: &aws_sdk_dynamodb::Client) -> aws_sdk_dynamodb::Client {
        aws_sdk_dynamodb::Client::from_conf(client.config().to_builder().interceptor(self.clone()).build())
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_attempt(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// Commands Redis has executed so far (`INFO commandstats`, without the INFO calls themselves).
pub async fn redis_commands_executed(store: &RedisStore) -> Result<u64, red_packets::ApiError> {
    let mut conn = store.connection().await?;
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .map_err(red_packets::ApiError::redis_unavailable)?;
    Ok(info
        .lines()
        .filter(|line| line.starts_with("cmdstat_") && !line.starts_with("cmdstat_info:"))
        .filter_map(|line| line.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok())
        .sum())
}

/// What `work` cost the stores: its output, the Redis commands executed meanwhile (on `store`'s
/// server) and the DynamoDB requests `counter` saw.
pub async fn costs<T>(
    store: &RedisStore,
    counter: &RequestCounter,
    work: impl std::future::Future<Output = T>,
) -> (T, u64, u64) {
    let commands = redis_commands_executed(store).await.expect("INFO commandstats");
    let requests = counter.count();
    let output = work.await;
    let commands = redis_commands_executed(store).await.expect("INFO commandstats") - commands;
    (output, commands, counter.count() - requests)
}
