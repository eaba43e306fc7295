//! The settle side of the Redis store. Behind [`SettleIndex`]: the sharded index of open
//! packets, the dirty sets of packets with grabs not yet persisted, closing, progress marks,
//! re-sync, retirement and quarantine. Behind [`SettleCursor`], where settle's runs stand: one
//! hash field per shard range for the resume shard and for the recovery sweep, and the set of
//! shard layouts packets were indexed under.

use super::keys::{self, parse_sweep_state, range_field, sweep_state, SettleStateKey};
use super::scripts::{self, LoadMode, Loaded};
use super::store::{RedisStore, RETIRED_KEEP_MS};
use red_packets_core::clock::Millis;
use red_packets_core::domain::grab::LoggedGrab;
use red_packets_core::domain::PacketId;
use red_packets_core::ports::{CloseOutcome, Frozen, PacketImage, SettleCursor, SettleIndex, StoreError};

impl RedisStore {
    /// The settle index key of `shard`.
    pub fn settle_index_key(&self, shard: u32) -> String {
        keys::settle_index_key(&self.config.key_prefix, shard)
    }

    /// The set of packets in `shard` with grabs settle has not persisted.
    pub fn settle_dirty_key(&self, shard: u32) -> String {
        keys::settle_dirty_key(&self.config.key_prefix, shard)
    }

    /// The set of `shard`'s retired packets, scored by when their keys should have lapsed.
    pub fn settle_retired_key(&self, shard: u32) -> String {
        keys::settle_retired_key(&self.config.key_prefix, shard)
    }

    /// Every packet indexed for settle in `shard` (open, not retired or quarantined): for
    /// checks and operators; settle itself reads only [`RedisStore::packets_with_work`].
    pub async fn indexed_packets(&self, shard: u32) -> Result<Vec<PacketId>, StoreError> {
        let mut conn = self.connection().await?;
        let mut range = redis::cmd("ZRANGE");
        range.arg(self.settle_index_key(shard)).arg(0).arg(-1);
        let ids: Vec<String> = self.run(range.query_async(&mut conn)).await?;
        Ok(ids.iter().filter_map(|id| PacketId::parse(id)).collect())
    }

    /// The quarantine index: packets settle set aside for inspection, scored by when.
    pub fn quarantine_key(&self) -> String {
        SettleStateKey::Quarantine.under(&self.config.key_prefix)
    }

    /// The recovery sweep's state, one field per shard range; a Redis without it is one settle
    /// has not swept, or one that lost its data.
    pub fn sweep_key(&self) -> String {
        SettleStateKey::Sweep.under(&self.config.key_prefix)
    }

    fn settle_progress_key(&self) -> String {
        SettleStateKey::Progress.under(&self.config.key_prefix)
    }

    pub(super) fn settle_layouts_key(&self) -> String {
        SettleStateKey::Layouts.under(&self.config.key_prefix)
    }
}

impl SettleIndex for RedisStore {
    /// How many shard keys index open packets.
    fn settle_shards(&self) -> u32 {
        self.settle_shards
    }

    /// Runs `freeze.lua`: the packet closed to fresh grabs under `token`, and its whole log.
    async fn freeze(&self, id: &PacketId, token: &str) -> Result<Frozen, StoreError> {
        let mut conn = self.connection().await?;
        self.run_paged(scripts::freeze(&mut conn, &self.keys(id), token, self.limit())).await
    }

    /// Replaces what Redis holds of `packet` with the ledger's state while the freeze under
    /// `token` stands (settle's re-sync when Redis and the ledger disagree).
    async fn resync(&self, image: PacketImage<'_>, token: &str) -> Result<bool, StoreError> {
        let loaded = self.load_with(image, LoadMode::Replace { token }).await?;
        Ok(loaded == Loaded::Now)
    }

    /// Waits until the configured replicas hold every write made to `id`'s keys so far (a no-op
    /// without `GRAB_WAIT_REPLICAS`): settle persists only grabs a failover cannot take back.
    /// False when they did not acknowledge in time.
    async fn replicas_hold(&self, id: &PacketId) -> Result<bool, StoreError> {
        if self.grab_wait.is_none() {
            return Ok(true);
        }
        let mut conn = self.connection().await?;
        self.replicas_hold_writes(&mut conn, id).await
    }

    /// Closes the packet to grabs if it is finished or expired at `now_ms`.
    async fn close(&self, id: &PacketId, now_ms: Millis) -> Result<CloseOutcome, StoreError> {
        let mut conn = self.connection().await?;
        self.run(scripts::close(&mut conn, &self.keys(id), now_ms, false)).await
    }

    /// Records that the first `confirmed` grabs of the log are in the ledger.
    async fn mark_persisted(&self, id: &PacketId, confirmed: usize, last: &LoggedGrab) -> Result<(), StoreError> {
        let mut conn = self.connection().await?;
        self.run(scripts::mark_persisted(&mut conn, &self.keys(id), confirmed, last)).await?;
        Ok(())
    }

