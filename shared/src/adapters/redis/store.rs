//! The live store: packets' shares and grabs in Redis, behind [`LiveStore`]. Every failure to
//! reach Redis is `StoreError::Unavailable` (a 503 at the HTTP edge), within the configured timeout.
//!
//! A grab is one `grab.lua` call; concurrent grabs of one packet in this environment go as one
//! `grab_many.lua` call ([`coalesce`](super::coalesce)). What the script cannot decide alone
//! stays in here: a packet Redis does not hold is answered from the ledger, one caller per id
//! asking while the others wait for its verdict (the lookup lease); a packet this instance saw
//! sell out is answered from one read (the sold-out memo); a Redis over `maxmemory` still
//! answers repeats from a read.

use std::time::{Duration, Instant};

use redis::RedisResult;
use tokio::sync::OnceCell;

use super::coalesce::{Coalescer, Unanswered};
use super::connection::{within, RedisConnection};
use super::keys::PacketKeys;
use super::keys::{grab_entry, replicas_probe_key, shares_left};
use super::rate::{self, RefusedMemo};
use super::record::live_packet;
use super::scripts::{self, LoadMode, Loaded, Lookup, ScriptGrab};
use super::sold_out::SoldOutMemo;
use crate::clock::{Clock, Millis};
use crate::config::{Config, RedisConfig, ReplicaWait};
use crate::domain::grab::GrabAttempt;
use crate::domain::risk::{GrabRate, RateCounting};
use crate::domain::{Cents, GrabOutcome, LivePacket, Packet, PacketId, UserId};
use crate::ports::{CancelOutcome, LiveAnswer, LiveStore, PacketImage, Restored, StoreError};

/// How long a finalised packet's keys stay, answering repeat grabs from Redis.
pub const RETIRED_KEEP_MS: Millis = 10 * 60 * 1000;

/// How long Redis remembers what the ledger said of an id it does not hold (the lookup's cache window).
pub const LOOKUP_VERDICT_KEEP_MS: Millis = 60 * 1000;

/// How long one caller may take to ask the ledger about a packet Redis does not hold;
/// meanwhile every other grab on that id waits for its verdict instead of asking too.
pub const LOOKUP_LEASE: Duration = Duration::from_secs(5);

/// How often a grab waiting for another caller's lookup asks Redis again.
const LOOKUP_POLL: Duration = Duration::from_millis(20);

/// The live store: packets' shares, grabs and the settle index, in Redis.
pub struct RedisStore {
    pub(super) config: RedisConfig,
    connection: OnceCell<RedisConnection>,
    pub(super) settle_shards: u32,
    pub(super) grab_wait: Option<ReplicaWait>,
    sold_out: Option<SoldOutMemo>,
    #[cfg(any(test, feature = "test-support"))]
    marks_for_settle: bool,
    coalescer: Option<GrabCoalescer>,
    grab_rate: Option<GrabRate>,
    /// Users this instance's counts found past the grab rate (counted alongside the grab).
    refused: RefusedMemo,
}

/// Concurrent grabs of one packet (keyed by its hash's key), coalesced into one script call.
type GrabCoalescer = Coalescer<String, TimedGrab, ScriptGrab, BatchFailure>;

/// One grab waiting in the coalescer: who, carrying what passphrase, at the time it read.
#[derive(Debug, Clone)]
struct TimedGrab {
    attempt: GrabAttempt,
    now_ms: Millis,
    /// Counts against the user's grab rate: the request's first call does; a call again while
    /// another caller asks the ledger, or after this one asked it, does not.
    counts: bool,
}

/// The batch's answers in its order: each grab the rate refused its refusal, the others the
/// script's answers in turn (a short answer leaves the rest unanswered).
fn with_refusals(limited: Vec<Option<GrabOutcome>>, answers: Vec<ScriptGrab>) -> Vec<ScriptGrab> {
    let mut answers = answers.into_iter();
    limited
        .into_iter()
        .map_while(|refused| match refused {
            Some(outcome) => Some(ScriptGrab::Decided { outcome, dirtied: false }),
            None => answers.next(),
        })
        .collect()
}

