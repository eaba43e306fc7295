//! Books that balance globally (invariants 8 and 9), read as of a cut-off and in one pass.
//!
//! Reconciliation folds the ledger's items, one item collection at a time (a packet with its
//! grabs, claims and refund; a wallet with its balance and movements; a top-up), into small
//! accumulators: one per wallet, packet and top-up, never one per item, so memory follows the
//! number of accounts, not the size of the table, and [`Part`] splits even that over passes.
//!
//! **As of a cut-off.** Every money write stamps its items with its own time, the same on
//! every item of one transaction (`written_at_ms`). Money that moved after the cut-off is left
//! out whole: a send, a grab's credit, a finalisation or a top-up stamped later is not read,
//! on either side. The cut-off is behind the longest a write can take to land, so everything
//! stamped before it was committed before the read began: the books as of the cut-off are
//! complete, and a running system shows no false difference.
//!
//! **Wallets** are the exception: a balance is a running total, read as it is now. It is
//! compared with every movement of its collection; a wallet that moved while it was read looks
//! off, so it is a *suspect*, which the caller reads again exactly (see `funds::reconcile`) before
//! anything is reported.
//!
//! Pure: the adapters read the items.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::hash::{Hash, Hasher};

use serde::Serialize;

use super::ids::{PacketId, UserId};
use super::money::Cents;
use super::packet::PacketStatus;
use super::wallet::MovementKind;
use crate::clock::{rfc3339, Millis};

/// One movement as the ledger holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovementRecord {
    /// Whose wallet.
    pub user: UserId,
    /// What moved it.
    pub kind: MovementKind,
    /// How much (positive).
    pub amount_cents: Cents,
    /// The packet, for a send, grab or refund.
    pub packet_id: Option<PacketId>,
    /// The reference, for a top-up.
    pub reference: Option<String>,
    /// Its transaction's write stamp (0 for items written before stamps).
    pub written_at_ms: Millis,
    /// Its sort key, to name it.
    pub key: String,
    /// Whether it carries the event the Pipe publishes.
    pub has_event: bool,
}

/// One ledger item, as far as the books go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerItem {
    /// A wallet's balance.
    Balance {
        /// Whose.
        user: UserId,
        /// The balance.
        balance_cents: Cents,
    },
    /// A movement of a wallet.
    Movement(MovementRecord),
    /// A top-up applied.
    Topup {
        /// The payments system's reference.
        reference: String,
        /// Whose wallet.
        user: UserId,
        /// How much.
        amount_cents: Cents,
        /// Its write stamp.
        written_at_ms: Millis,
    },
    /// A packet's record.
    Packet {
        /// Which.
        id: PacketId,
        /// Who sent it.
        sender: UserId,
        /// Its total.
        total_cents: Cents,
        /// Its status now.
        status: PacketStatus,
        /// The send's write stamp.
        written_at_ms: Millis,
        /// The finalisation's write stamp, once finalised.
        settled_at_ms: Option<Millis>,
    },
    /// A grab item.
    Grab {
        /// Of which packet.
        packet_id: PacketId,
        /// Who.
        user: UserId,
        /// Which share.
        seq: u32,
        /// How much.
        amount_cents: Cents,
        /// Its write stamp (with its credit).
        written_at_ms: Millis,
    },
    /// A share's claim: by a grabber, or (no user) by the refund.
    Claim {
        /// Of which packet.
        packet_id: PacketId,
        /// Which share.
        seq: u32,
        /// Its amount.
        amount_cents: Cents,
        /// The grabber; `None` for the refund.
        user: Option<UserId>,
    },
    /// A packet's refund item.
    Refund {
        /// Of which packet.
        packet_id: PacketId,
        /// How much.
        amount_cents: Cents,
        /// The finalisation's write stamp.
        written_at_ms: Millis,
    },
}

/// What kind of thing does not add up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DifferenceClass {
    /// Grab, refund or movement items of a packet whose record is missing.
    MissingPacketRecord,
    /// A packet's grabs, refund and credits do not make its total.
    UnbalancedPacket,
    /// A balance that is not the sum of its wallet's movements.
    WalletDiffers,
    /// A movement without the event the Pipe publishes.
    MovementWithoutEvent,
    /// The same money moved more than once.
    MovementTwice,
    /// Money that should have moved and did not: a packet never debited, a grab or refund
    /// never credited, a top-up never applied.
    MovementMissing,
    /// A grab item whose share nobody claimed for that grabber and amount.
    GrabWithoutClaim,
    /// Top-ups in differ from the wallets plus the money in open packets.
    Books,
    /// The source handed a collection over in pieces, so its checks could not be made.
    Source,
}

/// A difference reconciliation found: its class, what it concerns and the amounts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Difference {
    /// `wallet:<user>`, `topup:<reference>`, `packet:<id>` or `books`.
    pub subject: String,
    /// What kind of difference.
    pub class: DifferenceClass,
    /// What does not add up, with the amounts and the ids to act on.
    pub what: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.subject, self.what)
    }
}

