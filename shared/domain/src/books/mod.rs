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
//!
//! The files: `items` (what is read), `tally` (the accumulators, their checked sums and their
//! keys), `fold` (the fold, [`BooksFold`]), `check` ([`BooksFold::finish`]: the cross-checks),
//! `report` (what it finds, [`combine`] and [`BooksError`]) and [`statements`] (trial balances
//! and statements built on it).

mod check;
mod fold;
mod items;
mod report;
pub mod statements;
mod tally;

pub use fold::BooksFold;
pub use items::{LedgerItem, MovementRecord};
pub use report::{combine, BooksError, Difference, DifferenceClass, Reconciliation, Reread, Suspect, WalletTally};
pub use tally::Part;

#[cfg(test)]
mod tests;
