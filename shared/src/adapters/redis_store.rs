//! The Redis adapter: one lazily opened connection (single node or cluster), the Lua scripts,
//! and the sharded settle index. Every failure to reach Redis becomes a 503, within the
//! configured timeout.

use std::future::Future;
use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, RedisFuture, RedisResult, Value};
use tokio::sync::OnceCell;

use std::collections::HashMap;

use super::scripts::{
    self, settle_dirty_key, settle_index_key, CloseOutcome, LoadFields, LoadMode, PacketKeys, ScriptGrab,
};
use super::sold_out::SoldOutMemo;
use crate::clock::{Clock, Millis, SystemClock};
use crate::config::{Config, RedisConfig, ReplicaWait};
use crate::domain::settlement::LoggedGrab;
use crate::domain::{Cents, Packet, PacketId, PacketKind, Seed, SplitRule, UserId};
use crate::error::ApiError;
use crate::ports::{GrabOutcome, LiveStore, LookupVerdict, LOOKUP_LEASE};

/// How long a finalised packet's keys stay, answering repeat grabs from Redis.
pub const RETIRED_KEEP_MS: Millis = 10 * 60 * 1000;

/// How long Redis remembers what DynamoDB said of an id it does not hold (the lookup's cache window).
pub const LOOKUP_VERDICT_KEEP_MS: Millis = 60 * 1000;

/// A packet as Redis holds it: the record, its counters and every grab in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivePacket {
    /// The packet as sent (seed included).
    pub packet: Packet,
    /// False once `close.lua` closed it to grabs.
    pub open: bool,
    /// Shares left.
    pub remaining_count: u32,
    /// Every grab, in grab order.
    pub grabs: Vec<LoggedGrab>,
    /// How many of `grabs` DynamoDB has confirmed.
    pub persisted: usize,
}

impl LivePacket {
    /// The grabs DynamoDB has not confirmed yet.
    pub fn pending(&self) -> &[LoggedGrab] {
        &self.grabs[self.persisted.min(self.grabs.len())..]
    }

    fn parse(id: &PacketId, meta: &HashMap<String, String>, log: &[String]) -> Result<Self, ApiError> {
        let corrupt = |what: &str| ApiError::Internal(format!("packet {id} in Redis has a bad {what}"));
        let text = |name: &str| meta.get(name).map(String::as_str).unwrap_or("");
        let number = |name: &str| text(name).parse::<i64>().map_err(|_| corrupt(name));
        let packet = Packet {
            id: id.clone(),
            sender: UserId::from_claim(text("sender")).ok_or_else(|| corrupt("sender"))?,
            kind: PacketKind::parse(text("kind")).ok_or_else(|| corrupt("kind"))?,
            split: meta.get("split").map(|name| SplitRule::parse(name).ok_or_else(|| corrupt("split"))).transpose()?,
            greeting: meta.get("greeting").cloned(),
            seed: Seed::from_hex(text("seed")).ok_or_else(|| corrupt("seed"))?,
            total_cents: number("total_cents")? as Cents,
            count: number("count")? as u32,
            created_at_ms: number("created_at")?,
            expires_at_ms: number("expires_at")?,
        };
        let grabs = log
            .iter()
            .map(|entry| serde_json::from_str::<LoggedGrab>(entry).map_err(|_| corrupt("log entry")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LivePacket {
            packet,
            open: text("status") == "open",
            remaining_count: number("remaining_count")? as u32,
            grabs,
            persisted: number("persisted").unwrap_or(0) as usize,
        })
    }
}

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
    sold_out: Option<SoldOutMemo>,
    marks_for_settle: bool,
}

impl RedisStore {
    /// A store for `config`; it connects on first use, so a Lambda starts even while Redis is down.
    pub fn new(config: &Config) -> Self {
        RedisStore {
            config: config.redis.clone(),
            connection: OnceCell::new(),
            settle_shards: config.settle_shards,
            grab_wait: config.grab_wait,
            sold_out: Some(SoldOutMemo::default()),
            marks_for_settle: true,
        }
    }

