//! The books with money out and corrections: withdrawals paid, failed (their money returned)
//! and pending, adjustments applied either way and only proposed; each planted difference of
//! their kinds classified; the cut-off; overdue withdrawals.

use super::{balance, reconcile, user, AS_OF};
use crate::adjustment::Direction;
use crate::books::{DifferenceClass, LedgerItem, MovementRecord, Reread};
use crate::clock::Millis;
use crate::money::Cents;
use crate::wallet::MovementKind;
use crate::withdrawal::{WithdrawalStatus, OVERDUE_AFTER_MS};

fn moved(kind: MovementKind, amount_cents: Cents, reference: &str, written_at_ms: Millis) -> LedgerItem {
    LedgerItem::Movement(MovementRecord {
        user: user("dave"),
        kind,
        amount_cents,
        packet_id: None,
        reference: Some(reference.into()),
        written_at_ms,
        key: format!("MOVE#{written_at_ms}#{}#{reference}", kind.as_str()),
        has_event: true,
    })
}

fn withdrawal(
    id: &str,
    amount_cents: Cents,
    status: WithdrawalStatus,
    resolved_at_ms: Option<Millis>,
) -> Vec<LedgerItem> {
    vec![LedgerItem::Withdrawal {
        id: id.into(),
        user: user("dave"),
        amount_cents,
        status,
        written_at_ms: 20,
        resolved_at_ms,
    }]
}

fn adjustment(
    reference: &str,
    direction: Direction,
    amount_cents: Cents,
    applied_at_ms: Option<Millis>,
) -> Vec<LedgerItem> {
    vec![LedgerItem::Adjustment {
        reference: reference.into(),
        user: user("dave"),
        direction,
        amount_cents,
        applied_at_ms,
    }]
}

/// Dave tops up 1,000; withdraws 300 (paid), 200 (failed: returned) and 100 (pending); is
/// adjusted +50 and −30, and +70 only proposed: his balance is 620.
fn books() -> Vec<Vec<LedgerItem>> {
    vec![
        vec![LedgerItem::Topup {
            reference: "pay-d".into(),
            user: user("dave"),
            amount_cents: 1_000,
            written_at_ms: 10,
        }],
        withdrawal("wd-a", 300, WithdrawalStatus::Paid, Some(30)),
        withdrawal("wd-b", 200, WithdrawalStatus::Failed, Some(30)),
        withdrawal("wd-c", 100, WithdrawalStatus::Pending, None),
        adjustment("adj-1", Direction::Credit, 50, Some(40)),
        adjustment("adj-2", Direction::Debit, 30, Some(40)),
        adjustment("adj-3", Direction::Credit, 70, None),
        vec![
            balance("dave", 620),
            moved(MovementKind::Topup, 1_000, "pay-d", 10),
            moved(MovementKind::Withdrawal, 300, "wd-a", 20),
            moved(MovementKind::Withdrawal, 200, "wd-b", 20),
            moved(MovementKind::WithdrawalReturn, 200, "wd-b", 30),
            moved(MovementKind::Withdrawal, 100, "wd-c", 20),
            moved(MovementKind::AdjustmentCredit, 50, "adj-1", 40),
            moved(MovementKind::AdjustmentDebit, 30, "adj-2", 40),
        ],
    ]
}

fn found(collections: Vec<Vec<LedgerItem>>) -> Vec<(DifferenceClass, String)> {
    let (result, suspects) = reconcile(collections);
    let mut found: Vec<_> = result.differences.into_iter().map(|d| (d.class, d.to_string())).collect();
    found.extend(suspects.iter().filter_map(|s| s.confirm(Reread::Impossible)).map(|d| (d.class, d.to_string())));
    found
}

#[test]
fn topups_less_withdrawals_plus_adjustments_are_the_wallets_plus_pending_withdrawals() {
    let (books, _) = reconcile(books());
    assert!(books.balanced(), "{:?}", books.differences);
    assert_eq!(books.topups_cents, 1_000);
    assert_eq!(books.withdrawn_cents, 300, "paid only: the failed one came back");
    assert_eq!(books.pending_withdrawals_cents, 100);
    assert_eq!((books.adjusted_in_cents, books.adjusted_out_cents), (50, 30), "the proposed one moved nothing");
    assert_eq!(books.balances_cents, 620);
    assert!(books.overdue_withdrawals.is_empty());
}

#[test]
fn as_of_a_cut_off_before_the_resolutions_the_withdrawals_are_pending() {
    let mut fold = crate::books::BooksFold::new(25, 0, crate::books::Part::WHOLE);
    books().into_iter().for_each(|collection| fold.collection(collection));
    let (books, _) = fold.finish().unwrap();
    assert!(books.balanced(), "{:?}", books.differences);
    assert_eq!((books.withdrawn_cents, books.pending_withdrawals_cents), (0, 600));
    assert_eq!((books.adjusted_in_cents, books.adjusted_out_cents), (0, 0));
    assert_eq!(books.balances_cents, 400, "1,000 less the three debits");
}

