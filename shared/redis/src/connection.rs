//! The connection to Redis: one node or a cluster behind one multiplexed handle, every call
//! bounded in time, and `WAIT` routed to the primary that holds a key.

use std::future::Future;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, RedisFuture, RedisResult, Value};

use red_packets_core::config::{RedisConfig, ReplicaWait};
use red_packets_core::ports::StoreError;

/// How the cluster client follows a cluster that reshapes under it, as the Redis Cluster
/// specification asks: `MOVED` refreshes the slot map and retries at the new owner, `ASK` sends
/// `ASKING` and retries at the slot's target, `TRYAGAIN` (a multi-key call while its slot's keys
/// are split between two nodes) and a lost node wait a jittered moment and retry. The client's
/// defaults (16 retries, the first after 1.28 s or more) would spend a grab's whole deadline on
/// one wait, and one retry (this crate's setting before) passed a second redirect up as an
/// error. Each call still ends at `REDIS_TIMEOUT_MS` ([`within`]), whatever retries are left.
struct RedirectPolicy {
    /// Redirects and retries one call may take.
    retries: u32,
    /// Each wait is drawn from `min_wait_ms..min(max_wait_ms, factor_ms * 2^retry)`.
    min_wait_ms: u64,
    max_wait_ms: u64,
    factor_ms: u64,
}

/// 2 to 10 ms before the first retry, the bound doubling up to 2 to 50 ms: a call waiting out a
/// `TRYAGAIN` asks again about every 26 ms, and one redirected meets the slot's new owner
/// within milliseconds. 40 retries outlast any deadline up to a second (and keep `2^retry`
/// within `u64`).
const CLUSTER_REDIRECTS: RedirectPolicy = RedirectPolicy { retries: 40, min_wait_ms: 2, max_wait_ms: 50, factor_ms: 5 };

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
                .retries(CLUSTER_REDIRECTS.retries)
                .min_retry_wait(CLUSTER_REDIRECTS.min_wait_ms)
                .max_retry_wait(CLUSTER_REDIRECTS.max_wait_ms)
                .retry_wait_formula(CLUSTER_REDIRECTS.factor_ms, 2)
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
