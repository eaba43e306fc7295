//! The live store: packets' shares and grabs in Redis, behind [`LiveStore`]. Every failure to
//! reach Redis is `StoreError::Unavailable` (a 503 at the HTTP edge), within the configured timeout.
//!
//! A grab is one `grab.lua` call; concurrent grabs of one packet in this environment go as one
//! `grab_many.lua` call ([`coalesce`](super::coalesce)). What the script cannot decide alone
//! stays in here: a packet Redis does not hold is answered from the ledger, one caller per id
//! asking while the others wait for its verdict (the lookup lease); a packet this instance saw
//! sell out is answered from one read (the sold-out memo); a Redis over `maxmemory` still
//! answers repeats from a read.

use std::time::Duration;

use redis::RedisResult;
use tokio::sync::OnceCell;

use super::connection::{within, RedisConnection};
use super::grab_batch::GrabCoalescer;
use super::keys::{replicas_probe_key, PacketKeys};
use super::rate::RefusedMemo;
use super::record::{live_packet, live_page};
use super::scripts::{self, LoadMode, Loaded};
use super::sold_out::SoldOutMemo;
use red_packets_core::clock::{Clock, Millis};
use red_packets_core::config::{Config, RedisConfig, ReplicaWait};
use red_packets_core::domain::grab::GrabAttempt;
use red_packets_core::domain::risk::GrabRate;
use red_packets_core::domain::{Cents, LivePacket, Packet, PacketId};
use red_packets_core::ports::{
    CancelOutcome, GrabCall, Ledger, LiveAnswer, LivePage, LiveStore, LiveVersion, PacketImage, Restored, StoreError,
};

/// How long a finalised packet's keys stay, answering repeat grabs from Redis.
pub const RETIRED_KEEP_MS: Millis = 10 * 60 * 1000;

/// How long one caller may take to ask the ledger about a packet Redis does not hold;
/// meanwhile every other grab on that id waits for its verdict instead of asking too.
pub const LOOKUP_LEASE: Duration = Duration::from_secs(5);

/// How often a grab waiting for another caller's lookup asks Redis again.
pub(super) const LOOKUP_POLL: Duration = Duration::from_millis(20);

