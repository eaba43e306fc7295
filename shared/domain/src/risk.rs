//! Risk controls' rules, with no I/O: one user's grab rate across every packet, and account
//! holds an operator places and lifts. Where they are kept and enforced is the adapters' and the
//! handlers' (docs/RISK.md): the rate in Redis, one counter per user per window; holds in the
//! ledger, read by every grab and send function into a [`HoldBook`] it refreshes every
//! [`HoldBook::refresh`], the bound within which a hold takes effect.

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::adjustment::operator_ok;
use super::audit::{AuditAction, AuditEntry, AuditFacts};
use super::ids::UserId;
use super::invalid::Invalid;
use crate::clock::{parse_rfc3339, Millis};

/// One user's grabs across every packet, counted in fixed windows aligned to the epoch: at most
/// `grabs` attempts in each window of `window_seconds`. Each grab request counts once, whatever
/// it comes to (a repeat, a sold-out answer): the limit is on calls, so a script polling packets
/// meets it as surely as one grabbing them. Windows are fixed, so a burst across a window's edge
/// can reach twice `grabs` within one window's length (docs/RISK.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrabRate {
    /// Grab attempts one user may make per window.
    pub grabs: u32,
    /// The window's length.
    pub window_seconds: u32,
    /// When a grab is counted: before it (exact) or alongside it (one round trip).
    pub counting: RateCounting,
}

/// When a grab is counted against its user's rate, relative to the grab itself. A user's
/// counter and a packet's keys live in different hash slots, so on a cluster no one call both
/// counts and grabs (docs/RISK.md, "The grab rate across packets").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RateCounting {
    /// The count first, the grab only within the limit: no user passes the limit on any number
    /// of instances, at one more Redis round trip per grab.
    Exact,
    /// The count sent with the grab, at once: no round trip of its own. An instance whose count
    /// finds a user past the limit refuses that user, without a call, for the rest of the
    /// window; so a user passes the limit by at most one grab per instance that serves them
    /// (plus their grabs in flight on it at that moment).
    #[default]
    Alongside,
}

impl RateCounting {
    /// `exact` or `alongside` (`USER_GRAB_COUNTING`).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "exact" => Some(RateCounting::Exact),
            "alongside" => Some(RateCounting::Alongside),
            _ => None,
        }
    }
}

impl GrabRate {
    /// The index of the window `now_ms` falls in (the counter's key names it).
    pub fn window(&self, now_ms: Millis) -> u64 {
        u64::try_from(now_ms).unwrap_or(0) / self.window_ms()
    }

    /// Whether the grab counted `counted` in its window is within the limit.
    pub fn admits(&self, counted: u64) -> bool {
        counted <= u64::from(self.grabs)
    }

    /// Whole seconds from `now_ms` until the next window opens (the 429's `Retry-After`).
    pub fn retry_after_seconds(&self, now_ms: Millis) -> u64 {
        let now = u64::try_from(now_ms).unwrap_or(0);
        let next = (self.window(now_ms) + 1) * self.window_ms();
        (next - now).div_ceil(1000).max(1)
    }

    /// How long a window's counter is kept: its window and one more, so a counter outlives every
    /// grab that can still count in it, whatever the skew between clocks.
    pub fn counter_ttl_seconds(&self) -> u64 {
        2 * u64::from(self.window_seconds)
    }

    fn window_ms(&self) -> u64 {
        u64::from(self.window_seconds.max(1)) * 1000
    }
}

/// What an account hold stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldScope {
    /// Sending packets.
    Send,
    /// Grabbing shares.
    Grab,
    /// Money leaving: withdrawals. A user's cancel still returns their own packet's money to
    /// their wallet, where it stays.
    MoneyOut,
    /// Sending, grabbing and money out.
    All,
}

impl HoldScope {
    /// Whether a hold of this scope stops `action`.
    pub fn stops(self, action: HeldAction) -> bool {
        matches!(
            (self, action),
            (HoldScope::All, _)
                | (HoldScope::Send, HeldAction::Send)
                | (HoldScope::Grab, HeldAction::Grab)
                | (HoldScope::MoneyOut, HeldAction::Withdraw)
        )
    }

    /// `send`, `grab`, `money_out` or `all`, as items and answers spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            HoldScope::Send => "send",
            HoldScope::Grab => "grab",
            HoldScope::MoneyOut => "money_out",
            HoldScope::All => "all",
        }
    }
}

/// What a held user may be stopped from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldAction {
    /// `POST /packets`.
    Send,
    /// `POST /packets/{id}/grab`.
    Grab,
    /// `POST /me/withdrawals`.
    Withdraw,
}