    /// The same store, never marking packets for settle after a grab: what a grab whose mark
    /// failed between the script and the mark leaves behind (tests prove the expiry backstop).
    pub fn without_settle_marks(mut self) -> Self {
        self.marks_for_settle = false;
        self
    }

    /// The same store without the hot-packet fast path: every grab runs the script (benchmarks
    /// measure what the fast path saves against this).
    pub fn without_sold_out_memo(mut self) -> Self {
        self.sold_out = None;
        self
    }

    /// The shared connection, opened on first use. Failing to open it is a 503; the next call tries again.
    pub async fn connection(&self) -> Result<RedisConnection, ApiError> {
        let timeout = self.config.timeout;
        self.connection.get_or_try_init(|| within(timeout * 2, open(&self.config))).await.cloned()
    }

    /// The Redis keys of packet `id`.
    pub fn keys(&self, id: &PacketId) -> PacketKeys {
        PacketKeys::of(&self.config.key_prefix, id)
    }

    /// The settle index key of `shard`.
    pub fn settle_index_key(&self, shard: u32) -> String {
        settle_index_key(&self.config.key_prefix, shard)
    }

    /// The set of packets in `shard` with grabs settle has not persisted.
    pub fn settle_dirty_key(&self, shard: u32) -> String {
        settle_dirty_key(&self.config.key_prefix, shard)
    }

    /// How many shard keys index open packets.
    pub fn settle_shards(&self) -> u32 {
        self.settle_shards
    }

    /// Replaces whatever Redis holds of `packet` with the ledger's state: its grabs and the
    /// shares still to hand out (settle's re-sync when Redis and the ledger disagree).
    pub async fn resync(&self, packet: &Packet, grabs: &[LoggedGrab], shares: &[Cents]) -> Result<(), ApiError> {
        self.load_with(packet, grabs, shares, LoadMode::Replace).await
    }

    /// Waits until the configured replicas hold every write made to `id`'s keys so far (a no-op
    /// without `GRAB_WAIT_REPLICAS`): settle persists only grabs a failover cannot take back.
    /// False when they did not acknowledge in time.
    pub async fn replicas_hold(&self, id: &PacketId) -> Result<bool, ApiError> {
        let Some(wait) = self.grab_wait else { return Ok(true) };
        let mut conn = self.connection().await?;
        let keys = self.keys(id);
        // WAIT counts the replicas that reached this connection's last write; replication is
        // ordered, so once they hold this write they hold every grab before it.
        let probe = format!("{}:{{{id}}}:replicas", self.config.key_prefix);
        let touch = redis::Cmd::pset_ex(probe, SystemClock.now_ms(), 60_000);
        self.run(touch.query_async::<()>(&mut conn)).await?;
        self.replicas_acknowledge(&mut conn, &keys, wait).await
    }

    /// The packet's meta and whole grab log, read at one instant; `None` when Redis holds no such packet.
    pub async fn snapshot(&self, id: &PacketId) -> Result<Option<LivePacket>, ApiError> {
        let mut conn = self.connection().await?;
        let Some((meta, log)) = self.run(scripts::snapshot(&mut conn, &self.keys(id))).await? else {
            return Ok(None);
        };
        LivePacket::parse(id, &meta, &log).map(Some)
    }

    /// Closes the packet to grabs if it is finished or expired at `now_ms`.
    pub async fn close(&self, id: &PacketId, now_ms: Millis) -> Result<CloseOutcome, ApiError> {
        let mut conn = self.connection().await?;
        self.run(scripts::close(&mut conn, &self.keys(id), now_ms)).await
    }

    /// Records that the first `confirmed` grabs of the log are in DynamoDB.
    pub async fn mark_persisted(&self, id: &PacketId, confirmed: usize) -> Result<(), ApiError> {
        let mut conn = self.connection().await?;
        self.run(scripts::mark_persisted(&mut conn, &self.keys(id), confirmed)).await?;
        Ok(())
    }

