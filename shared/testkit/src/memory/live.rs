//! The live store in memory: one [`LiveState`] per packet, and settle's queue (index by expiry,
//! dirty sets, quarantine, a run's bookkeeping) in plain maps.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};

use red_packets::clock::Millis;
use red_packets::domain::grab::{GrabAttempt, LoggedGrab};
use red_packets::domain::live::{LiveGrab, LiveState};
use red_packets::domain::{Cents, LivePacket, Packet, PacketId};
use red_packets::ports::{
    CancelOutcome, CloseOutcome, Frozen, GrabCall, Ledger, LiveAnswer, LiveStore, PacketImage, Restored, SettleCursor,
    SettleIndex, StoreError,
};

/// The live store in memory.
#[derive(Debug)]
pub struct MemoryStore {
    settle_shards: u32,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    packets: HashMap<PacketId, LiveState>,
    /// Per shard: the packets indexed for settle, with when each is due (its expiry).
    index: BTreeMap<u32, BTreeMap<PacketId, Millis>>,
    /// Per shard: the packets with grabs settle has not persisted.
    dirty: BTreeMap<u32, BTreeSet<PacketId>>,
    quarantine: BTreeMap<PacketId, Millis>,
    resume: HashMap<[u32; 2], u32>,
    sweep: HashMap<[u32; 2], (u32, Millis)>,
    layouts: BTreeSet<u32>,
}

impl MemoryStore {
    /// An empty store indexing packets for settle in `settle_shards` shards.
    pub fn new(settle_shards: u32) -> Self {
        MemoryStore { settle_shards: settle_shards.max(1), state: Mutex::new(State::default()) }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Forgets every packet, as a Redis that lost its data would (tests of recovery).
    pub fn lose_everything(&self) {
        *self.state() = State::default();
    }

    fn shard(&self, id: &PacketId) -> u32 {
        id.settle_shard(self.settle_shards)
    }

    /// Holds `live` and indexes it for settle, due at its expiry.
    fn hold(&self, state: &mut State, live: LiveState) {
        let id = live.packet.id.clone();
        state.index.entry(self.shard(&id)).or_default().insert(id.clone(), live.packet.expires_at_ms);
        state.layouts.insert(self.settle_shards);
        state.packets.insert(id, live);
    }
}

impl LiveStore for MemoryStore {
    async fn load(&self, packet: &Packet, shares: &[Cents]) -> Result<(), StoreError> {
        let mut state = self.state();
        if !state.packets.contains_key(&packet.id) {
            self.hold(&mut state, LiveState::new(packet, shares));
        }
        Ok(())
    }

    async fn restore(&self, image: PacketImage<'_>) -> Result<Restored, StoreError> {
        let mut state = self.state();
        if state.packets.contains_key(&image.packet.id) {
            return Ok(Restored::AlreadyHeld);
        }
        self.hold(&mut state, LiveState::restored(image));
        Ok(Restored::Loaded)
    }

    async fn snapshot(&self, id: &PacketId) -> Result<Option<LivePacket>, StoreError> {
        Ok(self.state().packets.get(id).map(LiveState::snapshot))
    }

    /// The grab on the packet's [`LiveState`]; a packet not held is `NotHeld` with the ledger's
    /// record, read at once (no lookup lease here).
    async fn try_grab<L: Ledger>(
        &self,
        packet: &PacketId,
        attempt: &GrabAttempt,
        call: GrabCall<'_, L>,
    ) -> Result<LiveAnswer, StoreError> {
        let now_ms = call.clock.now_ms();
        let shard = self.shard(packet);
        let grab = {
            let mut state = self.state();
            let grab = state.packets.get_mut(packet).map(|live| live.grab(attempt, now_ms));
            if let Some(LiveGrab::Decided { dirtied: true, .. }) = grab {
                state.dirty.entry(shard).or_default().insert(packet.clone());
            }
            grab
        };
        match grab {
            None => {
                let recorded = call.ledger.ledger_packet(packet).await?;
                Ok(LiveAnswer::NotHeld { now_ms, recorded: recorded.map(Box::new) })
            }
            Some(LiveGrab::Decided { outcome, .. }) => Ok(LiveAnswer::Decided(outcome)),
            Some(LiveGrab::Resyncing) => {
                Err(StoreError::redis_unavailable(format!("packet {packet} is being re-synced")))
            }
        }
    }

    async fn cancel(&self, id: &PacketId, now_ms: Millis) -> Result<CancelOutcome, StoreError> {
        Ok(self.state().packets.get_mut(id).map_or(CancelOutcome::Missing, |live| live.cancel(now_ms)))
    }
}

impl SettleIndex for MemoryStore {
    fn settle_shards(&self) -> u32 {
        self.settle_shards
    }

    async fn packets_with_work(&self, shard: u32, now_ms: Millis) -> Result<Vec<PacketId>, StoreError> {
        let state = self.state();
        let dirty = state.dirty.get(&shard).into_iter().flatten().cloned();
        let due = state.index.get(&shard).into_iter().flatten().filter(|(_, due)| **due <= now_ms).map(|(id, _)| id);
        let ids: BTreeSet<PacketId> = dirty.chain(due.cloned()).collect();
        Ok(ids.into_iter().collect())
    }

