//! A run: which shards and packets, in what order, how many at a time, until when; the
//! recovery sweep over the ledger's open index; where the next run resumes.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::stream::{self, FuturesUnordered, StreamExt};

use super::{
    SettleError, SettleSummary, Settler, Stop, DEADLINE_MARGIN_MS, DRAIN_PAUSE_MS, PACKETS_IN_FLIGHT, SWEEP_PERIOD_MS,
};
use crate::clock::Millis;
use crate::domain::PacketId;
use crate::markers::{SETTLE_PACKET_SKIPPED, SETTLE_STOPPED};
use crate::ports::{SettleCursor, SettleIndex, SettleLedger, StoreError};

/// Which shards a run reads from the ledger's open index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sweep {
    /// Every shard of the run: Redis has no record of a sweep (first use, or it lost its data).
    All,
    /// One shard, its turn in the hourly rotation.
    Shard(u32),
    /// None this run.
    Nothing,
}

/// How many times one run settles a packet a store keeps timing out on before it leaves the
/// packet for the next run.
pub const SLOW_STORE_TRIES: u32 = 5;

/// The pause before the `tries`-th attempt of the work named `what` (a packet's id, or the
/// run) after a store timed out on it: 250 ms doubling, 4 s at most, and up to a quarter more
/// drawn from the name, so the packets that timed out together do not come back together.
fn slow_store_pause_ms(what: &str, tries: u32) -> u64 {
    let pause = (250u64 << tries.saturating_sub(1).min(4)).min(4_000);
    let spread = what.bytes().fold(0u64, |hash, byte| hash.wrapping_mul(31).wrapping_add(u64::from(byte)));
    pause + spread % (pause / 4 + 1)
}

/// A packet waiting its turn in a run: where it stood in the run's order (where the next run
/// resumes if the deadline stops this one first), its shard, and its settles so far that a
/// store timed out.
struct Queued {
    position: usize,
    shard: u32,
    id: PacketId,
    tries: u32,
}

impl Sweep {
    fn covers(self, shard: u32) -> bool {
        match self {
            Sweep::All => true,
            Sweep::Shard(swept) => swept == shard,
            Sweep::Nothing => false,
        }
    }
}

impl<S: SettleIndex + SettleCursor, L: SettleLedger> Settler<S, L> {
    /// Settles `shards`, [`PACKETS_IN_FLIGHT`] packets at a time, taking no new packet once
    /// `deadline_ms` (epoch ms, on the wall clock) is within [`DEADLINE_MARGIN_MS`]. A run that stopped
    /// early resumes at the shard it stopped in; the run that covers the last shard also drains
    /// the shards of a larger `SETTLE_SHARDS` used before.
    pub async fn run(
        &self,
        shards: RangeInclusive<u32>,
        deadline_ms: Option<Millis>,
    ) -> Result<SettleSummary, SettleError> {
        let range = [*shards.start(), *shards.end()];
        let mut summary = SettleSummary { shards: range, passes: 1, ..SettleSummary::default() };
        let mut tries = 0;
        loop {
            // A run redoes idempotently whatever an earlier attempt did (as after a crash), so a
            // ledger that timed out on the run's own reads and writes is asked again, later.
            let outcome = self.run_into(range, deadline_ms, &mut summary).await;
            let near_deadline =
                deadline_ms.is_some_and(|deadline| self.wall.now_ms() + 2 * DEADLINE_MARGIN_MS >= deadline);
            return match outcome {
                Ok(()) => Ok(summary),
                Err(Stop::Store(error)) if error.timed_out() && tries + 1 < SLOW_STORE_TRIES && !near_deadline => {
                    tries += 1;
                    summary.slowed += 1;
                    tracing::warn!(%error, tries, "a store did not answer the run in time; running again shortly");
                    tokio::time::sleep(std::time::Duration::from_millis(slow_store_pause_ms("run", tries))).await;
                    continue;
                }
                Err(Stop::Store(error)) => Err(SettleError::Unavailable { error, summary: Box::new(summary) }),
                Err(Stop::Crash(point)) => Err(SettleError::Crashed(point)),
            };
        }
    }

