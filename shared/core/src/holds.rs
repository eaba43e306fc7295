//! The hold check of the grab and send functions: each function instance keeps the holds in
//! force in a [`HoldBook`] and reads it again once its refresh has passed (asking the ledger's
//! holds version first, and the holds only when it moved), so a hold placed or lifted takes
//! effect within the refresh plus one read. A read that fails or does not answer within
//! [`HOLDS_READ_LIMIT`] leaves the book as it was until the next refresh (counted as
//! `HoldsUnread`): holds are a control, not money, and a slow ledger must not stop grabs.

use std::sync::{RwLock, RwLockReadGuard};
use std::time::Duration;

use tokio::sync::Mutex;

use crate::clock::Millis;
use crate::domain::risk::{HeldAction, HoldBook, HoldScope};
use crate::domain::UserId;
use crate::ports::{Holds, StoreError};

/// The longest one reading of the holds may take.
pub const HOLDS_READ_LIMIT: Duration = Duration::from_secs(1);

/// One function instance's book of the holds in force, shared by its concurrent requests: they
/// look it up at once, without waiting on each other; the one that finds it due reads it again
/// while the others go on with it as it is (the very first reading is waited for by all).
#[derive(Debug)]
pub struct HoldCheck {
    book: RwLock<HoldBook>,
    reading: Mutex<()>,
}

impl HoldCheck {
    /// A check reading the holds every `refresh`.
    pub fn new(refresh: Duration) -> Self {
        HoldCheck { book: RwLock::new(HoldBook::new(refresh)), reading: Mutex::new(()) }
    }

    /// The scope of the hold that stops `user` from `action` at `now_ms`, as the book holds it
    /// (read again first when due).
    pub async fn stops<H: Holds>(
        &self,
        ledger: &H,
        user: &UserId,
        action: HeldAction,
        now_ms: Millis,
    ) -> Option<HoldScope> {
        let (due, never_read) = {
            let book = self.book();
            (book.is_due(now_ms), book.is_unread())
        };
        if due {
            let reader = if never_read { Some(self.reading.lock().await) } else { self.reading.try_lock().ok() };
            if let Some(_reader) = reader {
                self.read_if_due(ledger, now_ms).await;
            }
        }
        self.book().stops(user, action, now_ms)
    }

    fn book(&self) -> RwLockReadGuard<'_, HoldBook> {
        self.book.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    async fn read_if_due<H: Holds>(&self, ledger: &H, now_ms: Millis) {
        let book = self.book().clone();
        if !book.is_due(now_ms) {
            return; // another request read it meanwhile
        }
        let read = match tokio::time::timeout(HOLDS_READ_LIMIT, read(ledger, book, now_ms)).await {
            Ok(Ok(book)) => book,
            failed => {
                let why = match failed {
                    Ok(Err(error)) => error.to_string(),
                    _ => format!("no answer within {HOLDS_READ_LIMIT:?}"),
                };
                tracing::warn!(
                    error = why,
                    "the holds could not be read: the book stays as it was until the next refresh"
                );
                metrics::counter!("HoldsUnread").increment(1);
                let mut book = self.book().clone();
                book.checked(now_ms);
                book
            }
        };
        *self.book.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = read;
    }
}

/// `book` brought up to the ledger's holds at `now_ms`: the version asked, the holds read only
/// when it moved.
async fn read<H: Holds>(ledger: &H, mut book: HoldBook, now_ms: Millis) -> Result<HoldBook, StoreError> {
    let version = ledger.holds_version().await?;
    if book.is_at(version) {
        book.checked(now_ms);
        return Ok(book);
    }
    let holds = ledger.holds().await?;
    book.replace(holds, version, now_ms);
    Ok(book)
}
