//! The grab scripts' typed wrappers: `grab.lua` for one grab, `grab_many.lua` for a batch, and
//! `lookup.lua` after either answers that Redis does not hold the packet (every key a grab
//! script names exists from the load to the retirement; see `scripts.rs`).

use std::borrow::Borrow;
use std::fmt::Write as _;
use std::sync::LazyLock;

use redis::aio::ConnectionLike;
use redis::{RedisResult, Script, Value};

use super::keys::{grab_entry, PacketKeys};
use red_packets_core::clock::Millis;
use red_packets_core::domain::grab::GrabAttempt;
use red_packets_core::domain::live::LiveGrab;
use red_packets_core::domain::GrabOutcome;

/// The source of `grab.lua` (benchmarks run it through `redis-benchmark` too).
pub const GRAB_LUA: &str = include_str!("../lua/grab.lua");

static GRAB: LazyLock<Script> = LazyLock::new(|| Script::new(GRAB_LUA));

/// The source of `grab_many.lua`: `grab.lua`'s decisions for a batch of grabs, each read and
/// write made once for the whole batch.
pub const GRAB_MANY_LUA: &str = include_str!("../lua/grab_many.lua");

static GRAB_MANY: LazyLock<Script> = LazyLock::new(|| Script::new(GRAB_MANY_LUA));

/// The source of `lookup.lua`: what a grab of an id Redis does not hold does next.
pub const LOOKUP_LUA: &str = include_str!("../lua/lookup.lua");

static LOOKUP: LazyLock<Script> = LazyLock::new(|| Script::new(LOOKUP_LUA));

/// Why a grab must ask the ledger about a packet Redis does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// This caller now holds the id's lookup lease: it asks, then records the verdict.
    Claimed,
    /// The ledger recorded the packet lately: ask it, nothing to record.
    Recorded,
}

/// What `grab.lua` answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptGrab {
    /// Redis decided. `dirtied`: this grab is the packet's only one not yet persisted, so the
    /// packet must be marked for settle.
    Decided {
        /// The outcome for the caller.
        outcome: GrabOutcome,
        /// Mark the packet for settle.
        dirtied: bool,
    },
    /// Redis does not hold the packet and knows nothing lately: ask the ledger.
    AskLedger(Lookup),
    /// Redis does not hold the packet; another caller is asking the ledger right now.
    LookupPending,
    /// Settle is re-syncing the packet from the ledger: ask again shortly.
    Resyncing,
}

impl ScriptGrab {
    /// This answer to a call asked again after an earlier one's answer was lost: a share the
    /// user took at or after `since_ms` (the first call's instant) is the lost call's own,
    /// answered as taken now, and marks the packet for settle as that call would have.
    pub fn taken_since(self, since_ms: Millis) -> ScriptGrab {
        match self {
            ScriptGrab::Decided {
                outcome: GrabOutcome::Already { amount_cents, grabbed_at_ms, remaining_count },
                ..
            } if grabbed_at_ms >= since_ms => ScriptGrab::Decided {
                outcome: GrabOutcome::Grabbed { amount_cents, grabbed_at_ms, remaining_count },
                dirtied: true,
            },
            other => other,
        }
    }
}

impl From<LiveGrab> for ScriptGrab {
    /// What `grab.lua` answers where the model ([`LiveState::grab`]) decides.
    ///
    /// [`LiveState::grab`]: red_packets_core::domain::live::LiveState::grab
    fn from(grab: LiveGrab) -> Self {
        match grab {
            LiveGrab::Decided { outcome, dirtied } => ScriptGrab::Decided { outcome, dirtied },
            LiveGrab::Resyncing => ScriptGrab::Resyncing,
        }
    }
}

