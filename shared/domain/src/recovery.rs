//! Recovery, pure: what becomes of the grabs Redis acknowledged that the ledger does not hold
//! once the two disagree (a failover to a replica that missed writes, an eviction, a restore).
//!
//! The ledger wins and recovery never destroys: a grab the ledger holds (same share, user and
//! amount, whatever the time) stays; a grab it refused is a casualty, and no casualty is silent.
//! Its user keeps the share the ledger already pays them, or gets the packet's next unclaimed
//! share (both `GrabRegranted`), or, when no share is left to give, the grab is revoked
//! (`GrabRevoked`).

use super::grab::LoggedGrab;
use super::ledger::LedgerPacket;
use crate::clock::Millis;

/// What became of a grab Redis acknowledged and the ledger refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Remedy {
    /// The user holds this grab now: one the ledger already paid them (they grabbed again
    /// after a failover lost their first grab), or, when `fresh`, the packet's next unclaimed
    /// share, granted now.
    Regranted {
        /// The grab the user holds in the ledger.
        holds: LoggedGrab,
        /// True when the share is granted now (settle records it); false when the ledger
        /// already held it.
        fresh: bool,
    },
    /// No share is left to give (all taken, or the refund claimed the rest): the grab is void.
    Revoked,
}

/// One casualty of a disagreement between Redis and the ledger, and its remedy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Casualty {
    /// The grab Redis acknowledged to the user.
    pub acknowledged: LoggedGrab,
    /// What the user gets instead.
    pub remedy: Remedy,
}

