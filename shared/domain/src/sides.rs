//! A packet as its two stores hold it, side by side, for an operator looking into it: the live
//! store (Redis, the fast path: what grabbers were told) and the ledger (DynamoDB, the truth:
//! what settle persisted and finalised), each grab by its place in grab order, and what differs.
//!
//! A grab Redis acknowledged and the ledger does not hold yet is *pending* while it is past the
//! part the ledger confirmed (settle persists it on its next pass), and a difference when the
//! live store says the ledger confirmed it. A grab the ledger holds and Redis does not is what a
//! failover or a wiped cache leaves: settle's re-sync restores it from the ledger. Pure.

use serde::Serialize;

use super::grab::LoggedGrab;
use super::ids::UserId;
use super::ledger::LedgerPacket;
use super::live::LivePacket;
use super::money::Cents;
use super::packet::PacketStatus;

/// The ledger's side: the record's state and its grabs' sums.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LedgerSide {
    /// `open` until settle finalises it.
    pub status: PacketStatus,
    /// Grab items.
    pub grabs: usize,
    /// Their sum.
    pub grabbed_cents: Cents,
    /// What finalisation refunded (`None` while open).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refund_cents: Option<Cents>,
}

/// The live store's side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveSide {
    /// False once closed to grabs.
    pub open: bool,
    /// True while settle re-syncs it from the ledger.
    pub frozen: bool,
    /// True once its sender cancelled it.
    pub cancelled: bool,
    /// Shares left.
    pub remaining_count: u32,
    /// Grabs acknowledged.
    pub grabs: usize,
    /// Their sum.
    pub grabbed_cents: Cents,
    /// How many of them the ledger confirmed.
    pub persisted: usize,
}

/// One place in grab order, on either side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrabRow {
    /// 1-based place in grab order.
    pub seq: u32,
    /// Who grabbed, as the ledger holds it (else as Redis does).
    pub user: UserId,
    /// The ledger's amount, if it holds this grab.
    pub ledger_cents: Option<Cents>,
    /// Redis's amount, if it holds this grab.
    pub live_cents: Option<Cents>,
    /// Acknowledged by Redis past the part the ledger confirmed: settle persists it next.
    pub pending: bool,
}

/// The two sides of a packet, and what differs between them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sides {
    /// The ledger's record (`None`: it holds none).
    pub ledger: Option<LedgerSide>,
    /// Redis's (`None`: it holds no live state: finalised and lapsed, or lost).
    pub live: Option<LiveSide>,
    /// Every grab of either side, in grab order.
    pub grabs: Vec<GrabRow>,
    /// What does not agree, one sentence each; empty when the sides agree.
    pub differences: Vec<String>,
}

