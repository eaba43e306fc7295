//! The ledger's view of a packet and its grabs: its record, every share's claim, the grabs it
//! pays, its refund; and the refusals of grabs it will not pay. One module owns it; settle,
//! recovery and the adapters read it.

use super::grab::{GrabAttempt, GrabOutcome, LoggedGrab};
use super::grab_rule::{decide, GrabDecision, GrabState, Standing};
use super::ids::UserId;
use super::money::Cents;
use super::packet::{Packet, PacketStatus, PacketView};
use crate::clock::Millis;

/// A grab the ledger refused, because recording it would pay a share or a user twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Its share is claimed by another user (or by the refund).
    ShareHeld(LoggedGrab),
    /// Its user already holds another share of the packet.
    UserPaid(LoggedGrab),
}

impl Refusal {
    /// The grab refused.
    pub fn grab(&self) -> &LoggedGrab {
        match self {
            Refusal::ShareHeld(grab) | Refusal::UserPaid(grab) => grab,
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::ShareHeld(grab) => {
                write!(
                    f,
                    "share {} ({} cents) grabbed by {} is held by another in the ledger",
                    grab.seq, grab.amount_cents, grab.user
                )
            }
            Refusal::UserPaid(grab) => {
                write!(f, "{} grabbed share {} but the ledger already pays them another share", grab.user, grab.seq)
            }
        }
    }
}

/// Who holds one share in the ledger. Each share is claimed at most once, by the write itself
/// (`SHARE#<seq>` under a condition), so two users can never be paid the same share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareHolder {
    /// A grab took it.
    Grabber {
        /// Who grabbed.
        user: UserId,
        /// When, epoch ms.
        at_ms: Millis,
    },
    /// Settle claimed it for the sender's refund: no grab can be recorded for it after.
    Refund,
}

/// One share's claim in the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareClaim {
    /// The share's 1-based position: grab `seq` takes share `seq`.
    pub seq: u32,
    /// The share, in cents.
    pub amount_cents: Cents,
    /// Who holds it.
    pub holder: ShareHolder,
}

impl ShareClaim {
    /// The grab this claim records, when a grab holds it.
    pub fn grab(&self) -> Option<LoggedGrab> {
        match &self.holder {
            ShareHolder::Grabber { user, at_ms } => {
                Some(LoggedGrab { seq: self.seq, user: user.clone(), amount_cents: self.amount_cents, at_ms: *at_ms })
            }
            ShareHolder::Refund => None,
        }
    }

    /// True when this claim is `grab`'s: the same share, user and amount. The time is not
    /// identity: a user who grabs the same share again after a failover makes the same grab.
    pub fn holds(&self, grab: &LoggedGrab) -> bool {
        self.seq == grab.seq
            && self.amount_cents == grab.amount_cents
            && matches!(&self.holder, ShareHolder::Grabber { user, .. } if *user == grab.user)
    }
}

/// A packet as the ledger holds it: its record, status, grabs (in grab order) and refund.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerPacket {
    /// The packet as sent.
    pub packet: Packet,
    /// `Open` until settle finalises it.
    pub status: PacketStatus,
    /// Set by finalisation.
    pub refund_cents: Option<Cents>,
    /// The refund item's amount, if one was written.
    pub refund_item_cents: Option<Cents>,
    /// Every grab item, in grab order.
    pub grabs: Vec<LoggedGrab>,
    /// Every share claim, by share.
    pub claims: Vec<ShareClaim>,
    /// When the sender cancelled it, if they did.
    pub cancelled_at_ms: Option<Millis>,
}

impl LedgerPacket {
    /// The shares nobody holds in the ledger, `(seq, amount)` in share order: what a reload
    /// into the live store hands out. A share below the highest claimed one whose grab a
    /// failover lost before it reached the ledger goes out again: nobody holds it.
    pub fn pool(&self) -> Vec<(u32, Cents)> {
        let shares = self.packet.shares();
        self.unclaimed_shares()
            .into_iter()
            .filter(|seq| !self.grabs.iter().any(|grab| grab.seq == *seq))
            .filter_map(|seq| Some((seq, *shares.get(seq as usize - 1)?)))
            .collect()
    }

    /// Claims a grabber holds with no grab item of theirs yet (settle stopped between the two
    /// writes): the grabs settle completes before it finalises.
    pub fn incomplete_claims(&self) -> Vec<LoggedGrab> {
        self.claims
            .iter()
            .filter_map(ShareClaim::grab)
            .filter(|claimed| !self.grabs.iter().any(|grab| grab.user == claimed.user))
            .collect()
    }

    /// The shares nobody has claimed, by number.
    pub fn unclaimed_shares(&self) -> Vec<u32> {
        (1..=self.packet.terms.count).filter(|seq| !self.claims.iter().any(|claim| claim.seq == *seq)).collect()
    }

