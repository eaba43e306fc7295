//! The hourly view of the business: sends, grabs, refunds, revoked grabs and withdrawals,
//! counted and summed by hour of the business day, from the ledger's events as the bus
//! delivers them (docs/DESIGN.md, "The hourly view"). Each event is counted in the hour it
//! occurred (its `occurred_at`, never its delivery), once: the ledger's write that counts it is
//! conditioned on its `event_id` not counted before, so duplicated and reordered deliveries sum
//! to what the ledger's events say.
//!
//! An hour's figures are kept in [`SHARDS`] items, an event in the one its id hashes to, so that a
//! campaign's burst of grab events spreads its writes over as many partition keys.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::clock::{parse_rfc3339, Millis};
use crate::day::{BusinessDay, BusinessHour};
use crate::money::Cents;
use crate::wallet::{EventType, LedgerEvent};

/// How many items share an hour's figures.
pub const SHARDS: u32 = 16;

/// How long an event's "counted" mark is kept: past the bus's retries (24 hours) and the longest
/// a dead-lettered event waits in its queue (SQS keeps a message 14 days at most) before it is
/// delivered again.
pub const COUNTED_MARK_KEPT_MS: Millis = 15 * 86_400_000;

/// What the hourly view counts, one measure per event type it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// Packets sent (`PacketSent`; amount: their totals).
    Sent,
    /// Grabs recorded (`GrabRecorded`; amount: the shares).
    Grabbed,
    /// Refunds of what nobody took (`PacketRefunded`).
    Refunded,
    /// Grabs the ledger refused after a failover, with no share left to give instead
    /// (`GrabRevoked`; never credited, so `grabbed` overstates by this much).
    Revoked,
    /// Withdrawals asked for (`WithdrawalRequested`).
    WithdrawalRequested,
    /// Withdrawals paid out (`WithdrawalPaid`).
    WithdrawalPaid,
    /// Withdrawals that failed, their money back in the wallet (`WithdrawalFailed`).
    WithdrawalFailed,
}

impl Measure {
    /// Every measure, in the order the view lists them.
    pub const ALL: [Measure; 7] = [
        Measure::Sent,
        Measure::Grabbed,
        Measure::Refunded,
        Measure::Revoked,
        Measure::WithdrawalRequested,
        Measure::WithdrawalPaid,
        Measure::WithdrawalFailed,
    ];

    /// The measure an event of `event_type` counts in; `None` for the types the view skips
    /// (lifecycle steps whose money its own event carries, wallet movements, flags).
    pub fn of(event_type: EventType) -> Option<Measure> {
        Some(match event_type {
            EventType::PacketSent => Measure::Sent,
            EventType::GrabRecorded => Measure::Grabbed,
            EventType::PacketRefunded => Measure::Refunded,
            EventType::GrabRevoked => Measure::Revoked,
            EventType::WithdrawalRequested => Measure::WithdrawalRequested,
            EventType::WithdrawalPaid => Measure::WithdrawalPaid,
            EventType::WithdrawalFailed => Measure::WithdrawalFailed,
            EventType::PacketFinished
            | EventType::PacketExpired
            | EventType::PacketCancelled
            | EventType::WalletCredited
            | EventType::WalletDebited
            | EventType::GrabRegranted
            | EventType::RiskFlagged => return None,
        })
    }

    /// The measure's name in the view and in the ledger's attributes (`sent`, `withdrawal_paid`).
    pub fn name(self) -> &'static str {
        match self {
            Measure::Sent => "sent",
            Measure::Grabbed => "grabbed",
            Measure::Refunded => "refunded",
            Measure::Revoked => "revoked",
            Measure::WithdrawalRequested => "withdrawal_requested",
            Measure::WithdrawalPaid => "withdrawal_paid",
            Measure::WithdrawalFailed => "withdrawal_failed",
        }
    }
}

/// One event as the hourly view counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    /// The event's id, the same on every delivery: what makes the count once.
    pub event_id: String,
    /// What it counts as.
    pub measure: Measure,
    /// Its amount.
    pub amount_cents: Cents,
    /// The hour it occurred in.
    pub hour: BusinessHour,
    /// Which of the hour's [`SHARDS`] items it is counted in.
    pub shard: u32,
}

