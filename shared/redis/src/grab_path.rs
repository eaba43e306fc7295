//! The grab path of the Redis store: a grab's script call, alone or coalesced with the other
//! grabs of its packet in this environment, counted against the user's grab rate, answered from
//! reads when Redis is over `maxmemory` or this instance saw the packet sell out, marked for
//! settle and acknowledged by replicas; an id Redis does not hold goes through the lookup lease.

use std::time::Instant;

use super::coalesce::Unanswered;
use super::connection::RedisConnection;
use super::grab_batch::{BatchFailure, TimedGrab};
use super::keys::{grab_entry, shares_left, PacketKeys};
use super::rate;
use super::scripts::{self, Lookup, ScriptGrab};
use super::store::{RedisStore, LOOKUP_LEASE, LOOKUP_POLL};
use red_packets_core::clock::{Clock, Millis};
use red_packets_core::domain::grab::GrabAttempt;
use red_packets_core::domain::ledger::LedgerPacket;
use red_packets_core::domain::risk::{GrabRate, RateCounting};
use red_packets_core::domain::{GrabOutcome, PacketId, UserId};
use red_packets_core::ports::{GrabCall, Ledger, LiveAnswer, StoreError};

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

impl RedisStore {
    /// Runs the grab script for `attempt` at `now_ms`: alone, or in one call with the other grabs
    /// of the packet this environment is running at the same moment. A call Redis did not answer
    /// in time is asked again once, at the clock's new reading and counted against no rate (a
    /// grab is idempotent per user, so the script that may have run is found, not run twice): a
    /// grab waits at most two of the store's limits for its script. A share found already taken
    /// by this user at or after `now_ms` is the lost answer's own, answered as taken now. A
    /// Redis over `maxmemory` refuses the script whole (-OOM) before it changes anything; a
    /// repeat is still answered then, from a read.
    pub(super) async fn grab_script(
        &self,
        conn: &mut RedisConnection,
        keys: &PacketKeys,
        attempt: &GrabAttempt,
        (now_ms, clock): (Millis, &dyn Clock),
        counts: bool,
    ) -> Result<ScriptGrab, StoreError> {
        let answered = match self.script_call(keys, TimedGrab { attempt: attempt.clone(), now_ms, counts }).await {
            Err(BatchFailure::TimedOut(reason)) => {
                metrics::counter!("GrabScriptTimeouts").increment(1);
                tracing::warn!(%reason, "a grab's script call timed out; asking again once");
                let again = TimedGrab { attempt: attempt.clone(), now_ms: clock.now_ms().max(now_ms), counts: false };
                self.script_call(keys, again).await.map(|answer| answer.taken_since(now_ms))
            }
            answered => answered,
        };
        let refused = match answered {
            Ok(answer) => return Ok(answer),
            Err(BatchFailure::OutOfMemory(refused)) => refused,
            Err(BatchFailure::Unavailable(reason) | BatchFailure::TimedOut(reason)) => {
                return Err(StoreError::redis_unavailable(reason))
            }
        };
        match self.answer_from_reads(conn, keys, &attempt.user, false).await? {
            Some(outcome) => Ok(ScriptGrab::Decided { outcome, dirtied: false }),
            None => Err(StoreError::redis_unavailable(refused)),
        }
    }

    /// One script call for `grab`: through the coalescer, with the other grabs of its packet, or
    /// alone.
    async fn script_call(&self, keys: &PacketKeys, grab: TimedGrab) -> Result<ScriptGrab, BatchFailure> {
        match &self.coalescer {
            Some(coalescer) => coalescer.call(&keys.packet, grab, |batch| self.grab_batch(keys, batch)).await,
            None => self
                .grab_batch(keys, vec![grab])
                .await
                .and_then(|answers| answers.into_iter().next().ok_or_else(|| BatchFailure::from(Unanswered))),
        }
    }

