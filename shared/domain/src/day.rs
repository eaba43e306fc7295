//! The business day: the calendar days of one IANA time zone (`BUSINESS_TIME_ZONE`, default
//! `UTC`). Daily limits count per business day; a trial balance and a statement are of one; the
//! daily funds schedules run in its zone. For users in China (`Asia/Shanghai`) a day runs from
//! 16:00 to 16:00 UTC.

use chrono::{NaiveDate, TimeZone};
use chrono_tz::Tz;

use crate::clock::Millis;
use crate::invalid::Invalid;

/// The most business days one read of a range spans: a month's statement or audit trail.
pub const MAX_RANGE_DAYS: u32 = 31;

/// Business days `first..=last` (`YYYY-MM-DD`), as an operator asks for a statement or an audit
/// trail of a period: both days, `last` not before `first`, at most [`MAX_RANGE_DAYS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayRange {
    first: NaiveDate,
    last: NaiveDate,
}

impl DayRange {
    /// The range from `first` (the field `day`) to `last` (the field `to`; `first` when absent).
    pub fn parse(first: &str, last: Option<&str>) -> Result<DayRange, Invalid> {
        let date = |text: &str, field: &str| {
            NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .map_err(|_| Invalid::field(field, format!("{field} must be a date, YYYY-MM-DD")))
        };
        let first = date(first, "day")?;
        let last = last.map(|text| date(text, "to")).transpose()?.unwrap_or(first);
        if last < first {
            return Err(Invalid::field("to", "to must not come before day"));
        }
        if (last - first).num_days() >= i64::from(MAX_RANGE_DAYS) {
            return Err(Invalid::field("to", format!("a range spans at most {MAX_RANGE_DAYS} days")));
        }
        Ok(DayRange { first, last })
    }

    /// The first day, `YYYY-MM-DD`.
    pub fn first(&self) -> String {
        self.first.format("%Y-%m-%d").to_string()
    }

    /// The last day, `YYYY-MM-DD` (the first for a range of one).
    pub fn last(&self) -> String {
        self.last.format("%Y-%m-%d").to_string()
    }

    /// Every day of the range, in order.
    pub fn days(&self) -> Vec<String> {
        self.first
            .iter_days()
            .take_while(|day| *day <= self.last)
            .map(|day| day.format("%Y-%m-%d").to_string())
            .collect()
    }

    /// The range in `zone` as `[start, end)` in epoch ms: the first day's midnight to the one
    /// after the last day.
    pub fn bounds(&self, zone: BusinessDay) -> Option<(Millis, Millis)> {
        Some((zone.bounds(&self.first())?.0, zone.bounds(&self.last())?.1))
    }
}

/// An hour of a business day: the day (`YYYY-MM-DD`) and the hour its clocks show (0 to 23).
/// On the day the zone's clocks go back, the repeated hour's two hours are one; on the day they
/// go forward, the skipped hour stays empty.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BusinessHour {
    /// The business day.
    pub day: String,
    /// The hour on its clocks.
    pub hour: u8,
}

/// The time zone whose calendar days are the business's days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BusinessDay(Tz);

impl Default for BusinessDay {
    fn default() -> Self {
        BusinessDay(Tz::UTC)
    }
}

impl BusinessDay {
    /// The zone named `name` (IANA, e.g. `Asia/Shanghai`); `None` for a name the database lacks.
    pub fn parse(name: &str) -> Option<Self> {
        name.parse::<Tz>().ok().map(BusinessDay)
    }