    /// The run, what it did counted into `summary`: the plan, every shard's packets, the packets
    /// settled, then where the next run resumes (or the run's end recorded).
    async fn run_into(
        &self,
        range: [u32; 2],
        deadline_ms: Option<Millis>,
        summary: &mut SettleSummary,
    ) -> Result<(), Stop> {
        let now_ms = self.clock.now_ms();
        let (order, earlier_layouts) = self.plan(range).await?;
        let sweep = self.sweep_plan(range, now_ms).await?;
        // A sweep reads the ledger's open index under every SETTLE_SHARDS value settle ran with:
        // packets sent under a larger one sit in partitions this layout does not name.
        let widest = match sweep {
            Sweep::Nothing => 0,
            _ => self.ledger.settle_layouts(self.store.settle_shards()).await?.into_iter().max().unwrap_or(0),
        };
        let (work, drained_extra_shards) = self.gather_work(&order, range, sweep, widest, now_ms, summary).await?;
        if let Some(shard) = self.settle_all(work, deadline_ms, summary).await? {
            summary.stopped_early = true;
            let resume = shard.min(range[1]);
            self.store.set_resume_shard(range, Some(resume)).await?;
            tracing::warn!(?summary, resume, "settle stopping before its deadline; the next run resumes here");
            return Ok(());
        }
        self.store.set_resume_shard(range, None).await?;
        self.sweep_done(range, sweep, now_ms).await?;
        if drained_extra_shards {
            for layout in earlier_layouts {
                self.store.forget_settle_layout(layout).await?;
            }
        }
        if summary.failed > 0 {
            tracing::warn!(
                ?summary,
                "settle run complete with packets it could not settle ({SETTLE_PACKET_SKIPPED} above)"
            );
        } else if summary.idle() {
            tracing::debug!(?summary, "settle run complete");
        } else {
            tracing::info!(?summary, "settle run complete");
        }
        Ok(())
    }

    /// Every shard's work, in `order` (a few commands per shard, whatever is open): its packets,
    /// and whether the shards past the run's range (an earlier, larger `SETTLE_SHARDS`) are empty.
    async fn gather_work(
        &self,
        order: &[u32],
        range: [u32; 2],
        sweep: Sweep,
        widest: u32,
        now_ms: Millis,
        summary: &mut SettleSummary,
    ) -> Result<(Vec<(u32, PacketId)>, bool), Stop> {
        let mut drained_extra_shards = true;
        let mut work: Vec<(u32, PacketId)> = Vec::new();
        let swept: Vec<u32> = order.iter().copied().filter(|&shard| sweep.covers(shard) && shard <= range[1]).collect();
        summary.swept_shards += swept.len() as u32;
        // The sweep's reads of the ledger, every shard's at once: a slow answer delays one read,
        // not the ones queued behind it.
        // The futures are built first: a stream holding a closure trips rustc's higher-ranked
        // `Send` inference (rust-lang/rust#102211) in callers.
        let reads: Vec<_> =
            swept.iter().map(|&shard| async move { (shard, self.ledger_open_packets(shard, widest).await) }).collect();
        let mut ledger_open: HashMap<u32, Vec<PacketId>> = HashMap::new();
        for (shard, read) in stream::iter(reads).buffer_unordered(swept.len().max(1)).collect::<Vec<_>>().await {
            ledger_open.insert(shard, read?);
        }
        for &shard in order {
            let packets = self.packets_in(shard, now_ms, ledger_open.remove(&shard), summary).await?;
            if shard > range[1] && !packets.is_empty() {
                drained_extra_shards = false;
            }
            work.extend(packets.into_iter().map(|id| (shard, id)));
        }
        Ok((work, drained_extra_shards))
    }

