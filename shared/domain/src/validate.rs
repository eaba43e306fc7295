//! Validation of `POST /packets` bodies: each violation is an [`Invalid`] naming its field (a
//! 400 at the HTTP edge).

use serde::Deserialize;

use super::access::{Passphrase, PassphraseKey, MAX_PASSPHRASE_CHARS, MAX_RECIPIENT_CHARS};
use super::ids::{ChatId, UserId};
use super::invalid::Invalid;
use super::limits::{Limits, SendLimits, MAX_GREETING_CHARS};
use super::packet::{PacketKind, PacketSpec, PacketTerms};
use super::split::SplitRule;
use crate::clock::{parse_rfc3339, Millis};

/// The body of `POST /packets` as sent, before validation. Unknown fields are refused.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SendRequest {
    total_cents: Option<u64>,
    count: Option<u64>,
    kind: Option<String>,
    split: Option<String>,
    greeting: Option<String>,
    expires_in_seconds: Option<u64>,
    opens_at: Option<String>,
    recipients: Option<Vec<String>>,
    passphrase: Option<String>,
    chat_id: Option<String>,
    members_only: Option<bool>,
}

/// Parses and validates a send body arriving at `now_ms` against `limits`, applying DESIGN.md's
/// defaults. A passphrase leaves here as its digest under `key`; the clear phrase goes no further.
pub fn parse_send_request(
    body: &[u8],
    limits: &Limits,
    key: &PassphraseKey,
    now_ms: Millis,
) -> Result<PacketSpec, Invalid> {
    let request: SendRequest = parse_json(body)?;
    validate(request, limits, key, now_ms)
}

/// The body of a grab: empty, or `{"passphrase": "…"}`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct GrabRequest {
    passphrase: Option<String>,
}

/// The passphrase a grab body carries, if any (an empty body carries none).
pub fn parse_grab_request(body: &[u8]) -> Result<Option<Passphrase>, Invalid> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let request: GrabRequest = parse_json(body)?;
    Ok(request.passphrase.as_deref().map(Passphrase::offered))
}

/// Deserializes a JSON object body, turning serde's complaint into an [`Invalid`] that names the field.
/// Only an object will do: serde would also read a struct from an array of its fields in order.
pub fn parse_json<T: for<'de> Deserialize<'de>>(body: &[u8]) -> Result<T, Invalid> {
    if body.iter().find(|byte| !byte.is_ascii_whitespace()) != Some(&b'{') {
        return Err(Invalid::whole("the body must be a JSON object"));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let message = error.inner().to_string();
        let path = error.path().to_string();
        let field = if path.is_empty() || path == "." { backticked(&message) } else { Some(path) };
        Invalid { field, message }
    })?;
    deserializer.end().map_err(|error| Invalid::whole(error.to_string()))?;
    Ok(value)
}

/// The name serde quotes in messages like "unknown field `foo`" or "missing field `bar`".
fn backticked(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let end = start + message[start..].find('`')?;
    Some(message[start..end].to_owned())
}