/// An operator's request to hold a user's account (`POST /ops/v1/users/{user}/hold`, whose
/// handler sets `operator` to the signed-in operator).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HoldRequest {
    /// The account held.
    pub user: UserId,
    /// What it stops.
    pub scope: HoldScope,
    /// Who places it (the signed-in operator).
    #[serde(default)]
    pub operator: String,
    /// Why (1..=500 characters).
    pub reason: String,
    /// When it stops being in force (RFC 3339, in the future when placed); none: until lifted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// An operator's request to lift a user's hold (`{"lift_hold": {…}}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiftRequest {
    /// The account released.
    pub user: UserId,
    /// Who lifts it (the signed-in operator).
    #[serde(default)]
    pub operator: String,
    /// Why (1..=500 characters).
    pub reason: String,
}

fn attribution_ok(operator: &str, reason: &str) -> Result<(), Invalid> {
    if !operator_ok(operator) {
        return Err(Invalid::field("operator", "operator must be 1..=256 of [A-Za-z0-9_.:@/+=,-]"));
    }
    if reason.trim().is_empty() || reason.chars().count() > 500 {
        return Err(Invalid::field("reason", "reason must be 1..=500 characters"));
    }
    Ok(())
}

impl HoldRequest {
    /// Checks the operator, the reason and the expiry (a time after `now_ms`).
    pub fn validate(&self, now_ms: Millis) -> Result<(), Invalid> {
        attribution_ok(&self.operator, &self.reason)?;
        match self.expires_at.as_deref().map(parse_rfc3339) {
            None => Ok(()),
            Some(Some(at)) if at > now_ms => Ok(()),
            Some(Some(_)) => Err(Invalid::field("expires_at", "expires_at must be in the future")),
            Some(None) => Err(Invalid::field("expires_at", "expires_at must be an RFC 3339 time")),
        }
    }
}

impl LiftRequest {
    /// Checks the operator and the reason.
    pub fn validate(&self) -> Result<(), Invalid> {
        attribution_ok(&self.operator, &self.reason)
    }
}

/// A hold in force: on whom, stopping what, placed by whom, when and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    /// The account held.
    pub user: UserId,
    /// What it stops.
    pub scope: HoldScope,
    /// Who placed it.
    pub operator: String,
    /// Why.
    pub reason: String,
    /// When (RFC 3339).
    pub placed_at: String,
    /// When it stops being in force (RFC 3339); none: until lifted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

impl Hold {
    /// When it stops being in force, in milliseconds; none: until lifted.
    pub fn expires_at_ms(&self) -> Option<Millis> {
        self.expires_at.as_deref().and_then(parse_rfc3339)
    }

    /// Whether it is in force at `now_ms`.
    pub fn in_force(&self, now_ms: Millis) -> bool {
        self.expires_at_ms().is_none_or(|expires| now_ms < expires)
    }

    /// The audit trail's entry of placing it: the user, the operator, and `<scope>: <reason>`.
    pub fn placed_entry(&self) -> AuditEntry {
        AuditEntry {
            at: self.placed_at.clone(),
            action: AuditAction::HoldPlaced,
            subject: self.user.to_string(),
            actor: self.operator.clone(),
            reason: match &self.expires_at {
                Some(expires) => format!("{} until {expires}: {}", self.scope.as_str(), self.reason),
                None => format!("{}: {}", self.scope.as_str(), self.reason),
            },
            user: Some(self.user.clone()),
            facts: AuditFacts {
                scope: Some(self.scope.as_str().to_owned()),
                until: self.expires_at.clone(),
                ..AuditFacts::words(&self.reason)
            },
        }
    }
}

impl LiftRequest {
    /// The audit trail's entry of lifting the hold at `at` (RFC 3339).
    pub fn lifted_entry(&self, at: String) -> AuditEntry {
        AuditEntry {
            at,
            action: AuditAction::HoldLifted,
            subject: self.user.to_string(),
            actor: self.operator.clone(),
            reason: self.reason.clone(),
            user: Some(self.user.clone()),
            facts: AuditFacts::words(&self.reason),
        }
    }
}

/// What placing or lifting a hold came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldResult {
    /// The user's hold now (`None` once lifted).
    pub hold: Option<Hold>,
    /// True when this request changed it (placing the same hold again, or lifting none, does not).
    pub changed: bool,
}

impl HoldRequest {
    /// The hold this request puts in force at `placed_at`.
    pub fn hold(&self, placed_at: String) -> Hold {
        Hold {
            user: self.user.clone(),
            scope: self.scope,
            operator: self.operator.clone(),
            reason: self.reason.clone(),
            placed_at,
            expires_at: self.expires_at.clone(),
        }
    }

