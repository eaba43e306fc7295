//! The connection to Redis: one node or a cluster behind one multiplexed handle, every call
//! bounded in time, and `WAIT` routed to the primary that holds a key.

use std::future::Future;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, RedisFuture, RedisResult, Value};

use crate::config::{RedisConfig, ReplicaWait};
use crate::ports::StoreError;

/// A connection to a single Redis node or to a cluster; cheap to clone, multiplexed.
#[derive(Clone)]
pub enum RedisConnection {
    /// One node (or a primary), reconnecting by itself.
    Single(ConnectionManager),
    /// A Redis Cluster (ElastiCache cluster mode, Serverless).
    Cluster(ClusterConnection),
}

impl ConnectionLike for RedisConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            RedisConnection::Single(conn) => conn.req_packed_command(cmd),
            RedisConnection::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            RedisConnection::Single(conn) => conn.req_packed_commands(pipeline, offset, count),
            RedisConnection::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            RedisConnection::Single(conn) => conn.get_db(),
            RedisConnection::Cluster(conn) => conn.get_db(),
        }
    }
}

impl RedisConnection {
    /// Opens a connection for `config` within its timeout.
    pub async fn open(config: &RedisConfig) -> RedisResult<RedisConnection> {
        if config.cluster {
            let client = ClusterClient::builder(vec![config.url.as_str()])
                .connection_timeout(config.timeout)
                .response_timeout(config.timeout)
                .retries(1)
                .build()?;
            Ok(RedisConnection::Cluster(client.get_async_connection().await?))
        } else {
            let client = redis::Client::open(config.url.as_str())?;
            let manager_config = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(config.timeout))
                .set_response_timeout(Some(config.timeout))
                .set_number_of_retries(1)
                .set_max_delay(config.timeout);
            Ok(RedisConnection::Single(ConnectionManager::new_with_config(client, manager_config).await?))
        }
    }

    /// `WAIT` on the primary holding `key`: true when `wait.replicas` replicas acknowledged
    /// every write made there so far within `wait.timeout`; bounded by `limit`.
    pub async fn replicas_acknowledge(
        &mut self,
        key: &str,
        wait: ReplicaWait,
        limit: Duration,
    ) -> Result<bool, StoreError> {
        let mut command = redis::cmd("WAIT");
        command.arg(wait.replicas).arg(wait.timeout.as_millis() as u64);
        let acknowledged: i64 = match self {
            RedisConnection::Single(single) => within(limit, command.query_async(single)).await?,
            RedisConnection::Cluster(cluster) => {
                // WAIT must reach the primary that ran the writes: route it by the key.
                let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::with_key(
                    key,
                    SlotAddr::Master,
                )));
                let value = within(limit, cluster.route_command(command, route)).await?;
                redis::from_redis_value(value).map_err(StoreError::redis_unavailable)?
            }
        };
        Ok(acknowledged >= i64::from(wait.replicas))
    }
}

/// Runs one Redis operation within `limit`: a failure or no answer in time is
/// [`StoreError::Unavailable`]. Each call is counted (`RedisCalls`, their total time in
/// `RedisCallMilliseconds`, failures in `RedisErrors`).
pub async fn within<T>(limit: Duration, operation: impl Future<Output = RedisResult<T>>) -> Result<T, StoreError> {
    let started = std::time::Instant::now();
    let result = match tokio::time::timeout(limit, operation).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(StoreError::redis_unavailable(error)),
        Err(_) => Err(StoreError::redis_unavailable(format!("no answer within {limit:?}"))),
    };
    record_call(started, result.is_err());
    result
}

/// A Redis call, its duration and, if it failed, its failure, as counters: an invocation of
/// settle makes thousands of calls, more than an embedded-metric histogram holds (100 values per
/// document), so the mean is `RedisCallMilliseconds / RedisCalls`.
pub(super) fn record_call(started: std::time::Instant, failed: bool) {
    metrics::counter!("RedisCalls").increment(1);
    metrics::counter!("RedisCallMilliseconds").increment(started.elapsed().as_millis() as u64);
    if failed {
        metrics::counter!("RedisErrors").increment(1);
    }
}
