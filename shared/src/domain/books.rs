//! Books that balance globally (invariant 8): from everything the ledger holds of wallets,
//! top-ups and packets, check that each balance is the sum of its movements, that each top-up,
//! send, recorded grab and refund moved money exactly once and by its amount, that each
//! finalised packet's grabs and refund make its total, and that the balances plus the money
//! still in open packets equal the top-ups. Pure: the ledger adapter gathers the records.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::Serialize;

use super::wallet::MovementKind;
use super::{Cents, PacketId, PacketStatus, UserId};

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
}

/// One packet's ledger records, as far as money goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketRecord {
    /// Who sent it.
    pub sender: UserId,
    /// Its total.
    pub total_cents: Cents,
    /// Open until settle finalises it.
    pub status: PacketStatus,
    /// Its grab items: user and amount.
    pub grabs: Vec<(UserId, Cents)>,
    /// Its refund item, if any.
    pub refund_cents: Option<Cents>,
}

/// Everything reconciliation reads from the ledger.
#[derive(Debug, Clone, Default)]
pub struct LedgerRecords {
    /// Each wallet's balance.
    pub balances: HashMap<UserId, Cents>,
    /// Every movement.
    pub movements: Vec<MovementRecord>,
    /// Every top-up applied: reference, user, amount.
    pub topups: Vec<(String, UserId, Cents)>,
    /// Every packet.
    pub packets: HashMap<PacketId, PacketRecord>,
    /// Grab and refund items whose packet has no record: the packet, and what the item says.
    pub orphans: Vec<(PacketId, String)>,
}

/// A difference reconciliation found: what it concerns and the amounts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Difference {
    /// `wallet:<user>`, `topup:<reference>`, `packet:<id>` or `books`.
    pub subject: String,
    /// What does not add up, with the amounts.
    pub what: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.subject, self.what)
    }
}

/// What reconciliation found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Reconciliation {
    /// Sum of every top-up.
    pub topups_cents: u128,
    /// Sum of every balance.
    pub balances_cents: u128,
    /// Money sent and neither credited to a grabber nor refunded yet.
    pub in_open_packets_cents: u128,
    /// Wallets, packets and top-ups read.
    pub wallets: usize,
    /// Packets read.
    pub packets: usize,
    /// Movements read.
    pub movements: usize,
    /// Every difference; empty when the books balance.
    pub differences: Vec<Difference>,
}

impl Reconciliation {
    /// True when nothing differs.
    pub fn balanced(&self) -> bool {
        self.differences.is_empty()
    }
}