    /// One script call for `batch`, every grab of one packet: `grab.lua` for one, `grab_many.lua`
    /// for more, at the latest of their clock readings (the batch's one instant, no earlier
    /// than any of its grabs); the answers in the batch's order.
    pub(super) async fn grab_batch(
        &self,
        keys: &PacketKeys,
        batch: Vec<TimedGrab>,
    ) -> Result<Vec<ScriptGrab>, BatchFailure> {
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
            // The connection's own response timeout (`RedisConfig::timeout`) fires before the
            // limit: the call may have run, so it is a timeout like the limit's, asked again once.
            Ok(Err(error)) if error.is_timeout() => Err(BatchFailure::TimedOut(error.to_string())),
            Ok(Err(error)) => Err(BatchFailure::Unavailable(error.to_string())),
            Err(_) => Err(BatchFailure::TimedOut(format!("no answer within {:?}", self.limit()))),
        }
    }

    /// Counts `users`' grabs alongside their script call: each one's verdict, in order. The
    /// grabs' answers do not wait on it past [`RedisConfig::timeout`], and a count that fails
    /// or times out finds nobody past the limit (logged): the rate counted alongside is
    /// best-effort, never a grab's failure.
    pub(super) async fn count_alongside(
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
    /// asks the ledger. The request's first call counts against its user's grab rate; none
    /// after it does (`call.again`). A packet Redis does not hold is looked up in the ledger:
    /// by this caller when it claims the id's lookup, its verdict then kept for the others.
    pub(super) async fn grab_counting<L: Ledger>(
        &self,
        packet: &PacketId,
        attempt: &GrabAttempt,
        call: GrabCall<'_, L>,
    ) -> Result<LiveAnswer, StoreError> {
        let (clock, counts) = (call.clock, !call.again);
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
            match self.grab_script(&mut conn, &keys, attempt, (now_ms, clock), counts && poll == 0).await? {
                ScriptGrab::Decided { outcome, dirtied } => {
                    return self.decided(&mut conn, &keys, packet, outcome, dirtied).await.map(LiveAnswer::Decided)
                }
                ScriptGrab::AskLedger(lookup) => {
                    let recorded = self.look_up(packet, lookup, call.ledger).await?;
                    return Ok(LiveAnswer::NotHeld { now_ms, recorded });
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
    pub(super) async fn answer_from_reads(
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

    /// The ledger's record of `id`, which Redis does not hold. A caller that claimed the id's
    /// lookup records what the ledger said for the others waiting on it (or, when it could not
    /// ask, releases the lookup so the next grab asks again). The ledger's side is boxed: it is
    /// rare, and its futures (the SDK's) would otherwise make every grab's future several
    /// kilobytes larger.
    async fn look_up<L: Ledger>(
        &self,
        id: &PacketId,
        lookup: Lookup,
        ledger: &L,
    ) -> Result<Option<Box<LedgerPacket>>, StoreError> {
        let recorded = Box::pin(ledger.ledger_packet(id)).await;
        if lookup == Lookup::Claimed {
            let verdict = match &recorded {
                Ok(Some(_)) => Some("recorded"),
                Ok(None) => Some("absent"),
                Err(_) => None,
            };
            Box::pin(self.record_lookup(id, verdict)).await?;
        }
        Ok(recorded?.map(Box::new))
    }

    /// Records what the ledger said of `id` (`recorded` or `absent`) for the cache window; a
    /// failed lookup (`None`) releases the lease so the next grab asks again.
    pub(super) async fn record_lookup(&self, id: &PacketId, verdict: Option<&str>) -> Result<(), StoreError> {
        let mut conn = self.connection().await?;
        let key = self.keys(id).lookup;
        let command = match verdict {
            Some(verdict) => redis::Cmd::pset_ex(key, verdict, self.lookup_verdict_keep.as_millis() as u64),
            None => redis::Cmd::del(key),
        };
        self.run(command.query_async::<()>(&mut conn)).await
    }

    /// Marks `id` for settle after a grab made it dirty. A failure is logged, not returned: the
    /// grab is done and acknowledged, and the packet's expiry brings settle to it regardless.
    pub(super) async fn mark_dirty(&self, conn: &mut RedisConnection, id: &PacketId) {
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
    pub(super) async fn decided(
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
}

/// `Already` from a grabber's `<seq>:<amount>:<left>:<at_ms>`.
fn already(prior: &str, remaining_count: u32) -> Result<GrabOutcome, StoreError> {
    let entry = grab_entry(prior).ok_or_else(|| StoreError::Corrupt(format!("unreadable grab {prior:?} in Redis")))?;
    Ok(entry.already(remaining_count))
}