/// Why a grab script call (one grab's or a batch's) answered nothing.
#[derive(Debug, Clone)]
enum BatchFailure {
    /// Redis is over `maxmemory` and refused the script whole, before anything changed.
    OutOfMemory(String),
    /// Redis failed or did not answer in time, or the batch ended without this grab's answer.
    Unavailable(String),
}

impl From<Unanswered> for BatchFailure {
    fn from(_: Unanswered) -> Self {
        BatchFailure::Unavailable("the grab's batch ended without its answer".into())
    }
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
            #[cfg(any(test, feature = "test-support"))]
            marks_for_settle: true,
            coalescer: Some(GrabCoalescer::default()),
            grab_rate: config.grab_rate,
            refused: RefusedMemo::default(),
        }
    }

    /// The same store with every grab its own script call, however many run at once
    /// (benchmarks measure what coalescing saves against this).
    #[cfg(any(test, feature = "test-support"))]
    pub fn without_coalescing(mut self) -> Self {
        self.coalescer = None;
        self
    }

    /// The same store, never marking packets for settle after a grab: what a grab whose mark
    /// failed between the script and the mark leaves behind (tests prove the expiry backstop).
    #[cfg(any(test, feature = "test-support"))]
    pub fn without_settle_marks(mut self) -> Self {
        self.marks_for_settle = false;
        self
    }

    /// The same store without the hot-packet fast path: every grab runs the script (benchmarks
    /// measure what the fast path saves against this).
    #[cfg(any(test, feature = "test-support"))]
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

    /// Runs the grab script for `attempt`: alone, or in one call with the other grabs of the
    /// packet this environment is running at the same moment. A Redis over `maxmemory` refuses
    /// the script whole (-OOM) before it changes anything; a repeat is still answered then,
    /// from a read.
    async fn grab_script(
        &self,
        conn: &mut RedisConnection,
        keys: &PacketKeys,
        attempt: &GrabAttempt,
        now_ms: Millis,
        counts: bool,
    ) -> Result<ScriptGrab, StoreError> {
        let grab = TimedGrab { attempt: attempt.clone(), now_ms, counts };
        let answered = match &self.coalescer {
            Some(coalescer) => coalescer.call(&keys.packet, grab, |batch| self.grab_batch(keys, batch)).await,
            None => self
                .grab_batch(keys, vec![grab])
                .await
                .and_then(|answers| answers.into_iter().next().ok_or_else(|| BatchFailure::from(Unanswered))),
        };
        let refused = match answered {
            Ok(answer) => return Ok(answer),
            Err(BatchFailure::OutOfMemory(refused)) => refused,
            Err(BatchFailure::Unavailable(reason)) => return Err(StoreError::redis_unavailable(reason)),
        };
        match self.answer_from_reads(conn, keys, &attempt.user, false).await? {
            Some(outcome) => Ok(ScriptGrab::Decided { outcome, dirtied: false }),
            None => Err(StoreError::redis_unavailable(refused)),
        }
    }

    /// One script call for `batch`, every grab of one packet: `grab.lua` for one, `grab_many.lua`
    /// for more, at the latest of their clock readings (the batch's one instant, no earlier
    /// than any of its grabs); the answers in the batch's order.
    async fn grab_batch(&self, keys: &PacketKeys, batch: Vec<TimedGrab>) -> Result<Vec<ScriptGrab>, BatchFailure> {
        let mut conn = self.connection().await.map_err(|error| BatchFailure::Unavailable(error.to_string()))?;
        let started = Instant::now();
        let answered = tokio::time::timeout(self.limit(), async {
            // Exact: the batch's counts first, and only the grabs within the limit go on.
            // Alongside: the users this instance found past the limit are refused without a
            // call, and the others' counts go with the script, at once.
            let (limited, alongside): (Vec<Option<GrabOutcome>>, _) = match self.grab_rate {
                None => (vec![None; batch.len()], None),
                Some(rate) if rate.counting == RateCounting::Exact => {
                    let users = batch.iter().filter(|grab| grab.counts).map(|grab| (&grab.attempt.user, grab.now_ms));
                    let prefix = &self.config.key_prefix;
                    let mut verdicts = rate::count(&conn, prefix, rate, self.config.cluster, users).await?.into_iter();
                    (
                        batch.iter().map(|grab| if grab.counts { verdicts.next().flatten() } else { None }).collect(),
                        None,
                    )
                }
                Some(rate) => {
                    let memo = |grab: &TimedGrab| self.refused.refusal(rate, &grab.attempt.user, grab.now_ms);
                    let refusals = batch.iter().map(|grab| grab.counts.then(|| memo(grab)).flatten()).collect();
                    (refusals, Some((rate, conn.clone())))
                }
            };
            let admitted: Vec<&TimedGrab> =
                batch.iter().zip(&limited).filter(|(_, refused)| refused.is_none()).map(|(grab, _)| grab).collect();
            let script = async {
                match admitted.as_slice() {
                    [] => Ok(Vec::new()),
                    [one] => Ok(vec![scripts::grab(&mut conn, keys, &one.attempt, one.now_ms).await?]),
                    many => {
                        let now_ms = many.iter().map(|grab| grab.now_ms).max().unwrap_or_default();
                        let attempts: Vec<&GrabAttempt> = many.iter().map(|grab| &grab.attempt).collect();
                        scripts::grab_many(&mut conn, keys, now_ms, &attempts).await
                    }
                }
            };
            let answers = match alongside {
                None => script.await?,
                Some((rate, counter)) => {
                    let users: Vec<(&UserId, Millis)> = admitted
                        .iter()
                        .filter(|grab| grab.counts)
                        .map(|grab| (&grab.attempt.user, grab.now_ms))
                        .collect();
                    let (answers, counts) = tokio::join!(script, self.count_alongside(&counter, rate, &users));
                    for ((user, now_ms), verdict) in users.iter().zip(counts) {
                        if verdict.is_some() {
                            self.refused.learn(rate, user, *now_ms);
                        }
                    }
                    answers?
                }
            };
            Ok::<_, redis::RedisError>(with_refusals(limited, answers))
        })
        .await;
        super::connection::record_call(started, !matches!(answered, Ok(Ok(_))));
        if batch.len() > 1 {
            metrics::counter!("GrabBatches").increment(1);
            metrics::counter!("GrabsBatched").increment(batch.len() as u64);
        }
        match answered {
            Ok(Ok(answers)) => Ok(answers),
            Ok(Err(error)) if error.code() == Some("OOM") => Err(BatchFailure::OutOfMemory(error.to_string())),
            Ok(Err(error)) => Err(BatchFailure::Unavailable(error.to_string())),
            Err(_) => Err(BatchFailure::Unavailable(format!("no answer within {:?}", self.limit()))),
        }
    }

    /// Counts `users`' grabs alongside their script call: each one's verdict, in order. The
    /// grabs' answers do not wait on it past [`RedisConfig::timeout`], and a count that fails
    /// or times out finds nobody past the limit (logged): the rate counted alongside is
    /// best-effort, never a grab's failure.
    async fn count_alongside(
        &self,
        conn: &RedisConnection,
        rate: GrabRate,
        users: &[(&UserId, Millis)],
    ) -> Vec<Option<GrabOutcome>> {
        let counting = rate::count(conn, &self.config.key_prefix, rate, self.config.cluster, users.iter().copied());
        match tokio::time::timeout(self.config.timeout, counting).await {
            Ok(Ok(verdicts)) => verdicts,
            Ok(Err(error)) => {
                tracing::warn!(%error, "the grab rate's count alongside failed; nobody refused for it");
                vec![None; users.len()]
            }
            Err(_) => {
                tracing::warn!("the grab rate's count alongside timed out; nobody refused for it");
                vec![None; users.len()]
            }
        }
    }

    /// A grab attempt: the sold-out memo's read, else the script, waiting while another caller
    /// asks the ledger. With `counts`, the request's first call counts against its user's grab
    /// rate; none after it does.
    async fn grab_counting(
        &self,
        packet: &PacketId,
        attempt: &GrabAttempt,
        clock: &dyn Clock,
        counts: bool,
    ) -> Result<LiveAnswer, StoreError> {
        let mut conn = self.connection().await?;
        let keys = self.keys(packet);
        if let Some(memo) = &self.sold_out {
            if memo.contains(packet, Instant::now()) {
                if let Some(outcome) = self.answer_from_reads(&mut conn, &keys, &attempt.user, true).await? {
                    return Ok(LiveAnswer::Decided(outcome));
                }
            }
        }
        // Waits while another caller asks the ledger, within the lease: once it lapses, a waiter
        // claims the lookup itself. Each attempt reads the clock afresh, so no wait moves a grab
        // before its packet's expiry.
        let polls = LOOKUP_LEASE.as_millis() / LOOKUP_POLL.as_millis() + 10;
        for poll in 0..polls {
            let now_ms = clock.now_ms();
            match self.grab_script(&mut conn, &keys, attempt, now_ms, counts && poll == 0).await? {
                ScriptGrab::Decided { outcome, dirtied } => {
                    return self.decided(&mut conn, &keys, packet, outcome, dirtied).await.map(LiveAnswer::Decided)
                }
                ScriptGrab::AskLedger(lookup) => {
                    return Ok(LiveAnswer::NotHeld { now_ms, holds_lookup: lookup == Lookup::Claimed })
                }
                ScriptGrab::LookupPending | ScriptGrab::Resyncing => tokio::time::sleep(LOOKUP_POLL).await,
            }
        }
        Err(StoreError::redis_unavailable(format!(
            "packet {packet} is being looked up or re-synced; no answer within the lease"
        )))
    }

    /// A repeat grab or a sold-out packet answered by reads alone (no script, nothing written):
    /// the caller's earlier share, or sold out. `None` when reads cannot decide (a fresh grab
    /// on a packet with shares left, a packet with recipients or a passphrase, whose checks
    /// come first and are the script's, or a packet Redis does not hold, e.g. retired). With
    /// `known_sold_out` (the hot-packet memo) it is one `HMGET`: no share is left to count.
    async fn answer_from_reads(
        &self,
        conn: &mut RedisConnection,
        keys: &PacketKeys,
        user: &UserId,
        known_sold_out: bool,
    ) -> Result<Option<GrabOutcome>, StoreError> {
        let mut pipe = redis::pipe();
        pipe.cmd("HMGET").arg(&keys.packet).arg(PacketKeys::grabber_field(user)).arg("open_until").arg("gate");
        type Fields = (Option<String>, Option<String>, Option<String>);
        let ((prior, held, gate), shares_left): (Fields, u32) = if known_sold_out {
            let (read,) = self.run(pipe.query_async(conn)).await?;
            (read, 0)
        } else {
            pipe.lindex(&keys.pool, 0);
            let (read, head): (Fields, Option<String>) = self.run(pipe.query_async(conn)).await?;
            (read, shares_left(head.as_deref()))
        };
        Ok(match (prior, held, gate) {
            (Some(prior), _, _) => Some(already(&prior, shares_left)?),
            (None, Some(_), None) if shares_left == 0 => Some(GrabOutcome::SoldOut),
            _ => None,
        })
    }

    /// Records what the ledger said of `id` (`recorded` or `absent`) for the cache window; a
    /// failed lookup (`None`) releases the lease so the next grab asks again.
    async fn record_lookup(&self, id: &PacketId, verdict: Option<&str>) -> Result<(), StoreError> {
        let mut conn = self.connection().await?;
        let key = self.keys(id).lookup;
        let command = match verdict {
            Some(verdict) => redis::Cmd::pset_ex(key, verdict, LOOKUP_VERDICT_KEEP_MS as u64),
            None => redis::Cmd::del(key),
        };
        self.run(command.query_async::<()>(&mut conn)).await
    }

    /// Marks `id` for settle after a grab made it dirty. A failure is logged, not returned: the
    /// grab is done and acknowledged, and the packet's expiry brings settle to it regardless.
    async fn mark_dirty(&self, conn: &mut RedisConnection, id: &PacketId) {
        #[cfg(any(test, feature = "test-support"))]
        if !self.marks_for_settle {
            return;
        }
        let dirty = self.settle_dirty_key(id.settle_shard(self.settle_shards));
        if let Err(error) = self.run(redis::Cmd::sadd(dirty, id.as_str()).query_async::<()>(conn)).await {
            tracing::warn!(packet_id = %id, %error, "could not mark a grabbed packet for settle; it is persisted by its expiry at the latest");
        }
    }

    /// What Redis decided, followed through: the packet marked for settle when the grab made it
    /// dirty, the memo taught a sold-out packet, and (with `GRAB_WAIT_REPLICAS`) a fresh grab
    /// acknowledged by the replicas before it is answered.
    async fn decided(
        &self,
        conn: &mut RedisConnection,
        keys: &PacketKeys,
        packet: &PacketId,
        outcome: GrabOutcome,
        dirtied: bool,
    ) -> Result<GrabOutcome, StoreError> {
        if dirtied {
            self.mark_dirty(conn, packet).await;
        }
        if let (Some(memo), true) = (&self.sold_out, outcome.sold_out()) {
            memo.learn(packet, Instant::now());
        }
        // Every answer telling a user they hold a share is replica-acknowledged. On timeout the
        // client gets a 503; its retry finds the grab and answers the same share, again waited on.
        let acknowledged = match (outcome, self.grab_wait) {
            (GrabOutcome::Grabbed { .. }, Some(wait)) => {
                conn.replicas_acknowledge(&keys.packet, wait, self.limit()).await?
            }
            // A repeat wrote nothing on this connection: WAIT would not cover the grab it read.
            (GrabOutcome::Already { .. }, Some(_)) => self.replicas_hold_writes(conn, packet).await?,
            _ => true,
        };
        if !acknowledged {
            return Err(StoreError::redis_unavailable(
                "fewer replicas than GRAB_WAIT_REPLICAS acknowledged the grab in time",
            ));
        }
        Ok(outcome)
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
        let touch = redis::Cmd::pset_ex(probe, crate::clock::SystemClock.now_ms(), 60_000);
        self.run(touch.query_async::<()>(conn)).await?;
        conn.replicas_acknowledge(&self.keys(id).packet, wait, self.limit()).await
    }
}