    async fn settled_pass(&self, id: &PacketId, shard: u32) -> Result<(), StoreError> {
        let mut state = self.state();
        let indexed = state.index.get(&shard).is_some_and(|index| index.contains_key(id));
        let pending = state.packets.get(id).is_some_and(|live| live.grabs.len() > live.persisted);
        let dirty = state.dirty.entry(shard).or_default();
        dirty.remove(id);
        if indexed && pending {
            dirty.insert(id.clone());
        }
        Ok(())
    }

    async fn close(&self, id: &PacketId, now_ms: Millis) -> Result<CloseOutcome, StoreError> {
        Ok(self.state().packets.get_mut(id).map_or(CloseOutcome::Missing, |live| live.close(now_ms, false)))
    }

    async fn replicas_hold(&self, _id: &PacketId) -> Result<bool, StoreError> {
        Ok(true)
    }

    async fn mark_persisted(&self, id: &PacketId, confirmed: usize, last: &LoggedGrab) -> Result<(), StoreError> {
        if let Some(live) = self.state().packets.get_mut(id) {
            live.mark_persisted(confirmed, last);
        }
        Ok(())
    }

    async fn freeze(&self, id: &PacketId, token: &str) -> Result<Frozen, StoreError> {
        Ok(match self.state().packets.get_mut(id) {
            Some(live) => Frozen::Log { grabs: live.freeze(token), partial: false },
            None => Frozen::Missing,
        })
    }

    async fn resync(&self, image: PacketImage<'_>, token: &str) -> Result<bool, StoreError> {
        let packet = image.packet;
        let mut state = self.state();
        if !state.packets.get(&packet.id).is_some_and(|live| live.frozen_by(token)) {
            return Ok(false);
        }
        state.packets.insert(packet.id.clone(), LiveState::restored(image));
        Ok(true)
    }

    async fn replay_held(&self, shard: u32) -> Result<u32, StoreError> {
        let mut state = self.state();
        let held: Vec<PacketId> =
            state.index.get(&shard).map(|index| index.keys().cloned().collect()).unwrap_or_default();
        for id in &held {
            if let Some(live) = state.packets.get_mut(id) {
                live.persisted = 0;
            }
            state.dirty.entry(shard).or_default().insert(id.clone());
        }
        Ok(u32::try_from(held.len()).unwrap_or(u32::MAX))
    }

    /// Out of the index, and its state gone at once (Redis lets its keys lapse shortly).
    async fn retire(&self, id: &PacketId, shard: u32, _now_ms: Millis) -> Result<(), StoreError> {
        let mut state = self.state();
        state.index.entry(shard).or_default().remove(id);
        state.dirty.entry(shard).or_default().remove(id);
        state.packets.remove(id);
        Ok(())
    }

    async fn quarantine(&self, id: &PacketId, shard: u32, now_ms: Millis) -> Result<(), StoreError> {
        let mut state = self.state();
        if let Some(live) = state.packets.get_mut(id) {
            live.close(now_ms, true);
        }
        state.quarantine.insert(id.clone(), now_ms);
        state.index.entry(shard).or_default().remove(id);
        state.dirty.entry(shard).or_default().remove(id);
        Ok(())
    }

    async fn quarantined(&self, limit: usize) -> Result<Vec<(PacketId, Millis)>, StoreError> {
        let state = self.state();
        let mut listed: Vec<(PacketId, Millis)> = state.quarantine.iter().map(|(id, at)| (id.clone(), *at)).collect();
        listed.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.as_str().cmp(b.0.as_str())));
        listed.truncate(limit);
        Ok(listed)
    }

    async fn release(&self, id: &PacketId) -> Result<bool, StoreError> {
        let mut state = self.state();
        if state.quarantine.remove(id).is_none() {
            return Ok(false);
        }
        let shard = self.shard(id);
        state.index.entry(shard).or_default().insert(id.clone(), 0);
        state.dirty.entry(shard).or_default().insert(id.clone());
        Ok(true)
    }
}

impl SettleCursor for MemoryStore {
    async fn resume_shard(&self, range: [u32; 2]) -> Result<Option<u32>, StoreError> {
        Ok(self.state().resume.get(&range).copied())
    }

    async fn set_resume_shard(&self, range: [u32; 2], shard: Option<u32>) -> Result<(), StoreError> {
        let mut state = self.state();
        match shard {
            Some(shard) => state.resume.insert(range, shard),
            None => state.resume.remove(&range),
        };
        Ok(())
    }

    async fn sweep_state(&self, range: [u32; 2]) -> Result<Option<(u32, Millis)>, StoreError> {
        Ok(self.state().sweep.get(&range).copied())
    }

    async fn set_sweep_state(&self, range: [u32; 2], next_shard: u32, due_ms: Millis) -> Result<(), StoreError> {
        self.state().sweep.insert(range, (next_shard, due_ms));
        Ok(())
    }

    async fn settle_layouts(&self) -> Result<Vec<u32>, StoreError> {
        Ok(self.state().layouts.iter().copied().collect())
    }

    async fn forget_settle_layout(&self, shards: u32) -> Result<(), StoreError> {
        self.state().layouts.remove(&shards);
        Ok(())
    }
}