    /// Settles `work` in order until the deadline, up to [`PACKETS_IN_FLIGHT`] at a time: the
    /// shard the next run resumes in when the deadline stopped it first. A store that did not
    /// answer in time slows the run, never ends it: the packet is settled again after a growing
    /// pause ([`slow_store_pause_ms`], [`SLOW_STORE_TRIES`] times at most, then left for the next
    /// run), and the packets in flight halve (one at the least), growing back by one with each
    /// packet settled. Once a store fails otherwise, no new packet starts, but those in flight
    /// finish: their writes are idempotent, and what they record is not left for the next run;
    /// then the failure ends the run.
    async fn settle_all(
        &self,
        work: Vec<(u32, PacketId)>,
        deadline_ms: Option<Millis>,
        summary: &mut SettleSummary,
    ) -> Result<Option<u32>, Stop> {
        let halted = AtomicBool::new(false);
        let mut failure: Option<StoreError> = None;
        let mut resume: Option<(usize, u32)> = None;
        let mut waiting: VecDeque<Queued> = work
            .into_iter()
            .enumerate()
            .map(|(position, (shard, id))| Queued { position, shard, id, tries: 0 })
            .collect();
        let mut in_flight = FuturesUnordered::new();
        let mut limit = PACKETS_IN_FLIGHT;
        summary.least_in_flight = limit as u32;
        loop {
            while in_flight.len() < limit {
                let Some(next) = waiting.pop_front() else { break };
                let halted = &halted;
                in_flight.push(async move {
                    if next.tries > 0 {
                        tokio::time::sleep(std::time::Duration::from_millis(slow_store_pause_ms(
                            next.id.as_str(),
                            next.tries,
                        )))
                        .await;
                    }
                    let (id, outcome) = self.settle_before(next.id.clone(), next.shard, deadline_ms, halted).await;
                    (Queued { id, ..next }, outcome)
                });
            }
            let Some((queued, outcome)) = in_flight.next().await else { break };
            let Some((delta, result)) = outcome else {
                if failure.is_none() && resume.is_none_or(|(first, _)| queued.position < first) {
                    resume = Some((queued.position, queued.shard));
                }
                continue;
            };
            summary.absorb(&delta);
            let id = &queued.id;
            match result {
                Ok(()) => {
                    summary.packets += 1;
                    limit = (limit + 1).min(PACKETS_IN_FLIGHT);
                }
                Err(Stop::Crash(point)) => return Err(Stop::Crash(point)),
                Err(Stop::Store(error)) if error.timed_out() => {
                    limit = (limit / 2).max(1);
                    summary.least_in_flight = summary.least_in_flight.min(limit as u32);
                    if queued.tries + 1 < SLOW_STORE_TRIES {
                        summary.slowed += 1;
                        tracing::warn!(packet_id = %id, %error, tries = queued.tries + 1, in_flight = limit, "a store did not answer in time; settling the packet again, fewer at a time");
                        waiting.push_back(Queued { tries: queued.tries + 1, ..queued });
                    } else {
                        summary.packets += 1;
                        summary.left_for_later += 1;
                        tracing::warn!(packet_id = %id, %error, "a store kept timing out on this packet; the next run settles it");
                    }
                }
                Err(Stop::Store(error)) if error.is_the_records_fault() => {
                    summary.packets += 1;
                    summary.failed += 1;
                    summary.failed_packets.push(id.to_string());
                    tracing::error!(marker = SETTLE_PACKET_SKIPPED, packet_id = %id, %error, "{SETTLE_PACKET_SKIPPED} {id}: settle skipped a packet it cannot settle; the run goes on");
                }
                Err(Stop::Store(error)) => {
                    summary.packets += 1;
                    tracing::error!(marker = SETTLE_STOPPED, packet_id = %id, %error, "{SETTLE_STOPPED}: a store is unreachable; the next run goes on");
                    halted.store(true, Ordering::Relaxed);
                    failure.get_or_insert(error);
                }
            }
        }
        match failure {
            Some(error) => Err(Stop::Store(error)),
            None => Ok(resume.map(|(_, shard)| shard)),
        }
    }

    /// Runs passes over `shards` until `until_ms` (epoch ms, real time) is near, pausing
    /// [`DRAIN_PAUSE_MS`] between them, so grabs reach the ledger within seconds although the
    /// schedule fires once a minute; a single pass when `until_ms` is `None`. Stops at the
    /// first pass that fails or stops early.
    pub async fn drain(
        &self,
        shards: RangeInclusive<u32>,
        deadline_ms: Option<Millis>,
        until_ms: Option<Millis>,
    ) -> Result<SettleSummary, SettleError> {
        let mut total = self.run(shards.clone(), deadline_ms).await?;
        while let Some(until) = until_ms {
            let pass_started = self.wall.now_ms();
            if total.stopped_early || pass_started + DRAIN_PAUSE_MS >= until {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(DRAIN_PAUSE_MS as u64)).await;
            total.add_pass(self.run(shards.clone(), deadline_ms).await?);
        }
        Ok(total)
    }