    /// Whether placing it changes `current`, the user's hold in force: only the same scope and
    /// expiry again does not (a retry, or a second operator agreeing).
    pub fn changes(&self, current: Option<&Hold>) -> bool {
        current.is_none_or(|hold| hold.scope != self.scope || hold.expires_at != self.expires_at)
    }
}

/// The holds in force as one function instance last read them: who is held from what. It is
/// read again once [`HoldBook::refresh`] has passed since the last reading, so a hold placed or
/// lifted in the ledger takes effect everywhere within that, plus the reading's own time.
#[derive(Debug, Clone)]
pub struct HoldBook {
    scopes: HashMap<UserId, (HoldScope, Option<Millis>)>,
    version: Option<u64>,
    read_at_ms: Option<Millis>,
    refresh: Duration,
}

impl HoldBook {
    /// An empty book, read for the first time at the first check, then every `refresh`.
    pub fn new(refresh: Duration) -> Self {
        HoldBook { scopes: HashMap::new(), version: None, read_at_ms: None, refresh }
    }

    /// How often the book is read again: the bound within which a hold takes effect.
    pub fn refresh(&self) -> Duration {
        self.refresh
    }

    /// Whether the book must be read again at `now_ms`.
    pub fn is_due(&self, now_ms: Millis) -> bool {
        self.read_at_ms.is_none_or(|read_at| now_ms - read_at >= self.refresh.as_millis() as Millis || now_ms < read_at)
    }

    /// Whether the book was never read.
    pub fn is_unread(&self) -> bool {
        self.read_at_ms.is_none()
    }

    /// Whether a ledger whose holds are at `version` holds what the book does.
    pub fn is_at(&self, version: u64) -> bool {
        self.version == Some(version)
    }

    /// The holds at `version`, read at `now_ms`, replace the book.
    pub fn replace(&mut self, holds: impl IntoIterator<Item = Hold>, version: u64, now_ms: Millis) {
        self.scopes = holds.into_iter().map(|hold| (hold.user.clone(), (hold.scope, hold.expires_at_ms()))).collect();
        self.version = Some(version);
        self.read_at_ms = Some(now_ms);
    }

    /// The book was found current (or could not be read) at `now_ms`: it is next read a
    /// refresh later.
    pub fn checked(&mut self, now_ms: Millis) {
        self.read_at_ms = Some(now_ms);
    }

    /// The scope of `user`'s hold, if it holds them from `action` at `now_ms` (a hold stops
    /// nothing from its expiry on).
    pub fn stops(&self, user: &UserId, action: HeldAction, now_ms: Millis) -> Option<HoldScope> {
        let (scope, expires) = self.scopes.get(user).copied()?;
        (scope.stops(action) && expires.is_none_or(|expires| now_ms < expires)).then_some(scope)
    }

    /// How many users are held.
    pub fn len(&self) -> usize {
        self.scopes.len()
    }

    /// Whether nobody is held.
    pub fn is_empty(&self) -> bool {
        self.scopes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str) -> UserId {
        UserId::from_claim(name).unwrap()
    }

    #[test]
    fn the_rate_counts_fixed_windows_and_says_when_the_next_opens() {
        let rate = GrabRate { grabs: 3, window_seconds: 60, counting: RateCounting::Exact };
        assert_eq!(rate.window(59_999), 0);
        assert_eq!(rate.window(60_000), 1);
        assert!(rate.admits(3) && !rate.admits(4));
        assert_eq!(rate.retry_after_seconds(60_000), 60);
        assert_eq!(rate.retry_after_seconds(119_001), 1);
        assert_eq!(rate.retry_after_seconds(119_999), 1);
        assert_eq!(rate.counter_ttl_seconds(), 120);
    }

    #[test]
    fn a_scope_stops_what_it_names() {
        assert!(HoldScope::All.stops(HeldAction::Send) && HoldScope::All.stops(HeldAction::Grab));
        assert!(HoldScope::Send.stops(HeldAction::Send) && !HoldScope::Send.stops(HeldAction::Grab));
        assert!(HoldScope::Grab.stops(HeldAction::Grab) && !HoldScope::Grab.stops(HeldAction::Send));
        assert!(HoldScope::All.stops(HeldAction::Withdraw), "all stops money out too");
        assert!(HoldScope::MoneyOut.stops(HeldAction::Withdraw));
        assert!(!HoldScope::MoneyOut.stops(HeldAction::Send) && !HoldScope::MoneyOut.stops(HeldAction::Grab));
        assert!(!HoldScope::Send.stops(HeldAction::Withdraw) && !HoldScope::Grab.stops(HeldAction::Withdraw));
    }