/// The live store: packets' shares, grabs and the settle index, in Redis.
pub struct RedisStore {
    pub(super) config: RedisConfig,
    connection: OnceCell<RedisConnection>,
    pub(super) settle_shards: u32,
    pub(super) grab_wait: Option<ReplicaWait>,
    pub(super) sold_out: Option<SoldOutMemo>,
    pub(super) marks_for_settle: bool,
    pub(super) coalescer: Option<GrabCoalescer>,
    pub(super) grab_rate: Option<GrabRate>,
    /// How long Redis remembers what the ledger said of an id it does not hold.
    pub(super) lookup_verdict_keep: Duration,
    /// Users this instance's counts found past the grab rate (counted alongside the grab).
    pub(super) refused: RefusedMemo,
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
            coalescer: Some(GrabCoalescer::default()),
            grab_rate: config.grab_rate,
            lookup_verdict_keep: config.lookup_verdict_keep,
            refused: RefusedMemo::default(),
        }
    }

    /// The same store with every grab its own script call, however many run at once
    /// (benchmarks measure what coalescing saves against this).
    pub fn without_coalescing(mut self) -> Self {
        self.coalescer = None;
        self
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

    /// The shared connection, opened on first use. Failing to open it is unavailable; the next call tries again.
    pub async fn connection(&self) -> Result<RedisConnection, StoreError> {
        let limit = self.limit();
        self.connection.get_or_try_init(|| within(limit, RedisConnection::open(&self.config))).await.cloned()
    }

    /// The Redis keys of packet `id`.
    pub fn keys(&self, id: &PacketId) -> PacketKeys {
        PacketKeys::of(&self.config.key_prefix, id)
    }

    /// How long one call to Redis may take before it is unavailable: twice the configured timeout.
    pub(super) fn limit(&self) -> Duration {
        self.config.timeout * 2
    }

    /// Runs one operation against Redis within [`RedisStore::limit`].
    pub(super) async fn run<T>(
        &self,
        operation: impl std::future::Future<Output = RedisResult<T>>,
    ) -> Result<T, StoreError> {
        within(self.limit(), operation).await
    }

    /// Runs an operation of several calls (a large packet's staged load, a paged read), each
    /// of which bounds its own calls by [`RedisStore::limit`], within [`PAGED_CALLS`] of them.
    pub(super) async fn run_paged<T>(
        &self,
        operation: impl std::future::Future<Output = RedisResult<T>>,
    ) -> Result<T, StoreError> {
        within(self.limit() * PAGED_CALLS, operation).await
    }

    /// The packet's fields and whole grab log, read at one instant; `None` when Redis holds no such packet.
    pub async fn snapshot(&self, id: &PacketId) -> Result<Option<LivePacket>, StoreError> {
        let mut conn = self.connection().await?;
        let Some(raw) = self.run_paged(scripts::snapshot(&mut conn, &self.keys(id), self.limit())).await? else {
            return Ok(None);
        };
        live_packet(id, &raw).map(Some)
    }

    /// Loads `image` (a packet, cancelled, closed or not, with its grabs and pool), and indexes
    /// it for settle.
    pub(super) async fn load_with(&self, image: PacketImage<'_>, mode: LoadMode<'_>) -> Result<Loaded, StoreError> {
        let packet = image.packet;
        let mut conn = self.connection().await?;
        let keys = self.keys(&packet.id);
        // Index first: a packet indexed whose keys are missing is restored by settle.
        let index = self.settle_index_key(packet.id.settle_shard(self.settle_shards));
        let mut zadd = redis::cmd("ZADD");
        zadd.arg(&index).arg(packet.expires_at_ms).arg(packet.id.as_str());
        self.run(zadd.query_async::<()>(&mut conn)).await?;
        let layout = redis::Cmd::sadd(self.settle_layouts_key(), self.settle_shards);
        self.run(layout.query_async::<()>(&mut conn)).await?;

        match self.run_paged(scripts::load(&mut conn, &keys, mode, image, self.limit())).await? {
            Loaded::StageLost => Err(stage_lost()),
            Loaded::Staging => Err(being_staged()),
            loaded => Ok(loaded),
        }
    }

    /// True when the configured replicas hold every write made on the primary of `id`'s slot
    /// so far (always, without `GRAB_WAIT_REPLICAS`). `WAIT` counts the replicas that reached
    /// this connection's last write, so a write of its own comes first; replication is ordered,
    /// so once they hold it they hold every write before it, whoever made them.
    pub(super) async fn replicas_hold_writes(
        &self,
        conn: &mut RedisConnection,
        id: &PacketId,
    ) -> Result<bool, StoreError> {
        let Some(wait) = self.grab_wait else { return Ok(true) };
        let probe = replicas_probe_key(&self.config.key_prefix, id);
        let touch = redis::Cmd::pset_ex(probe, red_packets_core::clock::SystemClock.now_ms(), 60_000);
        self.run(touch.query_async::<()>(conn)).await?;
        conn.replicas_acknowledge(&self.keys(id).packet, wait, self.limit()).await
    }
}

/// The calls a paged or staged operation may make in all, each within [`RedisStore::limit`]:
/// a 100,000-share packet's load is 41 (40 staged chunks and the script), its snapshot 21.
const PAGED_CALLS: u32 = 64;

/// Another caller is staging the same large packet's add (the crowd reloading a lost campaign
/// packet): ask again shortly.
fn being_staged() -> StoreError {
    StoreError::redis_unavailable("another caller is loading this packet; try again shortly")
}

/// A staged load `load.lua` found short: a stage key expired, or a failover lost a chunk.
fn stage_lost() -> StoreError {
    StoreError::redis_unavailable("a staged load found its staged keys short and changed nothing; try again")
}