/// Runs `grab.lua` for `attempt` at `now_ms`, then `lookup.lua` when Redis does not hold the
/// packet; a caller that claims an unknown id's lookup holds it for the store's `LOOKUP_LEASE`.
pub async fn grab<C: ConnectionLike>(
    conn: &mut C,
    keys: &PacketKeys,
    attempt: &GrabAttempt,
    now_ms: Millis,
) -> RedisResult<ScriptGrab> {
    let mut invocation = GRAB.prepare_invoke();
    invocation.key(&keys.packet).key(&keys.pool).key(&keys.grabs);
    invocation.arg(PacketKeys::grabber_field(&attempt.user)).arg(now_ms);
    match (&attempt.passphrase, &attempt.member_of) {
        (None, None) => {}
        (Some(digest), None) => {
            invocation.arg(digest.as_str());
        }
        (passphrase, Some(chat)) => {
            invocation.arg(passphrase.as_ref().map_or("", |digest| digest.as_str())).arg(chat.as_str());
        }
    }
    match invocation.invoke_async(conn).await? {
        Value::Int(NOT_HELD) => lookup(conn, keys).await,
        answer => read_grab_answer(answer),
    }
}

/// `grab.lua`'s and `grab_many.lua`'s answer for an id Redis does not hold: `lookup.lua` next.
const NOT_HELD: i64 = 14;

/// Runs `lookup.lua` for an id the grab scripts found Redis not holding: the lookup's state, as
/// [`ScriptGrab`]; a packet loaded meanwhile is [`ScriptGrab::LookupPending`] (grab again).
async fn lookup<C: ConnectionLike>(conn: &mut C, keys: &PacketKeys) -> RedisResult<ScriptGrab> {
    let answer: Value = LOOKUP.key(&keys.packet).key(&keys.lookup).invoke_async(conn).await?;
    match answer {
        Value::Int(15) => Ok(ScriptGrab::LookupPending),
        answer => read_grab_answer(answer),
    }
}

/// Runs `grab_many.lua`: each of `attempts` decided in turn at `now_ms`, in one call, as
/// [`grab`] would decide it; the answers in the same order. A batch runs at one instant: the
/// caller passes the latest of its grabs' clock readings, so none is judged before its own.
/// The attempts may be owned or borrowed (the coalescer's queue lends them).
pub async fn grab_many<C: ConnectionLike, A: Borrow<GrabAttempt>>(
    conn: &mut C,
    keys: &PacketKeys,
    now_ms: Millis,
    attempts: &[A],
) -> RedisResult<Vec<ScriptGrab>> {
    let answers: String = GRAB_MANY
        .key(&keys.packet)
        .key(&keys.pool)
        .key(&keys.grabs)
        .arg(now_ms)
        .arg(batch_lines(attempts))
        .invoke_async(conn)
        .await?;
    let answers: Vec<&str> = answers.split('\n').collect();
    if answers.len() != attempts.len() {
        let detail = format!("{} answers for {} grabs", answers.len(), attempts.len());
        return Err(redis::RedisError::from((redis::ErrorKind::Client, "grab_many.lua", detail)));
    }
    let mut read = Vec::with_capacity(answers.len());
    for line in answers {
        // One lookup.lua per grab of an id Redis does not hold, in the batch's order: the first
        // claims the lookup and the others find it pending, as one by one.
        read.push(match batch_answer(line) {
            Value::Int(NOT_HELD) => lookup(conn, keys).await?,
            answer => read_grab_answer(answer)?,
        });
    }
    Ok(read)
}

/// `grab_many.lua`'s ARGV[2]: a line per grab, `<digest><grab field>\n`, with `\t<chat>` before
/// the newline when a membership ticket admits the caller to a chat (the digest empty for none;
/// a `sub` never holds a control character, so never a tab or a newline).
fn batch_lines<A: Borrow<GrabAttempt>>(attempts: &[A]) -> String {
    let mut lines = String::with_capacity(attempts.len() * 96);
    for attempt in attempts.iter().map(Borrow::borrow) {
        let passphrase = attempt.passphrase.as_ref().map_or("", |digest| digest.as_str());
        let _ = write!(lines, "{passphrase}{}", PacketKeys::grabber_field(&attempt.user));
        if let Some(chat) = &attempt.member_of {
            let _ = write!(lines, "\t{}", chat.as_str());
        }
        lines.push('\n');
    }
    lines
}