    /// The zone's IANA name.
    pub fn zone(&self) -> &'static str {
        self.0.name()
    }

    /// The business day of `at_ms` (epoch ms), `YYYY-MM-DD`.
    pub fn day_of(&self, at_ms: Millis) -> String {
        let instant = chrono::DateTime::from_timestamp_millis(at_ms).unwrap_or_default();
        instant.with_timezone(&self.0).format("%Y-%m-%d").to_string()
    }

    /// The business day of `at_ms` and the hour its clocks show then.
    pub fn hour_of(&self, at_ms: Millis) -> BusinessHour {
        let instant = chrono::DateTime::from_timestamp_millis(at_ms).unwrap_or_default().with_timezone(&self.0);
        BusinessHour {
            day: instant.format("%Y-%m-%d").to_string(),
            hour: u8::try_from(chrono::Timelike::hour(&instant)).unwrap_or_default(),
        }
    }

    /// Business day `YYYY-MM-DD` as `[start, end)` in epoch ms, from its midnight to the next
    /// (23 or 25 hours on a day the zone changes its clocks); `None` if it is not a day.
    pub fn bounds(&self, day: &str) -> Option<(Millis, Millis)> {
        let date = NaiveDate::parse_from_str(day, "%Y-%m-%d").ok()?;
        let start = self.midnight(date)?;
        let end = self.midnight(date.succ_opt()?)?;
        Some((start, end))
    }

    /// The first instant of `date` in the zone (a midnight a clock change skips starts the day
    /// at the first instant that exists).
    fn midnight(&self, date: NaiveDate) -> Option<Millis> {
        let mut local = date.and_hms_opt(0, 0, 0)?;
        for _ in 0..4 {
            if let Some(instant) = self.0.from_local_datetime(&local).earliest() {
                return Some(instant.timestamp_millis());
            }
            local += chrono::Duration::minutes(30);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::parse_rfc3339;

    #[test]
    fn a_range_is_its_days_in_order_at_most_a_month_and_names_the_field_at_fault() {
        let one = DayRange::parse("2026-12-07", None).unwrap();
        assert_eq!(
            (one.first(), one.last(), one.days()),
            ("2026-12-07".into(), "2026-12-07".into(), vec!["2026-12-07".into()])
        );
        let month = DayRange::parse("2026-12-01", Some("2026-12-31")).unwrap();
        assert_eq!(month.days().len(), 31);
        let leap = DayRange::parse("2028-02-28", Some("2028-03-01")).unwrap();
        assert_eq!(leap.days(), ["2028-02-28", "2028-02-29", "2028-03-01"]);
        let field = |first, last| DayRange::parse(first, last).unwrap_err().field.unwrap();
        assert_eq!(field("2026-12-01", Some("2027-01-01")), "to", "32 days");
        assert_eq!(field("2026-12-07", Some("2026-12-06")), "to", "backwards");
        assert_eq!(field("2026-13-01", None), "day");
        assert_eq!(field("2026-12-01", Some("soon")), "to");
        let shanghai = BusinessDay::parse("Asia/Shanghai").unwrap();
        let (start, end) = leap.bounds(shanghai).unwrap();
        assert_eq!((start, end), (shanghai.bounds("2028-02-28").unwrap().0, shanghai.bounds("2028-03-01").unwrap().1));
    }

    #[test]
    fn a_shanghai_day_runs_from_four_in_the_afternoon_utc() {
        let shanghai = BusinessDay::parse("Asia/Shanghai").unwrap();
        let at = |text| parse_rfc3339(text).unwrap();
        assert_eq!(shanghai.day_of(at("2026-11-23T15:59:59.999Z")), "2026-11-23");
        assert_eq!(shanghai.day_of(at("2026-11-23T16:00:00Z")), "2026-11-24");
        assert_eq!(shanghai.bounds("2026-11-24"), Some((at("2026-11-23T16:00:00Z"), at("2026-11-24T16:00:00Z"))));
        let utc = BusinessDay::default();
        assert_eq!(utc.zone(), "UTC");
        assert_eq!(utc.day_of(at("2026-11-23T16:00:00Z")), "2026-11-23");
        assert_eq!(utc.bounds("2026-11-23"), Some((at("2026-11-23T00:00:00Z"), at("2026-11-24T00:00:00Z"))));
        assert!(BusinessDay::parse("Mars/Olympus").is_none());
        assert!(utc.bounds("2026-13-01").is_none());
    }

    #[test]
    fn a_day_the_clocks_change_is_23_or_25_hours() {
        let berlin = BusinessDay::parse("Europe/Berlin").unwrap();
        let hours = |day| berlin.bounds(day).map(|(start, end)| (end - start) / 3_600_000);
        assert_eq!(hours("2026-03-29"), Some(23));
        assert_eq!(hours("2026-10-25"), Some(25));
        assert_eq!(hours("2026-11-23"), Some(24));
    }
}
