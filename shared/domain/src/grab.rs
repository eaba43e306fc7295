//! A grab: who attempts it, what it comes to as the API answers it, and the grab as the live
//! store logs it (and the best luck among a finished packet's grabs). The rule that decides it
//! is [`super::grab_rule::decide`].

use serde::{Deserialize, Serialize};

use super::access::PassphraseDigest;
use super::ids::{ChatId, UserId};
use super::money::Cents;
use crate::clock::Millis;

/// Who grabs, the digest of the passphrase their grab carried, if any, and the chat a verified
/// membership ticket admits them to, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrabAttempt {
    /// The caller.
    pub user: UserId,
    /// The digest of the passphrase the grab body carried.
    pub passphrase: Option<PassphraseDigest>,
    /// The chat the grab's membership ticket admits the caller to, verified (`membership.rs`).
    pub member_of: Option<ChatId>,
}

impl GrabAttempt {
    /// A grab by `user` carrying no passphrase and no ticket.
    pub fn by(user: UserId) -> Self {
        GrabAttempt { user, passphrase: None, member_of: None }
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
    /// The packet is for its chat's members only and the grab carried no verified ticket for
    /// that chat.
    NotAMember,
    /// The packet has a passphrase and the grab carried another, or none.
    WrongPassphrase,
    /// The caller made too many wrong tries at the passphrase of this packet.
    TooManyAttempts,
    /// No such packet.
    NotFound,
    /// A scheduled packet, not open yet: grabs begin at `opens_at_ms`.
    NotYetOpen {
        /// The opening instant, epoch ms.
        opens_at_ms: Millis,
    },
    /// The caller made more grab attempts across packets than the rate allows in this window
    /// ([`crate::risk::GrabRate`]); nothing was taken.
    RateLimited {
        /// Whole seconds until the next window.
        retry_after_seconds: u64,
    },
}

impl GrabOutcome {
    /// The answer to a grab that took `grab` just now, `remaining_count` shares left after it.
    pub fn grabbed(grab: &LoggedGrab, remaining_count: u32) -> Self {
        GrabOutcome::Grabbed { amount_cents: grab.amount_cents, grabbed_at_ms: grab.at_ms, remaining_count }
    }

    /// The answer to a repeat: the caller's earlier `grab`, `remaining_count` shares left now.
    pub fn already(grab: &LoggedGrab, remaining_count: u32) -> Self {
        GrabOutcome::Already { amount_cents: grab.amount_cents, grabbed_at_ms: grab.at_ms, remaining_count }
    }

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

/// One grab as the Redis log holds it (`grab.lua` writes `{seq, user, amount, at}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoggedGrab {
    /// 1-based grab order within the packet.
    pub seq: u32,
    /// Who grabbed.
    pub user: UserId,
    /// The share, in cents.
    #[serde(rename = "amount")]
    pub amount_cents: Cents,
    /// When, epoch ms.
    #[serde(rename = "at")]
    pub at_ms: Millis,
}

/// The largest share of a finished packet (the earliest grab on a tie).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BestLuck {
    /// Who had it.
    pub user: UserId,
    /// How much.
    pub amount_cents: Cents,
}

/// The largest share, the earliest grab on a tie; `None` unless every share was taken.
pub fn best_luck(count: u32, grabs: &[LoggedGrab]) -> Option<BestLuck> {
    if grabs.len() != count as usize {
        return None;
    }
    grabs
        .iter()
        .max_by(|a, b| a.amount_cents.cmp(&b.amount_cents).then(b.seq.cmp(&a.seq)))
        .map(|grab| BestLuck { user: grab.user.clone(), amount_cents: grab.amount_cents })
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
