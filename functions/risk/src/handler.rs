//! The Lambda handler: one EventBridge event from the bus's rule (`detail` as the events Pipe
//! shapes it). Every event of a type the hourly view counts (`domain::hourly`) is counted in its
//! business hour, once; a `PacketSent`, `PacketFinished` or `GrabRecorded` is then run through
//! the pattern rules. It answers whether the event was counted now and the flags it raised. An
//! event it cannot read fails as `InvalidRiskEvent`, and a ledger it cannot reach as
//! `StoreUnavailable`: Lambda retries both, then the rule's dead-letter queue keeps the event.
//! A retry counts nothing twice and raises no flag twice.

use lambda_runtime::{Diagnostic, LambdaEvent};
use red_packets::clock::{parse_rfc3339, Clock};
use red_packets::domain::hourly::{Counted, Measure};
use red_packets::domain::patterns::RiskFlag;
use red_packets::domain::{BusinessDay, EventType, PacketId, UserId};
use red_packets::ports::{BusinessHours, Holds, Ledger, RiskLedger};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::watch::{Observed, Watch, WatchError};

/// Why an invocation failed.
#[derive(Debug, thiserror::Error)]
pub enum RiskFailure {
    /// Not a ledger event as the Pipe shapes it.
    #[error("invalid risk event: {0}")]
    InvalidEvent(String),
    /// The rules could not read or write the ledger.
    #[error(transparent)]
    Watch(#[from] WatchError),
}

impl From<RiskFailure> for Diagnostic {
    fn from(failure: RiskFailure) -> Self {
        let error_type = match &failure {
            RiskFailure::InvalidEvent(_) => "InvalidRiskEvent",
            RiskFailure::Watch(WatchError::Store(_)) => "StoreUnavailable",
            RiskFailure::Watch(WatchError::Contended(_)) => "ChatLogContended",
        };
        Diagnostic { error_type: error_type.into(), error_message: failure.to_string() }
    }
}

/// What an event came to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Watched {
    /// The event's type, or `ignored` for one neither the hourly view nor a rule reads.
    pub event: String,
    /// For a type the hourly view counts: whether it was counted now (`false`: counted before).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counted: Option<bool>,
    /// The flags it raised.
    pub flags: Vec<RiskFlag>,
}

/// EventBridge's envelope, as far as the rules read it.
#[derive(Debug, Deserialize)]
struct BusEvent {
    #[serde(rename = "detail-type")]
    detail_type: String,
    detail: Detail,
}

/// The ledger event (events/schemas/), as far as the rules read it.
#[derive(Debug, Deserialize)]
struct Detail {
    #[serde(default)]
    event_id: String,
    packet_id: String,
    user: String,
    /// A decimal string: DynamoDB Streams carry numbers as strings.
    amount_cents: String,
    occurred_at: String,
}

/// Counts one event from the bus in its hour and runs the rules on it.
pub async fn handle<L: Ledger + RiskLedger + Holds + BusinessHours, C: Clock>(
    watch: &Watch<L, C>,
    event: LambdaEvent<Value>,
) -> Result<Watched, RiskFailure> {
    let bus_event: BusEvent =
        serde_json::from_value(event.payload).map_err(|error| RiskFailure::InvalidEvent(error.to_string()))?;
    let event_id = bus_event.detail.event_id.clone();
    let failed = |error: &WatchError| {
        tracing::warn!(%event_id, %error, "the risk function failed on an event; Lambda delivers it again");
    };
    let counted = match counted(&bus_event, watch.business_day())? {
        Some(counted) => Some(watch.count_hour(&counted).await.inspect_err(failed)?),
        None => None,
    };
    let Some(observed) = observed(&bus_event)? else {
        let event = if counted.is_some() { bus_event.detail_type } else { "ignored".into() };
        return Ok(Watched { event, counted, flags: Vec::new() });
    };
    let flags = watch.observe(&observed).await.inspect_err(failed)?;
    Ok(Watched { event: bus_event.detail_type, counted, flags })
}

