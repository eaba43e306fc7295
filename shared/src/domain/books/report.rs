//! What reconciliation reports: [`Reconciliation`] (the trial balance and every
//! [`Difference`]), the [`Suspect`] wallets to read again, [`BooksFold::finish`] with its
//! cross-checks of each packet and top-up, and [`combine`], which adds passes up.

use std::collections::HashMap;
use std::fmt;

use serde::Serialize;

use super::fold::BooksFold;
use super::tally::{packet_name, PacketAcc, PacketKey, Tally};
use crate::clock::rfc3339;
use crate::domain::ids::UserId;
use crate::domain::money::Cents;

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

impl BooksFold {
    /// The reconciliation of everything folded: the cross-checks of each packet and top-up,
    /// and the suspects left to read again.
    pub fn finish(mut self) -> (Reconciliation, Vec<Suspect>) {
        let mut in_open: u128 = 0;
        let packets = std::mem::take(&mut self.packets);
        let orphaned = self.report_orphans();
        let mut read_packets = 0;
        for (key, acc) in packets {
            read_packets += usize::from(acc.read());
            let subject = format!("packet:{}", packet_name(key));
            in_open += self.check_packet(&subject, &acc, orphaned.contains_key(&key));
        }
        let topups_cents = self.check_topups();
        let balances_cents = self.balances_cents.max(0) as u128;
        if self.part.of <= 1 && balances_cents + in_open != topups_cents {
            let what = format!("balances {balances_cents} + in open packets {in_open} != top-ups {topups_cents}");
            self.differ("books".into(), DifferenceClass::Books, what);
        }
        self.into_report(topups_cents, balances_cents, in_open, read_packets)
    }

    /// Reports the items kept of packets whose record is missing; returns how many each
    /// such packet has.
    fn report_orphans(&mut self) -> HashMap<PacketKey, usize> {
        let mut orphaned: HashMap<PacketKey, usize> = HashMap::new();
        for (key, what) in std::mem::take(&mut self.orphans) {
            *orphaned.entry(key).or_default() += 1;
            let what = format!("{what}, of a packet the ledger does not hold");
            self.differ(format!("packet:{}", packet_name(key)), DifferenceClass::MissingPacketRecord, what);
        }
        orphaned
    }

    /// Checks one packet (`orphaned`: its items without a record are reported already);
    /// returns the money still held in it (0 once finalised, or with none of ours in it).
    fn check_packet(&mut self, subject: &str, acc: &PacketAcc, orphaned: bool) -> u128 {
        let Some((sender, total, finalised)) = acc.record() else {
            let moved = acc.debits.count + acc.credited.count;
            if moved > 0 && !orphaned {
                let what = format!("{moved} movement(s) for a packet the ledger does not hold");
                self.differ(subject.to_owned(), DifferenceClass::MissingPacketRecord, what);
            }
            return 0;
        };
        let by_claims = acc.flags & PacketAcc::CLAIMS != 0;
        self.check_paid(subject, acc, total, finalised, by_claims);
        if acc.debits.count == 0 {
            if acc.credited.count > 0 {
                let what = format!("{} movement(s) for a packet never debited", acc.credited.count);
                self.differ(subject.to_owned(), DifferenceClass::MovementMissing, what);
            }
            return 0; // Sent without the wallet (FUNDS=none): no money of ours is in it.
        }
        self.check_movements(subject, acc, sender, total, finalised, by_claims);
        self.check_credited(subject, acc, total, finalised)
    }

    /// A packet's grab items and refund item against its total.
    fn check_paid(&mut self, subject: &str, acc: &PacketAcc, total: Cents, finalised: bool, by_claims: bool) {
        let paid = i128::from(acc.paid.cents);
        if finalised && !by_claims && paid != i128::from(total) {
            let what = format!("grabs and refund {paid} != total {total}");
            self.differ(subject.to_owned(), DifferenceClass::UnbalancedPacket, what);
        }
        if !finalised && paid > i128::from(total) {
            self.differ(subject.to_owned(), DifferenceClass::UnbalancedPacket, format!("grabs {paid} > total {total}"));
        }
    }

    /// A packet's debit, and its grabs' and refund's credits (or, the claims standing for the
    /// grabs, its grabbers against the claims' holders).
    fn check_movements(
        &mut self,
        subject: &str,
        acc: &PacketAcc,
        sender: u64,
        total: Cents,
        finalised: bool,
        by_claims: bool,
    ) {
        let mut debit = Tally::default();
        debit.add(sender, total);
        self.compare(subject, "debit of the total", debit, acc.debits);
        if !by_claims {
            self.compare(subject, "credits of its grabs and refund", acc.paid, acc.credited);
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
            self.differ(subject.to_owned(), class, what);
        }
    }

    /// A finalised packet's credits make its total; an open one holds what is not credited
    /// yet, which this returns (0 for a finalised one).
    fn check_credited(&mut self, subject: &str, acc: &PacketAcc, total: Cents, finalised: bool) -> u128 {
        let credited = i128::from(acc.credited.cents);
        if finalised {
            if credited != i128::from(total) {
                let what = format!("finalised, yet credits {credited} != total {total}");
                self.differ(subject.to_owned(), DifferenceClass::UnbalancedPacket, what);
            }
            0
        } else {
            (i128::from(total) - credited).max(0) as u128
        }
    }

    /// Checks each top-up's credit; returns the top-ups' sum.
    fn check_topups(&mut self) -> u128 {
        let mut topups_cents: u128 = 0;
        for (reference, acc) in std::mem::take(&mut self.topups) {
            topups_cents += acc.record.cents.max(0) as u128;
            self.compare(&format!("topup:{reference}"), "top-up credit", acc.record, acc.credits);
        }
        topups_cents
    }

    /// The trial balance, with every difference sorted, and the suspects.
    fn into_report(
        mut self,
        topups_cents: u128,
        balances_cents: u128,
        in_open: u128,
        read_packets: usize,
    ) -> (Reconciliation, Vec<Suspect>) {
        self.differences.sort();
        let reconciliation = Reconciliation {
            as_of: rfc3339(self.as_of_ms),
            topups_cents,
            balances_cents,
            in_open_packets_cents: in_open,
            sent_cents: self.sent_cents,
            grabbed_cents: self.grabbed_cents,
            refunded_cents: self.refunded_cents,
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

/// Adds the reconciliation of another pass (another [`Part`](super::Part)) to `total`, and
/// checks the global equation once every pass is in (`last`).
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