    /// Settles one packet unless `deadline_ms` is too near or the run is `halted`: `None` then.
    async fn settle_before(
        &self,
        id: PacketId,
        shard: u32,
        deadline_ms: Option<Millis>,
        halted: &AtomicBool,
    ) -> (PacketId, Option<(SettleSummary, Result<(), Stop>)>) {
        let near_deadline = deadline_ms.is_some_and(|deadline| self.wall.now_ms() + DEADLINE_MARGIN_MS >= deadline);
        if near_deadline || halted.load(Ordering::Relaxed) {
            return (id, None);
        }
        let (delta, mut result) = self.pass(&id, shard, deadline_ms).run().await;
        if result.is_ok() {
            result = self.store.settled_pass(&id, shard).await.map_err(Stop::from);
        }
        (id, Some((delta, result)))
    }

    /// The shards of this run in order (from where an earlier run stopped, wrapping round), plus,
    /// for the run covering the last shard, the shards of larger `SETTLE_SHARDS` values used
    /// before (whose packets no other run visits), and those earlier values.
    async fn plan(&self, range: [u32; 2]) -> Result<(Vec<u32>, Vec<u32>), StoreError> {
        let [from, to] = range;
        let start = self.store.resume_shard(range).await?.filter(|shard| (from..=to).contains(shard)).unwrap_or(from);
        let mut order: Vec<u32> = (start..=to).chain(from..start).collect();
        let configured = self.store.settle_shards();
        let mut earlier = Vec::new();
        if to == configured - 1 {
            earlier = self.store.settle_layouts().await?.into_iter().filter(|&count| count > configured).collect();
            let widest = earlier.iter().copied().max().unwrap_or(configured);
            order.extend(configured..widest);
        }
        Ok((order, earlier))
    }

    /// The packets the ledger holds open in `shard` or in the shards of a larger earlier layout
    /// that fold into it (`widest`: the widest `SETTLE_SHARDS` settle ran with).
    async fn ledger_open_packets(&self, shard: u32, widest: u32) -> Result<Vec<PacketId>, StoreError> {
        let shards = self.store.settle_shards();
        let mut packets = Vec::new();
        for earlier in (shard..widest.max(shard + 1)).step_by(shards as usize) {
            packets.extend(self.ledger.open_packets(earlier).await?);
        }
        Ok(packets)
    }

    /// The packets of `shard` with work: grabs not yet persisted or due at `now_ms` (Redis's
    /// queues), plus, when the shard is swept, every packet the ledger holds open in it
    /// (`ledger_open`, read by the sweep: the ledger survives a Redis loss) and the shard's
    /// quarantined packets, tried again (one the ledger explains by now leaves quarantine by
    /// itself). An idle open packet costs nothing.
    async fn packets_in(
        &self,
        shard: u32,
        now_ms: Millis,
        ledger_open: Option<Vec<PacketId>>,
        summary: &mut SettleSummary,
    ) -> Result<BTreeSet<PacketId>, StoreError> {
        let mut packets: BTreeSet<PacketId> = self.store.packets_with_work(shard, now_ms).await?.into_iter().collect();
        if let Some(ledger_open) = ledger_open {
            let shards = self.store.settle_shards();
            packets.extend(ledger_open);
            for (id, _) in self.store.quarantined(usize::MAX).await? {
                if id.settle_shard(shards) == shard && self.store.release(&id).await? {
                    summary.released += 1;
                    packets.insert(id);
                }
            }
        }
        Ok(packets)
    }

    /// Which shards of `range` this run sweeps: all when Redis has no record of a sweep (first
    /// use, or Redis lost its data), else the next shard once its turn has come.
    async fn sweep_plan(&self, range: [u32; 2], now_ms: Millis) -> Result<Sweep, StoreError> {
        Ok(match self.store.sweep_state(range).await? {
            None => Sweep::All,
            Some((shard, due_ms)) if now_ms >= due_ms => Sweep::Shard(shard.clamp(range[0], range[1])),
            Some(_) => Sweep::Nothing,
        })
    }

    /// Records a completed sweep: the next shard of the rotation and when it is due.
    async fn sweep_done(&self, range: [u32; 2], sweep: Sweep, now_ms: Millis) -> Result<(), StoreError> {
        let shards = Millis::from(range[1] - range[0] + 1);
        let every_ms = SWEEP_PERIOD_MS / shards;
        let next = match sweep {
            Sweep::All => range[0],
            Sweep::Shard(shard) if shard >= range[1] => range[0],
            Sweep::Shard(shard) => shard + 1,
            Sweep::Nothing => return Ok(()),
        };
        self.store.set_sweep_state(range, next, now_ms + every_ms).await
    }
}