    /// The packets of `shard` with work for settle: grabs not yet persisted (the dirty set),
    /// or due at `now_ms` (expired by the index's `expires_at` scores). Two commands, whatever
    /// the number of open packets.
    pub async fn packets_with_work(&self, shard: u32, now_ms: Millis) -> Result<Vec<PacketId>, ApiError> {
        let mut conn = self.connection().await?;
        let mut pipe = redis::pipe();
        pipe.smembers(self.settle_dirty_key(shard));
        pipe.cmd("ZRANGE").arg(self.settle_index_key(shard)).arg("-inf").arg(now_ms).arg("BYSCORE");
        let (dirty, due): (Vec<String>, Vec<String>) = self.run(pipe.query_async(&mut conn)).await?;
        let mut ids: Vec<PacketId> = dirty.iter().chain(&due).filter_map(|id| PacketId::parse(id)).collect();
        ids.sort_unstable_by(|a, b| a.as_str().cmp(b.as_str()));
        ids.dedup();
        Ok(ids)
    }

    /// Every packet indexed for settle in `shard` (open, not retired or quarantined): for
    /// checks and operators; settle itself reads only [`RedisStore::packets_with_work`].
    pub async fn indexed_packets(&self, shard: u32) -> Result<Vec<PacketId>, ApiError> {
        let mut conn = self.connection().await?;
        let mut range = redis::cmd("ZRANGE");
        range.arg(self.settle_index_key(shard)).arg(0).arg(-1);
        let ids: Vec<String> = self.run(range.query_async(&mut conn)).await?;
        Ok(ids.iter().filter_map(|id| PacketId::parse(id)).collect())
    }

    /// After settle's pass over `id`: takes it out of `shard`'s dirty set, then puts it back if
    /// it still has grabs not persisted (made during the pass, or deferred) and is still indexed.
    /// A grab after the removal sees a clean packet and marks it itself; one before it is seen
    /// here, so no grab is left unmarked.
    pub async fn settled_pass(&self, id: &PacketId, shard: u32) -> Result<(), ApiError> {
        let mut conn = self.connection().await?;
        let dirty = self.settle_dirty_key(shard);
        let mut unmark = redis::pipe();
        unmark.srem(&dirty, id.as_str()).ignore().zscore(self.settle_index_key(shard), id.as_str());
        let (indexed,): (Option<f64>,) = self.run(unmark.query_async(&mut conn)).await?;
        if indexed.is_none() {
            return Ok(());
        }
        let keys = self.keys(id);
        let mut progress = redis::pipe();
        progress.hget(&keys.meta, "persisted").llen(&keys.log);
        let (persisted, logged): (Option<u64>, u64) = self.run(progress.query_async(&mut conn)).await?;
        if logged > persisted.unwrap_or(0) {
            self.run(redis::Cmd::sadd(&dirty, id.as_str()).query_async::<()>(&mut conn)).await?;
        }
        Ok(())
    }

    /// Marks `id` for settle after a grab made it dirty. A failure is logged, not returned: the
    /// grab is done and acknowledged, and the packet's expiry brings settle to it regardless.
    async fn mark_dirty(&self, conn: &mut RedisConnection, id: &PacketId) {
        if !self.marks_for_settle {
            return;
        }
        let dirty = self.settle_dirty_key(id.settle_shard(self.settle_shards));
        if let Err(error) = self.run(redis::Cmd::sadd(dirty, id.as_str()).query_async::<()>(conn)).await {
            tracing::warn!(packet_id = %id, %error, "could not mark a grabbed packet for settle; it is persisted by its expiry at the latest");
        }
    }