/// Reconciles `records` (see the module header for what is checked).
pub fn reconcile_books(records: &LedgerRecords) -> Reconciliation {
    let mut differences = Vec::new();
    let mut differ = |subject: String, what: String| differences.push(Difference { subject, what });

    // Each balance is the sum of its wallet's movements.
    let mut sums: BTreeMap<&UserId, i128> = BTreeMap::new();
    for movement in &records.movements {
        *sums.entry(&movement.user).or_default() += movement.kind.delta(movement.amount_cents);
    }
    for user in records.balances.keys() {
        sums.entry(user).or_default();
    }
    for (user, sum) in &sums {
        let balance = records.balances.get(*user).copied().unwrap_or(0);
        if i128::from(balance) != *sum {
            differ(format!("wallet:{user}"), format!("balance {balance} != sum of its movements {sum}"));
        }
    }

    // Movements by what they concern.
    let mut topup_moves: HashMap<&str, Vec<&MovementRecord>> = HashMap::new();
    let mut packet_moves: HashMap<&PacketId, Vec<&MovementRecord>> = HashMap::new();
    for movement in &records.movements {
        match (&movement.packet_id, &movement.reference) {
            (Some(id), _) => packet_moves.entry(id).or_default().push(movement),
            (None, Some(reference)) if movement.kind == MovementKind::Topup => {
                topup_moves.entry(reference.as_str()).or_default().push(movement);
            }
            _ => {
                differ(format!("wallet:{}", movement.user), format!("a {:?} movement concerns nothing", movement.kind))
            }
        }
    }

    // Each top-up credited once, to its user, by its amount.
    let mut topups_cents: u128 = 0;
    for (reference, user, amount) in &records.topups {
        topups_cents += u128::from(*amount);
        let moves = topup_moves.remove(reference.as_str()).unwrap_or_default();
        if moves.len() != 1 || moves[0].user != *user || moves[0].amount_cents != *amount {
            differ(
                format!("topup:{reference}"),
                format!("{amount} to {user}, credited by {} movement(s)", moves.len()),
            );
        }
    }
    for (reference, moves) in topup_moves {
        differ(format!("topup:{reference}"), format!("{} top-up movement(s) without a top-up record", moves.len()));
    }

    // Each funded packet: one debit of its total; one credit per grab item, by its amount; one
    // credit of its refund; and a finalised packet's grabs and refund make its total.
    let mut in_open_packets_cents: u128 = 0;
    for (id, packet) in &records.packets {
        let moves = packet_moves.remove(id).unwrap_or_default();
        let subject = format!("packet:{id}");
        let grabbed: Cents = packet.grabs.iter().map(|(_, amount)| amount).sum();
        let refund = packet.refund_cents.unwrap_or(0);
        if packet.status != PacketStatus::Open && grabbed + refund != packet.total_cents {
            differ(subject.clone(), format!("grabs {grabbed} + refund {refund} != total {}", packet.total_cents));
        }
        if packet.status == PacketStatus::Open && grabbed > packet.total_cents {
            differ(subject.clone(), format!("grabs {grabbed} > total {}", packet.total_cents));
        }
        let of = |kind: MovementKind| moves.iter().filter(move |m| m.kind == kind);
        let sends: Vec<_> = of(MovementKind::Send).collect();
        if sends.is_empty() {
            if !moves.is_empty() {
                differ(subject, format!("{} movement(s) for a packet never debited", moves.len()));
            }
            continue; // Sent without the wallet (FUNDS=none): no money of ours is in it.
        }
        if sends.len() != 1 || sends[0].user != packet.sender || sends[0].amount_cents != packet.total_cents {
            differ(subject.clone(), format!("total {} debited by {} movement(s)", packet.total_cents, sends.len()));
        }
        let mut credited: Cents = 0;
        let mut grab_credits: HashMap<&UserId, Vec<Cents>> = HashMap::new();
        for movement in of(MovementKind::Grab) {
            grab_credits.entry(&movement.user).or_default().push(movement.amount_cents);
            credited += movement.amount_cents;
        }
        for (user, amount) in &packet.grabs {
            match grab_credits.remove(user).as_deref() {
                Some([credit]) if credit == amount => {}
                other => differ(subject.clone(), format!("grab of {amount} by {user} credited as {other:?}")),
            }
        }
        for (user, credits) in grab_credits {
            differ(subject.clone(), format!("{user} credited {credits:?} without a grab item"));
        }
        let refunds: Vec<Cents> = of(MovementKind::Refund).map(|m| m.amount_cents).collect();
        credited += refunds.iter().sum::<Cents>();
        let refund_ok = match (packet.refund_cents, refunds.as_slice()) {
            (None, []) => true,
            (Some(item), [credit]) => item == *credit && of(MovementKind::Refund).all(|m| m.user == packet.sender),
            _ => false,
        };
        if !refund_ok {
            differ(subject.clone(), format!("refund {:?} credited as {refunds:?}", packet.refund_cents));
        }
        if packet.status == PacketStatus::Open {
            in_open_packets_cents += u128::from(packet.total_cents.saturating_sub(credited));
        } else if credited != packet.total_cents {
            differ(subject, format!("finalised, yet credits {credited} != total {}", packet.total_cents));
        }
    }
    for (id, moves) in packet_moves {
        differ(format!("packet:{id}"), format!("{} movement(s) for a packet the ledger does not hold", moves.len()));
    }
    for (id, what) in &records.orphans {
        differ(format!("packet:{id}"), format!("{what}, of a packet the ledger does not hold"));
    }

    let balances_cents: u128 = records.balances.values().map(|b| u128::from(*b)).sum();
    if balances_cents + in_open_packets_cents != topups_cents {
        differ(
            "books".into(),
            format!("balances {balances_cents} + in open packets {in_open_packets_cents} != top-ups {topups_cents}"),
        );
    }
    differences.sort();
    Reconciliation {
        topups_cents,
        balances_cents,
        in_open_packets_cents,
        wallets: records.balances.len(),
        packets: records.packets.len(),
        movements: records.movements.len(),
        differences,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str) -> UserId {
        UserId::from_claim(name).unwrap()
    }

    fn movement(name: &str, kind: MovementKind, amount_cents: Cents, packet: Option<&PacketId>) -> MovementRecord {
        MovementRecord {
            user: user(name),
            kind,
            amount_cents,
            packet_id: packet.cloned(),
            reference: (kind == MovementKind::Topup).then(|| format!("ref-{name}")),
        }
    }

    /// Alice tops up 1,000, sends 300 in 3 shares; bob grabs 120, carol 100; it expires and
    /// 80 goes back to alice.
    fn balanced() -> (LedgerRecords, PacketId) {
        let id = PacketId::random();
        let mut records = LedgerRecords::default();
        records.topups.push(("ref-alice".into(), user("alice"), 1_000));
        records.movements = vec![
            movement("alice", MovementKind::Topup, 1_000, None),
            movement("alice", MovementKind::Send, 300, Some(&id)),
            movement("bob", MovementKind::Grab, 120, Some(&id)),
            movement("carol", MovementKind::Grab, 100, Some(&id)),
            movement("alice", MovementKind::Refund, 80, Some(&id)),
        ];
        records.balances = HashMap::from([(user("alice"), 780), (user("bob"), 120), (user("carol"), 100)]);
        records.packets.insert(
            id.clone(),
            PacketRecord {
                sender: user("alice"),
                total_cents: 300,
                status: PacketStatus::Expired,
                grabs: vec![(user("bob"), 120), (user("carol"), 100)],
                refund_cents: Some(80),
            },
        );
        (records, id)
    }

    #[test]
    fn balanced_books_show_no_difference() {
        let (records, _) = balanced();
        let result = reconcile_books(&records);
        assert!(result.balanced(), "{:?}", result.differences);
        assert_eq!((result.topups_cents, result.balances_cents, result.in_open_packets_cents), (1_000, 1_000, 0));
    }

    #[test]
    fn an_open_packet_holds_what_is_not_credited_yet() {
        let (mut records, id) = balanced();
        records.movements.retain(|m| m.kind != MovementKind::Refund && m.user != user("carol"));
        records.balances = HashMap::from([(user("alice"), 700), (user("bob"), 120)]);
        let packet = records.packets.get_mut(&id).unwrap();
        packet.status = PacketStatus::Open;
        packet.refund_cents = None;
        packet.grabs.truncate(1);
        let result = reconcile_books(&records);
        assert!(result.balanced(), "{:?}", result.differences);
        assert_eq!(result.in_open_packets_cents, 180);
    }

    #[test]
    fn every_kind_of_difference_is_named_with_its_amounts() {
        let subjects = |records: &LedgerRecords| -> Vec<String> {
            reconcile_books(records).differences.into_iter().map(|d| d.to_string()).collect()
        };
        let (mut doubled, _) = balanced();
        let again = doubled.movements[2].clone();
        doubled.movements.push(again);
        doubled.balances.insert(user("bob"), 240);
        let found = subjects(&doubled);
        assert!(found.iter().any(|d| d.contains("grab of 120 by bob credited as Some([120, 120])")), "{found:?}");
        assert!(found.iter().any(|d| d.starts_with("books: balances 1120")), "{found:?}");

        let (mut drifted, _) = balanced();
        drifted.balances.insert(user("carol"), 99);
        let found = subjects(&drifted);
        assert!(found.contains(&"wallet:carol: balance 99 != sum of its movements 100".to_owned()), "{found:?}");

        let (mut unrefunded, _) = balanced();
        unrefunded.movements.retain(|m| m.kind != MovementKind::Refund);
        unrefunded.balances.insert(user("alice"), 700);
        let found = subjects(&unrefunded);
        assert!(found.iter().any(|d| d.contains("refund Some(80) credited as []")), "{found:?}");

        let (mut short, id) = balanced();
        short.packets.get_mut(&id).unwrap().refund_cents = Some(70);
        assert!(subjects(&short).iter().any(|d| d.contains("grabs 220 + refund 70 != total 300")));

        let (mut orphaned, id) = balanced();
        orphaned.packets.remove(&id);
        orphaned.orphans =
            vec![(id.clone(), "grab item of bob for 120".into()), (id.clone(), "refund item for 80".into())];
        let found = subjects(&orphaned);
        assert!(
            found.contains(&format!("packet:{id}: grab item of bob for 120, of a packet the ledger does not hold")),
            "{found:?}"
        );
        assert!(found.iter().any(|d| d.contains("refund item for 80")), "{found:?}");

        let (mut lost_topup, _) = balanced();
        lost_topup.topups.push(("ref-zed".into(), user("zed"), 50));
        assert!(subjects(&lost_topup).iter().any(|d| d.starts_with("topup:ref-zed")));
    }
}
