//! From a fold to a report: [`BooksFold::finish`] with its cross-checks of each packet (paid,
//! moved, credited) and record (top-up, withdrawal, adjustment), and the global equation.

use std::collections::HashSet;

use super::fold::BooksFold;
use super::report::{equation_differs, BooksError, Difference, DifferenceClass, Reconciliation, Suspect};
use super::tally::{packet_name, Overflow, PacketAcc, PacketKey, Sum, Tally, Total};
use crate::clock::rfc3339;
use crate::money::Cents;

impl BooksFold {
    /// The reconciliation of everything folded: the cross-checks of each packet and top-up,
    /// and the suspects left to read again. A sum that overflowed is the error, naming its item.
    pub fn finish(mut self) -> Result<(Reconciliation, Vec<Suspect>), BooksError> {
        if let Some(error) = self.overflow.take() {
            return Err(error);
        }
        let mut in_open = Total::default();
        let packets = std::mem::take(&mut self.packets);
        let orphaned = self.report_orphans();
        let mut read_packets = 0;
        for (key, acc) in packets {
            read_packets += usize::from(acc.read());
            let subject = format!("packet:{}", packet_name(key));
            let open = self.check_packet(&subject, &acc, orphaned.contains(&key));
            in_open = in_open.plus(u128::from(open)).map_err(|Overflow| {
                BooksError::overflow(&subject, format!("{open} cents held open"), "in_open_packets_cents")
            })?;
        }
        self.check_records();
        let whole = self.part.of <= 1;
        let (mut reconciliation, suspects) = self.into_report(in_open.get(), read_packets);
        if whole {
            if let Some(what) = equation_differs(&reconciliation)? {
                reconciliation.differences.push(Difference {
                    subject: "books".into(),
                    class: DifferenceClass::Books,
                    what,
                });
                reconciliation.differences.sort();
            }
        }
        Ok((reconciliation, suspects))
    }

    /// Reports the items kept of packets whose record is missing; returns those packets.
    fn report_orphans(&mut self) -> HashSet<PacketKey> {
        let mut orphaned = HashSet::new();
        for (key, what) in std::mem::take(&mut self.orphans) {
            orphaned.insert(key);
            let what = format!("{what}, of a packet the ledger does not hold");
            self.differ(format!("packet:{}", packet_name(key)), DifferenceClass::MissingPacketRecord, what);
        }
        orphaned
    }

    /// Checks one packet (`orphaned`: its items without a record are reported already);
    /// returns the money still held in it (0 once finalised, or with none of ours in it).
    fn check_packet(&mut self, subject: &str, acc: &PacketAcc, orphaned: bool) -> Cents {
        let Some((sender, total, finalised)) = acc.record() else {
            let moved = u64::from(acc.debits.count) + u64::from(acc.credited.count);
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
        self.check_credited(subject, acc.credited.cents, total, finalised)
    }

    /// A packet's grab items and refund item against its total.
    fn check_paid(&mut self, subject: &str, acc: &PacketAcc, total: Cents, finalised: bool, by_claims: bool) {
        let paid = acc.paid.cents;
        if finalised && !by_claims && paid.cents() != total {
            let what = format!("grabs and refund {paid} != total {total}");
            self.differ(subject.to_owned(), DifferenceClass::UnbalancedPacket, what);
        }
        if !finalised && paid.cents() > total {
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
        self.compare(subject, "debit of the total", Tally::one(sender, total), acc.debits);
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
    /// yet, which this returns (0 for a finalised one). Credits beyond an open packet's total
    /// are money from nowhere: a difference, never a clamp.
    fn check_credited(&mut self, subject: &str, credited: Sum, total: Cents, finalised: bool) -> Cents {
        if finalised {
            if credited.cents() != total {
                let what = format!("finalised, yet credits {credited} != total {total}");
                self.differ(subject.to_owned(), DifferenceClass::UnbalancedPacket, what);
            }
            return 0;
        }
        total.checked_sub(credited.cents()).unwrap_or_else(|| {
            let what = format!("open, yet credits {credited} > total {total}");
            self.differ(subject.to_owned(), DifferenceClass::UnbalancedPacket, what);
            0
        })
    }

    /// Checks that each record's movement moved, once, for its user and amount (a proposed
    /// adjustment, or a withdrawal not failed, promises none of its kind).
    fn check_records(&mut self) {
        let mut records: Vec<_> = std::mem::take(&mut self.records).into_iter().collect();
        records.sort_by(|a, b| a.0.cmp(&b.0));
        for ((kind, reference), acc) in records {
            self.compare(&kind.subject(&reference), kind.movement(), acc.expected, acc.moved);
        }
    }

    /// The trial balance, with every difference sorted, and the suspects.
    fn into_report(mut self, in_open: u128, read_packets: usize) -> (Reconciliation, Vec<Suspect>) {
        self.differences.sort();
        self.overdue_withdrawals.sort();
        let reconciliation = Reconciliation {
            as_of: rfc3339(self.as_of_ms),
            topups_cents: self.topups_cents.get(),
            withdrawn_cents: self.withdrawn_cents.get(),
            pending_withdrawals_cents: self.pending_withdrawals_cents.get(),
            adjusted_in_cents: self.adjusted_in_cents.get(),
            adjusted_out_cents: self.adjusted_out_cents.get(),
            overdue_withdrawals: self.overdue_withdrawals,
            balances_cents: self.balances_cents,
            in_open_packets_cents: in_open,
            sent_cents: self.sent_cents.get(),
            grabbed_cents: self.grabbed_cents.get(),
            refunded_cents: self.refunded_cents.get(),
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
        let class = if !subject.starts_with("packet:") && class == DifferenceClass::UnbalancedPacket {
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
