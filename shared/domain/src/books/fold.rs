//! The fold itself: [`BooksFold`], fed one item collection at a time (a wallet, a packet, or a
//! record outside the packets: a top-up, a withdrawal, an adjustment) into its accumulators;
//! [`BooksFold::finish`] (in `check`) checks them.

use std::collections::{HashMap, HashSet};

use super::items::{LedgerItem, MovementRecord};
use super::report::{BooksError, Difference, DifferenceClass, Suspect};
use super::tally::{
    packet_bytes, packet_key, who, Overflow, PacketAcc, PacketKey, Part, RecordAcc, RecordKind, Tally, Total,
};
use crate::adjustment::Direction;
use crate::clock::Millis;
use crate::ids::{PacketId, UserId};
use crate::money::Cents;
use crate::packet::PacketStatus;
use crate::wallet::MovementKind;
use crate::withdrawal::{overdue, WithdrawalStatus};

/// The fold: feed it every collection, then [`BooksFold::finish`].
#[derive(Debug)]
pub struct BooksFold {
    pub(super) as_of_ms: Millis,
    settled_by_ms: Millis,
    pub(super) part: Part,
    pub(super) packets: HashMap<PacketKey, PacketAcc>,
    /// Grab and refund items of packets whose record is missing (read in their collection).
    pub(super) orphans: Vec<(PacketKey, String)>,
    /// Top-ups, withdrawals (and their returns) and adjustments, by kind and reference.
    pub(super) records: HashMap<(RecordKind, String), RecordAcc>,
    pub(super) topups_cents: Total,
    /// Withdrawals paid out as of the cut-off.
    pub(super) withdrawn_cents: Total,
    /// Withdrawals debited and not resolved as of the cut-off.
    pub(super) pending_withdrawals_cents: Total,
    /// The ids of those pending longer than [`crate::withdrawal::OVERDUE_AFTER_MS`].
    pub(super) overdue_withdrawals: Vec<String>,
    pub(super) adjusted_in_cents: Total,
    pub(super) adjusted_out_cents: Total,
    pub(super) sent_cents: Total,
    pub(super) grabbed_cents: Total,
    pub(super) refunded_cents: Total,
    pub(super) wallets_read: HashSet<UserId>,
    pub(super) suspects: Vec<Suspect>,
    pub(super) differences: Vec<Difference>,
    pub(super) balances_cents: i128,
    pub(super) movements: usize,
    pub(super) items: u64,
    /// The first sum that overflowed.
    pub(super) overflow: Option<BooksError>,
}

impl BooksFold {
    /// A fold of the books as of `as_of_ms`, keeping `part` of the accounts. `landing_ms` is
    /// the longest a write can take after its stamp: a packet finalised within it of the
    /// cut-off counts as open (a grab item claimed before the finalisation may still land).
    pub fn new(as_of_ms: Millis, landing_ms: Millis, part: Part) -> Self {
        BooksFold {
            as_of_ms,
            settled_by_ms: as_of_ms - landing_ms,
            part,
            packets: HashMap::new(),
            orphans: Vec::new(),
            records: HashMap::new(),
            topups_cents: Total::default(),
            withdrawn_cents: Total::default(),
            pending_withdrawals_cents: Total::default(),
            overdue_withdrawals: Vec::new(),
            adjusted_in_cents: Total::default(),
            adjusted_out_cents: Total::default(),
            sent_cents: Total::default(),
            grabbed_cents: Total::default(),
            refunded_cents: Total::default(),
            wallets_read: HashSet::new(),
            suspects: Vec::new(),
            differences: Vec::new(),
            balances_cents: 0,
            movements: 0,
            items: 0,
            overflow: None,
        }
    }

    pub(super) fn differ(&mut self, subject: String, class: DifferenceClass, what: String) {
        self.differences.push(Difference { subject, class, what });
    }

    /// Reports an item the books could not read (a corrupt item), by its keys.
    pub fn unreadable(&mut self, pk: &str, sk: &str, why: &str) {
        self.differ(format!("item:{pk}/{sk}"), DifferenceClass::Source, format!("unreadable: {why}"));
    }

    fn counts(&self, written_at_ms: Millis) -> bool {
        written_at_ms <= self.as_of_ms
    }