#[test]
fn each_planted_difference_of_money_out_and_corrections_is_classified() {
    let has = |found: &[(DifferenceClass, String)], class: DifferenceClass, text: &str| {
        assert!(found.iter().any(|(c, d)| *c == class && d.contains(text)), "{class:?} {text:?} not in {found:?}");
    };
    let without = |kind: MovementKind, reference: &str| {
        let mut books = books();
        books[7].retain(|item| !matches!(item, LedgerItem::Movement(m) if m.kind == kind && m.reference.as_deref() == Some(reference)));
        books
    };
    let with = |item: LedgerItem| {
        let mut books = books();
        books[7].push(item);
        books
    };

    // A withdrawal never debited; a failed one never returned.
    has(
        &found(without(MovementKind::Withdrawal, "wd-a")),
        DifferenceClass::MovementMissing,
        "withdrawal:wd-a: withdrawal debit: 1 for 300 expected, 0 moved",
    );
    has(
        &found(without(MovementKind::WithdrawalReturn, "wd-b")),
        DifferenceClass::MovementMissing,
        "withdrawal_return:wd-b: failed withdrawal's return: 1 for 200 expected, 0 moved",
    );
    // A paid withdrawal returned as well: money out twice over, and the identity breaks.
    let returned_too = found(with(moved(MovementKind::WithdrawalReturn, 300, "wd-a", 30)));
    has(
        &returned_too,
        DifferenceClass::MovementTwice,
        "withdrawal_return:wd-a: failed withdrawal's return: 0 for 0 expected, 1 moved for 300",
    );
    has(&returned_too, DifferenceClass::Books, "pending withdrawals 100 != top-ups 1000");
    // A proposal that moved money before its approval.
    has(
        &found(with(moved(MovementKind::AdjustmentCredit, 70, "adj-3", 40))),
        DifferenceClass::MovementTwice,
        "adjustment:adj-3: adjustment credit: 0 for 0 expected, 1 moved for 70",
    );
    // An approved adjustment never moved; one moved the other way.
    has(
        &found(without(MovementKind::AdjustmentDebit, "adj-2")),
        DifferenceClass::MovementMissing,
        "adjustment:adj-2: adjustment debit: 1 for 30 expected, 0 moved",
    );
    let mut reversed = without(MovementKind::AdjustmentDebit, "adj-2");
    reversed[7].push(moved(MovementKind::AdjustmentCredit, 30, "adj-2", 40));
    let reversed = found(reversed);
    has(&reversed, DifferenceClass::MovementMissing, "adjustment:adj-2: adjustment debit: 1 for 30 expected, 0 moved");
    has(
        &reversed,
        DifferenceClass::MovementTwice,
        "adjustment:adj-2: adjustment credit: 0 for 0 expected, 1 moved for 30",
    );
    // A withdrawal's debit with no withdrawal behind it.
    let mut unrecorded = books();
    unrecorded.remove(3);
    has(
        &found(unrecorded),
        DifferenceClass::MovementTwice,
        "withdrawal:wd-c: withdrawal debit: 0 for 0 expected, 1 moved for 100",
    );
}

#[test]
fn a_withdrawal_pending_longer_than_a_day_is_overdue() {
    let as_of = AS_OF + OVERDUE_AFTER_MS;
    let mut fold = crate::books::BooksFold::new(as_of, 0, crate::books::Part::WHOLE);
    let mut collections = books();
    collections.push(vec![LedgerItem::Withdrawal {
        id: "wd-late".into(),
        user: user("erin"),
        amount_cents: 5,
        status: WithdrawalStatus::Pending,
        written_at_ms: as_of - OVERDUE_AFTER_MS + 1,
        resolved_at_ms: None,
    }]);
    collections.into_iter().for_each(|collection| fold.collection(collection));
    let (books, _) = fold.finish().unwrap();
    assert_eq!(books.overdue_withdrawals, vec!["wd-c".to_owned()], "wd-late is a millisecond short of a day");
}

#[test]
fn the_books_with_money_out_balance_in_any_number_of_passes() {
    let (whole, _) = reconcile(books());
    for passes in [2, 3, 7] {
        let mut total = crate::books::Reconciliation::default();
        for index in 0..passes {
            let mut fold = crate::books::BooksFold::new(AS_OF, 100, crate::books::Part { index, of: passes });
            books().into_iter().for_each(|collection| fold.collection(collection));
            let (pass, suspects) = fold.finish().unwrap();
            assert!(suspects.is_empty());
            crate::books::combine(&mut total, pass, index + 1 == passes).unwrap();
        }
        assert!(total.balanced(), "{passes} passes: {:?}", total.differences);
        assert_eq!(
            (total.withdrawn_cents, total.pending_withdrawals_cents, total.adjusted_in_cents, total.adjusted_out_cents),
            (whole.withdrawn_cents, whole.pending_withdrawals_cents, whole.adjusted_in_cents, whole.adjusted_out_cents)
        );
    }
}