/// A wallet that looked off while it was read: its balance and the movements seen with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suspect {
    /// Whose.
    pub user: UserId,
    /// The balance as read.
    pub balance_cents: Cents,
    /// The sum of the movements read.
    pub movements_cents: i128,
}

/// One wallet read exactly: its balance, and its movements read between two reads of the
/// balance that found it unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalletTally {
    /// The balance.
    pub balance_cents: Cents,
    /// The sum of its movements' balance changes.
    pub movements_cents: i128,
}

/// A suspect wallet read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reread {
    /// Read exactly.
    Exact(WalletTally),
    /// It kept moving through every attempt: not checked this run (never a false alarm).
    KeptMoving,
    /// The source is a copy that cannot be read again: the scan's reading stands.
    Impossible,
}

impl Suspect {
    /// The difference this wallet shows once read again (none when it agrees, or when it kept
    /// moving).
    pub fn confirm(&self, reread: Reread) -> Option<Difference> {
        let (balance, sum) = match reread {
            Reread::Exact(tally) => (tally.balance_cents, tally.movements_cents),
            Reread::KeptMoving => return None,
            Reread::Impossible => (self.balance_cents, self.movements_cents),
        };
        (i128::from(balance) != sum).then(|| Difference {
            subject: format!("wallet:{}", self.user),
            class: DifferenceClass::WalletDiffers,
            what: format!("balance {balance} != sum of its movements {sum}"),
        })
    }
}

/// Which share of the accounts a pass keeps: those whose key hashes to `index` modulo `of`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// This pass.
    pub index: u32,
    /// How many passes.
    pub of: u32,
}

impl Part {
    /// Everything in one pass.
    pub const WHOLE: Part = Part { index: 0, of: 1 };

    fn keeps(self, key: &impl Hash) -> bool {
        self.of <= 1 || fingerprint(key) % u64::from(self.of) == u64::from(self.index)
    }
}

/// What reconciliation found, as of its cut-off: the trial balance and every difference.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Reconciliation {
    /// The cut-off (RFC 3339): money written after it is left out.
    pub as_of: String,
    /// Top-ups applied.
    pub topups_cents: u128,
    /// The wallets' balances as of the cut-off (the sum of their movements up to it).
    pub balances_cents: u128,
    /// Money sent and neither credited to a grabber nor refunded yet.
    pub in_open_packets_cents: u128,
    /// Sent into packets out of wallets.
    pub sent_cents: u128,
    /// Credited to grabbers.
    pub grabbed_cents: u128,
    /// Refunded to senders.
    pub refunded_cents: u128,
    /// Wallets read.
    pub wallets: usize,
    /// Packets read.
    pub packets: usize,
    /// Movements read.
    pub movements: usize,
    /// Items read.
    pub items: u64,
    /// Every difference; empty when the books balance.
    pub differences: Vec<Difference>,
    /// Wallets that looked off in the scan and kept moving through every exact re-read: not
    /// checked this run (the next one will).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unchecked_wallets: Vec<UserId>,
}

impl Reconciliation {
    /// True when nothing differs.
    pub fn balanced(&self) -> bool {
        self.differences.is_empty()
    }
}

/// A stable 64-bit hash (SipHash with fixed keys): the same on every run and host.
fn fingerprint(value: &impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// A multiset of `(who, amount)` pairs, kept as a count, a sum and a sum of hashes: two tallies
/// are equal when they hold the same pairs (up to a 2⁻⁶⁴ chance), in a few bytes.
/// 24 bytes: one packet's accumulator holds three.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Tally {
    count: u32,
    cents: i64,
    hashes: u64,
}

impl Tally {
    /// Adds `amount_cents` to or from the account whose [`fingerprint`] is `who`.
    fn add(&mut self, who: u64, amount_cents: Cents) {
        self.count += 1;
        self.cents = self.cents.saturating_add(i64::try_from(amount_cents).unwrap_or(i64::MAX));
        self.hashes = self.hashes.wrapping_add(fingerprint(&(who, amount_cents)));
    }
}

fn who(user: &UserId) -> u64 {
    fingerprint(&user.as_str())
}

/// One packet's accumulator: what its own collection says, and what the movements say
/// (136 bytes with its key: memory is per packet, never per item).
#[derive(Debug, Default)]
struct PacketAcc {
    /// The record's sender (fingerprint) and total, once read.
    sender: u64,
    total: Cents,
    /// [`PacketAcc::READ`], [`PacketAcc::RECORDED`], [`PacketAcc::FINALISED`].
    flags: u8,
    /// Its grab items and refund item, as of the cut-off: who is owed what.
    paid: Tally,
    /// The grab and refund credits: who was credited what.
    credited: Tally,
    /// The debits of its total.
    debits: Tally,
    /// Its grabs' credits by grabber alone (no amounts): matched against its claims' holders
    /// when the claims stand for the grabs.
    grabbers: Tally,
}

impl PacketAcc {
    /// Its collection was read.
    const READ: u8 = 1;
    /// Its record was read, and counts as of the cut-off.
    const RECORDED: u8 = 2;
    /// Finalised as of the cut-off.
    const FINALISED: u8 = 4;
    /// Its grabs were read from its claims (with the wallet, a grab's record is its credit).
    const CLAIMS: u8 = 8;