    /// Folds one item collection: every item of one partition key, read together. Once a sum
    /// has overflowed nothing more is folded: [`BooksFold::finish`] returns the error.
    pub fn collection(&mut self, items: Vec<LedgerItem>) {
        if self.overflow.is_none() {
            self.overflow = self.fold_collection(items).err();
        }
    }

    fn fold_collection(&mut self, items: Vec<LedgerItem>) -> Result<(), BooksError> {
        self.items += items.len() as u64;
        match items.first() {
            Some(LedgerItem::Balance { user, .. }) | Some(LedgerItem::Movement(MovementRecord { user, .. })) => {
                let user = user.clone();
                self.wallet(user, items)
            }
            Some(LedgerItem::Topup { .. } | LedgerItem::Withdrawal { .. } | LedgerItem::Adjustment { .. }) => {
                items.into_iter().try_for_each(|item| self.record(item))
            }
            Some(
                LedgerItem::Packet { id, .. }
                | LedgerItem::Grab { packet_id: id, .. }
                | LedgerItem::Claim { packet_id: id, .. }
                | LedgerItem::Refund { packet_id: id, .. },
            ) => {
                let id = id.clone();
                self.packet(id, items)
            }
            None => Ok(()),
        }
    }

    /// Folds a record outside the packets, as of the cut-off: a top-up (money in), a withdrawal
    /// (its debit; paid, failed with its return, or pending), an adjustment (applied, or only
    /// proposed: then no movement may exist for it).
    fn record(&mut self, item: LedgerItem) -> Result<(), BooksError> {
        match item {
            LedgerItem::Topup { reference, user, amount_cents, written_at_ms } => {
                if !self.counts(written_at_ms) || !self.read_record(RecordKind::Topup, &reference) {
                    return Ok(());
                }
                self.expect(RecordKind::Topup, &reference, &user, amount_cents);
                let sum = self.topups_cents.plus(u128::from(amount_cents));
                self.topups_cents = sum.map_err(|Overflow| total_overflow("topup", &reference, amount_cents))?;
            }
            LedgerItem::Withdrawal { id, user, amount_cents, status, written_at_ms, resolved_at_ms } => {
                if !self.counts(written_at_ms) || !self.read_record(RecordKind::Withdrawal, &id) {
                    return Ok(());
                }
                self.expect(RecordKind::Withdrawal, &id, &user, amount_cents);
                let as_of = resolved_at_ms.filter(|at| self.counts(*at)).map_or(WithdrawalStatus::Pending, |_| status);
                let overflow = |Overflow| total_overflow("withdrawal", &id, amount_cents);
                match as_of {
                    WithdrawalStatus::Paid => {
                        self.withdrawn_cents = self.withdrawn_cents.plus(u128::from(amount_cents)).map_err(overflow)?;
                    }
                    WithdrawalStatus::Failed => {
                        self.read_record(RecordKind::WithdrawalReturn, &id);
                        self.expect(RecordKind::WithdrawalReturn, &id, &user, amount_cents);
                    }
                    WithdrawalStatus::Pending => {
                        let pending = self.pending_withdrawals_cents.plus(u128::from(amount_cents));
                        self.pending_withdrawals_cents = pending.map_err(overflow)?;
                        if overdue(written_at_ms, self.as_of_ms) {
                            self.overdue_withdrawals.push(id);
                        }
                    }
                }
            }
            LedgerItem::Adjustment { reference, user, direction, amount_cents, applied_at_ms } => {
                let kind = adjustment_kind(direction);
                if !self.read_record(kind, &reference) || !applied_at_ms.is_some_and(|at| self.counts(at)) {
                    return Ok(());
                }
                self.expect(kind, &reference, &user, amount_cents);
                let overflow = |Overflow| total_overflow("adjustment", &reference, amount_cents);
                let total = match direction {
                    Direction::Credit => &mut self.adjusted_in_cents,
                    Direction::Debit => &mut self.adjusted_out_cents,
                };
                *total = total.plus(u128::from(amount_cents)).map_err(overflow)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Marks record `reference` of `kind` read; false when this pass does not keep it, or when
    /// it was read before (a difference: the source repeated it).
    fn read_record(&mut self, kind: RecordKind, reference: &str) -> bool {
        if !self.part.keeps(reference.as_bytes()) {
            return false;
        }
        let acc = self.records.entry((kind, reference.to_owned())).or_default();
        if std::mem::replace(&mut acc.read, true) {
            self.differ(kind.subject(reference), DifferenceClass::Source, "read twice".into());
            return false;
        }
        true
    }

    /// What record `reference` of `kind` promises: one movement of `amount_cents` in `user`'s wallet.
    fn expect(&mut self, kind: RecordKind, reference: &str, user: &UserId, amount_cents: Cents) {
        self.records.entry((kind, reference.to_owned())).or_default().expected = Tally::one(who(user), amount_cents);
    }

    fn wallet(&mut self, user: UserId, items: Vec<LedgerItem>) -> Result<(), BooksError> {
        if !self.part.keeps(user.as_str().as_bytes()) {
            // Its movements still count for the packets and top-ups this pass keeps.
            for item in items {
                if let LedgerItem::Movement(movement) = item {
                    self.movement_effects(&movement)?;
                }
            }
            return Ok(());
        }
        if !self.wallets_read.insert(user.clone()) {
            let what = "collection read in pieces: its balance was not checked".into();
            self.differ(format!("wallet:{user}"), DifferenceClass::Source, what);
        }
        let mut balance = None;
        let mut sum: i128 = 0;
        let mut grabbed: HashMap<PacketId, u32> = HashMap::new();
        for item in items {
            match item {
                LedgerItem::Balance { balance_cents, .. } => balance = Some(balance_cents),
                LedgerItem::Movement(movement) => {
                    if let (MovementKind::Grab, Some(id)) = (movement.kind, &movement.packet_id) {
                        *grabbed.entry(id.clone()).or_default() += 1;
                    }
                    let delta = movement.kind.delta(movement.amount_cents);
                    let overflow = |sum| BooksError::overflow(format!("wallet:{user}"), movement_item(&movement), sum);
                    sum = sum.checked_add(delta).ok_or_else(|| overflow("movements_cents"))?;
                    self.movements += 1;
                    if self.counts(movement.written_at_ms) {
                        self.balances_cents =
                            self.balances_cents.checked_add(delta).ok_or_else(|| overflow("balances_cents"))?;
                    }
                    if !movement.has_event {
                        let what = format!("movement {} carries no event", movement.key);
                        self.differ(format!("wallet:{user}"), DifferenceClass::MovementWithoutEvent, what);
                    }
                    self.movement_effects(&movement)?;
                }
                _ => {}
            }
        }
        // One user, one share of a packet: a second credit for it is a movement twice.
        let mut twice: Vec<(PacketId, u32)> = grabbed.into_iter().filter(|(_, credits)| *credits > 1).collect();
        twice.sort();
        for (id, credits) in twice {
            let what = format!("{credits} grab credits of packet {id}");
            self.differ(format!("wallet:{user}"), DifferenceClass::MovementTwice, what);
        }
        let balance_cents = balance.unwrap_or(0);
        if i128::from(balance_cents) != sum {
            self.suspects.push(Suspect { user, balance_cents, movements_cents: sum });
        }
        Ok(())
    }

    /// What a movement tells its packet or top-up, when both are kept and it counts.
    fn movement_effects(&mut self, movement: &MovementRecord) -> Result<(), BooksError> {
        if !self.counts(movement.written_at_ms) {
            return Ok(());
        }
        let record = match movement.kind {
            MovementKind::Topup => Some(RecordKind::Topup),
            MovementKind::Withdrawal => Some(RecordKind::Withdrawal),
            MovementKind::WithdrawalReturn => Some(RecordKind::WithdrawalReturn),
            MovementKind::AdjustmentCredit => Some(adjustment_kind(Direction::Credit)),
            MovementKind::AdjustmentDebit => Some(adjustment_kind(Direction::Debit)),
            MovementKind::Send | MovementKind::Grab | MovementKind::Refund => None,
        };
        match (&movement.packet_id, &movement.reference, record) {
            (None, Some(reference), Some(kind)) => {
                if self.part.keeps(reference.as_bytes()) {
                    let moved = &mut self.records.entry((kind, reference.clone())).or_default().moved;
                    moved.add(who(&movement.user), movement.amount_cents).map_err(|Overflow| {
                        BooksError::overflow(kind.subject(reference), movement_item(movement), "moved")
                    })?;
                }
            }
            (Some(id), _, None) => {
                let key = packet_key(id);
                if !self.part.keeps(&packet_bytes(key)) {
                    return Ok(());
                }
                let named = |sum| BooksError::overflow(format!("packet:{id}"), movement_item(movement), sum);
                let (mover, acc) = (who(&movement.user), self.packets.entry(key).or_default());
                let (total, total_name, tally, tally_name) = match movement.kind {
                    MovementKind::Send => (&mut self.sent_cents, "sent_cents", &mut acc.debits, "debits"),
                    MovementKind::Grab => {
                        acc.grabbers.add(mover, 0).map_err(|Overflow| named("grabbers"))?;
                        (&mut self.grabbed_cents, "grabbed_cents", &mut acc.credited, "credits")
                    }
                    _ => (&mut self.refunded_cents, "refunded_cents", &mut acc.credited, "credits"),
                };
                *total = total.plus(u128::from(movement.amount_cents)).map_err(|Overflow| named(total_name))?;
                tally.add(mover, movement.amount_cents).map_err(|Overflow| named(tally_name))?;
            }
            _ => {
                let what = format!("{} movement {} concerns nothing", movement.kind.as_str(), movement.key);
                self.differ(format!("wallet:{}", movement.user), DifferenceClass::MovementMissing, what);
            }
        }
        Ok(())
    }

    fn packet(&mut self, id: PacketId, items: Vec<LedgerItem>) -> Result<(), BooksError> {
        let key = packet_key(&id);
        if !self.part.keeps(&packet_bytes(key)) {
            return Ok(());
        }
        let subject = format!("packet:{id}");
        let mut items = PacketItems::read(items);
        // With the wallet a grab's record is its credit, in the grabber's wallet: the packet's
        // own collection holds the claims, whose holders stand for its grabbers. Not their
        // amounts: a claimant a failover paid another share holds two claims and one credit,
        // and the share not paid goes to the refund. Each claim is written before its credit,
        // so holders and grabbers match only once the packet is finalised.
        let claims_as_grabs = items.grabs.is_empty() && items.claims.values().any(|(holder, _)| holder.is_some());
        self.check_claims(&subject, &items);
        let acc = self.packets.entry(key).or_default();
        if acc.read() {
            let what = "collection read in pieces: its checks were not made".into();
            self.differ(subject, DifferenceClass::Source, what);
            return Ok(());
        }
        acc.flags |= PacketAcc::READ;
        let Some((sender, total, status, written_at_ms, settled_at_ms)) = items.record.take() else {
            self.orphan(key, &items, claims_as_grabs);
            return Ok(());
        };
        if written_at_ms > self.as_of_ms {
            return Ok(()); // Sent after the cut-off: none of it counts yet.
        }
        let finalised = status != PacketStatus::Open && settled_at_ms.is_none_or(|at| at <= self.settled_by_ms);
        let as_of_ms = self.as_of_ms;
        let paid = |item: String| BooksError::overflow(&subject, item, "paid");
        for (user, seq, amount, at) in &items.grabs {
            if *at <= as_of_ms {
                let item = |Overflow| paid(format!("grab item of {user} for {amount} (share {seq})"));
                acc.paid.add(who(user), *amount).map_err(item)?;
            }
        }
        if let Some((amount, _)) = items.refund.filter(|(_, at)| *at <= as_of_ms) {
            acc.paid.add(who(&sender), amount).map_err(|Overflow| paid(format!("refund item for {amount}")))?;
        }
        acc.sender = who(&sender);
        acc.total = total;
        acc.flags |= PacketAcc::RECORDED | if finalised { PacketAcc::FINALISED } else { 0 };
        if claims_as_grabs {
            acc.flags |= PacketAcc::CLAIMS;
            acc.paid = Tally::default();
            for user in items.holders() {
                acc.paid.add(who(user), 0).map_err(|Overflow| paid(format!("share claim of {user}")))?;
            }
        }
        Ok(())
    }

    /// Every grab item has its claim (written first, and read after it: `SHARE#` sorts after
    /// `GRAB#`), held by the same grabber for the same amount.
    fn check_claims(&mut self, subject: &str, items: &PacketItems) {
        for (user, seq, amount, _) in &items.grabs {
            let held = items.claims.get(seq);
            if held.is_none_or(|(holder, cents)| holder.as_ref() != Some(user) || cents != amount) {
                let what = format!("grab item of {user} for {amount} (share {seq}): its claim holds {held:?}");
                self.differ(subject.to_owned(), DifferenceClass::GrabWithoutClaim, what);
            }
        }
    }

    /// Keeps the grab items (or, the claims standing for the grabs, the claims' holders) and
    /// the refund item of a packet whose record is missing: [`BooksFold::finish`] reports them.
    fn orphan(&mut self, key: PacketKey, items: &PacketItems, claims_as_grabs: bool) {
        let grab_items = items.grabs.iter().map(|(user, _, amount, _)| format!("grab item of {user} for {amount}"));
        let held =
            items.claims.values().filter(|_| claims_as_grabs).filter_map(|(holder, amount)| {
                holder.as_ref().map(|user| format!("share claim of {user} for {amount}"))
            });
        let grab_items = grab_items.chain(held);
        let refund_item = items.refund.map(|(amount, _)| format!("refund item for {amount}"));
        self.orphans.extend(grab_items.chain(refund_item).map(|what| (key, what)));
    }
}

/// An adjustment's record kind: its direction is part of what its movement must match.
fn adjustment_kind(direction: Direction) -> RecordKind {
    match direction {
        Direction::Credit => RecordKind::AdjustmentCredit,
        Direction::Debit => RecordKind::AdjustmentDebit,
    }
}

/// A trial-balance total past its type, at record `reference` of `kind`.
fn total_overflow(kind: &str, reference: &str, amount_cents: Cents) -> BooksError {
    BooksError::overflow(format!("{kind}:{reference}"), format!("{kind} for {amount_cents}"), "the totals")
}

/// A movement as an overflow names it.
fn movement_item(movement: &MovementRecord) -> String {
    format!("movement {} of wallet:{} for {} cents", movement.key, movement.user, movement.amount_cents)
}

/// One packet's collection, item by item: its record, its grab items, its claims by share and
/// its refund item.
struct PacketItems {
    /// The record: sender, total, status, the send's and the finalisation's write stamps.
    record: Option<(UserId, Cents, PacketStatus, Millis, Option<Millis>)>,
    /// The grab items: grabber, share, amount, write stamp.
    grabs: Vec<(UserId, u32, Cents, Millis)>,
    /// The claims by share: holder (`None` for the refund), amount.
    claims: HashMap<u32, (Option<UserId>, Cents)>,
    /// The refund item: amount, write stamp.
    refund: Option<(Cents, Millis)>,
}

impl PacketItems {
    fn read(items: Vec<LedgerItem>) -> Self {
        let mut record = None;
        let mut grabs = Vec::new();
        let mut claims: HashMap<u32, (Option<UserId>, Cents)> = HashMap::new();
        let mut refund = None;
        for item in items {
            match item {
                LedgerItem::Packet { sender, total_cents, status, written_at_ms, settled_at_ms, .. } => {
                    record = Some((sender, total_cents, status, written_at_ms, settled_at_ms))
                }
                LedgerItem::Grab { user, seq, amount_cents, written_at_ms, .. } => {
                    grabs.push((user, seq, amount_cents, written_at_ms))
                }
                LedgerItem::Claim { seq, amount_cents, user, .. } => {
                    claims.insert(seq, (user, amount_cents));
                }
                LedgerItem::Refund { amount_cents, written_at_ms, .. } => refund = Some((amount_cents, written_at_ms)),
                _ => {}
            }
        }
        PacketItems { record, grabs, claims, refund }
    }

    /// The claims' holders, each once, in order.
    fn holders(&self) -> Vec<&UserId> {
        let mut holders: Vec<&UserId> = self.claims.values().filter_map(|(holder, _)| holder.as_ref()).collect();
        holders.sort();
        holders.dedup();
        holders
    }
}