    fn placed(who: &str, scope: HoldScope, expires_at: Option<&str>) -> Hold {
        Hold {
            user: user(who),
            scope,
            operator: "anna".into(),
            reason: "bot".into(),
            placed_at: "2026-11-27T00:00:00.000Z".into(),
            expires_at: expires_at.map(str::to_owned),
        }
    }

    #[test]
    fn a_hold_stops_nothing_from_its_expiry_on() {
        let mut book = HoldBook::new(Duration::from_secs(5));
        let expires = "2026-11-28T00:00:00.000Z";
        let at = parse_rfc3339(expires).unwrap();
        book.replace([placed("mallory", HoldScope::MoneyOut, Some(expires))], 1, at - 10_000);
        assert_eq!(book.stops(&user("mallory"), HeldAction::Withdraw, at - 1), Some(HoldScope::MoneyOut));
        assert_eq!(book.stops(&user("mallory"), HeldAction::Withdraw, at), None);
        let hold = placed("mallory", HoldScope::MoneyOut, Some(expires));
        assert!(hold.in_force(at - 1) && !hold.in_force(at));
        assert!(placed("m", HoldScope::All, None).in_force(i64::MAX));
    }

    #[test]
    fn an_expiry_must_be_a_time_to_come() {
        let request = |expires_at: Option<&str>| HoldRequest {
            user: user("m"),
            scope: HoldScope::MoneyOut,
            operator: "anna".into(),
            reason: "ring".into(),
            expires_at: expires_at.map(str::to_owned),
        };
        let now = parse_rfc3339("2026-11-28T00:00:00.000Z").unwrap();
        assert!(request(None).validate(now).is_ok());
        assert!(request(Some("2026-11-29T00:00:00Z")).validate(now).is_ok());
        let past = request(Some("2026-11-27T00:00:00Z")).validate(now).unwrap_err();
        assert_eq!(past.field.as_deref(), Some("expires_at"));
        let garbled = request(Some("tomorrow")).validate(now).unwrap_err();
        assert_eq!(garbled.field.as_deref(), Some("expires_at"));
    }

    #[test]
    fn the_book_is_read_again_once_its_refresh_has_passed() {
        let mut book = HoldBook::new(Duration::from_secs(5));
        assert!(book.is_due(0) && book.is_unread(), "never read");
        book.replace([placed("mallory", HoldScope::Grab, None)], 7, 1_000);
        assert!(book.is_at(7) && !book.is_at(8));
        assert!(!book.is_due(5_999));
        assert!(book.is_due(6_000));
        assert!(book.is_due(999), "a clock gone back reads again");
        assert_eq!(book.stops(&user("mallory"), HeldAction::Grab, 6_000), Some(HoldScope::Grab));
        assert_eq!(book.stops(&user("mallory"), HeldAction::Send, 6_000), None);
        assert_eq!(book.stops(&user("alice"), HeldAction::Grab, 6_000), None);
        book.checked(6_000);
        assert!(!book.is_due(10_999) && book.is_due(11_000));
        book.replace([], 8, 11_000);
        assert!(book.is_empty());
    }

    #[test]
    fn only_the_same_scope_again_changes_nothing() {
        let hold = HoldRequest {
            user: user("m"),
            scope: HoldScope::Grab,
            operator: "anna".into(),
            reason: "bot".into(),
            expires_at: None,
        };
        assert!(hold.changes(None));
        let current = hold.hold("2026-11-27T00:00:00Z".into());
        assert!(!hold.changes(Some(&current)));
        assert!(HoldRequest { scope: HoldScope::All, ..hold.clone() }.changes(Some(&current)));
        let until = HoldRequest { expires_at: Some("2026-12-01T00:00:00Z".into()), ..hold.clone() };
        assert!(until.changes(Some(&current)), "a new expiry is a change");
    }

    #[test]
    fn a_hold_needs_an_operator_and_a_reason() {
        let hold = HoldRequest {
            user: user("m"),
            scope: HoldScope::All,
            operator: "anna".into(),
            reason: "bot".into(),
            expires_at: None,
        };
        assert!(hold.validate(0).is_ok());
        let nameless = HoldRequest { operator: String::new(), ..hold.clone() };
        assert_eq!(nameless.validate(0).unwrap_err().field.as_deref(), Some("operator"));
        let reasonless = LiftRequest { user: user("m"), operator: "anna".into(), reason: " ".into() };
        assert_eq!(reasonless.validate().unwrap_err().field.as_deref(), Some("reason"));
    }
}