    fn read(&self) -> bool {
        self.flags & Self::READ != 0
    }

    /// The record as of the cut-off: the sender's fingerprint, the total, finalised.
    fn record(&self) -> Option<(u64, Cents, bool)> {
        (self.flags & Self::RECORDED != 0).then_some((self.sender, self.total, self.flags & Self::FINALISED != 0))
    }
}

/// One top-up's accumulator.
#[derive(Debug, Default)]
struct TopupAcc {
    read: bool,
    record: Tally,
    credits: Tally,
}

/// The fold: feed it every collection, then [`BooksFold::finish`].
#[derive(Debug)]
pub struct BooksFold {
    as_of_ms: Millis,
    settled_by_ms: Millis,
    part: Part,
    packets: HashMap<PacketKey, PacketAcc>,
    /// Grab and refund items of packets whose record is missing (read in their collection).
    orphans: Vec<(PacketKey, String)>,
    topups: HashMap<String, TopupAcc>,
    sent_cents: u128,
    grabbed_cents: u128,
    refunded_cents: u128,
    wallets_read: HashSet<UserId>,
    suspects: Vec<Suspect>,
    differences: Vec<Difference>,
    balances_cents: i128,
    movements: usize,
    items: u64,
}

/// A packet id's 128 bits as two words: 8-byte aligned, so an accumulator with its key is 136
/// bytes, not 144.
type PacketKey = [u64; 2];

fn packet_key(id: &PacketId) -> PacketKey {
    let bits = u128::from_str_radix(id.as_str(), 16).unwrap_or_else(|_| u128::from(fingerprint(&id.as_str())));
    [(bits >> 64) as u64, bits as u64]
}

