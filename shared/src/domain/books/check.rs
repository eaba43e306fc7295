//! From a fold to a report: [`BooksFold::finish`] with its cross-checks of each packet (paid,
//! moved, credited) and top-up, and the global equation.

use std::collections::HashMap;

use super::fold::BooksFold;
use super::report::{DifferenceClass, Reconciliation, Suspect};
use super::tally::{packet_name, PacketAcc, PacketKey, Tally};
use crate::clock::rfc3339;
use crate::domain::money::Cents;

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
