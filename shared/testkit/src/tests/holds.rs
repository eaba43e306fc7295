//! The grab's and send's hold check (`red_packets::holds`) on the in-memory ledger: a hold and a
//! lift take effect within the refresh, and an unreadable ledger leaves the book as it was.

use std::time::Duration;

use crate::memory::MemoryLedger;
use red_packets::domain::risk::{HeldAction, HoldRequest, HoldScope, LiftRequest};
use red_packets::domain::UserId;
use red_packets::holds::HoldCheck;
use red_packets::ports::Holds;
use red_packets::Config;

#[tokio::test]
async fn a_hold_takes_effect_within_the_refresh_and_a_lift_too() {
    let ledger = MemoryLedger::new(&Config::from_lookup(|_| None).unwrap());
    let check = HoldCheck::new(Duration::from_secs(5));
    let mallory = UserId::from_claim("mallory").unwrap();
    assert_eq!(check.stops(&ledger, &mallory, HeldAction::Grab, 0).await, None);
    let hold = HoldRequest {
        user: mallory.clone(),
        scope: HoldScope::Grab,
        operator: "anna".into(),
        reason: "bot".into(),
        expires_at: None,
    };
    ledger.place_hold(&hold, 1_000).await.unwrap();
    assert_eq!(check.stops(&ledger, &mallory, HeldAction::Grab, 4_999).await, None, "the book is read again at 5 s");
    assert_eq!(check.stops(&ledger, &mallory, HeldAction::Grab, 5_000).await, Some(HoldScope::Grab));
    assert_eq!(check.stops(&ledger, &mallory, HeldAction::Send, 5_000).await, None, "a grab hold lets her send");
    let lift = LiftRequest { user: mallory.clone(), operator: "ben".into(), reason: "appeal upheld".into() };
    ledger.lift_hold(&lift, 6_000).await.unwrap();
    assert_eq!(check.stops(&ledger, &mallory, HeldAction::Grab, 9_999).await, Some(HoldScope::Grab));
    assert_eq!(check.stops(&ledger, &mallory, HeldAction::Grab, 10_000).await, None);
}

#[tokio::test]
async fn an_unreadable_ledger_leaves_the_book_as_it_was() {
    let ledger = MemoryLedger::new(&Config::from_lookup(|_| None).unwrap());
    let check = HoldCheck::new(Duration::from_secs(5));
    let mallory = UserId::from_claim("mallory").unwrap();
    let hold = HoldRequest {
        user: mallory.clone(),
        scope: HoldScope::All,
        operator: "anna".into(),
        reason: "bot".into(),
        expires_at: None,
    };
    ledger.place_hold(&hold, 0).await.unwrap();
    assert_eq!(check.stops(&ledger, &mallory, HeldAction::Send, 0).await, Some(HoldScope::All));
    ledger.set_unreachable(true);
    assert_eq!(check.stops(&ledger, &mallory, HeldAction::Send, 5_000).await, Some(HoldScope::All));
    ledger.set_unreachable(false);
    assert_eq!(
        check.stops(&ledger, &mallory, HeldAction::Send, 9_999).await,
        Some(HoldScope::All),
        "next read at 10 s"
    );
}