fn packet_name(key: PacketKey) -> String {
    format!("{:016x}{:016x}", key[0], key[1])
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
            topups: HashMap::new(),
            sent_cents: 0,
            grabbed_cents: 0,
            refunded_cents: 0,
            wallets_read: HashSet::new(),
            suspects: Vec::new(),
            differences: Vec::new(),
            balances_cents: 0,
            movements: 0,
            items: 0,
        }
    }

    fn differ(&mut self, subject: String, class: DifferenceClass, what: String) {
        self.differences.push(Difference { subject, class, what });
    }

    /// Reports an item the books could not read (a corrupt item), by its keys.
    pub fn unreadable(&mut self, pk: &str, sk: &str, why: &str) {
        self.differ(format!("item:{pk}/{sk}"), DifferenceClass::Source, format!("unreadable: {why}"));
    }

    fn counts(&self, written_at_ms: Millis) -> bool {
        written_at_ms <= self.as_of_ms
    }

    /// Folds one item collection: every item of one partition key, read together.
    pub fn collection(&mut self, items: Vec<LedgerItem>) {
        self.items += items.len() as u64;
        match items.first() {
            Some(LedgerItem::Balance { user, .. }) | Some(LedgerItem::Movement(MovementRecord { user, .. })) => {
                let user = user.clone();
                self.wallet(user, items)
            }
            Some(LedgerItem::Topup { .. }) => items.into_iter().for_each(|item| self.topup(item)),
            Some(
                LedgerItem::Packet { id, .. }
                | LedgerItem::Grab { packet_id: id, .. }
                | LedgerItem::Claim { packet_id: id, .. }
                | LedgerItem::Refund { packet_id: id, .. },
            ) => {
                let id = id.clone();
                self.packet(id, items)
            }
            None => {}
        }
    }

    fn topup(&mut self, item: LedgerItem) {
        let LedgerItem::Topup { reference, user, amount_cents, written_at_ms } = item else { return };
        if !self.part.keeps(&reference.as_str()) || !self.counts(written_at_ms) {
            return;
        }
        let acc = self.topups.entry(reference.clone()).or_default();
        if acc.read {
            self.differ(format!("topup:{reference}"), DifferenceClass::Source, "read twice".into());
            return;
        }
        acc.read = true;
        acc.record.add(who(&user), amount_cents);
    }

    fn wallet(&mut self, user: UserId, items: Vec<LedgerItem>) {
        if !self.part.keeps(&user.as_str()) {
            // Its movements still count for the packets and top-ups this pass keeps.
            for item in items {
                if let LedgerItem::Movement(movement) = item {
                    self.movement_effects(&movement);
                }
            }
            return;
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
                    sum += delta;
                    self.movements += 1;
                    if self.counts(movement.written_at_ms) {
                        self.balances_cents += delta;
                    }
                    if !movement.has_event {
                        let what = format!("movement {} carries no event", movement.key);
                        self.differ(format!("wallet:{user}"), DifferenceClass::MovementWithoutEvent, what);
                    }
                    self.movement_effects(&movement);
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
    }

    /// What a movement tells its packet or top-up, when both are kept and it counts.
    fn movement_effects(&mut self, movement: &MovementRecord) {
        if !self.counts(movement.written_at_ms) {
            return;
        }
        match (&movement.packet_id, &movement.reference, movement.kind) {
            (None, Some(reference), MovementKind::Topup) => {
                if self.part.keeps(&reference.as_str()) {
                    self.topups
                        .entry(reference.clone())
                        .or_default()
                        .credits
                        .add(who(&movement.user), movement.amount_cents);
                }
            }
            (Some(id), _, kind) if kind != MovementKind::Topup => {
                let key = packet_key(id);
                if !self.part.keeps(&key) {
                    return;
                }
                let acc = self.packets.entry(key).or_default();
                let amount = u128::from(movement.amount_cents);
                let tally = match kind {
                    MovementKind::Send => {
                        self.sent_cents += amount;
                        &mut acc.debits
                    }
                    MovementKind::Grab => {
                        self.grabbed_cents += amount;
                        acc.grabbers.add(who(&movement.user), 0);
                        &mut acc.credited
                    }
                    _ => {
                        self.refunded_cents += amount;
                        &mut acc.credited
                    }
                };
                tally.add(who(&movement.user), movement.amount_cents);
            }
            _ => {
                let what = format!("{} movement {} concerns nothing", movement.kind.as_str(), movement.key);
                self.differ(format!("wallet:{}", movement.user), DifferenceClass::MovementMissing, what);
            }
        }
    }

    fn packet(&mut self, id: PacketId, items: Vec<LedgerItem>) {
        let key = packet_key(&id);
        if !self.part.keeps(&key) {
            return;
        }
        let subject = format!("packet:{id}");
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
        // With the wallet a grab's record is its credit, in the grabber's wallet: the packet's
        // own collection holds the claims, whose holders stand for its grabbers. Not their
        // amounts: a claimant a failover paid another share holds two claims and one credit,
        // and the share not paid goes to the refund. Each claim is written before its credit,
        // so holders and grabbers match only once the packet is finalised.
        let claims_as_grabs = grabs.is_empty() && claims.values().any(|(holder, _)| holder.is_some());
        let mut holders: Vec<&UserId> = claims.values().filter_map(|(holder, _)| holder.as_ref()).collect();
        holders.sort();
        holders.dedup();
        // Every grab item has its claim (written first, and read after it: `SHARE#` sorts after
        // `GRAB#`), held by the same grabber for the same amount.
        for (user, seq, amount, _) in &grabs {
            let held = claims.get(seq);
            if held.is_none_or(|(holder, cents)| holder.as_ref() != Some(user) || cents != amount) {
                let what = format!("grab item of {user} for {amount} (share {seq}): its claim holds {held:?}");
                self.differ(subject.clone(), DifferenceClass::GrabWithoutClaim, what);
            }
        }
        let acc = self.packets.entry(key).or_default();
        if acc.read() {
            let what = "collection read in pieces: its checks were not made".into();
            self.differ(subject, DifferenceClass::Source, what);
            return;
        }
        acc.flags |= PacketAcc::READ;
        let Some((sender, total, status, written_at_ms, settled_at_ms)) = record else {
            let grab_items = grabs.iter().map(|(user, _, amount, _)| format!("grab item of {user} for {amount}"));
            let held = claims.values().filter(|_| claims_as_grabs).filter_map(|(holder, amount)| {
                holder.as_ref().map(|user| format!("share claim of {user} for {amount}"))
            });
            let grab_items = grab_items.chain(held);
            let refund_item = refund.map(|(amount, _)| format!("refund item for {amount}"));
            self.orphans.extend(grab_items.chain(refund_item).map(|what| (key, what)));
            return;
        };
        if written_at_ms > self.as_of_ms {
            return; // Sent after the cut-off: none of it counts yet.
        }
        let finalised = status != PacketStatus::Open && settled_at_ms.is_none_or(|at| at <= self.settled_by_ms);
        let as_of_ms = self.as_of_ms;
        for (user, _, amount, at) in &grabs {
            if *at <= as_of_ms {
                acc.paid.add(who(user), *amount);
            }
        }
        if let Some((amount, _)) = refund.filter(|(_, at)| *at <= as_of_ms) {
            acc.paid.add(who(&sender), amount);
        }
        acc.sender = who(&sender);
        acc.total = total;
        acc.flags |= PacketAcc::RECORDED | if finalised { PacketAcc::FINALISED } else { 0 };
        if claims_as_grabs {
            acc.flags |= PacketAcc::CLAIMS;
            acc.paid = Tally::default();
            holders.into_iter().for_each(|user| acc.paid.add(who(user), 0));
        }
    }

    /// The reconciliation of everything folded: the cross-checks of each packet and top-up,
    /// and the suspects left to read again.
    pub fn finish(mut self) -> (Reconciliation, Vec<Suspect>) {
        let mut in_open: u128 = 0;
        let packets = std::mem::take(&mut self.packets);
        let mut orphaned: HashMap<PacketKey, usize> = HashMap::new();
        for (key, what) in std::mem::take(&mut self.orphans) {
            *orphaned.entry(key).or_default() += 1;
            let what = format!("{what}, of a packet the ledger does not hold");
            self.differ(format!("packet:{}", packet_name(key)), DifferenceClass::MissingPacketRecord, what);
        }
        let mut read_packets = 0;
        for (key, acc) in packets {
            read_packets += usize::from(acc.read());
            let subject = format!("packet:{}", packet_name(key));
            let Some((sender, total, finalised)) = acc.record() else {
                let moved = acc.debits.count + acc.credited.count;
                if moved > 0 && !orphaned.contains_key(&key) {
                    let what = format!("{moved} movement(s) for a packet the ledger does not hold");
                    self.differ(subject, DifferenceClass::MissingPacketRecord, what);
                }
                continue;
            };
            let by_claims = acc.flags & PacketAcc::CLAIMS != 0;
            let paid = i128::from(acc.paid.cents);
            if finalised && !by_claims && paid != i128::from(total) {
                let what = format!("grabs and refund {paid} != total {total}");
                self.differ(subject.clone(), DifferenceClass::UnbalancedPacket, what);
            }
            if !finalised && paid > i128::from(total) {
                self.differ(
                    subject.clone(),
                    DifferenceClass::UnbalancedPacket,
                    format!("grabs {paid} > total {total}"),
                );
            }
            if acc.debits.count == 0 {
                if acc.credited.count > 0 {
                    let what = format!("{} movement(s) for a packet never debited", acc.credited.count);
                    self.differ(subject, DifferenceClass::MovementMissing, what);
                }
                continue; // Sent without the wallet (FUNDS=none): no money of ours is in it.
            }
            let mut debit = Tally::default();
            debit.add(sender, total);
            self.compare(&subject, "debit of the total", debit, acc.debits);
            if !by_claims {
                self.compare(&subject, "credits of its grabs and refund", acc.paid, acc.credited);
            } else if finalised && acc.paid != acc.grabbers {
                // Every holder was credited before finalisation (the amounts are checked against
                // the total below): a grabber beyond them is a grab no claim accounts for (a
                // second credit of one user shows in their wallet).
                let class = if acc.grabbers.count >= acc.paid.count {
                    DifferenceClass::GrabWithoutClaim
                } else {
                    DifferenceClass::MovementMissing
                };
                let what = format!(
                    "grabs credited to {} user(s), claims held by {}{}",
                    acc.grabbers.count,
                    acc.paid.count,
                    if acc.grabbers.count == acc.paid.count { " (other users)" } else { "" }
                );
                self.differ(subject.clone(), class, what);
            }
            let credited = i128::from(acc.credited.cents);
            if finalised {
                if credited != i128::from(total) {
                    let what = format!("finalised, yet credits {credited} != total {total}");
                    self.differ(subject, DifferenceClass::UnbalancedPacket, what);
                }
            } else {
                in_open += (i128::from(total) - credited).max(0) as u128;
            }
        }
        let (sent, grabbed, refunded) = (self.sent_cents, self.grabbed_cents, self.refunded_cents);
        let mut topups_cents: u128 = 0;
        for (reference, acc) in std::mem::take(&mut self.topups) {
            topups_cents += acc.record.cents.max(0) as u128;
            self.compare(&format!("topup:{reference}"), "top-up credit", acc.record, acc.credits);
        }
        let balances_cents = self.balances_cents.max(0) as u128;
        if self.part.of <= 1 && balances_cents + in_open != topups_cents {
            let what = format!("balances {balances_cents} + in open packets {in_open} != top-ups {topups_cents}");
            self.differ("books".into(), DifferenceClass::Books, what);
        }
        self.differences.sort();
        let reconciliation = Reconciliation {
            as_of: rfc3339(self.as_of_ms),
            topups_cents,
            balances_cents,
            in_open_packets_cents: in_open,
            sent_cents: sent,
            grabbed_cents: grabbed,
            refunded_cents: refunded,
            wallets: self.wallets_read.len(),
            packets: read_packets,
            movements: self.movements,
            items: self.items,
            differences: self.differences,
            unchecked_wallets: Vec::new(),
        };
        (reconciliation, self.suspects)
    }

    /// Reports where the money that should have moved (`expected`) and what did (`moved`) differ.
    fn compare(&mut self, subject: &str, what: &str, expected: Tally, moved: Tally) {
        if expected == moved {
            return;
        }
        let class = if moved.count > expected.count {
            DifferenceClass::MovementTwice
        } else if moved.count < expected.count {
            DifferenceClass::MovementMissing
        } else {
            DifferenceClass::UnbalancedPacket
        };
        let class = if subject.starts_with("topup:") && class == DifferenceClass::UnbalancedPacket {
            DifferenceClass::MovementMissing
        } else {
            class
        };
        let text = format!(
            "{what}: {} for {} expected, {} moved for {}{}",
            expected.count,
            expected.cents,
            moved.count,
            moved.cents,
            if expected.count == moved.count && expected.cents == moved.cents { " (to another wallet)" } else { "" }
        );
        self.differ(subject.to_owned(), class, text);
    }
}