fn validate(request: SendRequest, limits: &Limits, key: &PassphraseKey, now_ms: Millis) -> Result<PacketSpec, Invalid> {
    let total_cents = request.total_cents.ok_or_else(|| Invalid::field("total_cents", "total_cents is required"))?;
    if !(1..=limits.max_total_cents).contains(&total_cents) {
        return Err(Invalid::field(
            "total_cents",
            format!("total_cents must be between 1 and {}", limits.max_total_cents),
        ));
    }
    let count = request.count.ok_or_else(|| Invalid::field("count", "count is required"))?;
    if !(1..=u64::from(limits.max_count)).contains(&count) {
        return Err(Invalid::field("count", format!("count must be between 1 and {}", limits.max_count)));
    }
    let count = count as u32;
    if total_cents < u64::from(count) * SendLimits::MIN_SHARE_CENTS {
        return Err(Invalid::field("count", "count must not exceed total_cents: every share is at least 1 cent"));
    }

    let (kind, split) = kind_and_split(request.kind.as_deref(), request.split.as_deref())?;
    if kind == PacketKind::Fixed && total_cents % u64::from(count) != 0 {
        return Err(Invalid::field("total_cents", "a fixed packet's total_cents must divide evenly by count"));
    }

    if let Some(greeting) = &request.greeting {
        if greeting.chars().count() > MAX_GREETING_CHARS {
            return Err(Invalid::field(
                "greeting",
                format!("greeting must be at most {MAX_GREETING_CHARS} characters"),
            ));
        }
    }

    let expires_in_seconds = request.expires_in_seconds.unwrap_or(u64::from(limits.default_expires_in_seconds));
    let allowed = u64::from(limits.min_expires_in_seconds)..=u64::from(limits.max_expires_in_seconds);
    if !allowed.contains(&expires_in_seconds) {
        return Err(Invalid::field(
            "expires_in_seconds",
            format!("expires_in_seconds must be between {} and {}", allowed.start(), allowed.end()),
        ));
    }

    let chat_id = match request.chat_id.as_deref() {
        None => None,
        Some(text) => Some(ChatId::parse(text).ok_or_else(|| {
            Invalid::field("chat_id", format!("chat_id must be 1 to {} of A-Z a-z 0-9 _ . : @ -", ChatId::MAX_LEN))
        })?),
    };
    let members_only = request.members_only.unwrap_or(false);
    if members_only && chat_id.is_none() {
        return Err(Invalid::field("members_only", "members_only needs the chat_id whose members may grab"));
    }
    let opens_at_ms = request.opens_at.as_deref().map(|text| opens_at(text, limits, now_ms)).transpose()?;
    let recipients = request.recipients.map(|names| recipients(names, count, limits)).transpose()?;
    let passphrase = match request.passphrase.as_deref() {
        None => None,
        Some(text) => Some(key.digest(&Passphrase::new(text).ok_or_else(|| {
            Invalid::field("passphrase", format!("passphrase must be 1 to {MAX_PASSPHRASE_CHARS} characters"))
        })?)),
    };

    Ok(PacketSpec {
        terms: PacketTerms { total_cents, count, kind, split, greeting: request.greeting, chat_id },
        expires_in_seconds: expires_in_seconds as u32,
        opens_at_ms,
        recipients,
        passphrase,
        members_only,
    })
}

/// The packet's kind (lucky by default) and, for a lucky one, its split (the double average by
/// default); a fixed packet names no split.
fn kind_and_split(kind: Option<&str>, split: Option<&str>) -> Result<(PacketKind, Option<SplitRule>), Invalid> {
    let kind = match kind {
        None => PacketKind::Lucky,
        Some(name) => {
            PacketKind::parse(name).ok_or_else(|| Invalid::field("kind", "kind must be \"lucky\" or \"fixed\""))?
        }
    };
    let split = match (kind, split) {
        (PacketKind::Lucky, None) => Some(SplitRule::DoubleAverage),
        (PacketKind::Lucky, Some(name)) => Some(
            SplitRule::parse(name)
                .ok_or_else(|| Invalid::field("split", "split must be \"double_average\" or \"line_cut\""))?,
        ),
        (PacketKind::Fixed, None) => None,
        (PacketKind::Fixed, Some(_)) => return Err(Invalid::field("split", "split applies to lucky packets only")),
    };
    Ok((kind, split))
}

/// A scheduled opening: an RFC 3339 instant at most `max_opens_ahead_seconds` after `now_ms`.
/// One already past is accepted (a send retried after its opening replays it) and opens at once.
fn opens_at(text: &str, limits: &Limits, now_ms: Millis) -> Result<Millis, Invalid> {
    let opens_at_ms = parse_rfc3339(text).ok_or_else(|| {
        Invalid::field("opens_at", "opens_at must be an RFC 3339 instant, such as 2027-02-16T20:00:00+08:00")
    })?;
    let latest = now_ms.saturating_add(Millis::from(limits.max_opens_ahead_seconds) * 1000);
    if opens_at_ms > latest {
        return Err(Invalid::field(
            "opens_at",
            format!("opens_at must be at most {} seconds from now", limits.max_opens_ahead_seconds),
        ));
    }
    Ok(opens_at_ms)
}

