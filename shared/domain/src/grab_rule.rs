//! The one rule a grab is decided by, [`decide`], over a packet's state as the live store or
//! the ledger holds it ([`GrabState`]). `LiveState` and `LedgerPacket` call it; `grab.lua` and
//! `grab_many.lua` are its fast copies, held to it by `local/tests/it/grab_script.rs`.

use std::collections::HashMap;

use super::access::PassphraseCheck;
use super::grab::{GrabAttempt, GrabOutcome, LoggedGrab};
use super::ids::UserId;
use super::packet::Packet;
use crate::clock::Millis;

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
/// copy for speed (`local/tests/it/grab_script.rs` holds them to it, and the ledger's answers too).
/// A repeat gets its share; an open packet before its opening is not open yet (before who may
/// grab: a try at the passphrase before the opening counts nothing, and the answer costs no
/// more than a sold-out one); then who may grab (a recipient, then a member of the chat by ticket); the passphrase (locked, then wrong);
/// cancelled; frozen; then no share left is sold out, a packet closed or past its expiry is
/// expired; else the next share.
pub fn decide(state: &GrabState<'_>, attempt: &GrabAttempt, now_ms: Millis) -> GrabDecision {
    let user = &attempt.user;
    if let Some(prior) = state.grabs.iter().find(|grab| &grab.user == user) {
        return GrabDecision::Answer(GrabOutcome::already(prior, state.remaining_count));
    }
    if let (Standing::Open, Some(opens_at_ms)) = (state.standing, state.packet.opens_at_ms) {
        if now_ms < opens_at_ms {
            return GrabDecision::Answer(GrabOutcome::NotYetOpen { opens_at_ms });
        }
    }
    let access = &state.packet.access;
    if !access.admits(user) {
        return GrabDecision::Answer(GrabOutcome::NotEligible);
    }
    if !access.admits_member_of(attempt.member_of.as_ref()) {
        return GrabDecision::Answer(GrabOutcome::NotAMember);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeat_then_who_may_grab_then_the_phrase_then_where_the_packet_stands() {
        use crate::access::{Passphrase, PassphraseKey, MAX_WRONG_PASSPHRASES};
        use crate::ids::PacketId;
        use crate::packet::{PacketKind, PacketSpec, PacketTerms};
        use crate::split::Seed;
        let user = |name: &str| UserId::from_claim(name).unwrap();
        let right = PassphraseKey::new("k").digest(&Passphrase::new("open").unwrap());
        let spec = PacketSpec {
            recipients: Some(vec![user("bob"), user("carol")]),
            passphrase: Some(right.clone()),
            ..PacketSpec::open_to_all(PacketTerms::new(PacketKind::Fixed, 200, 2), 60)
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
        let carol = GrabAttempt { user: user("carol"), passphrase: Some(right), member_of: None };
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

    #[test]
    fn a_scheduled_packet_refuses_every_fresh_grab_until_its_opening() {
        use crate::ids::PacketId;
        use crate::packet::{PacketKind, PacketSpec, PacketTerms};
        use crate::split::Seed;
        let user = |name: &str| UserId::from_claim(name).unwrap();
        let spec = PacketSpec {
            opens_at_ms: Some(10_000),
            recipients: Some(vec![user("bob")]),
            ..PacketSpec::open_to_all(PacketTerms::new(PacketKind::Fixed, 200, 2), 60)
        };
        let packet = Packet::new(PacketId::random(), user("alice"), &spec, Seed::random(), 0);
        let state =
            |standing| GrabState { packet: &packet, grabs: &[], remaining_count: 2, standing, wrong_tries: None };
        let early = GrabDecision::Answer(GrabOutcome::NotYetOpen { opens_at_ms: 10_000 });
        for who in ["bob", "mallory"] {
            assert_eq!(decide(&state(Standing::Open), &GrabAttempt::by(user(who)), 9_999), early, "{who}");
        }
        assert_eq!(decide(&state(Standing::Open), &GrabAttempt::by(user("bob")), 10_000), GrabDecision::Take);
        assert_eq!(
            decide(&state(Standing::Cancelled), &GrabAttempt::by(user("bob")), 9_999),
            GrabDecision::Answer(GrabOutcome::Cancelled),
            "a packet cancelled before its opening says so"
        );
        assert_eq!(decide(&state(Standing::Frozen), &GrabAttempt::by(user("bob")), 9_999), GrabDecision::Resyncing);
        assert_eq!(
            decide(&state(Standing::Open), &GrabAttempt::by(user("bob")), 70_000),
            GrabDecision::Answer(GrabOutcome::Expired),
            "its lifetime counts from the opening: 60 s after it"
        );
        assert_eq!(decide(&state(Standing::Open), &GrabAttempt::by(user("bob")), 69_999), GrabDecision::Take);
    }
}