impl Counted {
    /// `event` as the view counts it, in `day`'s zone; `Ok(None)` for a type the view skips, `Err`
    /// naming what is wrong for an event whose time is not RFC 3339.
    pub fn of(event: &LedgerEvent, day: &BusinessDay) -> Result<Option<Counted>, String> {
        Counted::from_parts(&event.event_id, event.event_type, event.amount_cents, &event.occurred_at, day)
    }

    /// An event of `event_type` as the view counts it, from its parts as the bus delivers them;
    /// `Ok(None)` for a type the view skips, `Err` naming what is wrong for an event it cannot
    /// count once (no id) or place (a time not RFC 3339).
    pub fn from_parts(
        event_id: &str,
        event_type: EventType,
        amount_cents: Cents,
        occurred_at: &str,
        day: &BusinessDay,
    ) -> Result<Option<Counted>, String> {
        let Some(measure) = Measure::of(event_type) else { return Ok(None) };
        if event_id.is_empty() {
            return Err("no event_id to count it once by".into());
        }
        let at_ms =
            parse_rfc3339(occurred_at).ok_or_else(|| format!("occurred_at {occurred_at:?} is not an RFC 3339 time"))?;
        Ok(Some(Counted {
            event_id: event_id.to_owned(),
            measure,
            amount_cents,
            hour: day.hour_of(at_ms),
            shard: shard_of(event_id),
        }))
    }
}

/// The shard an event id is counted in: its SHA-256's first four bytes, modulo [`SHARDS`]
/// (stable across processes and releases, unlike the standard library's hasher).
pub fn shard_of(event_id: &str) -> u32 {
    let digest = Sha256::digest(event_id.as_bytes());
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]) % SHARDS
}

/// A count and the amounts it sums.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// How many events.
    pub count: u64,
    /// Their amounts' sum.
    pub amount_cents: Cents,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.count += other.count;
        self.amount_cents += other.amount_cents;
    }
}

/// Every measure's tally.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Figures {
    /// Packets sent.
    pub sent: Tally,
    /// Grabs recorded.
    pub grabbed: Tally,
    /// Refunds.
    pub refunded: Tally,
    /// Grabs revoked after a failover.
    pub revoked: Tally,
    /// Withdrawals asked for.
    pub withdrawal_requested: Tally,
    /// Withdrawals paid out.
    pub withdrawal_paid: Tally,
    /// Withdrawals failed.
    pub withdrawal_failed: Tally,
}

impl Figures {
    /// The tally of `measure`.
    pub fn tally_mut(&mut self, measure: Measure) -> &mut Tally {
        match measure {
            Measure::Sent => &mut self.sent,
            Measure::Grabbed => &mut self.grabbed,
            Measure::Refunded => &mut self.refunded,
            Measure::Revoked => &mut self.revoked,
            Measure::WithdrawalRequested => &mut self.withdrawal_requested,
            Measure::WithdrawalPaid => &mut self.withdrawal_paid,
            Measure::WithdrawalFailed => &mut self.withdrawal_failed,
        }
    }

    /// The tally of `measure`.
    pub fn tally(&self, measure: Measure) -> Tally {
        *self.clone().tally_mut(measure)
    }

    fn add(&mut self, other: &Figures) {
        for measure in Measure::ALL {
            self.tally_mut(measure).add(other.tally(measure));
        }
    }
}

/// One hour's figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HourFigures {
    /// The hour on the business day's clocks (0 to 23).
    pub hour: u8,
    /// Its figures.
    #[serde(flatten)]
    pub figures: Figures,
}

/// A business day's hours, as the operators' route answers them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayHours {
    /// The business day.
    pub day: String,
    /// The zone whose clocks its hours are (`BUSINESS_TIME_ZONE`).
    pub time_zone: String,
    /// Every hour, 0 to 23, an empty one with zero tallies.
    pub hours: Vec<HourFigures>,
    /// The day's sums.
    pub totals: Figures,
}

