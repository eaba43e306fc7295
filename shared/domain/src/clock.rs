//! Time as integer milliseconds since the Unix epoch, and the RFC 3339 form the API speaks.

use chrono::{DateTime, SecondsFormat, Utc};

/// Milliseconds since the Unix epoch, UTC.
pub type Millis = i64;

/// A source of the current time, so tests can move it.
pub trait Clock: Send + Sync {
    /// Now, in milliseconds since the Unix epoch.
    fn now_ms(&self) -> Millis;
}

/// A shared clock reads as the clock it shares.
impl<T: Clock + ?Sized> Clock for std::sync::Arc<T> {
    fn now_ms(&self) -> Millis {
        (**self).now_ms()
    }
}

/// The machine's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> Millis {
        Utc::now().timestamp_millis()
    }
}

/// Formats epoch milliseconds as RFC 3339 UTC with milliseconds: `2026-11-21T08:00:00.123Z`.
pub fn rfc3339(ms: Millis) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parses an RFC 3339 time back into epoch milliseconds.
pub fn parse_rfc3339(text: &str) -> Option<Millis> {
    DateTime::parse_from_rfc3339(text).ok().map(|t| t.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_milliseconds_and_z() {
        assert_eq!(rfc3339(1_795_248_000_123), "2026-11-21T08:00:00.123Z");
        assert_eq!(parse_rfc3339("2026-11-21T08:00:00.123Z"), Some(1_795_248_000_123));
    }
}