/// The event as the hourly view counts it in `day`'s hours, `None` for a type it skips (or one it
/// does not know).
fn counted(event: &BusEvent, day: &BusinessDay) -> Result<Option<Counted>, RiskFailure> {
    let invalid = |what: String| RiskFailure::InvalidEvent(format!("{what} in a {} event", event.detail_type));
    let Ok(event_type) = serde_json::from_value::<EventType>(Value::String(event.detail_type.clone())) else {
        return Ok(None);
    };
    if Measure::of(event_type).is_none() {
        return Ok(None);
    }
    let detail = &event.detail;
    let amount_cents = detail.amount_cents.parse().map_err(|_| invalid("no whole amount_cents".into()))?;
    Counted::from_parts(&detail.event_id, event_type, amount_cents, &detail.occurred_at, day).map_err(invalid)
}

/// The event types the pattern rules read.
const RULES_READ: [EventType; 3] = [EventType::PacketSent, EventType::PacketFinished, EventType::GrabRecorded];

/// The event types this function reads: those the hourly view counts and those the rules read.
/// template.yaml's rule for the function names these (local/tests/it/hourly.rs checks it).
pub fn event_types() -> Vec<EventType> {
    EventType::ALL.into_iter().filter(|kind| Measure::of(*kind).is_some() || RULES_READ.contains(kind)).collect()
}