/// Adds the reconciliation of another pass (another [`Part`]) to `total`, and checks the
/// global equation once every pass is in (`last`).
pub fn combine(total: &mut Reconciliation, pass: Reconciliation, last: bool) {
    total.as_of = pass.as_of;
    total.topups_cents += pass.topups_cents;
    total.balances_cents += pass.balances_cents;
    total.in_open_packets_cents += pass.in_open_packets_cents;
    total.sent_cents += pass.sent_cents;
    total.grabbed_cents += pass.grabbed_cents;
    total.refunded_cents += pass.refunded_cents;
    total.wallets += pass.wallets;
    total.packets += pass.packets;
    total.movements += pass.movements;
    total.items = total.items.max(pass.items);
    total.differences.extend(pass.differences);
    total.unchecked_wallets.extend(pass.unchecked_wallets);
    if last {
        let (balances, open, topups) = (total.balances_cents, total.in_open_packets_cents, total.topups_cents);
        // A single pass checked the equation itself already.
        let checked = total.differences.iter().any(|difference| difference.class == DifferenceClass::Books);
        if balances + open != topups && !checked {
            total.differences.push(Difference {
                subject: "books".into(),
                class: DifferenceClass::Books,
                what: format!("balances {balances} + in open packets {open} != top-ups {topups}"),
            });
        }
        total.differences.sort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AS_OF: Millis = 1_000_000;

    fn user(name: &str) -> UserId {
        UserId::from_claim(name).unwrap()
    }

    fn movement(name: &str, kind: MovementKind, amount_cents: Cents, packet: Option<&PacketId>) -> LedgerItem {
        LedgerItem::Movement(MovementRecord {
            user: user(name),
            kind,
            amount_cents,
            packet_id: packet.cloned(),
            reference: (kind == MovementKind::Topup).then(|| format!("ref-{name}")),
            written_at_ms: 10,
            key: format!("MOVE#{}#{name}", kind.as_str()),
            has_event: true,
        })
    }

    fn balance(name: &str, balance_cents: Cents) -> LedgerItem {
        LedgerItem::Balance { user: user(name), balance_cents }
    }

    fn grab(id: &PacketId, name: &str, seq: u32, amount_cents: Cents) -> [LedgerItem; 2] {
        [
            LedgerItem::Grab { packet_id: id.clone(), user: user(name), seq, amount_cents, written_at_ms: 10 },
            LedgerItem::Claim { packet_id: id.clone(), seq, amount_cents, user: Some(user(name)) },
        ]
    }

    /// Alice tops up 1,000, sends 300 in 3 shares; bob grabs 120, carol 100; it expires and
    /// 80 goes back to alice.
    fn balanced() -> (Vec<Vec<LedgerItem>>, PacketId) {
        let id = PacketId::random();
        let mut packet = vec![LedgerItem::Packet {
            id: id.clone(),
            sender: user("alice"),
            total_cents: 300,
            status: PacketStatus::Expired,
            written_at_ms: 5,
            settled_at_ms: Some(20),
        }];
        packet.extend(grab(&id, "bob", 1, 120));
        packet.extend(grab(&id, "carol", 2, 100));
        packet.push(LedgerItem::Claim { packet_id: id.clone(), seq: 3, amount_cents: 80, user: None });
        packet.push(LedgerItem::Refund { packet_id: id.clone(), amount_cents: 80, written_at_ms: 20 });
        let collections = vec![
            vec![LedgerItem::Topup {
                reference: "ref-alice".into(),
                user: user("alice"),
                amount_cents: 1_000,
                written_at_ms: 1,
            }],
            vec![
                balance("alice", 780),
                movement("alice", MovementKind::Topup, 1_000, None),
                movement("alice", MovementKind::Send, 300, Some(&id)),
                movement("alice", MovementKind::Refund, 80, Some(&id)),
            ],
            vec![balance("bob", 120), movement("bob", MovementKind::Grab, 120, Some(&id))],
            vec![balance("carol", 100), movement("carol", MovementKind::Grab, 100, Some(&id))],
            packet,
        ];
        (collections, id)
    }

    fn reconcile(collections: Vec<Vec<LedgerItem>>) -> (Reconciliation, Vec<Suspect>) {
        let mut fold = BooksFold::new(AS_OF, 100, Part::WHOLE);
        collections.into_iter().for_each(|collection| fold.collection(collection));
        fold.finish()
    }

    fn found(collections: Vec<Vec<LedgerItem>>) -> Vec<(DifferenceClass, String)> {
        let (result, suspects) = reconcile(collections);
        let mut found: Vec<_> = result.differences.into_iter().map(|d| (d.class, d.to_string())).collect();
        found.extend(suspects.iter().filter_map(|s| s.confirm(Reread::Impossible)).map(|d| (d.class, d.to_string())));
        found
    }

    /// [`balanced`] as the wallet writes it: no grab items, the claims stand for the grabs and
    /// the credits in the wallets are their records.
    fn balanced_with_credits_as_records() -> (Vec<Vec<LedgerItem>>, PacketId) {
        let (mut collections, id) = balanced();
        collections[4].retain(|item| !matches!(item, LedgerItem::Grab { .. }));
        (collections, id)
    }

    #[test]
    fn with_the_wallet_a_packets_claims_stand_for_its_grabs() {
        let (collections, id) = balanced_with_credits_as_records();
        assert_eq!(found(collections.clone()), vec![], "balanced");

        // Open, carol's claim written and her credit not yet (in flight): no difference, and
        // what is not credited is in the open packet.
        let mut open = collections.clone();
        open[3] = vec![balance("carol", 0)];
        open[1].retain(|item| !matches!(item, LedgerItem::Movement(m) if m.kind == MovementKind::Refund));
        open[1][0] = balance("alice", 700);
        open[4].retain(|item| !matches!(item, LedgerItem::Refund { .. } | LedgerItem::Claim { user: None, .. }));
        if let LedgerItem::Packet { status, settled_at_ms, .. } = &mut open[4][0] {
            *status = PacketStatus::Open;
            *settled_at_ms = None;
        }
        let (books, _) = reconcile(open);
        assert_eq!(books.differences, vec![]);
        assert_eq!(books.in_open_packets_cents, 180);

        // Finalised, bob's claim gone: his credit is a grab no claim accounts for.
        let mut unclaimed = collections.clone();
        unclaimed[4].retain(|item| !matches!(item, LedgerItem::Claim { seq: 1, .. }));
        let differences = found(unclaimed);
        assert!(
            differences.iter().any(|(class, text)| *class == DifferenceClass::GrabWithoutClaim
                && text.starts_with(&format!("packet:{id}: grabs credited to 2 user(s), claims held by 1"))),
            "{differences:?}"
        );

        // Bob also holds share 3's claim (a failover handed it to him after share 1): paid one
        // share, the other goes to the refund. Nothing is wrong.
        let mut paid_another = collections.clone();
        paid_another[4].retain(|item| !matches!(item, LedgerItem::Claim { seq: 3, .. }));
        paid_another[4].push(LedgerItem::Claim {
            packet_id: id.clone(),
            seq: 3,
            amount_cents: 80,
            user: Some(user("bob")),
        });
        assert_eq!(found(paid_another), vec![], "a claimant paid another share");

        // Carol credited twice for the packet: her wallet says so.
        let mut twice = collections;
        twice[3] = vec![
            balance("carol", 200),
            movement("carol", MovementKind::Grab, 100, Some(&id)),
            movement("carol", MovementKind::Grab, 100, Some(&id)),
        ];
        let differences = found(twice);
        assert!(
            differences
                .contains(&(DifferenceClass::MovementTwice, format!("wallet:carol: 2 grab credits of packet {id}"))),
            "{differences:?}"
        );
    }

    #[test]
    fn a_packet_costs_the_fold_136_bytes_with_its_key() {
        assert_eq!(std::mem::size_of::<(PacketKey, PacketAcc)>(), 136);
    }

    #[test]
    fn balanced_books_show_no_difference_and_a_trial_balance() {
        let (collections, _) = balanced();
        let (result, suspects) = reconcile(collections);
        assert!(result.balanced() && suspects.is_empty(), "{:?} {suspects:?}", result.differences);
        assert_eq!((result.topups_cents, result.balances_cents, result.in_open_packets_cents), (1_000, 1_000, 0));
        assert_eq!((result.sent_cents, result.grabbed_cents, result.refunded_cents), (300, 220, 80));
        assert_eq!((result.wallets, result.packets, result.movements), (3, 1, 5));
    }

    #[test]
    fn the_same_books_balance_in_any_number_of_passes() {
        let (collections, _) = balanced();
        let mut total = Reconciliation::default();
        for index in 0..3 {
            let mut fold = BooksFold::new(AS_OF, 100, Part { index, of: 3 });
            collections.iter().cloned().for_each(|collection| fold.collection(collection));
            combine(&mut total, fold.finish().0, index == 2);
        }
        assert!(total.balanced(), "{:?}", total.differences);
        assert_eq!((total.topups_cents, total.balances_cents, total.wallets, total.packets), (1_000, 1_000, 3, 1));
    }

    #[test]
    fn money_written_after_the_cut_off_is_left_out_on_both_sides() {
        // Dave's top-up, its credit and his grab's credit are stamped after the cut-off: the
        // scan read the top-up but not yet its movement, and a balance that already moved.
        let (mut collections, id) = balanced();
        collections.push(vec![LedgerItem::Topup {
            reference: "ref-dave".into(),
            user: user("dave"),
            amount_cents: 50,
            written_at_ms: AS_OF + 1,
        }]);
        let late = |item: LedgerItem| match item {
            LedgerItem::Movement(mut m) => {
                m.written_at_ms = AS_OF + 1;
                LedgerItem::Movement(m)
            }
            other => other,
        };
        collections.push(vec![balance("dave", 50), late(movement("dave", MovementKind::Topup, 50, None))]);
        let (result, suspects) = reconcile(collections);
        assert!(result.balanced() && suspects.is_empty(), "{:?}", result.differences);
        assert_eq!(result.topups_cents, 1_000);
        let _ = id;
    }

    #[test]
    fn an_open_packet_holds_what_is_not_credited_yet() {
        // Before carol's grab is credited and before the refund: open, holding 180.
        let (mut collections, id) = balanced();
        collections[1].retain(|item| !matches!(item, LedgerItem::Movement(m) if m.kind == MovementKind::Refund));
        collections[1][0] = balance("alice", 700);
        collections.remove(3);
        collections[3].retain(|item| match item {
            LedgerItem::Grab { user, .. } | LedgerItem::Claim { user: Some(user), .. } => user.as_str() == "bob",
            LedgerItem::Packet { .. } => true,
            _ => false,
        });
        if let LedgerItem::Packet { status, settled_at_ms, .. } = &mut collections[3][0] {
            (*status, *settled_at_ms) = (PacketStatus::Open, None);
        }
        let (result, suspects) = reconcile(collections);
        assert!(result.balanced() && suspects.is_empty(), "{:?} {suspects:?}", result.differences);
        assert_eq!(result.in_open_packets_cents, 180, "{id}");
    }

    #[test]
    fn each_planted_corruption_is_reported_with_its_class_and_ids() {
        let has = |found: &[(DifferenceClass, String)], class: DifferenceClass, text: &str| {
            assert!(found.iter().any(|(c, d)| *c == class && d.contains(text)), "{class:?} {text:?} not in {found:?}");
        };

        // A forged balance.
        let (mut forged, _) = balanced();
        forged[3][0] = balance("carol", 99);
        has(&found(forged), DifferenceClass::WalletDiffers, "wallet:carol: balance 99 != sum of its movements 100");

        // A deleted packet record.
        let (mut deleted, id) = balanced();
        deleted[4].remove(0);
        let found_deleted = found(deleted);
        has(
            &found_deleted,
            DifferenceClass::MissingPacketRecord,
            &format!("packet:{id}: grab item of bob for 120, of a packet"),
        );
        has(&found_deleted, DifferenceClass::MissingPacketRecord, "refund item for 80");

        // A duplicated movement (with its balance change: the wallet itself agrees).
        let (mut doubled, id) = balanced();
        doubled[2] = vec![
            balance("bob", 240),
            movement("bob", MovementKind::Grab, 120, Some(&id)),
            movement("bob", MovementKind::Grab, 120, Some(&id)),
        ];
        let found_doubled = found(doubled);
        has(
            &found_doubled,
            DifferenceClass::MovementTwice,
            &format!("packet:{id}: credits of its grabs and refund: 3 for 300 expected, 4 moved for 420"),
        );
        has(&found_doubled, DifferenceClass::Books, "books: balances 1120");

        // A movement without its event.
        let (mut silent, _) = balanced();
        if let LedgerItem::Movement(m) = &mut silent[2][1] {
            m.has_event = false;
        }
        has(
            &found(silent),
            DifferenceClass::MovementWithoutEvent,
            "wallet:bob: movement MOVE#grab#bob carries no event",
        );

        // A grab item without its claim.
        let (mut unclaimed, id) = balanced();
        unclaimed[4].retain(|item| !matches!(item, LedgerItem::Claim { seq: 2, .. }));
        has(
            &found(unclaimed),
            DifferenceClass::GrabWithoutClaim,
            &format!("packet:{id}: grab item of carol for 100 (share 2)"),
        );

        // A refund never credited, an unbalanced packet, a lost top-up credit.
        let (mut unrefunded, id) = balanced();
        unrefunded[1] = vec![
            balance("alice", 700),
            movement("alice", MovementKind::Topup, 1_000, None),
            movement("alice", MovementKind::Send, 300, Some(&id)),
        ];
        has(
            &found(unrefunded),
            DifferenceClass::MovementMissing,
            "credits of its grabs and refund: 3 for 300 expected, 2 moved for 220",
        );
        let (mut short, _) = balanced();
        short[4].retain(|item| !matches!(item, LedgerItem::Refund { .. }));
        has(&found(short), DifferenceClass::UnbalancedPacket, "grabs and refund 220 != total 300");
        let (mut lost, _) = balanced();
        lost.push(vec![LedgerItem::Topup {
            reference: "ref-zed".into(),
            user: user("zed"),
            amount_cents: 50,
            written_at_ms: 1,
        }]);
        has(&found(lost), DifferenceClass::MovementMissing, "topup:ref-zed: top-up credit: 1 for 50 expected, 0 moved");
    }

    #[test]
    fn a_wallet_that_moved_while_it_was_read_is_a_suspect_until_read_exactly() {
        let (mut collections, _) = balanced();
        collections[2] = vec![balance("bob", 170), movement("bob", MovementKind::Grab, 120, None)];
        let (_, suspects) = reconcile(collections);
        assert_eq!(suspects.len(), 1);
        let agreeing = WalletTally { balance_cents: 170, movements_cents: 170 };
        assert_eq!(suspects[0].confirm(Reread::Exact(agreeing)), None);
        assert_eq!(suspects[0].confirm(Reread::KeptMoving), None, "a wallet too busy to read is no false alarm");
        let forged = WalletTally { balance_cents: 170, movements_cents: 120 };
        assert_eq!(suspects[0].confirm(Reread::Exact(forged)).unwrap().class, DifferenceClass::WalletDiffers);
        assert!(suspects[0].confirm(Reread::Impossible).is_some(), "a copy's reading stands");
    }
}
