//! What one grab attempt comes to, as the API answers it.

use super::access::PassphraseDigest;
use super::{Cents, UserId};
use crate::clock::Millis;

/// Who grabs, and the digest of the passphrase their grab carried, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrabAttempt {
    /// The caller.
    pub user: UserId,
    /// The digest of the passphrase the grab body carried.
    pub passphrase: Option<PassphraseDigest>,
}

impl GrabAttempt {
    /// A grab by `user` carrying no passphrase.
    pub fn by(user: UserId) -> Self {
        GrabAttempt { user, passphrase: None }
    }
}

/// The answer of one grab attempt: a business outcome, never a transport state (the live
/// store resolves those, such as asking the ledger about a packet it no longer holds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrabOutcome {
    /// A share was taken just now.
    Grabbed {
        /// The share.
        amount_cents: Cents,
        /// Now.
        grabbed_at_ms: Millis,
        /// Shares left after this one.
        remaining_count: u32,
    },
    /// This user grabbed before; the amount and time of that grab.
    Already {
        /// The share this user got.
        amount_cents: Cents,
        /// When they got it.
        grabbed_at_ms: Millis,
        /// Shares left now.
        remaining_count: u32,
    },
    /// Every share is taken.
    SoldOut,
    /// At or after `expires_at`, with shares left.
    Expired,
    /// The sender cancelled it.
    Cancelled,
    /// The packet names its recipients and the caller is not one.
    NotEligible,
    /// The packet has a passphrase and the grab carried another, or none.
    WrongPassphrase,
    /// The caller made too many wrong tries at the passphrase of this packet.
    TooManyAttempts,
    /// No such packet.
    NotFound,
}

impl GrabOutcome {
    /// True when this answer shows every share taken: a sold-out packet stays sold out.
    pub fn sold_out(&self) -> bool {
        match self {
            GrabOutcome::SoldOut => true,
            GrabOutcome::Grabbed { remaining_count, .. } | GrabOutcome::Already { remaining_count, .. } => {
                *remaining_count == 0
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_answers_showing_no_share_left_are_sold_out() {
        let share = |remaining_count| GrabOutcome::Grabbed { amount_cents: 5, grabbed_at_ms: 1, remaining_count };
        assert!(share(0).sold_out());
        assert!(!share(1).sold_out());
        assert!(GrabOutcome::SoldOut.sold_out());
        assert!(!GrabOutcome::Expired.sold_out());
        assert!(!GrabOutcome::NotFound.sold_out());
    }
}
