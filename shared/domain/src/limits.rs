//! The limits a deployment sets, per packet and per sender per UTC day, with DESIGN.md's defaults.

use super::money::Cents;
use super::split::SplitVersion;

/// What a packet may be: amounts, share counts and lifetimes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest `total_cents` of one packet.
    pub max_total_cents: Cents,
    /// Most shares in one packet.
    pub max_count: u32,
    /// Shortest lifetime a sender may ask for.
    pub min_expires_in_seconds: u32,
    /// Longest lifetime a sender may ask for.
    pub max_expires_in_seconds: u32,
    /// Lifetime when the sender does not say.
    pub default_expires_in_seconds: u32,
    /// Most recipients one packet may name.
    pub max_recipients: u32,
    /// How far ahead of its send a packet may open (`opens_at`).
    pub max_opens_ahead_seconds: u32,
    /// The split version new packets are sent under (`SPLIT_VERSION`, default the newest): an
    /// upgrade from a release that knew only version 1 deploys with 1 first, so no function
    /// still running the old code meets a version-2 packet, then switches (docs/DEPLOY.md).
    pub split_version: SplitVersion,
}

impl Limits {
    /// The defaults of a deployment that sets none (the settings' defaults, `settings.rs`).
    pub const DEFAULT: Limits = Limits {
        max_total_cents: 20_000,
        max_count: 100,
        min_expires_in_seconds: 60,
        max_expires_in_seconds: 86_400,
        default_expires_in_seconds: 86_400,
        max_recipients: 500,
        max_opens_ahead_seconds: 7 * 86_400,
        split_version: SplitVersion::CURRENT,
    };

    /// The largest `MAX_COUNT` a deployment may set: the packet size the Redis load, snapshot
    /// and re-sync are chunked for and tested at (`local/tests/it/campaign.rs`), and whose view is
    /// paged (a page of 1,000 grabs).
    pub const LARGEST_COUNT: u32 = 100_000;
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// Longest greeting, in characters.
pub const MAX_GREETING_CHARS: usize = 64;

/// Largest request body accepted, in bytes (16 KiB).
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// What one sender may send per UTC day, across all their packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DailyLimits {
    /// Packets per day (`MAX_SENDS_PER_DAY`).
    pub max_sends: u32,
    /// Cents per day (`MAX_SENT_CENTS_PER_DAY`).
    pub max_sent_cents: Cents,
}

impl DailyLimits {
    /// The defaults of a deployment that sets none (the settings' defaults, `settings.rs`).
    pub const DEFAULT: DailyLimits = DailyLimits { max_sends: 200, max_sent_cents: 2_000_000 };
}

impl Default for DailyLimits {
    fn default() -> Self {
        DailyLimits::DEFAULT
    }
}

/// Which daily limit a send would break, as the `field` of its `429 limit_exceeded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DailyLimit {
    /// `MAX_SENDS_PER_DAY`.
    Sends,
    /// `MAX_SENT_CENTS_PER_DAY`.
    SentCents,
}

impl DailyLimit {
    /// The limit's name in the error's `field`.
    pub fn field(self) -> &'static str {
        match self {
            DailyLimit::Sends => "max_sends_per_day",
            DailyLimit::SentCents => "max_sent_cents_per_day",
        }
    }
}

impl DailyLimits {
    /// The limit a send of `total_cents` breaks after `sends` packets and `sent_cents` today;
    /// `None` when it fits. (The ledger enforces the same rule in its conditional write.)
    pub fn broken_by(&self, sends: u32, sent_cents: Cents, total_cents: Cents) -> Option<DailyLimit> {
        if sends >= self.max_sends {
            Some(DailyLimit::Sends)
        } else if sent_cents.saturating_add(total_cents) > self.max_sent_cents {
            Some(DailyLimit::SentCents)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_fits_until_either_limit_would_be_passed() {
        let limits = DailyLimits { max_sends: 3, max_sent_cents: 1_000 };
        assert_eq!(limits.broken_by(2, 900, 100), None);
        assert_eq!(limits.broken_by(3, 0, 1), Some(DailyLimit::Sends));
        assert_eq!(limits.broken_by(1, 900, 101), Some(DailyLimit::SentCents));
        assert_eq!(DailyLimit::SentCents.field(), "max_sent_cents_per_day");
    }

    #[test]
    fn days_are_utc_by_default() {
        let utc = crate::BusinessDay::default();
        assert_eq!(utc.day_of(1_795_219_199_999), "2026-11-20");
        assert_eq!(utc.day_of(1_795_219_200_000), "2026-11-21");
    }
}

/// What a sender may send, as `GET /me/limits` answers it: the stack's limits, for a client's form
/// to state and to check before it sends (the send checks them again). Every amount is in cents of
/// the stack's currency, which the answer carries beside them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SendLimits {
    /// Largest `total_cents` of one packet (`MAX_TOTAL_CENTS`).
    pub max_total_cents: Cents,
    /// Most shares in one packet (`MAX_COUNT`).
    pub max_count: u32,
    /// Smallest share: a packet's `total_cents` is at least `count` of these.
    pub min_share_cents: Cents,
    /// Longest greeting, in characters.
    pub max_greeting_chars: usize,
    /// Longest passphrase, in characters.
    pub max_passphrase_chars: usize,
    /// Most recipients one packet may name (`MAX_RECIPIENTS`).
    pub max_recipients: u32,
    /// Shortest lifetime a sender may ask for (`MIN_EXPIRES_IN_SECONDS`).
    pub min_expires_in_seconds: u32,
    /// Longest lifetime a sender may ask for (`MAX_EXPIRES_IN_SECONDS`).
    pub max_expires_in_seconds: u32,
    /// Lifetime when the sender does not say (`DEFAULT_EXPIRES_IN_SECONDS`).
    pub default_expires_in_seconds: u32,
    /// How far ahead of its send a packet may open.
    pub max_opens_ahead_seconds: u32,
    /// Packets one sender may send per business day (`MAX_SENDS_PER_DAY`).
    pub max_sends_per_day: u32,
    /// Cents one sender may send per business day (`MAX_SENT_CENTS_PER_DAY`).
    pub max_sent_cents_per_day: Cents,
}

impl SendLimits {
    /// The smallest share: one cent.
    pub const MIN_SHARE_CENTS: Cents = 1;

    /// A deployment's limits, per packet and per day, as one answer.
    pub fn of(limits: &Limits, daily: &DailyLimits) -> SendLimits {
        SendLimits {
            max_total_cents: limits.max_total_cents,
            max_count: limits.max_count,
            min_share_cents: Self::MIN_SHARE_CENTS,
            max_greeting_chars: MAX_GREETING_CHARS,
            max_passphrase_chars: super::access::MAX_PASSPHRASE_CHARS,
            max_recipients: limits.max_recipients,
            min_expires_in_seconds: limits.min_expires_in_seconds,
            max_expires_in_seconds: limits.max_expires_in_seconds,
            default_expires_in_seconds: limits.default_expires_in_seconds,
            max_opens_ahead_seconds: limits.max_opens_ahead_seconds,
            max_sends_per_day: daily.max_sends,
            max_sent_cents_per_day: daily.max_sent_cents,
        }
    }
}
