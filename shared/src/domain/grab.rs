//! A grab: who attempts it, what it comes to as the API answers it, the one rule that decides
//! it ([`decide`]), and the grab as the live store logs it (and the best luck among a finished
//! packet's grabs).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::access::{PassphraseCheck, PassphraseDigest};
use super::ids::UserId;
use super::money::Cents;
use super::packet::Packet;
use crate::clock::Millis;

/// Who grabs, and the digest of the passphrase their grab carried, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrabAttempt {
    /// The caller.
    pub user: UserId,
    /// The digest of the passphrase the grab body carried.
    pub passphrase: Option<PassphraseDigest>,
}

impl GrabAttempt {
    /// A grab by `user` carrying no passphrase.
    pub fn by(user: UserId) -> Self {
        GrabAttempt { user, passphrase: None }
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
    /// The packet has a passphrase and the grab carried another, or none.
    WrongPassphrase,
    /// The caller made too many wrong tries at the passphrase of this packet.
    TooManyAttempts,
    /// No such packet.
    NotFound,
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

/// Where a packet stands for a fresh grab (`open_until` in `grab.lua`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Grabbable until the packet's `expires_at_ms` (the deadline itself is too late).
    Open,
    /// Closed to grabs: finished or expired.
    Closed,
    /// Cancelled by its sender.
    Cancelled,
    /// Settle is re-syncing it from the ledger: no fresh grab until it is done.
    Frozen,
}

/// A packet's state as one grab is decided on it: what the live store or the ledger holds.
#[derive(Debug, Clone, Copy)]
pub struct GrabState<'a> {
    /// The packet as sent: who may grab it, and until when.
    pub packet: &'a Packet,
    /// Every grab the deciding store knows of, where a repeat is found.
    pub grabs: &'a [LoggedGrab],
    /// Shares left, as the deciding store counts them.
    pub remaining_count: u32,
    /// Open, closed, cancelled or frozen.
    pub standing: Standing,
    /// Wrong passphrases tried, per user; `None` where the passphrase is not tested (the
    /// ledger, which answers only for packets that are over: see `LedgerPacket::grab_outcome`).
    pub wrong_tries: Option<&'a HashMap<UserId, u32>>,
}

/// What one grab comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrabDecision {
    /// The answer. Nothing changes, except that `WrongPassphrase` counts one more wrong try.
    Answer(GrabOutcome),
    /// The next share goes to the caller: the store takes it and answers [`GrabOutcome::grabbed`].
    Take,
    /// Settle is re-syncing the packet: ask again shortly.
    Resyncing,
}