/// The casualties among `log` (every grab Redis holds of the packet, in grab order, after
/// settle recorded what the ledger would take) and their remedies, at `now_ms`: each log grab
/// the ledger does not hold, once per user, in log order; fresh shares handed out in share
/// order from the ledger's unclaimed ones, none once the refund claimed a share or the packet
/// is finalised.
pub fn plan_recovery(recorded: &LedgerPacket, log: &[LoggedGrab], now_ms: Millis) -> Vec<Casualty> {
    let held_by_ledger = recorded.grabs_to_reload();
    let closed = recorded.refund_claimed() || recorded.status != super::PacketStatus::Open;
    let mut free = if closed { Vec::new() } else { recorded.pool() }.into_iter();
    let mut casualties: Vec<Casualty> = Vec::new();
    for grab in log {
        if casualties.iter().any(|casualty| casualty.acknowledged.user == grab.user) {
            continue;
        }
        // What the ledger pays this user (a grab item, or a claim whose item is still to come).
        let remedy = match held_by_ledger.iter().find(|held| held.user == grab.user) {
            Some(held) if held.seq == grab.seq && held.amount_cents == grab.amount_cents => continue,
            Some(held) => Remedy::Regranted { holds: held.clone(), fresh: false },
            None => match free.next() {
                Some((seq, amount_cents)) => Remedy::Regranted {
                    holds: LoggedGrab { seq, user: grab.user.clone(), amount_cents, at_ms: now_ms },
                    fresh: true,
                },
                None => Remedy::Revoked,
            },
        };
        casualties.push(Casualty { acknowledged: grab.clone(), remedy });
    }
    casualties
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{PacketId, UserId};
    use crate::ledger::{ShareClaim, ShareHolder};
    use crate::packet::{Packet, PacketKind, PacketSpec, PacketStatus, PacketTerms};
    use crate::split::Seed;

    fn user(name: &str) -> UserId {
        UserId::from_claim(name).unwrap()
    }

    fn grab(seq: u32, name: &str, at_ms: Millis) -> LoggedGrab {
        LoggedGrab { seq, user: user(name), amount_cents: 250, at_ms }
    }

    fn claimed(grab: &LoggedGrab) -> ShareClaim {
        ShareClaim {
            seq: grab.seq,
            amount_cents: grab.amount_cents,
            holder: ShareHolder::Grabber { user: grab.user.clone(), at_ms: grab.at_ms },
        }
    }

    /// A fixed packet of 4 shares of 250 whose ledger holds `grabs` and refund claims.
    fn ledger(grabs: &[LoggedGrab], refund_claims: &[u32]) -> LedgerPacket {
        let spec = PacketSpec::open_to_all(PacketTerms::new(PacketKind::Fixed, 1_000, 4), 60);
        let packet = Packet::new(PacketId::random(), user("alice"), &spec, Seed::random(), 0);
        let mut claims: Vec<ShareClaim> = grabs.iter().map(claimed).collect();
        claims.extend(refund_claims.iter().map(|&seq| ShareClaim {
            seq,
            amount_cents: 250,
            holder: ShareHolder::Refund,
        }));
        LedgerPacket {
            packet,
            status: PacketStatus::Open,
            refund_cents: None,
            refund_item_cents: None,
            grabs: grabs.to_vec(),
            claims,
            cancelled_at_ms: None,
        }
    }

    #[test]
    fn a_grab_the_ledger_holds_is_no_casualty_whatever_its_time() {
        let recorded = ledger(&[grab(1, "bob", 10)], &[]);
        assert!(plan_recovery(&recorded, &[grab(1, "bob", 99)], 100).is_empty());
    }

    #[test]
    fn a_grab_whose_share_another_holds_gets_the_next_unclaimed_share() {
        let recorded = ledger(&[grab(1, "bob", 10), grab(2, "carol", 11)], &[]);
        let planned = plan_recovery(&recorded, &[grab(1, "dave", 20), grab(2, "erin", 21)], 100);
        let granted: Vec<(String, u32, bool)> = planned
            .iter()
            .map(|casualty| match &casualty.remedy {
                Remedy::Regranted { holds, fresh } => (holds.user.to_string(), holds.seq, *fresh),
                Remedy::Revoked => (casualty.acknowledged.user.to_string(), 0, false),
            })
            .collect();
        assert_eq!(granted, vec![("dave".into(), 3, true), ("erin".into(), 4, true)]);
    }

    #[test]
    fn with_no_share_left_a_casualty_is_revoked() {
        let recorded = ledger(&[grab(1, "bob", 10), grab(2, "carol", 11), grab(3, "dan", 12)], &[4]);
        let planned = plan_recovery(&recorded, &[grab(1, "erin", 20)], 100);
        assert_eq!(planned, vec![Casualty { acknowledged: grab(1, "erin", 20), remedy: Remedy::Revoked }]);
        let open = ledger(&[grab(1, "bob", 10), grab(2, "carol", 11), grab(3, "dan", 12), grab(4, "fay", 13)], &[]);
        assert_eq!(plan_recovery(&open, &[grab(1, "erin", 20)], 100)[0].remedy, Remedy::Revoked);
    }

    #[test]
    fn a_user_the_ledger_already_pays_keeps_that_share() {
        // bob's first grab (share 1) reached the ledger; a failover lost it; bob grabbed share 3.
        let recorded = ledger(&[grab(1, "bob", 10)], &[]);
        let planned = plan_recovery(&recorded, &[grab(3, "bob", 30)], 100);
        assert_eq!(planned[0].remedy, Remedy::Regranted { holds: grab(1, "bob", 10), fresh: false });
    }

    #[test]
    fn a_user_paid_another_share_is_a_casualty_even_where_their_claim_on_this_one_was_written() {
        // bob's share 1 reached the ledger; a failover lost it; bob grabbed share 2, whose claim
        // settle wrote before his grab item was refused: he is told share 2, paid share 1.
        let mut recorded = ledger(&[grab(1, "bob", 10)], &[]);
        recorded.claims.push(claimed(&grab(2, "bob", 30)));
        let planned = plan_recovery(&recorded, &[grab(2, "bob", 30)], 100);
        assert_eq!(planned[0].remedy, Remedy::Regranted { holds: grab(1, "bob", 10), fresh: false });
    }

    #[test]
    fn a_share_whose_grab_never_reached_the_ledger_is_given_first() {
        // Share 2's grab was lost before it was recorded: nobody holds it, so it goes first.
        let recorded = ledger(&[grab(1, "bob", 10), grab(3, "carol", 12)], &[]);
        let planned = plan_recovery(&recorded, &[grab(1, "dave", 20)], 100);
        assert_eq!(planned[0].remedy, Remedy::Regranted { holds: grab(2, "dave", 100), fresh: true });
    }
}
