//! Where settle's runs stand, kept in Redis behind [`SettleCursor`]: one hash field per shard
//! range for the resume shard and for the recovery sweep, and the set of shard layouts packets
//! were indexed under.

use super::store::RedisStore;
use crate::clock::Millis;
use crate::ports::{SettleCursor, StoreError};

impl RedisStore {
    /// The recovery sweep's state, one field per shard range; a Redis without it is one settle
    /// has not swept, or one that lost its data.
    pub fn sweep_key(&self) -> String {
        format!("{}:settle:sweep", self.config.key_prefix)
    }

    fn settle_progress_key(&self) -> String {
        format!("{}:settle:progress", self.config.key_prefix)
    }

    pub(super) fn settle_layouts_key(&self) -> String {
        format!("{}:settle:layouts", self.config.key_prefix)
    }
}

/// The hash field of the run over `range`.
fn range_field(range: [u32; 2]) -> String {
    format!("{}-{}", range[0], range[1])
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
        Ok(state.and_then(|state| {
            let (shard, due) = state.split_once(':')?;
            Some((shard.parse().ok()?, due.parse().ok()?))
        }))
    }

    /// Records the recovery sweep's next shard for `range` and when it is due.
    async fn set_sweep_state(&self, range: [u32; 2], next_shard: u32, due_ms: Millis) -> Result<(), StoreError> {
        let mut conn = self.connection().await?;
        let command = redis::Cmd::hset(self.sweep_key(), range_field(range), format!("{next_shard}:{due_ms}"));
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