/// `Already` from a grabber's `<seq>:<amount>:<left>:<at_ms>`.
fn already(prior: &str, remaining_count: u32) -> Result<GrabOutcome, StoreError> {
    let entry = grab_entry(prior).ok_or_else(|| StoreError::Corrupt(format!("unreadable grab {prior:?} in Redis")))?;
    Ok(entry.already(remaining_count))
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

    #[tracing::instrument(level = "debug", name = "redis.snapshot", skip_all, fields(packet_id = %id))]
    async fn snapshot(&self, id: &PacketId) -> Result<Option<LivePacket>, StoreError> {
        Self::snapshot(self, id).await
    }

    #[tracing::instrument(level = "debug", name = "redis.grab", skip_all, fields(packet_id = %packet))]
    async fn try_grab(
        &self,
        packet: &PacketId,
        attempt: &GrabAttempt,
        clock: &dyn Clock,
    ) -> Result<LiveAnswer, StoreError> {
        self.grab_counting(packet, attempt, clock, true).await
    }

    #[tracing::instrument(level = "debug", name = "redis.grab_again", skip_all, fields(packet_id = %packet))]
    async fn try_grab_again(
        &self,
        packet: &PacketId,
        attempt: &GrabAttempt,
        clock: &dyn Clock,
    ) -> Result<LiveAnswer, StoreError> {
        self.grab_counting(packet, attempt, clock, false).await
    }

    async fn ledger_said(&self, packet: &PacketId, recorded: Option<bool>) -> Result<(), StoreError> {
        self.record_lookup(packet, recorded.map(|recorded| if recorded { "recorded" } else { "absent" })).await
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