/// One line of `grab_many.lua`'s answer as the reply `grab.lua` gives for the same grab: an
/// integer code, `!<grab>` for the one-element array, a grab (or repeat) as a bulk string.
fn batch_answer(line: &str) -> Value {
    if let Some(grab) = line.strip_prefix('!') {
        Value::Array(vec![Value::BulkString(grab.as_bytes().to_vec())])
    } else if let Ok(code) = line.parse::<i64>() {
        Value::Int(code)
    } else {
        Value::BulkString(line.as_bytes().to_vec())
    }
}

/// `grab.lua`'s answer, by the type of its reply (see the script's header).
fn read_grab_answer(answer: Value) -> RedisResult<ScriptGrab> {
    let unreadable = |detail: String| redis::RedisError::from((redis::ErrorKind::Client, "grab.lua", detail));
    let entry = |text: &str| grab_entry(text).ok_or_else(|| unreadable(format!("an unreadable grab {text:?}")));
    let grabbed = |text: &str, dirtied| {
        Ok::<_, redis::RedisError>(ScriptGrab::Decided { outcome: entry(text)?.grabbed(), dirtied })
    };
    let decided = |outcome| ScriptGrab::Decided { outcome, dirtied: false };
    Ok(match answer {
        Value::BulkString(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            if let Some(opens_at) = text.strip_prefix('W') {
                let opens_at_ms = opens_at.parse().map_err(|_| unreadable(format!("an unreadable answer {text:?}")))?;
                return Ok(decided(GrabOutcome::NotYetOpen { opens_at_ms }));
            }
            match text.split_once('/') {
                None => grabbed(&text, false)?,
                Some((prior, left)) => {
                    let remaining_count =
                        left.parse().map_err(|_| unreadable(format!("an unreadable answer {text:?}")))?;
                    decided(entry(prior)?.already(remaining_count))
                }
            }
        }
        Value::Array(dirtied) => {
            let (grab,): (String,) = redis::from_redis_value(Value::Array(dirtied))?;
            grabbed(&grab, true)?
        }
        Value::Int(0) => ScriptGrab::AskLedger(Lookup::Claimed),
        Value::Int(3) => decided(GrabOutcome::SoldOut),
        Value::Int(4) => decided(GrabOutcome::Expired),
        Value::Int(5) => decided(GrabOutcome::NotFound),
        Value::Int(6) => ScriptGrab::LookupPending,
        Value::Int(7) => ScriptGrab::AskLedger(Lookup::Recorded),
        Value::Int(8) => decided(GrabOutcome::NotEligible),
        Value::Int(13) => decided(GrabOutcome::NotAMember),
        Value::Int(9) => decided(GrabOutcome::WrongPassphrase),
        Value::Int(10) => decided(GrabOutcome::TooManyAttempts),
        Value::Int(11) => decided(GrabOutcome::Cancelled),
        Value::Int(12) => ScriptGrab::Resyncing,
        other => return Err(unreadable(format!("an unknown answer {other:?}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use red_packets_core::domain::{PassphraseDigest, UserId};

    #[test]
    fn a_call_asked_again_owns_the_share_taken_since_its_first_call() {
        let already = |grabbed_at_ms| ScriptGrab::Decided {
            outcome: GrabOutcome::Already { amount_cents: 125, grabbed_at_ms, remaining_count: 2 },
            dirtied: false,
        };
        let taken_now = ScriptGrab::Decided {
            outcome: GrabOutcome::Grabbed { amount_cents: 125, grabbed_at_ms: 1_000, remaining_count: 2 },
            dirtied: true,
        };
        assert_eq!(already(1_000).taken_since(1_000), taken_now, "the lost call's own share");
        assert_eq!(already(999).taken_since(1_000), already(999), "an earlier request's share stays a repeat");
        let sold_out = ScriptGrab::Decided { outcome: GrabOutcome::SoldOut, dirtied: false };
        assert_eq!(sold_out.taken_since(0), sold_out);
        assert_eq!(ScriptGrab::Resyncing.taken_since(0), ScriptGrab::Resyncing);
    }

    #[test]
    fn every_reply_type_of_grab_lua_reads_as_its_answer() {
        let grabbed = |dirtied| ScriptGrab::Decided {
            outcome: GrabOutcome::Grabbed { amount_cents: 125, grabbed_at_ms: 1_700_000_000_000, remaining_count: 7 },
            dirtied,
        };
        let entry = "3:125:7:1700000000000";
        let table = [
            (Value::BulkString(entry.into()), grabbed(false)),
            (Value::Array(vec![Value::BulkString(entry.into())]), grabbed(true)),
            (
                Value::BulkString(format!("{entry}/2").into()),
                ScriptGrab::Decided {
                    outcome: GrabOutcome::Already {
                        amount_cents: 125,
                        grabbed_at_ms: 1_700_000_000_000,
                        remaining_count: 2,
                    },
                    dirtied: false,
                },
            ),
            (Value::Int(0), ScriptGrab::AskLedger(Lookup::Claimed)),
            (Value::Int(3), ScriptGrab::Decided { outcome: GrabOutcome::SoldOut, dirtied: false }),
            (Value::Int(4), ScriptGrab::Decided { outcome: GrabOutcome::Expired, dirtied: false }),
            (Value::Int(5), ScriptGrab::Decided { outcome: GrabOutcome::NotFound, dirtied: false }),
            (Value::Int(6), ScriptGrab::LookupPending),
            (Value::Int(7), ScriptGrab::AskLedger(Lookup::Recorded)),
            (Value::Int(8), ScriptGrab::Decided { outcome: GrabOutcome::NotEligible, dirtied: false }),
            (Value::Int(13), ScriptGrab::Decided { outcome: GrabOutcome::NotAMember, dirtied: false }),
            (Value::Int(9), ScriptGrab::Decided { outcome: GrabOutcome::WrongPassphrase, dirtied: false }),
            (Value::Int(10), ScriptGrab::Decided { outcome: GrabOutcome::TooManyAttempts, dirtied: false }),
            (Value::Int(11), ScriptGrab::Decided { outcome: GrabOutcome::Cancelled, dirtied: false }),
            (
                Value::BulkString(b"W1700000060000".to_vec()),
                ScriptGrab::Decided {
                    outcome: GrabOutcome::NotYetOpen { opens_at_ms: 1_700_000_060_000 },
                    dirtied: false,
                },
            ),
        ];
        for (reply, answer) in table {
            assert_eq!(read_grab_answer(reply.clone()).unwrap(), answer, "{reply:?}");
        }
        assert_eq!(read_grab_answer(Value::Int(12)).unwrap(), ScriptGrab::Resyncing);
        assert!(read_grab_answer(Value::Int(14)).is_err());
        assert!(read_grab_answer(Value::BulkString(b"3:125".to_vec())).is_err());
        assert!(read_grab_answer(Value::BulkString(b"Wsoon".to_vec())).is_err());
        assert!(read_grab_answer(Value::BulkString(format!("{entry}/x").into())).is_err());
    }

    #[test]
    fn a_batch_goes_as_one_line_per_grab_and_its_answers_read_as_grab_lua_replies() {
        let grab = |user: &str, passphrase: Option<&str>| GrabAttempt {
            passphrase: passphrase.map(|hex| PassphraseDigest::parse(hex).unwrap()),
            ..GrabAttempt::by(UserId::from_claim(user).unwrap())
        };
        let digest = "ab".repeat(32);
        let member =
            GrabAttempt { member_of: red_packets_core::domain::ChatId::parse("family:1"), ..grab("carol", None) };
        let lines = batch_lines(&[grab("alice", None), grab("bob: 7 x", Some(&digest)), member]);
        assert_eq!(lines, format!(":alice\n{digest}:bob: 7 x\n:carol\tfamily:1\n"));

        let entry = "3:125:7:1700000000000";
        assert_eq!(batch_answer(entry), Value::BulkString(entry.into()));
        assert_eq!(batch_answer(&format!("!{entry}")), Value::Array(vec![Value::BulkString(entry.into())]));
        assert_eq!(batch_answer(&format!("{entry}/2")), Value::BulkString(format!("{entry}/2").into()));
        assert_eq!(batch_answer("9"), Value::Int(9));
        assert_eq!(batch_answer("0"), Value::Int(0));
        assert_eq!(batch_answer("W1700000060000"), Value::BulkString(b"W1700000060000".to_vec()));
    }
}
