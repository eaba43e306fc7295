//! The Redis adapter: one lazily opened connection (single node or cluster), the Lua scripts,
//! and the sharded settle index. Every failure to reach Redis becomes a 503, within the
//! configured timeout.

use std::future::Future;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, RedisFuture, RedisResult, Value};
use tokio::sync::OnceCell;

use super::scripts::{self, settle_index_key, LoadFields, PacketKeys};
use crate::clock::Millis;
use crate::config::{Config, RedisConfig, ReplicaWait};
use crate::domain::{Cents, Packet, PacketId, UserId};
use crate::error::ApiError;
use crate::ports::{GrabOutcome, LiveStore};

/// How long a packet's keys outlive the packet, so settle can still drain them.
pub const KEEP_AFTER_EXPIRY_MS: Millis = 24 * 60 * 60 * 1000;

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

/// The live store: packets' shares, grabs and the settle index, in Redis.
pub struct RedisStore {
    config: RedisConfig,
    connection: OnceCell<RedisConnection>,
    settle_shards: u32,
    grab_wait: Option<ReplicaWait>,
}

impl RedisStore {
    /// A store for `config`; it connects on first use, so a Lambda starts even while Redis is down.
    pub fn new(config: &Config) -> Self {
        RedisStore {
            config: config.redis.clone(),
            connection: OnceCell::new(),
            settle_shards: config.settle_shards,
            grab_wait: config.grab_wait,
        }
    }

    /// The shared connection, opened on first use. Failing to open it is a 503; the next call tries again.
    pub async fn connection(&self) -> Result<RedisConnection, ApiError> {
        let timeout = self.config.timeout;
        self.connection
            .get_or_try_init(|| within(timeout * 2, open(&self.config)))
            .await
            .cloned()
    }

    /// The settle shard of a packet: its id is random, so its first 8 hex digits are uniform.
    pub fn settle_shard(&self, id: &PacketId) -> u32 {
        u32::from_str_radix(&id.as_str()[..8], 16).unwrap_or(0) % self.settle_shards
    }

    /// Runs one operation against Redis, bounded by twice the configured timeout.
    async fn run<T>(&self, operation: impl Future<Output = RedisResult<T>>) -> Result<T, ApiError> {
        within(self.config.timeout * 2, operation).await
    }

    async fn wait_for_replicas(
        &self,
        conn: &mut RedisConnection,
        keys: &PacketKeys,
        wait: ReplicaWait,
    ) -> Result<(), ApiError> {
        let mut command = redis::cmd("WAIT");
        command
            .arg(wait.replicas)
            .arg(wait.timeout.as_millis() as u64);
        let acknowledged: i64 = match conn {
            RedisConnection::Single(single) => self.run(command.query_async(single)).await?,
            RedisConnection::Cluster(cluster) => {
                // WAIT must reach the primary that ran the grab: route it by the packet's key.
                let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(
                    Route::with_key(&keys.meta, SlotAddr::Master),
                ));
                let value = self.run(cluster.route_command(command, route)).await?;
                redis::from_redis_value(value).map_err(ApiError::redis_unavailable)?
            }
        };
        if acknowledged < i64::from(wait.replicas) {
            return Err(ApiError::redis_unavailable(format!(
                "{acknowledged} of {} replicas acknowledged the grab within {:?}",
                wait.replicas, wait.timeout
            )));
        }
        Ok(())
    }
}

async fn within<T>(
    limit: Duration,
    operation: impl Future<Output = RedisResult<T>>,
) -> Result<T, ApiError> {
    match tokio::time::timeout(limit, operation).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(ApiError::redis_unavailable(error)),
        Err(_) => Err(ApiError::redis_unavailable(format!(
            "no answer within {limit:?}"
        ))),
    }
}

async fn open(config: &RedisConfig) -> RedisResult<RedisConnection> {
    if config.cluster {
        let client = ClusterClient::builder(vec![config.url.as_str()])
            .connection_timeout(config.timeout)
            .response_timeout(config.timeout)
            .retries(1)
            .build()?;
        Ok(RedisConnection::Cluster(
            client.get_async_connection().await?,
        ))
    } else {
        let client = redis::Client::open(config.url.as_str())?;
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.timeout))
            .set_response_timeout(Some(config.timeout))
            .set_number_of_retries(1)
            .set_max_delay(config.timeout);
        Ok(RedisConnection::Single(
            ConnectionManager::new_with_config(client, manager_config).await?,
        ))
    }
}

impl LiveStore for RedisStore {
    async fn load(&self, packet: &Packet, shares: &[Cents]) -> Result<(), ApiError> {
        let mut conn = self.connection().await?;
        let keys = PacketKeys::of(&packet.id);
        // Index first: a packet in the index whose keys are missing is restored by settle; a
        // packet loaded but missing from the index would never be settled.
        let index = settle_index_key(self.settle_shard(&packet.id));
        let mut zadd = redis::cmd("ZADD");
        zadd.arg(&index)
            .arg(packet.expires_at_ms)
            .arg(packet.id.as_str());
        self.run(zadd.query_async::<()>(&mut conn)).await?;

        let fields = LoadFields {
            sender: packet.sender.as_str(),
            kind: packet.kind.as_str(),
            split: packet.split.map(|rule| rule.as_str()),
            greeting: packet.greeting.as_deref(),
            total_cents: packet.total_cents,
            count: packet.count,
            created_at: packet.created_at_ms,
            expires_at: packet.expires_at_ms,
        };
        let keep_until = packet.expires_at_ms + KEEP_AFTER_EXPIRY_MS;
        self.run(scripts::load(&mut conn, &keys, keep_until, &fields, shares))
            .await?;
        Ok(())
    }

    async fn grab(
        &self,
        packet: &PacketId,
        user: &UserId,
        now_ms: Millis,
    ) -> Result<GrabOutcome, ApiError> {
        let mut conn = self.connection().await?;
        let keys = PacketKeys::of(packet);
        let outcome = self
            .run(scripts::grab(&mut conn, &keys, user, now_ms))
            .await?;
        if let (GrabOutcome::Grabbed { .. }, Some(wait)) = (outcome, self.grab_wait) {
            // On timeout the client gets a 503; its retry finds the grab and returns the same share.
            self.wait_for_replicas(&mut conn, &keys, wait).await?;
        }
        Ok(outcome)
    }
}