impl DayHours {
    /// `day`'s hours from the tallies read (`(hour, measure, tally)`, a shard's each: those of one
    /// hour and measure add up).
    pub fn sum(day: &str, zone: &BusinessDay, read: impl IntoIterator<Item = (u8, Measure, Tally)>) -> DayHours {
        let mut hours: Vec<HourFigures> = (0..24).map(|hour| HourFigures { hour, ..Default::default() }).collect();
        for (hour, measure, tally) in read {
            if let Some(figures) = hours.get_mut(usize::from(hour)) {
                figures.figures.tally_mut(measure).add(tally);
            }
        }
        let mut totals = Figures::default();
        for hour in &hours {
            totals.add(&hour.figures);
        }
        DayHours { day: day.to_owned(), time_zone: zone.zone().to_owned(), hours, totals }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::UserId;

    fn event(event_type: EventType, id: &str, amount_cents: Cents, occurred_at: &str) -> LedgerEvent {
        LedgerEvent {
            event_id: id.into(),
            event_type,
            packet_id: String::new(),
            user: UserId::from_claim("alice").unwrap(),
            amount_cents,
            occurred_at: occurred_at.into(),
            reference: String::new(),
            proposed_by: String::new(),
            approved_by: String::new(),
            chat_id: String::new(),
        }
    }

    #[test]
    fn every_event_type_is_counted_or_skipped_on_purpose() {
        let counted: Vec<Measure> = EventType::ALL.iter().filter_map(|t| Measure::of(*t)).collect();
        assert_eq!(counted, Measure::ALL.to_vec(), "each measure once, in the view's order");
        let names: std::collections::HashSet<&str> = Measure::ALL.iter().map(|m| m.name()).collect();
        assert_eq!(names.len(), Measure::ALL.len());
        for measure in Measure::ALL {
            assert_eq!(serde_json::to_value(measure).unwrap(), measure.name());
        }
    }

    #[test]
    fn an_event_counts_in_the_business_hour_it_occurred() {
        let shanghai = BusinessDay::parse("Asia/Shanghai").unwrap();
        let sent = event(EventType::PacketSent, "PacketSent:p:alice", 500, "2026-12-07T16:30:00Z");
        let counted = Counted::of(&sent, &shanghai).unwrap().unwrap();
        assert_eq!(counted.hour, BusinessHour { day: "2026-12-08".into(), hour: 0 });
        assert_eq!((counted.measure, counted.amount_cents), (Measure::Sent, 500));
        assert!(counted.shard < SHARDS);
        let credited = event(EventType::WalletCredited, "x", 1, "2026-12-07T16:30:00Z");
        assert_eq!(Counted::of(&credited, &shanghai), Ok(None));
        let bad = event(EventType::GrabRecorded, "y", 1, "yesterday");
        assert!(Counted::of(&bad, &shanghai).unwrap_err().contains("occurred_at"));
    }

    #[test]
    fn shards_spread_ids_and_stay_put() {
        let shards: std::collections::HashSet<u32> =
            (0..1_000).map(|n| shard_of(&format!("GrabRecorded:grab:{n}:u"))).collect();
        assert_eq!(shards.len(), SHARDS as usize);
        assert_eq!(shard_of("GrabRecorded:p:bob"), shard_of("GrabRecorded:p:bob"));
    }

    #[test]
    fn a_day_sums_its_shards_and_lists_every_hour() {
        let zone = BusinessDay::default();
        let tally = |count, amount_cents| Tally { count, amount_cents };
        let day = DayHours::sum(
            "2026-12-07",
            &zone,
            [
                (9, Measure::Grabbed, tally(2, 30)),
                (9, Measure::Grabbed, tally(1, 5)),
                (23, Measure::Sent, tally(1, 100)),
            ],
        );
        assert_eq!(day.hours.len(), 24);
        assert_eq!(day.hours[9].figures.grabbed, tally(3, 35));
        assert_eq!(day.hours[23].figures.sent, tally(1, 100));
        assert_eq!(day.totals.grabbed, tally(3, 35));
        assert_eq!(day.hours[0].figures, Figures::default());
        let json = serde_json::to_value(day.hours[9]).unwrap();
        assert_eq!(json["grabbed"]["amount_cents"], 35);
        assert_eq!(json["hour"], 9);
    }
}