impl LiveStore for RedisStore {
    #[tracing::instrument(level = "debug", name = "redis.load", skip_all, fields(packet_id = %packet.id))]
    async fn load(&self, packet: &Packet, shares: &[Cents]) -> Result<(), StoreError> {
        let pool: Vec<(u32, Cents)> = (1..).zip(shares.iter().copied()).collect();
        let image = PacketImage { packet, cancelled: false, closed: false, grabs: &[], pool: &pool };
        self.load_with(image, LoadMode::Add).await?;
        Ok(())
    }

    async fn restore(&self, image: PacketImage<'_>) -> Result<Restored, StoreError> {
        if let Some(memo) = &self.sold_out {
            memo.forget(&image.packet.id);
        }
        Ok(match self.load_with(image, LoadMode::Add).await? {
            Loaded::Now => Restored::Loaded,
            Loaded::Partial => Restored::Partial,
            Loaded::Already | Loaded::FreezeLost => Restored::AlreadyHeld,
            Loaded::StageLost => return Err(stage_lost()),
            Loaded::Staging => return Err(being_staged()),
        })
    }

    #[tracing::instrument(level = "debug", name = "redis.page", skip_all, fields(packet_id = %id, from))]
    async fn page(&self, id: &PacketId, from: u32, len: u32, also: u32) -> Result<Option<LivePage>, StoreError> {
        let mut conn = self.connection().await?;
        let asked = scripts::PageAsked { from, len, also };
        let Some(raw) = self.run(scripts::page(&mut conn, &self.keys(id), asked, self.limit())).await? else {
            return Ok(None);
        };
        live_page(id, raw).map(Some)
    }

    #[tracing::instrument(level = "debug", name = "redis.version", skip_all, fields(packet_id = %id))]
    async fn version(&self, id: &PacketId) -> Result<Option<LiveVersion>, StoreError> {
        let mut conn = self.connection().await?;
        let raw = self.run(scripts::version(&mut conn, &self.keys(id), self.limit())).await?;
        Ok(raw.map(|raw| raw.version()))
    }

    #[tracing::instrument(level = "debug", name = "redis.snapshot", skip_all, fields(packet_id = %id))]
    async fn snapshot(&self, id: &PacketId) -> Result<Option<LivePacket>, StoreError> {
        Self::snapshot(self, id).await
    }

    #[tracing::instrument(level = "debug", name = "redis.grab", skip_all, fields(packet_id = %packet, again = call.again))]
    async fn try_grab<L: Ledger>(
        &self,
        packet: &PacketId,
        attempt: &GrabAttempt,
        call: GrabCall<'_, L>,
    ) -> Result<LiveAnswer, StoreError> {
        self.grab_counting(packet, attempt, call).await
    }

    /// Runs `cancel.lua` (asking again for a while when settle is re-syncing the packet), then
    /// marks a cancelled packet for settle and, with `GRAB_WAIT_REPLICAS`, has the replicas
    /// acknowledge the close before answering. Unlike a grab's mark, a failed mark or wait fails
    /// the call (503): the sender retries, and the retry marks it.
    #[tracing::instrument(level = "debug", name = "redis.cancel", skip_all, fields(packet_id = %id))]
    async fn cancel(&self, id: &PacketId, now_ms: Millis) -> Result<CancelOutcome, StoreError> {
        let mut conn = self.connection().await?;
        let keys = self.keys(id);
        let mut outcome = CancelOutcome::Resyncing;
        for _ in 0..(LOOKUP_LEASE.as_millis() / LOOKUP_POLL.as_millis()) {
            outcome = self.run(scripts::cancel(&mut conn, &keys, now_ms)).await?;
            if outcome != CancelOutcome::Resyncing {
                break;
            }
            tokio::time::sleep(LOOKUP_POLL).await;
        }
        if outcome == CancelOutcome::Cancelled {
            let dirty = self.settle_dirty_key(id.settle_shard(self.settle_shards));
            self.run(redis::Cmd::sadd(dirty, id.as_str()).query_async::<()>(&mut conn)).await?;
            if !self.replicas_hold_writes(&mut conn, id).await? {
                return Err(StoreError::redis_unavailable("the replicas did not acknowledge the cancel in time"));
            }
        }
        Ok(outcome)
    }
}