/// The recipients named, validated: 1..=`max_recipients` distinct user ids of 1..=128
/// characters, at least `count` of them. Sorted, so the packet's record does not depend on the
/// order the app listed them in.
fn recipients(names: Vec<String>, count: u32, limits: &Limits) -> Result<Vec<UserId>, Invalid> {
    if !(1..=limits.max_recipients as usize).contains(&names.len()) {
        return Err(Invalid::field(
            "recipients",
            format!("recipients must list 1 to {} user ids", limits.max_recipients),
        ));
    }
    let mut users = Vec::with_capacity(names.len());
    for name in &names {
        let user = UserId::from_claim(name)
            .filter(|_| name.chars().count() <= MAX_RECIPIENT_CHARS)
            .ok_or_else(|| {
                Invalid::field(
                    "recipients",
                    format!("each recipient must be a user id of 1 to {MAX_RECIPIENT_CHARS} characters without control characters"),
                )
            })?;
        users.push(user);
    }
    users.sort_unstable();
    if users.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(Invalid::field("recipients", "recipients must be distinct"));
    }
    if users.len() < count as usize {
        return Err(Invalid::field("count", "count must not exceed the number of recipients"));
    }
    Ok(users)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-25T00:00:00Z.
    const NOW_MS: Millis = 1_795_564_800_000;

    fn key() -> PassphraseKey {
        PassphraseKey::new("test-key")
    }

    #[test]
    fn an_opening_is_an_instant_within_the_furthest_ahead() {
        let at = |opens_at: &str| {
            let body = format!(r#"{{"total_cents":100,"count":3,"opens_at":"{opens_at}"}}"#);
            parse_send_request(body.as_bytes(), &Limits::default(), &key(), NOW_MS)
        };
        assert_eq!(at("2026-11-25T20:00:00+08:00").unwrap().opens_at_ms, Some(NOW_MS + 12 * 3_600_000));
        assert_eq!(at("2026-12-02T00:00:00Z").unwrap().opens_at_ms, Some(NOW_MS + 7 * 86_400_000), "7 days");
        assert_eq!(at("2026-11-24T00:00:00Z").unwrap().opens_at_ms, Some(NOW_MS - 86_400_000), "past: at once");
        for bad in ["2026-12-02T00:00:00.001Z", "tomorrow", "2026-11-25 20:00"] {
            assert_eq!(at(bad).unwrap_err().field.as_deref(), Some("opens_at"), "{bad}");
        }
        let unscheduled = parse_send_request(br#"{"total_cents":100,"count":3}"#, &Limits::default(), &key(), NOW_MS);
        assert_eq!(unscheduled.unwrap().opens_at_ms, None);
    }

    fn field_of(body: &str) -> Option<String> {
        match parse_send_request(body.as_bytes(), &Limits::default(), &key(), NOW_MS) {
            Err(Invalid { field, .. }) => field,
            other => panic!("expected a 400 for {body}, got {other:?}"),
        }
    }

    #[test]
    fn a_full_request_applies_no_defaults() {
        let spec = parse_send_request(
            r#"{"total_cents":10000,"count":10,"kind":"lucky","split":"line_cut","greeting":"恭喜发财","expires_in_seconds":3600}"#.as_bytes(),
            &Limits::default(),
            &key(),
            NOW_MS,
        )
        .unwrap();
        assert_eq!(spec.terms.split, Some(SplitRule::LineCut));
        assert_eq!(spec.terms.greeting.as_deref(), Some("恭喜发财"));
        assert_eq!(spec.expires_in_seconds, 3600);
    }

    #[test]
    fn a_chat_is_kept_and_is_part_of_what_idempotency_compares() {
        let parse = |body: &str| parse_send_request(body.as_bytes(), &Limits::default(), &key(), NOW_MS).unwrap();
        let in_chat = parse(r#"{"total_cents":100,"count":3,"chat_id":"family-2026:a@b.c_d"}"#);
        assert_eq!(in_chat.terms.chat_id.as_ref().map(ChatId::as_str), Some("family-2026:a@b.c_d"));
        assert!(!in_chat.members_only);
        let members = parse(r#"{"total_cents":100,"count":3,"chat_id":"family","members_only":true}"#);
        assert!(members.members_only);
        assert_ne!(members.fingerprint(), parse(r#"{"total_cents":100,"count":3,"chat_id":"family"}"#).fingerprint());
        assert_eq!(
            parse(r#"{"total_cents":100,"count":3,"chat_id":"family","members_only":false}"#).fingerprint(),
            parse(r#"{"total_cents":100,"count":3,"chat_id":"family"}"#).fingerprint()
        );
        let none = parse(r#"{"total_cents":100,"count":3}"#);
        assert_eq!(none.fingerprint(), parse(r#"{"total_cents":100,"count":3,"chat_id":null}"#).fingerprint());
        assert_ne!(none.fingerprint(), in_chat.fingerprint(), "another chat is another packet");
        let longest = format!(r#"{{"total_cents":100,"count":3,"chat_id":"{}"}}"#, "c".repeat(ChatId::MAX_LEN));
        assert!(parse_send_request(longest.as_bytes(), &Limits::default(), &key(), NOW_MS).is_ok());
        let longer = format!(r#"{{"total_cents":100,"count":3,"chat_id":"{}"}}"#, "c".repeat(ChatId::MAX_LEN + 1));
        assert!(parse_send_request(longer.as_bytes(), &Limits::default(), &key(), NOW_MS).is_err());
    }

    #[test]
    fn defaults_are_lucky_double_average_for_a_day() {
        let spec = parse_send_request(br#"{"total_cents":100,"count":3}"#, &Limits::default(), &key(), NOW_MS).unwrap();
        assert_eq!(spec.terms.kind, PacketKind::Lucky);
        assert_eq!(spec.terms.split, Some(SplitRule::DoubleAverage));
        assert_eq!(spec.expires_in_seconds, 86_400);
    }

    #[test]
    fn every_violation_names_its_field() {
        let cases = [
            (r#"{"count":3}"#, "total_cents"),
            (r#"{"total_cents":100}"#, "count"),
            (r#"{"total_cents":0,"count":1}"#, "total_cents"),
            (r#"{"total_cents":20001,"count":1}"#, "total_cents"),
            (r#"{"total_cents":-5,"count":1}"#, "total_cents"),
            (r#"{"total_cents":1.5,"count":1}"#, "total_cents"),
            (r#"{"total_cents":"100","count":1}"#, "total_cents"),
            (r#"{"total_cents":9223372036854775808,"count":1}"#, "total_cents"),
            (r#"{"total_cents":100000000000000000000000,"count":1}"#, "total_cents"),
            (r#"{"total_cents":100,"count":0}"#, "count"),
            (r#"{"total_cents":100,"count":101}"#, "count"),
            (r#"{"total_cents":5,"count":6}"#, "count"),
            (r#"{"total_cents":100,"count":3,"kind":"weird"}"#, "kind"),
            (r#"{"total_cents":100,"count":3,"split":"weird"}"#, "split"),
            (r#"{"total_cents":100,"count":3,"kind":"fixed"}"#, "total_cents"),
            (r#"{"total_cents":99,"count":3,"kind":"fixed","split":"line_cut"}"#, "split"),
            (r#"{"total_cents":100,"count":3,"expires_in_seconds":59}"#, "expires_in_seconds"),
            (r#"{"total_cents":100,"count":3,"expires_in_seconds":86401}"#, "expires_in_seconds"),
            (r#"{"total_cents":100,"count":3,"sender":"mallory"}"#, "sender"),
            (r#"{"total_cents":100,"count":3,"recipients":[]}"#, "recipients"),
            (r#"{"total_cents":100,"count":2,"recipients":["bob","bob"]}"#, "recipients"),
            (r#"{"total_cents":100,"count":1,"recipients":[""]}"#, "recipients"),
            (r#"{"total_cents":100,"count":1,"recipients":["a\u0007"]}"#, "recipients"),
            (r#"{"total_cents":100,"count":3,"recipients":["bob","carol"]}"#, "count"),
            (r#"{"total_cents":100,"count":1,"recipients":"bob"}"#, "recipients"),
            (r#"{"total_cents":100,"count":1,"passphrase":""}"#, "passphrase"),
            (r#"{"total_cents":100,"count":1,"passphrase":7}"#, "passphrase"),
            (r#"{"total_cents":100,"count":1,"chat_id":""}"#, "chat_id"),
            (r#"{"total_cents":100,"count":1,"chat_id":"a chat"}"#, "chat_id"),
            (r#"{"total_cents":100,"count":1,"chat_id":7}"#, "chat_id"),
            (r#"{"total_cents":100,"count":1,"members_only":true}"#, "members_only"),
            (r#"{"total_cents":100,"count":1,"chat_id":"family","members_only":"yes"}"#, "members_only"),
        ];
        for (body, field) in cases {
            assert_eq!(field_of(body).as_deref(), Some(field), "{body}");
        }
        let long = format!(r#"{{"total_cents":100,"count":3,"greeting":"{}"}}"#, "福".repeat(65));
        assert_eq!(field_of(&long).as_deref(), Some("greeting"));
        let phrase = format!(r#"{{"total_cents":100,"count":3,"passphrase":"{}"}}"#, "福".repeat(33));
        assert_eq!(field_of(&phrase).as_deref(), Some("passphrase"));
        let name = format!(r#"{{"total_cents":100,"count":1,"recipients":["{}"]}}"#, "b".repeat(129));
        assert_eq!(field_of(&name).as_deref(), Some("recipients"));
        let crowd: Vec<String> = (0..501).map(|n| format!("u{n}")).collect();
        let crowd =
            format!(r#"{{"total_cents":100,"count":1,"recipients":{}}}"#, serde_json::to_string(&crowd).unwrap());
        assert_eq!(field_of(&crowd).as_deref(), Some("recipients"));
    }

    #[test]
    fn non_objects_and_junk_are_400s() {
        for body in
            ["", "   ", "null", "[]", "[100, 3]", "\"x\"", "{", "not json", r#"{"total_cents":100,"count":3} trailing"#]
        {
            assert!(
                matches!(parse_send_request(body.as_bytes(), &Limits::default(), &key(), NOW_MS), Err(Invalid { .. })),
                "{body}"
            );
        }
    }

    #[test]
    fn recipients_are_sorted_and_the_phrase_kept_only_as_its_digest() {
        let body = r#"{"total_cents":100,"count":2,"recipients":["carol","bob"],"passphrase":"恭喜发财"}"#;
        let spec = parse_send_request(body.as_bytes(), &Limits::default(), &key(), NOW_MS).unwrap();
        let names: Vec<&str> = spec.recipients.as_ref().unwrap().iter().map(|user| user.as_str()).collect();
        assert_eq!(names, ["bob", "carol"]);
        assert_eq!(spec.passphrase, Some(key().digest(&Passphrase::new("恭喜发财").unwrap())));
        assert!(!serde_json::to_string(&spec).unwrap().contains("恭喜发财"), "the fingerprint never holds the phrase");
    }

    #[test]
    fn grab_bodies_carry_an_optional_phrase() {
        assert_eq!(parse_grab_request(b"").unwrap(), None);
        assert_eq!(parse_grab_request(b"{}").unwrap(), None);
        assert_eq!(
            parse_grab_request(r#"{"passphrase":"cafe\u0301"}"#.as_bytes()).unwrap(),
            Passphrase::new("caf\u{e9}")
        );
        assert!(parse_grab_request(br#"{"phrase":"x"}"#).is_err());
        assert!(parse_grab_request(b"[1]").is_err());
        assert!(parse_grab_request(b"[null]").is_err(), "serde would read a struct from an array");
    }

    #[test]
    fn sixty_four_character_greetings_pass() {
        let body = format!(r#"{{"total_cents":100,"count":3,"greeting":"{}"}}"#, "福".repeat(64));
        assert!(parse_send_request(body.as_bytes(), &Limits::default(), &key(), NOW_MS).is_ok());
    }
}