/// The event the rules read, `None` for a type none reads.
fn observed(event: &BusEvent) -> Result<Option<Observed>, RiskFailure> {
    let invalid = |what: &str| RiskFailure::InvalidEvent(format!("{what} in a {} event", event.detail_type));
    let detail = &event.detail;
    let packet_id = || PacketId::parse(&detail.packet_id).ok_or_else(|| invalid("no packet_id"));
    Ok(Some(match event.detail_type.as_str() {
        "PacketSent" => Observed::PacketSent { packet_id: packet_id()? },
        "PacketFinished" => Observed::PacketFinished { packet_id: packet_id()? },
        "GrabRecorded" => Observed::GrabRecorded {
            packet_id: packet_id()?,
            grabber: UserId::from_claim(&detail.user).ok_or_else(|| invalid("no user"))?,
            amount_cents: detail.amount_cents.parse().map_err(|_| invalid("no whole amount_cents"))?,
            grabbed_at_ms: parse_rfc3339(&detail.occurred_at).ok_or_else(|| invalid("no RFC 3339 occurred_at"))?,
        },
        _ => return Ok(None),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use red_packets::domain::hourly::{DayHours, Tally};
    use red_packets::domain::{ChatId, Packet, PacketKind, PacketSpec, PacketTerms, Seed};
    use red_packets::Config;
    use red_packets_testkit::memory::MemoryLedger;
    use red_packets_testkit::ManualClock;

    const EVENT: &str = include_str!("../../../events/risk.json");

    fn sample(detail_type: &str, packet: &Packet) -> LambdaEvent<Value> {
        let mut event: Value = serde_json::from_str(EVENT).unwrap();
        event["detail-type"] = Value::String(detail_type.into());
        event["detail"]["type"] = Value::String(detail_type.into());
        event["detail"]["packet_id"] = Value::String(packet.id.to_string());
        LambdaEvent::new(event, lambda_runtime::Context::default())
    }

    /// The defaults, without the wallet (a packet is sent without a balance to debit).
    fn config() -> Config {
        Config::from_lookup(|name| (name == "FUNDS").then(|| "none".to_owned())).unwrap()
    }

    async fn sent_in_chat(ledger: &MemoryLedger, clock: &ManualClock) -> Packet {
        let terms =
            PacketTerms { chat_id: ChatId::parse("family-chat"), ..PacketTerms::new(PacketKind::Lucky, 1000, 3) };
        let spec = PacketSpec::open_to_all(terms, 3600);
        let alice = UserId::from_claim("alice").unwrap();
        let packet = Packet::new(PacketId::random(), alice, &spec, Seed::random(), clock.now_ms());
        ledger.record_packet(&packet, None).await.unwrap();
        packet
    }

    #[tokio::test]
    async fn the_sample_event_is_read_and_a_packet_in_a_chat_enters_its_log() {
        let config = config();
        let ledger = MemoryLedger::new(&config);
        let clock = ManualClock::starting_now();
        let packet = sent_in_chat(&ledger, &clock).await;
        let watch = Watch::new(ledger.clone(), &config, clock);
        let watched = handle(&watch, sample("PacketSent", &packet)).await.unwrap();
        assert_eq!(watched, Watched { event: "PacketSent".into(), counted: Some(true), flags: Vec::new() });
        let (log, version) = ledger.chat_log(&ChatId::parse("family-chat").unwrap()).await.unwrap();
        assert_eq!((log.packets.len(), version), (1, 1));
        let again = handle(&watch, sample("PacketSent", &packet)).await.unwrap();
        assert!(again.flags.is_empty());
        assert_eq!(
            ledger.chat_log(&ChatId::parse("family-chat").unwrap()).await.unwrap().0,
            log,
            "a redelivery adds nothing"
        );
    }

    #[tokio::test]
    async fn an_event_is_counted_in_its_business_hour_once_whatever_its_deliveries() {
        let config = config();
        let ledger = MemoryLedger::new(&config);
        let clock = ManualClock::starting_now();
        let packet = sent_in_chat(&ledger, &clock).await;
        let watch = Watch::new(ledger.clone(), &config, clock);
        let mut paid = sample("WithdrawalPaid", &packet);
        paid.payload["detail"]["event_id"] = Value::String("WithdrawalPaid:w-1:alice".into());
        paid.payload["detail"]["amount_cents"] = Value::String("250".into());
        let first = handle(&watch, paid.clone()).await.unwrap();
        assert_eq!(first, Watched { event: "WithdrawalPaid".into(), counted: Some(true), flags: Vec::new() });
        assert_eq!(handle(&watch, paid).await.unwrap().counted, Some(false), "a redelivery counts nothing");
        handle(&watch, sample("PacketSent", &packet)).await.unwrap();
        let tallies = ledger.day_tallies("2026-11-23").await.unwrap();
        let day = DayHours::sum("2026-11-23", &BusinessDay::default(), tallies);
        assert_eq!(day.hours[8].figures.withdrawal_paid, Tally { count: 1, amount_cents: 250 });
        assert_eq!(day.hours[8].figures.sent, Tally { count: 1, amount_cents: 1000 });
        assert_eq!(day.totals.sent.count + day.totals.withdrawal_paid.count, 2);

        let mut nameless = sample("GrabRecorded", &packet);
        nameless.payload["detail"]["event_id"] = Value::String(String::new());
        let failure = handle(&watch, nameless).await.unwrap_err();
        assert!(failure.to_string().contains("event_id"), "{failure}");
    }

    #[tokio::test]
    async fn a_type_no_rule_reads_is_ignored_and_a_broken_event_is_named() {
        let config = config();
        let clock = ManualClock::starting_now();
        let ledger = MemoryLedger::new(&config);
        let packet = sent_in_chat(&ledger, &clock).await;
        let watch = Watch::new(ledger, &config, clock);
        assert_eq!(handle(&watch, sample("WalletCredited", &packet)).await.unwrap().event, "ignored");
        let mut broken = sample("GrabRecorded", &packet);
        broken.payload["detail"]["amount_cents"] = Value::String("ten".into());
        let failure = handle(&watch, broken).await.unwrap_err();
        assert!(failure.to_string().contains("amount_cents"), "{failure}");
        assert_eq!(Diagnostic::from(failure).error_type, "InvalidRiskEvent");
    }
}
