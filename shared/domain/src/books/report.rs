//! What reconciliation reports: [`Reconciliation`] (the trial balance and every
//! [`Difference`]), the [`Suspect`] wallets to read again, [`combine`], which adds passes up,
//! and [`BooksError`], a sum past its type. The cross-checks that make a report from a fold are
//! in `check`.

use std::fmt;

use serde::Serialize;

use crate::ids::UserId;
use crate::money::Cents;

/// Why the books could not be summed: a sum past what its type holds. Never a clamp: the run
/// fails and names the item, whose amount no real money makes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BooksError {
    /// `subject`'s `sum` overflowed adding `item`.
    #[error("{subject}: {sum} overflows at {item}")]
    Overflow {
        /// `packet:<id>`, `wallet:<user>`, `topup:<reference>` or `books`, as a difference's subject.
        subject: String,
        /// The item and its amount: `grab item of bob for 120 (share 3)`,
        /// `movement MOVE#… of wallet:bob for 120 cents`, …
        item: String,
        /// Which sum: `paid`, `credits`, `debits`, `grabbers`, `sent_cents`, `balances_cents`, …
        sum: &'static str,
    },
}

impl BooksError {
    pub(super) fn overflow(subject: impl Into<String>, item: impl Into<String>, sum: &'static str) -> Self {
        BooksError::Overflow { subject: subject.into(), item: item.into(), sum }
    }
}

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
    /// never credited, a top-up never applied, a withdrawal never debited or a failed one never
    /// returned, an approved adjustment never moved (or moved the other way).
    MovementMissing,
    /// A grab item whose share nobody claimed for that grabber and amount.
    GrabWithoutClaim,
    /// The identity does not hold: top-ups − withdrawals paid ± adjustments differ from the
    /// wallets plus the money in open packets and pending withdrawals.
    Books,
    /// The source handed a collection over in pieces, so its checks could not be made.
    Source,
}

/// A difference reconciliation found: its class, what it concerns and the amounts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Difference {
    /// `wallet:<user>`, `topup:<reference>`, `withdrawal:<id>`, `withdrawal_return:<id>`,
    /// `adjustment:<reference>`, `packet:<id>` or `books`.
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
    /// Withdrawals the payments system paid out.
    pub withdrawn_cents: u128,
    /// Withdrawals debited from wallets that the payments system has not resolved.
    pub pending_withdrawals_cents: u128,
    /// Approved adjustments into wallets.
    pub adjusted_in_cents: u128,
    /// Approved adjustments out of wallets (chargebacks among them).
    pub adjusted_out_cents: u128,
    /// Withdrawals pending for longer than a day (their ids): the payments system owes an answer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overdue_withdrawals: Vec<String>,
    /// The wallets' balances as of the cut-off (the sum of their movements up to it). Signed:
    /// a pass may keep a wallet whose send is stamped before the cut-off and its top-up after.
    pub balances_cents: i128,
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

/// Adds the reconciliation of another pass (another [`Part`](super::Part)) to `total`, and
/// checks the global equation once every pass is in (`last`). A figure past its type is the error.
pub fn combine(total: &mut Reconciliation, pass: Reconciliation, last: bool) -> Result<(), BooksError> {
    let add = |sum, figure: u128, more: u128| {
        figure.checked_add(more).ok_or_else(|| BooksError::overflow("books", format!("a pass's {more}"), sum))
    };
    total.as_of = pass.as_of;
    total.topups_cents = add("topups_cents", total.topups_cents, pass.topups_cents)?;
    total.withdrawn_cents = add("withdrawn_cents", total.withdrawn_cents, pass.withdrawn_cents)?;
    total.pending_withdrawals_cents =
        add("pending_withdrawals_cents", total.pending_withdrawals_cents, pass.pending_withdrawals_cents)?;
    total.adjusted_in_cents = add("adjusted_in_cents", total.adjusted_in_cents, pass.adjusted_in_cents)?;
    total.adjusted_out_cents = add("adjusted_out_cents", total.adjusted_out_cents, pass.adjusted_out_cents)?;
    total.overdue_withdrawals.extend(pass.overdue_withdrawals);
    total.balances_cents = total
        .balances_cents
        .checked_add(pass.balances_cents)
        .ok_or_else(|| BooksError::overflow("books", format!("a pass's {}", pass.balances_cents), "balances_cents"))?;
    total.in_open_packets_cents =
        add("in_open_packets_cents", total.in_open_packets_cents, pass.in_open_packets_cents)?;
    total.sent_cents = add("sent_cents", total.sent_cents, pass.sent_cents)?;
    total.grabbed_cents = add("grabbed_cents", total.grabbed_cents, pass.grabbed_cents)?;
    total.refunded_cents = add("refunded_cents", total.refunded_cents, pass.refunded_cents)?;
    total.wallets += pass.wallets;
    total.packets += pass.packets;
    total.movements += pass.movements;
    total.items = total.items.max(pass.items);
    total.differences.extend(pass.differences);
    total.unchecked_wallets.extend(pass.unchecked_wallets);
    if last {
        // A single pass checked the equation itself already.
        let checked = total.differences.iter().any(|difference| difference.class == DifferenceClass::Books);
        if !checked {
            if let Some(what) = equation_differs(total)? {
                total.differences.push(Difference { subject: "books".into(), class: DifferenceClass::Books, what });
            }
        }
        total.differences.sort();
        total.overdue_withdrawals.sort();
    }
    Ok(())
}

/// The identity of the books: top-ups − withdrawals paid + adjustments in − adjustments out =
/// wallets + open packets + pending withdrawals. What differs, when it does not hold; a figure
/// past i128 is the error.
pub(super) fn equation_differs(books: &Reconciliation) -> Result<Option<String>, BooksError> {
    let signed = |cents: u128| i128::try_from(cents).ok();
    let held = signed(books.in_open_packets_cents)
        .zip(signed(books.pending_withdrawals_cents))
        .and_then(|(open, pending)| books.balances_cents.checked_add(open)?.checked_add(pending));
    let came = [books.topups_cents, books.adjusted_in_cents, books.adjusted_out_cents, books.withdrawn_cents]
        .map(signed)
        .into_iter()
        .collect::<Option<Vec<i128>>>()
        .and_then(|figures| figures[0].checked_add(figures[1])?.checked_sub(figures[2])?.checked_sub(figures[3]));
    let (Some(held), Some(came)) = (held, came) else {
        return Err(BooksError::overflow("books", format!("balances {}", books.balances_cents), "the equation"));
    };
    Ok((held != came).then(|| {
        format!(
            "balances {} + in open packets {} + pending withdrawals {} != top-ups {} + adjustments in {} - adjustments out {} - withdrawn {}",
            books.balances_cents,
            books.in_open_packets_cents,
            books.pending_withdrawals_cents,
            books.topups_cents,
            books.adjusted_in_cents,
            books.adjusted_out_cents,
            books.withdrawn_cents
        )
    }))
}