    /// Takes a finalised packet out of settle index `shard` and lets its keys expire shortly.
    pub async fn retire(&self, id: &PacketId, shard: u32) -> Result<(), ApiError> {
        let mut conn = self.connection().await?;
        let keys = self.keys(id);
        let mut unindex = redis::pipe();
        unindex.zrem(self.settle_index_key(shard), id.as_str()).srem(self.settle_dirty_key(shard), id.as_str());
        self.run(unindex.query_async::<()>(&mut conn)).await?;
        // One key per command: in cluster mode every command stays within the packet's slot.
        for key in [&keys.meta, &keys.shares, &keys.users, &keys.log] {
            let mut expire = redis::cmd("PEXPIRE");
            expire.arg(key).arg(RETIRED_KEEP_MS);
            self.run(expire.query_async::<()>(&mut conn)).await?;
        }
        Ok(())
    }

    /// Moves a packet whose books settle cannot balance from settle index `shard` to the
    /// quarantine index (scored by when), keeping its keys as they are for an operator.
    pub async fn quarantine(&self, id: &PacketId, shard: u32, now_ms: Millis) -> Result<(), ApiError> {
        let mut conn = self.connection().await?;
        let add = redis::Cmd::zadd(self.quarantine_key(), id.as_str(), now_ms);
        self.run(add.query_async::<()>(&mut conn)).await?;
        let mut unindex = redis::pipe();
        unindex.zrem(self.settle_index_key(shard), id.as_str()).srem(self.settle_dirty_key(shard), id.as_str());
        self.run(unindex.query_async::<()>(&mut conn)).await
    }

    /// The quarantine index: packets settle set aside for inspection, scored by when.
    pub fn quarantine_key(&self) -> String {
        format!("{}:settle:quarantine", self.config.key_prefix)
    }

    /// Where a run over `range` that stopped early left off, if it did.
    pub async fn resume_shard(&self, range: [u32; 2]) -> Result<Option<u32>, ApiError> {
        let mut conn = self.connection().await?;
        let field = format!("{}-{}", range[0], range[1]);
        self.run(redis::Cmd::hget(self.settle_progress_key(), field).query_async(&mut conn)).await
    }

    /// Records where the next run over `range` starts: `Some(shard)` after a run that stopped
    /// early, `None` after a complete one.
    pub async fn set_resume_shard(&self, range: [u32; 2], shard: Option<u32>) -> Result<(), ApiError> {
        let mut conn = self.connection().await?;
        let field = format!("{}-{}", range[0], range[1]);
        let command = match shard {
            Some(shard) => redis::Cmd::hset(self.settle_progress_key(), field, shard),
            None => redis::Cmd::hdel(self.settle_progress_key(), field),
        };
        self.run(command.query_async::<()>(&mut conn)).await
    }

    /// The recovery sweep's place for the run over `range`: the next shard to read from the
    /// ledger and when (epoch ms). `None` when Redis has no record of it: never swept, or Redis
    /// lost its data since, which is how settle notices a flushed or replaced Redis.
    pub async fn sweep_state(&self, range: [u32; 2]) -> Result<Option<(u32, Millis)>, ApiError> {
        let mut conn = self.connection().await?;
        let field = format!("{}-{}", range[0], range[1]);
        let state: Option<String> = self.run(redis::Cmd::hget(self.sweep_key(), field).query_async(&mut conn)).await?;
        Ok(state.and_then(|state| {
            let (shard, due) = state.split_once(':')?;
            Some((shard.parse().ok()?, due.parse().ok()?))
        }))
    }

    /// Records the recovery sweep's next shard for `range` and when it is due.
    pub async fn set_sweep_state(&self, range: [u32; 2], next_shard: u32, due_ms: Millis) -> Result<(), ApiError> {
        let mut conn = self.connection().await?;
        let field = format!("{}-{}", range[0], range[1]);
        let command = redis::Cmd::hset(self.sweep_key(), field, format!("{next_shard}:{due_ms}"));
        self.run(command.query_async::<()>(&mut conn)).await
    }

    /// The recovery sweep's state, one field per shard range; a Redis without it is one settle
    /// has not swept, or one that lost its data.
    pub fn sweep_key(&self) -> String {
        format!("{}:settle:sweep", self.config.key_prefix)
    }

    fn settle_progress_key(&self) -> String {
        format!("{}:settle:progress", self.config.key_prefix)
    }