    /// The grabs Redis must know of when it reloads this packet: every grab item, and every
    /// claim whose grab item is still to be written; in share order.
    pub fn grabs_to_reload(&self) -> Vec<LoggedGrab> {
        let mut grabs: Vec<LoggedGrab> = self.grabs.iter().cloned().chain(self.incomplete_claims()).collect();
        grabs.sort_by_key(|grab| grab.seq);
        grabs
    }

    /// True when a share is claimed for the refund: the packet is closed to grabs in the ledger.
    pub fn refund_claimed(&self) -> bool {
        self.claims.iter().any(|claim| claim.holder == ShareHolder::Refund)
    }

    /// What `attempt` at `now_ms` comes to, decided by the ledger alone (for a packet the live
    /// store no longer holds), by [`decide`] on [`LedgerPacket::grab_state`]. `None` where
    /// `decide` hands out a share: only the live store hands out shares (the caller reloads the
    /// packet into it). The passphrase is not tested here: every answer left is a packet that
    /// is over, and an over packet answering its state to any phrase is no oracle for guessing
    /// it (the live store, which counts wrong tries, tests it while shares can still be had).
    pub fn grab_outcome(&self, attempt: &GrabAttempt, now_ms: Millis) -> Option<GrabOutcome> {
        match decide(&self.grab_state(now_ms), attempt, now_ms) {
            GrabDecision::Answer(outcome) => Some(outcome),
            GrabDecision::Take | GrabDecision::Resyncing => None,
        }
    }

    /// This packet as [`decide`] reads it at `now_ms`: its grab items, shares left as
    /// `count − grab items`, standing as its status says (a finished packet before a cancelled
    /// one: [`PacketStatus::at`]); no wrong tries (not tested).
    pub fn grab_state(&self, now_ms: Millis) -> GrabState<'_> {
        GrabState {
            packet: &self.packet,
            grabs: &self.grabs,
            remaining_count: self.remaining_count(),
            standing: match self.view_status(now_ms) {
                PacketStatus::Open => Standing::Open,
                PacketStatus::Cancelled => Standing::Cancelled,
                PacketStatus::Finished | PacketStatus::Expired => Standing::Closed,
            },
            wrong_tries: None,
        }
    }

    /// Shares with no grab item yet: `count − grab items`.
    fn remaining_count(&self) -> u32 {
        self.packet.terms.count.saturating_sub(u32::try_from(self.grabs.len()).unwrap_or(u32::MAX))
    }

    fn view_status(&self, now_ms: Millis) -> PacketStatus {
        match self.status {
            PacketStatus::Open => PacketStatus::at(
                self.remaining_count(),
                self.packet.expires_at_ms,
                self.cancelled_at_ms.is_some(),
                now_ms,
            ),
            settled => settled,
        }
    }

    /// The packet view `viewer` gets from the ledger's side.
    pub fn view(&self, viewer: &UserId, now_ms: Millis) -> PacketView {
        self.packet.view(viewer, &self.grabs, self.view_status(now_ms), self.refund_cents)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::PacketId;
    use crate::packet::{PacketKind, PacketSpec, PacketTerms};
    use crate::split::Seed;

    #[test]
    fn the_ledger_says_which_shares_are_gone_and_which_grabs_to_finish() {
        let packet = Packet::new(
            PacketId::random(),
            UserId::from_claim("alice").unwrap(),
            &PacketSpec::open_to_all(PacketTerms::new(PacketKind::Fixed, 400, 4), 60),
            Seed::random(),
            0,
        );
        let user = |name: &str| UserId::from_claim(name).unwrap();
        let grabbed = |seq: u32, name: &str| LoggedGrab { seq, user: user(name), amount_cents: 100, at_ms: 5 };
        let claimed = |seq: u32, name: &str| ShareClaim {
            seq,
            amount_cents: 100,
            holder: ShareHolder::Grabber { user: user(name), at_ms: 5 },
        };
        let recorded = LedgerPacket {
            packet,
            status: PacketStatus::Open,
            refund_cents: None,
            refund_item_cents: None,
            // bob's grab item is written; carol's share 3 is claimed, her item not yet.
            grabs: vec![grabbed(1, "bob")],
            claims: vec![claimed(1, "bob"), claimed(3, "carol")],
            cancelled_at_ms: None,
        };
        assert_eq!(
            recorded.pool(),
            vec![(2, 100), (4, 100)],
            "share 2, whose grab never reached the ledger, goes out again"
        );
        assert_eq!(recorded.incomplete_claims(), vec![grabbed(3, "carol")]);
        assert_eq!(recorded.unclaimed_shares(), vec![2, 4]);
        assert_eq!(recorded.grabs_to_reload(), vec![grabbed(1, "bob"), grabbed(3, "carol")]);
        assert!(!recorded.refund_claimed());
    }
}