    /// The packets of `shard` with work for settle: grabs not yet persisted (the dirty set),
    /// or due at `now_ms` (expired by the index's `expires_at` scores). Two commands, whatever
    /// the number of open packets.
    async fn packets_with_work(&self, shard: u32, now_ms: Millis) -> Result<Vec<PacketId>, StoreError> {
        let mut conn = self.connection().await?;
        let mut pipe = redis::pipe();
        pipe.smembers(self.settle_dirty_key(shard));
        pipe.cmd("ZRANGE").arg(self.settle_index_key(shard)).arg("-inf").arg(now_ms).arg("BYSCORE");
        pipe.cmd("ZRANGE").arg(self.settle_retired_key(shard)).arg("-inf").arg(now_ms).arg("BYSCORE");
        let (dirty, due, lapsed): (Vec<String>, Vec<String>, Vec<String>) =
            self.run(pipe.query_async(&mut conn)).await?;
        let mut ids: Vec<PacketId> = dirty.iter().chain(&due).filter_map(|id| PacketId::parse(id)).collect();
        // A retired packet's keys are gone by now, unless a failover to a replica that missed
        // the retirement brought them back (open, perhaps with grabs): settle looks again then.
        for id in lapsed.iter().filter_map(|id| PacketId::parse(id)) {
            let keys = self.keys(&id);
            let mut exists = redis::cmd("EXISTS");
            exists.arg(&keys.packet).arg(&keys.pool).arg(&keys.grabs);
            let held: u32 = self.run(exists.query_async(&mut conn)).await?;
            let forget = redis::Cmd::zrem(self.settle_retired_key(shard), id.as_str());
            self.run(forget.query_async::<()>(&mut conn)).await?;
            if held > 0 {
                ids.push(id);
            }
        }
        ids.sort_unstable_by(|a, b| a.as_str().cmp(b.as_str()));
        ids.dedup();
        Ok(ids)
    }

    /// After settle's pass over `id`: takes it out of `shard`'s dirty set, then puts it back if
    /// it still has grabs not persisted (made during the pass, or deferred) and is still indexed.
    /// A grab after the removal sees a clean packet and marks it itself; one before it is seen
    /// here, so no grab is left unmarked.
    async fn settled_pass(&self, id: &PacketId, shard: u32) -> Result<(), StoreError> {
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
        progress.hget(&keys.packet, "persisted").llen(&keys.grabs);
        let (persisted, logged): (Option<u64>, u64) = self.run(progress.query_async(&mut conn)).await?;
        if logged > persisted.unwrap_or(0) {
            self.run(redis::Cmd::sadd(&dirty, id.as_str()).query_async::<()>(&mut conn)).await?;
        }
        Ok(())
    }

    async fn replay_held(&self, shard: u32) -> Result<u32, StoreError> {
        let mut conn = self.connection().await?;
        let mut listed = redis::pipe();
        listed.cmd("ZRANGE").arg(self.settle_index_key(shard)).arg(0).arg(-1);
        listed.cmd("ZRANGE").arg(self.settle_retired_key(shard)).arg(0).arg(-1);
        let (indexed, retired): (Vec<String>, Vec<String>) = self.run(listed.query_async(&mut conn)).await?;
        let mut replayed = 0;
        for id in indexed.iter().chain(&retired).filter_map(|id| PacketId::parse(id)) {
            let keys = self.keys(&id);
            let expires_at: Option<Millis> =
                self.run(redis::Cmd::hget(&keys.packet, "expires_at").query_async(&mut conn)).await?;
            let Some(expires_at) = expires_at else { continue };
            // One key per command: in cluster mode every command stays within its key's slot.
            for key in [&keys.packet, &keys.pool, &keys.grabs] {
                self.run(redis::Cmd::persist(key).query_async::<()>(&mut conn)).await?;
            }
            self.run(redis::Cmd::hset(&keys.packet, "persisted", 0).query_async::<()>(&mut conn)).await?;
            let mut index = redis::pipe();
            index.zadd(self.settle_index_key(shard), id.as_str(), expires_at);
            index.sadd(self.settle_dirty_key(shard), id.as_str());
            index.zrem(self.settle_retired_key(shard), id.as_str());
            self.run(index.query_async::<()>(&mut conn)).await?;
            replayed += 1;
        }
        Ok(replayed)
    }

    /// Takes a finalised packet out of settle index `shard`, lets its keys expire shortly, and
    /// lists it among the retired until a minute after they should have.
    async fn retire(&self, id: &PacketId, shard: u32, now_ms: Millis) -> Result<(), StoreError> {
        let mut conn = self.connection().await?;
        let keys = self.keys(id);
        let mut unindex = redis::pipe();
        unindex.zrem(self.settle_index_key(shard), id.as_str()).srem(self.settle_dirty_key(shard), id.as_str());
        unindex.zadd(self.settle_retired_key(shard), id.as_str(), now_ms + RETIRED_KEEP_MS + 60_000);
        self.run(unindex.query_async::<()>(&mut conn)).await?;
        // One key per command: in cluster mode every command stays within the packet's slot.
        for key in [&keys.packet, &keys.pool, &keys.grabs] {
            let mut expire = redis::cmd("PEXPIRE");
            expire.arg(key).arg(RETIRED_KEEP_MS);
            self.run(expire.query_async::<()>(&mut conn)).await?;
        }
        Ok(())
    }