/// The two sides of one packet.
pub fn compare(ledger: Option<&LedgerPacket>, live: Option<&LivePacket>) -> Sides {
    let sum = |grabs: &[LoggedGrab]| grabs.iter().map(|grab| grab.amount_cents).sum::<Cents>();
    let ledger_side = ledger.map(|record| LedgerSide {
        status: record.status,
        grabs: record.grabs.len(),
        grabbed_cents: sum(&record.grabs),
        refund_cents: record.refund_cents,
    });
    let live_side = live.map(|state| LiveSide {
        open: state.open,
        frozen: state.frozen,
        cancelled: state.cancelled,
        remaining_count: state.remaining_count,
        grabs: state.grabs.len(),
        grabbed_cents: sum(&state.grabs),
        persisted: state.persisted,
    });
    let ledger_grabs = ledger.map_or(&[][..], |record| &record.grabs[..]);
    let live_grabs = live.map_or(&[][..], |state| &state.grabs[..]);
    let confirmed = live.map_or(0, |state| state.persisted);
    let mut seqs: Vec<u32> = ledger_grabs.iter().chain(live_grabs).map(|grab| grab.seq).collect();
    seqs.sort_unstable();
    seqs.dedup();
    let mut differences = Vec::new();
    let mut grabs = Vec::new();
    for seq in seqs {
        let in_ledger = ledger_grabs.iter().find(|grab| grab.seq == seq);
        let (place, in_live) = match live_grabs.iter().position(|grab| grab.seq == seq) {
            Some(place) => (place, live_grabs.get(place)),
            None => (0, None),
        };
        let pending = in_live.is_some() && in_ledger.is_none() && place >= confirmed;
        match (in_ledger, in_live) {
            (Some(kept), Some(told)) if (&kept.user, kept.amount_cents) != (&told.user, told.amount_cents) => {
                differences.push(format!(
                    "grab #{seq}: the ledger holds {} for {} cents, Redis {} for {} cents",
                    kept.user, kept.amount_cents, told.user, told.amount_cents
                ));
            }
            (None, Some(told)) if !pending => differences.push(format!(
                "grab #{seq} ({} cents to {}): Redis says the ledger confirmed it, the ledger does not hold it",
                told.amount_cents, told.user
            )),
            (Some(kept), None) if live.is_some() => differences.push(format!(
                "grab #{seq} ({} cents to {}): in the ledger, not in Redis (a failover or a wiped cache; settle's re-sync restores it)",
                kept.amount_cents, kept.user
            )),
            _ => {}
        }
        let user = in_ledger.or(in_live).map(|grab| grab.user.clone()).expect("a grab of one side");
        grabs.push(GrabRow {
            seq,
            user,
            ledger_cents: in_ledger.map(|grab| grab.amount_cents),
            live_cents: in_live.map(|grab| grab.amount_cents),
            pending,
        });
    }
    match (ledger, live) {
        (None, Some(_)) => differences.push("the ledger holds no record of a packet Redis holds".into()),
        (Some(record), None) if record.status == PacketStatus::Open => differences.push(
            "Redis holds no live state of a packet the ledger holds open (expired keys or a wiped cache: settle re-syncs it)"
                .into(),
        ),
        (Some(record), Some(state)) => {
            let left = record.packet.terms.count.saturating_sub(live_grabs.len() as u32);
            if state.remaining_count != left {
                differences.push(format!(
                    "Redis has {} shares left, {} of {} are not grabbed there",
                    state.remaining_count, left, record.packet.terms.count
                ));
            }
        }
        _ => {}
    }
    Sides { ledger: ledger_side, live: live_side, grabs, differences }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Packet, PacketKind, PacketSpec, PacketTerms};
    use crate::split::Seed;
    use crate::PacketId;

    fn packet_of(total_cents: Cents, count: u32) -> Packet {
        let terms = PacketTerms::new(PacketKind::Fixed, total_cents, count);
        let sender = UserId::from_claim("alice").unwrap();
        Packet::new(PacketId::random(), sender, &PacketSpec::open_to_all(terms, 60), Seed::random(), 0)
    }

    fn grab(seq: u32, user: &str, amount_cents: Cents) -> LoggedGrab {
        LoggedGrab { seq, user: UserId::from_claim(user).unwrap(), amount_cents, at_ms: 1_000 + i64::from(seq) }
    }

    fn record(grabs: Vec<LoggedGrab>) -> LedgerPacket {
        LedgerPacket {
            packet: packet_of(300, 3),
            status: PacketStatus::Open,
            refund_cents: None,
            refund_item_cents: None,
            grabs,
            claims: Vec::new(),
            cancelled_at_ms: None,
        }
    }

    fn live(grabs: Vec<LoggedGrab>, persisted: usize) -> LivePacket {
        LivePacket {
            packet: packet_of(300, 3),
            open: true,
            frozen: false,
            cancelled: false,
            remaining_count: 3 - grabs.len() as u32,
            grabs,
            persisted,
        }
    }

    #[test]
    fn agreeing_sides_show_no_difference_and_a_grab_not_persisted_yet_is_pending() {
        let sides = compare(
            Some(&record(vec![grab(1, "ann", 90)])),
            Some(&live(vec![grab(1, "ann", 90), grab(2, "bob", 110)], 1)),
        );
        assert!(sides.differences.is_empty(), "{:?}", sides.differences);
        assert_eq!(sides.grabs.len(), 2);
        assert_eq!(
            (sides.grabs[1].ledger_cents, sides.grabs[1].live_cents, sides.grabs[1].pending),
            (None, Some(110), true)
        );
        assert_eq!(sides.live.unwrap().grabbed_cents, 200);
    }

    #[test]
    fn each_kind_of_disagreement_is_named() {
        let lost = compare(Some(&record(vec![grab(1, "ann", 90)])), Some(&live(Vec::new(), 0)));
        assert!(lost.differences.iter().any(|d| d.contains("in the ledger, not in Redis")), "{:?}", lost.differences);
        let unconfirmed = compare(Some(&record(Vec::new())), Some(&live(vec![grab(1, "ann", 90)], 1)));
        assert!(
            unconfirmed.differences.iter().any(|d| d.contains("does not hold it")),
            "{:?}",
            unconfirmed.differences
        );
        let other = compare(Some(&record(vec![grab(1, "ann", 90)])), Some(&live(vec![grab(1, "ann", 95)], 1)));
        assert!(other.differences.iter().any(|d| d.contains("grab #1")), "{:?}", other.differences);
        let orphan = compare(None, Some(&live(Vec::new(), 0)));
        assert_eq!(orphan.differences, ["the ledger holds no record of a packet Redis holds"]);
        let gone = compare(Some(&record(Vec::new())), None);
        assert!(gone.differences[0].contains("no live state"), "{:?}", gone.differences);
        let mut finished = record(vec![grab(1, "ann", 300)]);
        finished.status = PacketStatus::Finished;
        assert!(compare(Some(&finished), None).differences.is_empty(), "a finalised packet's keys lapse");
    }
}