/// Decides one grab by `attempt` at `now_ms` on `state`: the rule `grab.lua` and `grab_many.lua`
/// copy for speed (`local/tests/grab_script.rs` holds them to it, and the ledger's answers too).
/// A repeat gets its share; then who may grab; the passphrase (locked, then wrong); cancelled;
/// frozen; then no share left is sold out, a packet closed or past its expiry is expired; else
/// the next share.
pub fn decide(state: &GrabState<'_>, attempt: &GrabAttempt, now_ms: Millis) -> GrabDecision {
    let user = &attempt.user;
    if let Some(prior) = state.grabs.iter().find(|grab| &grab.user == user) {
        return GrabDecision::Answer(GrabOutcome::already(prior, state.remaining_count));
    }
    let access = &state.packet.access;
    if !access.admits(user) {
        return GrabDecision::Answer(GrabOutcome::NotEligible);
    }
    if let Some(wrong_tries) = state.wrong_tries {
        let tried = wrong_tries.get(user).copied().unwrap_or(0);
        match PassphraseCheck::of(access.passphrase.as_ref(), attempt.passphrase.as_ref(), tried) {
            PassphraseCheck::Passed => {}
            PassphraseCheck::Wrong => return GrabDecision::Answer(GrabOutcome::WrongPassphrase),
            PassphraseCheck::Locked => return GrabDecision::Answer(GrabOutcome::TooManyAttempts),
        }
    }
    let over = match state.standing {
        Standing::Cancelled => return GrabDecision::Answer(GrabOutcome::Cancelled),
        Standing::Frozen => return GrabDecision::Resyncing,
        Standing::Closed => true,
        Standing::Open => now_ms >= state.packet.expires_at_ms,
    };
    match (state.remaining_count, over) {
        (0, _) => GrabDecision::Answer(GrabOutcome::SoldOut),
        (_, true) => GrabDecision::Answer(GrabOutcome::Expired),
        (_, false) => GrabDecision::Take,
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

    #[test]
    fn a_repeat_then_who_may_grab_then_the_phrase_then_where_the_packet_stands() {
        use crate::domain::access::{Passphrase, PassphraseKey, MAX_WRONG_PASSPHRASES};
        use crate::domain::ids::PacketId;
        use crate::domain::packet::{PacketKind, PacketSpec};
        use crate::domain::split::Seed;
        let user = |name: &str| UserId::from_claim(name).unwrap();
        let right = PassphraseKey::new("k").digest(&Passphrase::new("open").unwrap());
        let spec = PacketSpec {
            total_cents: 200,
            count: 2,
            kind: PacketKind::Fixed,
            split: None,
            greeting: None,
            expires_in_seconds: 60,
            recipients: Some(vec![user("bob"), user("carol")]),
            passphrase: Some(right.clone()),
        };
        let packet = Packet::new(PacketId::random(), user("alice"), &spec, Seed::random(), 0);
        let grabs = [LoggedGrab { seq: 1, user: user("bob"), amount_cents: 100, at_ms: 5 }];
        let locked: HashMap<UserId, u32> = [(user("carol"), MAX_WRONG_PASSPHRASES)].into();
        let none = HashMap::new();
        fn at<'a>(
            packet: &'a Packet,
            grabs: &'a [LoggedGrab],
            standing: Standing,
            remaining_count: u32,
            wrong_tries: Option<&'a HashMap<UserId, u32>>,
        ) -> GrabState<'a> {
            GrabState { packet, grabs, remaining_count, standing, wrong_tries }
        }
        let carol = GrabAttempt { user: user("carol"), passphrase: Some(right) };
        let answer = GrabDecision::Answer;
        let cases = [
            (
                at(&packet, &grabs, Standing::Cancelled, 1, Some(&none)),
                GrabAttempt::by(user("bob")),
                answer(GrabOutcome::already(&grabs[0], 1)),
            ),
            (
                at(&packet, &grabs, Standing::Cancelled, 1, Some(&none)),
                GrabAttempt::by(user("mallory")),
                answer(GrabOutcome::NotEligible),
            ),
            (
                at(&packet, &grabs, Standing::Cancelled, 1, Some(&locked)),
                carol.clone(),
                answer(GrabOutcome::TooManyAttempts),
            ),
            (
                at(&packet, &grabs, Standing::Cancelled, 1, Some(&none)),
                GrabAttempt::by(user("carol")),
                answer(GrabOutcome::WrongPassphrase),
            ),
            (
                at(&packet, &grabs, Standing::Cancelled, 1, None),
                GrabAttempt::by(user("carol")),
                answer(GrabOutcome::Cancelled),
            ),
            (at(&packet, &grabs, Standing::Frozen, 0, None), carol.clone(), GrabDecision::Resyncing),
            (at(&packet, &grabs, Standing::Closed, 0, None), carol.clone(), answer(GrabOutcome::SoldOut)),
            (at(&packet, &grabs, Standing::Closed, 1, None), carol.clone(), answer(GrabOutcome::Expired)),
            (at(&packet, &grabs, Standing::Open, 0, None), carol.clone(), answer(GrabOutcome::SoldOut)),
            (at(&packet, &grabs, Standing::Open, 1, None), carol.clone(), GrabDecision::Take),
        ];
        for (state, attempt, decided) in cases {
            assert_eq!(decide(&state, &attempt, 59_999), decided, "{state:?} {attempt:?}");
        }
        let open = at(&packet, &grabs, Standing::Open, 1, None);
        assert_eq!(decide(&open, &carol, 60_000), answer(GrabOutcome::Expired), "the deadline is too late");
    }
}