    /// Every `SETTLE_SHARDS` value packets were indexed under since its shards last drained
    /// (each send records its own): a larger earlier value has index shards this one no longer lists.
    pub async fn settle_layouts(&self) -> Result<Vec<u32>, ApiError> {
        let mut conn = self.connection().await?;
        self.run(redis::Cmd::smembers(self.settle_layouts_key()).query_async(&mut conn)).await
    }

    fn settle_layouts_key(&self) -> String {
        format!("{}:settle:layouts", self.config.key_prefix)
    }

    /// Forgets an earlier `SETTLE_SHARDS` value once its extra shards are empty.
    pub async fn forget_settle_layout(&self, shards: u32) -> Result<(), ApiError> {
        let mut conn = self.connection().await?;
        self.run(redis::Cmd::srem(self.settle_layouts_key(), shards).query_async::<()>(&mut conn)).await
    }

    /// Records what DynamoDB said of `id`, which Redis does not hold: a verdict is kept for the
    /// cache window; a failed lookup releases the lease so the next grab asks again.
    pub async fn settle_lookup(&self, id: &PacketId, verdict: LookupVerdict) -> Result<(), ApiError> {
        let mut conn = self.connection().await?;
        let key = self.keys(id).lookup;
        let keep_ms = LOOKUP_VERDICT_KEEP_MS as u64;
        let command = match verdict {
            LookupVerdict::Absent => redis::Cmd::pset_ex(key, "absent", keep_ms),
            LookupVerdict::Recorded => redis::Cmd::pset_ex(key, "recorded", keep_ms),
            LookupVerdict::Failed => redis::Cmd::del(key),
        };
        self.run(command.query_async::<()>(&mut conn)).await
    }

    /// The hot-packet fast path: on a packet this instance saw sell out, one `HGET` of the users
    /// hash answers (the caller's earlier share, or sold out) instead of the script. `None` when
    /// the users hash is gone (the packet was retired): the script and the ledger decide then.
    async fn grab_sold_out(
        &self,
        conn: &mut RedisConnection,
        keys: &PacketKeys,
        user: &UserId,
    ) -> Result<Option<GrabOutcome>, ApiError> {
        let mut pipe = redis::pipe();
        pipe.hget(&keys.users, user.as_str()).exists(&keys.users);
        let (prior, users_kept): (Option<String>, bool) = self.run(pipe.query_async(conn)).await?;
        Ok(match prior {
            Some(prior) => Some(scripts::parse_prior_grab(&prior).map_err(ApiError::redis_unavailable)?),
            None if users_kept => Some(GrabOutcome::SoldOut),
            None => None,
        })
    }

    async fn load_with(
        &self,
        packet: &Packet,
        grabs: &[LoggedGrab],
        shares: &[Cents],
        mode: LoadMode,
    ) -> Result<(), ApiError> {
        let mut conn = self.connection().await?;
        let keys = self.keys(&packet.id);
        // Index first: a packet indexed whose keys are missing is restored by settle.
        let index = self.settle_index_key(packet.id.settle_shard(self.settle_shards));
        let mut zadd = redis::cmd("ZADD");
        zadd.arg(&index).arg(packet.expires_at_ms).arg(packet.id.as_str());
        self.run(zadd.query_async::<()>(&mut conn)).await?;
        let layout = redis::Cmd::sadd(self.settle_layouts_key(), self.settle_shards);
        self.run(layout.query_async::<()>(&mut conn)).await?;

        let seed = packet.seed.to_hex();
        let fields = LoadFields {
            sender: packet.sender.as_str(),
            kind: packet.kind.as_str(),
            split: packet.split.map(|rule| rule.as_str()),
            greeting: packet.greeting.as_deref(),
            seed: &seed,
            total_cents: packet.total_cents,
            count: packet.count,
            created_at: packet.created_at_ms,
            expires_at: packet.expires_at_ms,
            shares_taken: (packet.count as usize).saturating_sub(shares.len()),
        };
        self.run(scripts::load(&mut conn, &keys, mode, &fields, grabs, shares)).await?;
        Ok(())
    }

