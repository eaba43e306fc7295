//! What a run reports: the packets it looked at and what it did to them, passes added up. A
//! packet's own pass counts into one of these too (its delta), which the run absorbs.

use serde::{Deserialize, Serialize};

use crate::domain::PacketId;

/// How many quarantined packets a summary lists.
pub const QUARANTINE_LISTED: usize = 100;

/// What one run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettleSummary {
    /// First and last shard this run covered.
    pub shards: [u32; 2],
    /// Packets looked at.
    pub packets: u32,
    /// Grab items written.
    pub grabs_persisted: u64,
    /// Packets this run finalised.
    pub finalised: u32,
    /// Money this run returned to senders.
    pub refunded_cents: u64,
    /// Packets whose books do not balance.
    pub mismatches: u32,
    /// Packets restored into Redis from the ledger.
    pub restored: u32,
    /// Packets re-synced in Redis from the ledger after the two disagreed.
    pub resynced: u32,
    /// Grabs Redis acknowledged and the ledger refused whose users hold another share instead.
    #[serde(default)]
    pub regranted: u32,
    /// Grabs Redis acknowledged and the ledger refused, with no share left to give instead.
    #[serde(default)]
    pub revoked: u32,
    /// Packets set aside for inspection: ledger record missing, or books that do not balance.
    pub quarantined: u32,
    /// Packets whose grabs wait for the replicas to acknowledge them (`GRAB_WAIT_REPLICAS`).
    pub deferred: u32,
    /// Settle's lag: the age (ms) of the oldest grab not yet in the ledger that this run found.
    #[serde(default)]
    pub lag_ms: u64,
    /// Packets skipped because of their own data (corrupt, or refused by DynamoDB; ERROR lines).
    pub failed: u32,
    /// The packets counted in `failed`.
    #[serde(default)]
    pub failed_packets: Vec<String>,
    /// True when the run stopped before its deadline with packets left for the next run.
    pub stopped_early: bool,
    /// Shards whose open packets this run read from the ledger (the recovery sweep).
    #[serde(default)]
    pub swept_shards: u32,
    /// Passes over the shards (more than one when the invocation keeps draining).
    #[serde(default)]
    pub passes: u32,
    /// Packets taken out of quarantine: by the request, or by the recovery sweep to be tried again.
    #[serde(default)]
    pub released: u32,
    /// Packets marked to be settled again from their first grab by a `replay` request (after
    /// the ledger was restored from a backup).
    #[serde(default)]
    pub replayed: u32,
    /// The packets in quarantine after the run (the oldest [`QUARANTINE_LISTED`]), for operators.
    #[serde(default)]
    pub in_quarantine: Vec<PacketId>,
    /// Times a packet was settled again after a store did not answer in time (a slow ledger).
    #[serde(default)]
    pub slowed: u32,
    /// Packets a store kept timing out on, left in the index for the next run.
    #[serde(default)]
    pub left_for_later: u32,
    /// The fewest packets the run kept in flight at once, as the ledger's timeouts lowered it.
    #[serde(default)]
    pub least_in_flight: u32,
}

impl SettleSummary {
    /// True when the run found nothing to do: no packet looked at, nothing swept, released or
    /// replayed, none left in quarantine. An idle run is logged at debug, not info (`make run`
    /// settles every second).
    pub fn idle(&self) -> bool {
        self.packets == 0
            && self.swept_shards == 0
            && self.released == 0
            && self.replayed == 0
            && self.in_quarantine.is_empty()
            && !self.stopped_early
    }

    /// Adds a later pass's summary to this one.
    pub(super) fn add_pass(&mut self, pass: SettleSummary) {
        self.packets += pass.packets;
        self.absorb(&pass);
        self.failed += pass.failed;
        self.failed_packets.extend(pass.failed_packets);
        self.stopped_early = pass.stopped_early;
        self.swept_shards += pass.swept_shards;
        self.passes += pass.passes;
        self.released += pass.released;
        self.lag_ms = self.lag_ms.max(pass.lag_ms);
        self.slowed += pass.slowed;
        self.left_for_later += pass.left_for_later;
        self.least_in_flight = match (self.least_in_flight, pass.least_in_flight) {
            (0, least) | (least, 0) => least,
            (one, other) => one.min(other),
        };
    }

    /// Adds one packet's pass (its own counts) to this run's.
    pub(super) fn absorb(&mut self, packet: &SettleSummary) {
        self.grabs_persisted += packet.grabs_persisted;
        self.finalised += packet.finalised;
        self.refunded_cents += packet.refunded_cents;
        self.mismatches += packet.mismatches;
        self.restored += packet.restored;
        self.resynced += packet.resynced;
        self.regranted += packet.regranted;
        self.revoked += packet.revoked;
        self.quarantined += packet.quarantined;
        self.deferred += packet.deferred;
        self.lag_ms = self.lag_ms.max(packet.lag_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_that_found_nothing_to_do_is_idle() {
        assert!(SettleSummary::default().idle());
        assert!(!SettleSummary { packets: 1, ..SettleSummary::default() }.idle());
        assert!(!SettleSummary { swept_shards: 16, ..SettleSummary::default() }.idle());
        let quarantined = PacketId::random();
        assert!(!SettleSummary { in_quarantine: vec![quarantined], ..SettleSummary::default() }.idle());
    }
}
