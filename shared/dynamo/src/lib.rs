//! The DynamoDB adapter (`red-packets-dynamo`), on the ports of `red-packets-core`, and the
//! books' exports ([`export`]). The ledger: one table holding packets, grabs, refunds, wallets and idempotency
//! claims (layout in [`items`], one file per kind of item, the only place keys are spelled).
//! One file per port: `ledger` ([`Ledger`]: sends, cancels, reads, with `history` beneath it),
//! `settle` ([`SettleLedger`], its grab writes and reads in `grabs`), `wallet` ([`Wallets`]),
//! `corrections` ([`Withdrawals`], [`Adjustments`]), `holds` ([`Holds`]), `books` ([`Books`]), `hourly` ([`BusinessHours`]); beneath them the table (its client, built on first use or handed in,
//! and its codec) and transactions read by name. Every failure to reach DynamoDB is
//! [`StoreError::Unavailable`].
//!
//! [`Ledger`]: red_packets_core::ports::Ledger
//! [`SettleLedger`]: red_packets_core::ports::SettleLedger
//! [`Wallets`]: red_packets_core::ports::Wallets
//! [`Withdrawals`]: red_packets_core::ports::Withdrawals
//! [`Adjustments`]: red_packets_core::ports::Adjustments
//! [`Books`]: red_packets_core::ports::Books
//! [`Holds`]: red_packets_core::ports::Holds
//! [`BusinessHours`]: red_packets_core::ports::BusinessHours
//! [`StoreError::Unavailable`]: red_packets_core::ports::StoreError::Unavailable

mod adjustments;
mod books;
pub mod capacity;
pub mod client;
mod corrections;
pub mod export;
mod grabs;
mod history;
mod holds;
mod hourly;
mod items;
mod ledger;
mod metered;
mod pages;
mod queues;
mod risk;
mod settle;
mod table;
mod transaction;
mod wallet;

pub use books::{item_keys, ledger_item, CollectionFeed, RawItem};
pub use ledger::{DAILY_SENDS_KEEP_MS, IDEMPOTENCY_TTL_MS};
pub use table::{DynamoLedger, HISTORY_INDEX, OPEN_INDEX};

/// `WALLET#<user>`, the partition of `user`'s wallet.
pub fn wallet_key(user: &red_packets_core::domain::UserId) -> String {
    items::wallet_pk(user)
}