    /// Moves a packet whose books settle cannot balance from settle index `shard` to the
    /// quarantine index (scored by when), keeping its keys as they are for an operator.
    async fn quarantine(&self, id: &PacketId, shard: u32, now_ms: Millis) -> Result<(), StoreError> {
        let mut conn = self.connection().await?;
        self.run(scripts::close(&mut conn, &self.keys(id), now_ms, true)).await?;
        let add = redis::Cmd::zadd(self.quarantine_key(), id.as_str(), now_ms);
        self.run(add.query_async::<()>(&mut conn)).await?;
        let mut unindex = redis::pipe();
        unindex.zrem(self.settle_index_key(shard), id.as_str()).srem(self.settle_dirty_key(shard), id.as_str());
        self.run(unindex.query_async::<()>(&mut conn)).await
    }

    /// The quarantine index, oldest first.
    async fn quarantined(&self, limit: usize) -> Result<Vec<(PacketId, Millis)>, StoreError> {
        let mut conn = self.connection().await?;
        let mut range = redis::cmd("ZRANGE");
        let last = i64::try_from(limit.saturating_sub(1)).unwrap_or(i64::MAX);
        range.arg(self.quarantine_key()).arg(0).arg(last).arg("WITHSCORES");
        let found: Vec<(String, f64)> = self.run(range.query_async(&mut conn)).await?;
        Ok(found.into_iter().filter_map(|(id, at)| Some((PacketId::parse(&id)?, at as Millis))).collect())
    }

    /// Out of the quarantine index, into its shard's index (due now) and dirty set.
    async fn release(&self, id: &PacketId) -> Result<bool, StoreError> {
        let mut conn = self.connection().await?;
        let removed: u32 =
            self.run(redis::Cmd::zrem(self.quarantine_key(), id.as_str()).query_async(&mut conn)).await?;
        if removed == 0 {
            return Ok(false);
        }
        let shard = id.settle_shard(self.settle_shards);
        let mut requeue = redis::pipe();
        requeue.zadd(self.settle_index_key(shard), id.as_str(), 0).sadd(self.settle_dirty_key(shard), id.as_str());
        self.run(requeue.query_async::<()>(&mut conn)).await?;
        Ok(true)
    }
}

impl SettleCursor for RedisStore {
    /// Where a run over `range` that stopped early left off, if it did.
    async fn resume_shard(&self, range: [u32; 2]) -> Result<Option<u32>, StoreError> {
        let mut conn = self.connection().await?;
        self.run(redis::Cmd::hget(self.settle_progress_key(), range_field(range)).query_async(&mut conn)).await
    }

    /// Records where the next run over `range` starts: `Some(shard)` after a run that stopped
    /// early, `None` after a complete one.
    async fn set_resume_shard(&self, range: [u32; 2], shard: Option<u32>) -> Result<(), StoreError> {
        let mut conn = self.connection().await?;
        let field = range_field(range);
        let command = match shard {
            Some(shard) => redis::Cmd::hset(self.settle_progress_key(), field, shard),
            None => redis::Cmd::hdel(self.settle_progress_key(), field),
        };
        self.run(command.query_async::<()>(&mut conn)).await
    }

    /// The recovery sweep's place for the run over `range`: the next shard to read from the
    /// ledger and when (epoch ms). `None` when Redis has no record of it: never swept, or Redis
    /// lost its data since, which is how settle notices a flushed or replaced Redis.
    async fn sweep_state(&self, range: [u32; 2]) -> Result<Option<(u32, Millis)>, StoreError> {
        let mut conn = self.connection().await?;
        let read = redis::Cmd::hget(self.sweep_key(), range_field(range));
        let state: Option<String> = self.run(read.query_async(&mut conn)).await?;
        Ok(state.as_deref().and_then(parse_sweep_state))
    }

    /// Records the recovery sweep's next shard for `range` and when it is due.
    async fn set_sweep_state(&self, range: [u32; 2], next_shard: u32, due_ms: Millis) -> Result<(), StoreError> {
        let mut conn = self.connection().await?;
        let command = redis::Cmd::hset(self.sweep_key(), range_field(range), sweep_state(next_shard, due_ms));
        self.run(command.query_async::<()>(&mut conn)).await
    }

    /// Every `SETTLE_SHARDS` value packets were indexed under since its shards last drained
    /// (each send records its own): a larger earlier value has index shards this one no longer lists.
    async fn settle_layouts(&self) -> Result<Vec<u32>, StoreError> {
        let mut conn = self.connection().await?;
        self.run(redis::Cmd::smembers(self.settle_layouts_key()).query_async(&mut conn)).await
    }

    /// Forgets an earlier `SETTLE_SHARDS` value once its extra shards are empty.
    async fn forget_settle_layout(&self, shards: u32) -> Result<(), StoreError> {
        let mut conn = self.connection().await?;
        self.run(redis::Cmd::srem(self.settle_layouts_key(), shards).query_async::<()>(&mut conn)).await
    }
}