    /// Runs one operation against Redis, bounded by twice the configured timeout.
    async fn run<T>(&self, operation: impl Future<Output = RedisResult<T>>) -> Result<T, ApiError> {
        within(self.config.timeout * 2, operation).await
    }

    /// `WAIT` on the primary holding `keys`: true when the replicas acknowledged every write
    /// made there so far within the timeout.
    async fn replicas_acknowledge(
        &self,
        conn: &mut RedisConnection,
        keys: &PacketKeys,
        wait: ReplicaWait,
    ) -> Result<bool, ApiError> {
        let mut command = redis::cmd("WAIT");
        command.arg(wait.replicas).arg(wait.timeout.as_millis() as u64);
        let acknowledged: i64 = match conn {
            RedisConnection::Single(single) => self.run(command.query_async(single)).await?,
            RedisConnection::Cluster(cluster) => {
                // WAIT must reach the primary that ran the grab: route it by the packet's key.
                let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::with_key(
                    &keys.meta,
                    SlotAddr::Master,
                )));
                let value = self.run(cluster.route_command(command, route)).await?;
                redis::from_redis_value(value).map_err(ApiError::redis_unavailable)?
            }
        };
        Ok(acknowledged >= i64::from(wait.replicas))
    }
}

async fn within<T>(limit: Duration, operation: impl Future<Output = RedisResult<T>>) -> Result<T, ApiError> {
    match tokio::time::timeout(limit, operation).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(ApiError::redis_unavailable(error)),
        Err(_) => Err(ApiError::redis_unavailable(format!("no answer within {limit:?}"))),
    }
}

async fn open(config: &RedisConfig) -> RedisResult<RedisConnection> {
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

impl LiveStore for RedisStore {
    async fn load(&self, packet: &Packet, shares: &[Cents]) -> Result<(), ApiError> {
        self.load_with(packet, &[], shares, LoadMode::Add).await
    }

    async fn restore(&self, packet: &Packet, grabs: &[LoggedGrab], shares: &[Cents]) -> Result<(), ApiError> {
        self.load_with(packet, grabs, shares, LoadMode::Add).await
    }

    async fn snapshot(&self, id: &PacketId) -> Result<Option<LivePacket>, ApiError> {
        Self::snapshot(self, id).await
    }

    async fn settle_lookup(&self, id: &PacketId, verdict: LookupVerdict) -> Result<(), ApiError> {
        Self::settle_lookup(self, id, verdict).await
    }

    async fn grab(&self, packet: &PacketId, user: &UserId, now_ms: Millis) -> Result<GrabOutcome, ApiError> {
        let mut conn = self.connection().await?;
        let keys = self.keys(packet);
        if let Some(memo) = &self.sold_out {
            if memo.contains(packet, Instant::now()) {
                if let Some(outcome) = self.grab_sold_out(&mut conn, &keys, user).await? {
                    return Ok(outcome);
                }
            }
        }
        let lease_ms = LOOKUP_LEASE.as_millis() as u64;
        let ScriptGrab { outcome, dirtied } = self.run(scripts::grab(&mut conn, &keys, user, now_ms, lease_ms)).await?;
        if dirtied {
            self.mark_dirty(&mut conn, packet).await;
        }
        if let (Some(memo), true) = (&self.sold_out, outcome.sold_out()) {
            memo.learn(packet, Instant::now());
        }
        if let (GrabOutcome::Grabbed { .. }, Some(wait)) = (outcome, self.grab_wait) {
            // On timeout the client gets a 503; its retry finds the grab and returns the same share.
            if !self.replicas_acknowledge(&mut conn, &keys, wait).await? {
                return Err(ApiError::redis_unavailable(format!(
                    "fewer than {} replicas acknowledged the grab within {:?}",
                    wait.replicas, wait.timeout
                )));
            }
        }
        Ok(outcome)
    }
}
