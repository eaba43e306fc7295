//! The Lambda handler: one EventBridge event from the bus's rule (`detail-type` `PacketSent`,
//! `PacketFinished` or `GrabRecorded`, `detail` as the events Pipe shapes it), run through the
//! pattern rules. It answers the flags the event raised. An event it cannot read fails as
//! `InvalidRiskEvent`, and a ledger it cannot reach as `StoreUnavailable`: Lambda retries both,
//! then the rule's dead-letter queue keeps the event.

use lambda_runtime::{Diagnostic, LambdaEvent};
use red_packets::clock::{parse_rfc3339, Clock};
use red_packets::domain::patterns::RiskFlag;
use red_packets::domain::{PacketId, UserId};
use red_packets::ports::{Holds, Ledger, RiskLedger};
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
    /// The event's type, or `ignored` for one no rule reads.
    pub event: String,
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

/// Runs the rules on one event from the bus.
pub async fn handle<L: Ledger + RiskLedger + Holds, C: Clock>(
    watch: &Watch<L, C>,
    event: LambdaEvent<Value>,
) -> Result<Watched, RiskFailure> {
    let bus_event: BusEvent =
        serde_json::from_value(event.payload).map_err(|error| RiskFailure::InvalidEvent(error.to_string()))?;
    let Some(observed) = observed(&bus_event)? else {
        return Ok(Watched { event: "ignored".into(), flags: Vec::new() });
    };
    let flags = watch.observe(&observed).await.inspect_err(|error| {
        tracing::warn!(event_id = %bus_event.detail.event_id, %error, "the risk rules failed on an event; Lambda delivers it again");
    })?;
    Ok(Watched { event: bus_event.detail_type, flags })
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
        assert_eq!(watched, Watched { event: "PacketSent".into(), flags: Vec::new() });
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
