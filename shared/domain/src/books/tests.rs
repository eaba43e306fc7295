//! The books' tests: the fingerprint's pinned values, a balanced ledger and each planted
//! corruption, the cut-off, passes, suspects, sums past their type, and what one packet costs
//! the fold.

use super::tally::{fingerprint, fnv1a64, packet_bytes, packet_key, pair, who, PacketAcc, PacketKey};
use super::{
    combine, BooksError, BooksFold, DifferenceClass, LedgerItem, MovementRecord, Part, Reconciliation, Reread, Suspect,
    WalletTally,
};
use crate::clock::Millis;
use crate::ids::{PacketId, UserId};
use crate::money::Cents;
use crate::packet::PacketStatus;
use crate::wallet::MovementKind;

/// The fingerprint is FNV-1a 64 then fmix64, byte for byte: these values never change.
#[test]
fn the_fingerprint_is_fnv1a_then_fmix64_and_never_changes() {
    // FNV-1a 64's published vectors pin the first stage on its own.
    assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    assert_eq!(fingerprint(b""), 0xefd0_1f60_ba99_2926);
    assert_eq!(fingerprint(b"a"), 0x82a2_a958_a9be_ce5b);
    assert_eq!(who(&user("alice")), 0x3507_d047_a67c_08f4);
    assert_eq!(fingerprint(&pair(0x3507_d047_a67c_08f4, 300)), 0x524c_4e7c_c490_b056);
    let key = packet_key(&PacketId::parse("0123456789abcdef0123456789abcdef").unwrap());
    assert_eq!(fingerprint(&packet_bytes(key)), 0xca3c_017c_8973_2e34);
}

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
    fold.finish().unwrap()
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
        differences.contains(&(DifferenceClass::MovementTwice, format!("wallet:carol: 2 grab credits of packet {id}"))),
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
        combine(&mut total, fold.finish().unwrap().0, index == 2).unwrap();
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
    has(&found(silent), DifferenceClass::MovementWithoutEvent, "wallet:bob: movement MOVE#grab#bob carries no event");

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

#[test]
fn a_sum_past_its_type_is_an_error_naming_the_item_never_a_clamp() {
    let id = PacketId::random();
    let mut packet = vec![LedgerItem::Packet {
        id: id.clone(),
        sender: user("alice"),
        total_cents: u64::MAX,
        status: PacketStatus::Open,
        written_at_ms: 5,
        settled_at_ms: None,
    }];
    packet.extend(grab(&id, "bob", 1, u64::MAX));
    packet.extend(grab(&id, "carol", 2, 1));
    let mut fold = BooksFold::new(AS_OF, 100, Part::WHOLE);
    fold.collection(packet);
    let error = fold.finish().unwrap_err();
    assert_eq!(error.to_string(), format!("packet:{id}: paid overflows at grab item of carol for 1 (share 2)"));
}

#[test]
fn two_sends_of_u64_max_into_one_packet_overflow_its_debits_at_the_second() {
    let id = PacketId::random();
    let mut second = movement("alice", MovementKind::Send, u64::MAX, Some(&id));
    if let LedgerItem::Movement(m) = &mut second {
        m.key = "MOVE#send#again".into();
    }
    let mut fold = BooksFold::new(AS_OF, 100, Part::WHOLE);
    fold.collection(vec![balance("alice", 0), movement("alice", MovementKind::Send, u64::MAX, Some(&id)), second]);
    assert_eq!(
        fold.finish().unwrap_err(),
        BooksError::Overflow {
            subject: format!("packet:{id}"),
            item: format!("movement MOVE#send#again of wallet:alice for {} cents", u64::MAX),
            sum: "debits",
        }
    );
}

#[test]
fn credits_beyond_an_open_packets_total_are_a_difference_never_a_clamp() {
    let (mut collections, id) = balanced();
    if let LedgerItem::Packet { status, settled_at_ms, .. } = &mut collections[4][0] {
        (*status, *settled_at_ms) = (PacketStatus::Open, None);
    }
    collections[4].retain(|item| !matches!(item, LedgerItem::Refund { .. } | LedgerItem::Grab { .. }));
    collections[2] = vec![balance("bob", 320), movement("bob", MovementKind::Grab, 320, Some(&id))];
    let (result, _) = reconcile(collections);
    let what = format!("packet:{id}: open, yet credits 500 > total 300");
    assert!(result.differences.iter().any(|d| d.to_string() == what), "{:?}", result.differences);
    assert_eq!(result.in_open_packets_cents, 0);
}

mod money_out;
