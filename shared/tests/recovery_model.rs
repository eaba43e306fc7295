//! A model of the grab / persist / re-sync / finalise protocol, checked exhaustively at small
//! bounds with `stateright`: three users, a two-share packet, one failover that drops a suffix
//! of Redis's writes, one settle crash, two settle runs that may overlap. It is built on the pure
//! domain functions the code uses (`plan_recovery`, `ShareClaim::holds`, `LedgerPacket::pool`,
//! `finalise_from_ledger`), and each Redis step is one script's effect, each ledger step one
//! conditional write's.
//!
//! The packet may be scheduled (a campaign's): it opens at clock 2, a grab before that is refused
//! by the domain's own `Packet::opens_after`, and it expires only after it opened.
//!
//! Two protocols: `Fixed` (as built: a re-sync freezes under a token and replaces only while the
//! token stands; a claim is its share, user and amount) and `Earlier` (the code before: a re-sync
//! replaced unconditionally; a claim's time was part of its identity, and a re-recorded claim took
//! the new time). The checker proves `Fixed` holds every property and finds in `Earlier` both
//! failures the issue reported, printing their traces.

use std::collections::{BTreeMap, BTreeSet};

use red_packets::domain::grab::LoggedGrab;
use red_packets::domain::ledger::{LedgerPacket, ShareClaim, ShareHolder};
use red_packets::domain::recovery::{plan_recovery, Remedy};
use red_packets::domain::settlement::finalise_from_ledger;
use red_packets::domain::{Cents, Packet, PacketId, PacketKind, PacketSpec, PacketStatus, PacketTerms, Seed, UserId};
use stateright::{Checker, Model, Property};

const USERS: u8 = 3;
const COUNT: u32 = 2;
const TOTAL: Cents = 500;
const SETTLERS: usize = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Protocol {
    Fixed,
    Earlier,
}

/// A grab as the model keeps it: user, share, time.
type Grab = (u8, u32, u8);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Gate {
    Open,
    Closed,
    Frozen(usize),
}

/// The packet's keys in Redis.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Redis {
    gate: Gate,
    pool: Vec<u32>,
    grabbers: BTreeMap<u8, (u32, u8)>,
    log: Vec<Grab>,
    persisted: usize,
}

/// Who holds a share in the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Holder {
    Grab(u8, u8),
    Refund,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
struct Ledger {
    claims: BTreeMap<u32, Holder>,
    grabs: BTreeMap<u8, (u32, u8)>,
    refund: Option<Cents>,
    casualties: BTreeSet<u8>,
    quarantined: bool,
}

/// Where one settle run is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Settle {
    Idle,
    /// Read the log; record what it holds beyond the persisted mark next.
    Persist {
        log: Vec<Grab>,
        closing: bool,
    },
    /// The ledger took every grab read: advance the mark to `len`, if the log's `len`-th grab
    /// is still `last` (`persisted.lua`).
    Mark {
        len: usize,
        last: Option<Grab>,
        closing: bool,
    },
    /// Close the packet if it is due, then look again.
    Close,
    /// Claim what nobody holds for the refund and write it.
    Finalise,
    /// Freeze (Fixed) and read the log: the re-sync begins.
    Freeze,
    /// Record what the frozen log holds and the ledger will take, grant or revoke the casualties.
    Remedy {
        log: Vec<Grab>,
    },
    /// Replace Redis with the ledger's state.
    Replace,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct State {
    redis: Redis,
    /// Redis as it was before each of its last writes: what a lagging replica may hold.
    earlier: Vec<Redis>,
    ledger: Ledger,
    settlers: [Settle; SETTLERS],
    /// Every fresh grab Redis acknowledged: user, share, time, and whether a failover lost it.
    acks: BTreeSet<(u8, u32, u8, bool)>,
    clock: u8,
    expired: bool,
    failovers: u8,
    crashes: u8,
    /// A grab came before the packet's opening and was refused.
    refused_early: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Action {
    Grab(u8),
    Expire,
    Failover(usize),
    Step(usize),
    Crash(usize),
}

struct RecoveryModel {
    protocol: Protocol,
    /// Settle runs that may overlap (1 or 2).
    settlers: usize,
    /// Settle crashes allowed.
    crashes: u8,
    packet: Packet,
    shares: Vec<Cents>,
}

/// The opening of a scheduled model packet, in the model's clock.
const OPENS_AT: u8 = 2;

fn user(index: u8) -> UserId {
    UserId::from_claim(&format!("u{index}")).unwrap()
}

impl RecoveryModel {
    fn new(protocol: Protocol, (settlers, crashes, scheduled): Bounds) -> Self {
        let mut spec = PacketSpec::open_to_all(PacketTerms::new(PacketKind::Lucky, TOTAL, COUNT), 60);
        spec.opens_at_ms = scheduled.then_some(i64::from(OPENS_AT));
        let seed = Seed::from_hex(&"07".repeat(32)).unwrap();
        let id = PacketId::parse("0123456789abcdef0123456789abcdef").unwrap();
        let packet = Packet::new(id, user(9), &spec, seed, 0);
        let shares = packet.shares();
        RecoveryModel { protocol, settlers, crashes, packet, shares }
    }

    fn logged(&self, (who, seq, at): Grab) -> LoggedGrab {
        LoggedGrab { seq, user: user(who), amount_cents: self.shares[seq as usize - 1], at_ms: i64::from(at) }
    }

    /// The ledger as the domain sees it.
    fn ledger_packet(&self, ledger: &Ledger) -> LedgerPacket {
        let claims = ledger
            .claims
            .iter()
            .map(|(&seq, holder)| ShareClaim {
                seq,
                amount_cents: self.shares[seq as usize - 1],
                holder: match holder {
                    Holder::Grab(who, at) => ShareHolder::Grabber { user: user(*who), at_ms: i64::from(*at) },
                    Holder::Refund => ShareHolder::Refund,
                },
            })
            .collect();
        let mut grabs: Vec<LoggedGrab> =
            ledger.grabs.iter().map(|(&who, &(seq, at))| self.logged((who, seq, at))).collect();
        grabs.sort_by_key(|grab| grab.seq);
        LedgerPacket {
            packet: self.packet.clone(),
            status: if ledger.refund.is_some() { PacketStatus::Expired } else { PacketStatus::Open },
            refund_cents: ledger.refund,
            refund_item_cents: ledger.refund,
            grabs,
            claims,
            cancelled_at_ms: None,
        }
    }

    /// The claim's identity check: share, user and amount (Fixed); and the time too (Earlier).
    fn holds(&self, claim: &ShareClaim, grab: &LoggedGrab) -> bool {
        match self.protocol {
            Protocol::Fixed => claim.holds(grab),
            Protocol::Earlier => claim.grab().as_ref() == Some(grab),
        }
    }

    /// `record_grab`: the share's claim, then the grab item, each under its condition. False
    /// when the ledger refused it.
    fn record(&self, ledger: &mut Ledger, (who, seq, at): Grab) -> bool {
        match ledger.claims.get(&seq) {
            None => {
                ledger.claims.insert(seq, Holder::Grab(who, at));
            }
            Some(Holder::Grab(holder, _)) if *holder == who => {
                // The same user and amount: Earlier's PutItem overwrote the claim's time.
                if self.protocol == Protocol::Earlier {
                    ledger.claims.insert(seq, Holder::Grab(who, at));
                }
            }
            Some(_) => return false,
        }
        match ledger.grabs.get(&who) {
            None => {
                ledger.grabs.insert(who, (seq, at));
                true
            }
            Some(&(held, _)) => held == seq,
        }
    }

    /// Redis replaced by the ledger's state (`load.lua replace`).
    fn reloaded(&self, ledger: &Ledger) -> Redis {
        let recorded = self.ledger_packet(ledger);
        let closed = ledger.refund.is_some() || recorded.refund_claimed();
        let grabs = recorded.grabs_to_reload();
        let pool = match (closed, self.protocol) {
            (true, _) => Vec::new(),
            (false, Protocol::Fixed) => recorded.pool().into_iter().map(|(seq, _)| seq).collect(),
            // Earlier: the shares after the highest one claimed or paid.
            (false, Protocol::Earlier) => {
                let taken = recorded.claims.iter().map(|claim| claim.seq).max().unwrap_or(0);
                (taken + 1..=COUNT).collect()
            }
        };
        let who = |grab: &LoggedGrab| grab.user.as_str()[1..].parse::<u8>().unwrap();
        Redis {
            gate: if closed { Gate::Closed } else { Gate::Open },
            pool,
            grabbers: grabs.iter().map(|grab| (who(grab), (grab.seq, grab.at_ms as u8))).collect(),
            log: grabs.iter().map(|grab| (who(grab), grab.seq, grab.at_ms as u8)).collect(),
            persisted: grabs.len(),
        }
    }

    /// One step of settle run `run`; the state after it.
    fn settle_step(&self, state: &mut State, run: usize) {
        let step = state.settlers[run].clone();
        state.settlers[run] = match step {
            Settle::Idle => match state.redis.gate {
                Gate::Frozen(_) if self.protocol == Protocol::Fixed => Settle::Freeze,
                _ => Settle::Persist { log: state.redis.log.clone(), closing: false },
            },
            Settle::Persist { log, closing } => {
                let from = state.redis.persisted.min(log.len());
                let mut refused = false;
                for &grab in &log[from..] {
                    refused |= !self.record(&mut state.ledger, grab);
                }
                if refused {
                    Settle::Freeze
                } else {
                    Settle::Mark { len: log.len(), last: log.last().copied(), closing }
                }
            }
            Settle::Mark { len, last, closing } => {
                let same_log =
                    self.protocol == Protocol::Earlier || state.redis.log.get(len.wrapping_sub(1)).copied() == last;
                if len > state.redis.persisted && same_log {
                    self.write(state, |redis| redis.persisted = len);
                }
                if closing {
                    Settle::Finalise
                } else {
                    Settle::Close
                }
            }
            Settle::Close => {
                let due = state.expired || state.redis.pool.is_empty();
                match state.redis.gate {
                    Gate::Open if due => {
                        self.write(state, |redis| redis.gate = Gate::Closed);
                        Settle::Persist { log: state.redis.log.clone(), closing: true }
                    }
                    Gate::Closed => Settle::Persist { log: state.redis.log.clone(), closing: true },
                    _ => Settle::Idle,
                }
            }
            Settle::Finalise => {
                if state.ledger.refund.is_none() {
                    for seq in 1..=COUNT {
                        state.ledger.claims.entry(seq).or_insert(Holder::Refund);
                    }
                    let recorded = self.ledger_packet(&state.ledger);
                    let checked = self.books(&recorded);
                    match checked {
                        Ok(refund) => state.ledger.refund = Some(refund),
                        Err(()) => state.ledger.quarantined = true,
                    }
                }
                Settle::Idle
            }
            Settle::Freeze => match self.protocol {
                Protocol::Fixed => {
                    self.write(state, |redis| redis.gate = Gate::Frozen(run));
                    Settle::Remedy { log: state.redis.log.clone() }
                }
                Protocol::Earlier => Settle::Replace,
            },
            Settle::Remedy { log } => {
                let recorded = self.ledger_packet(&state.ledger);
                for &grab in &log {
                    let logged = self.logged(grab);
                    if !recorded.claims.iter().any(|claim| self.holds(claim, &logged)) {
                        self.record(&mut state.ledger, grab);
                    }
                }
                let logged: Vec<LoggedGrab> = log.iter().map(|&grab| self.logged(grab)).collect();
                let recorded = self.ledger_packet(&state.ledger);
                for casualty in plan_recovery(&recorded, &logged, i64::from(state.clock)) {
                    let who = casualty.acknowledged.user.as_str()[1..].parse::<u8>().unwrap();
                    if let Remedy::Regranted { holds, fresh: true } = &casualty.remedy {
                        if !self.record(&mut state.ledger, (who, holds.seq, state.clock)) {
                            continue;
                        }
                    }
                    state.ledger.casualties.insert(who);
                }
                Settle::Replace
            }
            Settle::Replace => {
                let guarded = self.protocol == Protocol::Earlier || state.redis.gate == Gate::Frozen(run);
                if guarded {
                    let reloaded = self.reloaded(&state.ledger);
                    self.write(state, |redis| *redis = reloaded);
                }
                Settle::Idle
            }
        };
    }

    /// The refund of a packet whose books balance (`finalise_from_ledger` and settle's check).
    fn books(&self, recorded: &LedgerPacket) -> Result<Cents, ()> {
        let done = finalise_from_ledger(TOTAL, COUNT, &recorded.claims, &recorded.grabs, false).map_err(|_| ())?;
        let held = recorded.grabs.iter().all(|grab| recorded.claims.iter().any(|claim| self.holds(claim, grab)));
        if held {
            Ok(done.refund_cents)
        } else {
            Err(())
        }
    }

    /// A write to Redis, the state before it kept for a lagging replica.
    fn write(&self, state: &mut State, change: impl FnOnce(&mut Redis)) {
        let before = state.redis.clone();
        change(&mut state.redis);
        if state.redis != before {
            state.earlier.push(before);
            if state.earlier.len() > 2 {
                state.earlier.remove(0);
            }
        }
    }
}

impl Model for RecoveryModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![State {
            redis: Redis {
                gate: Gate::Open,
                pool: (1..=COUNT).collect(),
                grabbers: BTreeMap::new(),
                log: Vec::new(),
                persisted: 0,
            },
            earlier: Vec::new(),
            ledger: Ledger::default(),
            settlers: [Settle::Idle, Settle::Idle],
            acks: BTreeSet::new(),
            clock: 0,
            expired: false,
            failovers: 0,
            crashes: 0,
            refused_early: false,
        }]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        if !state.expired && state.redis.gate == Gate::Open && !state.redis.pool.is_empty() && state.clock < 4 {
            for who in 0..USERS {
                if !state.redis.grabbers.contains_key(&who) {
                    actions.push(Action::Grab(who));
                }
            }
        }
        // Expiry counts from the opening: a scheduled packet expires only once open.
        if !state.expired && !self.packet.opens_after(i64::from(state.clock)) {
            actions.push(Action::Expire);
        }
        if state.failovers == 0 {
            for back in 0..state.earlier.len() {
                actions.push(Action::Failover(back));
            }
        }
        for run in 0..self.settlers {
            actions.push(Action::Step(run));
            if state.crashes < self.crashes && state.settlers[run] != Settle::Idle {
                actions.push(Action::Crash(run));
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut state = last.clone();
        match action {
            Action::Grab(who) => {
                let seq = state.redis.pool[0];
                state.clock += 1;
                let at = state.clock;
                if self.packet.opens_after(i64::from(at)) {
                    // Too early: the grab scripts answer not_open_yet and write nothing.
                    state.refused_early = true;
                    return Some(state);
                }
                self.write(&mut state, |redis| {
                    redis.pool.remove(0);
                    redis.grabbers.insert(who, (seq, at));
                    redis.log.push((who, seq, at));
                });
                state.acks.insert((who, seq, at, false));
            }
            Action::Expire => state.expired = true,
            Action::Failover(back) => {
                let restored = state.earlier[back].clone();
                state.acks = state
                    .acks
                    .iter()
                    .map(|&(who, seq, at, lost)| {
                        (who, seq, at, lost || restored.grabbers.get(&who) != Some(&(seq, at)))
                    })
                    .collect();
                state.redis = restored;
                state.earlier.clear();
                state.failovers += 1;
            }
            Action::Step(run) => self.settle_step(&mut state, run),
            Action::Crash(run) => {
                state.settlers[run] = Settle::Idle;
                state.crashes += 1;
            }
        }
        Some(state)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            Property::always("never quarantined: the books always explain the packet", |_, state: &State| {
                !state.ledger.quarantined
            }),
            Property::always("no grab acknowledged is destroyed", |model: &RecoveryModel, state: &State| {
                // Once settled, every grab Redis acknowledged that no failover lost is paid with
                // its amount, or is a casualty with its record (re-granted or revoked).
                if !settled(state) {
                    return true;
                }
                state.acks.iter().filter(|ack| !ack.3).all(|&(who, seq, _, _)| {
                    let paid =
                        state.ledger.grabs.get(&who).is_some_and(|&(held, _)| {
                            model.shares[held as usize - 1] == model.shares[seq as usize - 1]
                        });
                    paid || state.ledger.casualties.contains(&who)
                })
            }),
            Property::always("grabs + refund == total, no share twice", |model: &RecoveryModel, state: &State| {
                if !settled(state) {
                    return true;
                }
                let refund = state.ledger.refund.unwrap_or(0);
                let seqs: BTreeSet<u32> = state.ledger.grabs.values().map(|&(seq, _)| seq).collect();
                let paid: Cents = seqs.iter().map(|&seq| model.shares[seq as usize - 1]).sum();
                seqs.len() == state.ledger.grabs.len() && paid + refund == TOTAL
            }),
            Property::sometimes("a failover's casualty is remedied", |_, state: &State| {
                !state.ledger.casualties.is_empty() && state.ledger.refund.is_some()
            }),
            Property::always("no grab acknowledged before the opening", |model: &RecoveryModel, state: &State| {
                state.acks.iter().all(|&(_, _, at, _)| !model.packet.opens_after(i64::from(at)))
            }),
        ];
        if self.packet.opens_at_ms.is_some() && self.protocol == Protocol::Fixed {
            properties.push(Property::sometimes("a grab before the opening is refused", |_, state: &State| {
                state.refused_early && !state.acks.is_empty()
            }));
        }
        if self.protocol == Protocol::Earlier {
            // Only the two failures looked for: the checker stops once it has found both.
            properties.truncate(2);
        }
        properties
    }
}

/// Finalised, and nothing left to do: no settle run under way, Redis closed and all of its log
/// in the ledger.
fn settled(state: &State) -> bool {
    state.ledger.refund.is_some()
        && state.settlers.iter().all(|run| *run == Settle::Idle)
        && state.redis.gate == Gate::Closed
        && state.redis.persisted >= state.redis.log.len()
}

/// Settle runs that may overlap, settle crashes allowed, and whether the packet is scheduled.
type Bounds = (usize, u8, bool);

/// The bounds checked: two settle runs overlapping, and one run that may crash anywhere, each on
/// a packet open from its send and on a scheduled one.
const BOUNDS: [Bounds; 4] = [(2, 0, false), (1, 1, false), (2, 0, true), (1, 1, true)];

fn check(protocol: Protocol, bounds: Bounds) -> impl Checker<RecoveryModel> {
    RecoveryModel::new(protocol, bounds).checker().threads(2).spawn_bfs().join()
}

/// The model is pure: `make test` checks it on its first pass only (the others change Redis).
fn checked_on_another_pass() -> bool {
    std::env::var("TEST_PASS").is_ok_and(|pass| pass != "redis")
}

#[test]
fn the_protocol_as_built_holds_every_property_at_small_bounds() {
    if checked_on_another_pass() {
        return;
    }
    for bounds in BOUNDS {
        let started = std::time::Instant::now();
        let checker = check(Protocol::Fixed, bounds);
        eprintln!(
            "figure: recovery model as built, {} settle runs, {} crash, {}: {} states ({} unique), depth {}, {:.1} s",
            bounds.0,
            bounds.1,
            if bounds.2 { "scheduled" } else { "open from its send" },
            checker.state_count(),
            checker.unique_state_count(),
            checker.max_depth(),
            started.elapsed().as_secs_f64()
        );
        for property in [
            "never quarantined: the books always explain the packet",
            "no grab acknowledged is destroyed",
            "grabs + refund == total, no share twice",
            "no grab acknowledged before the opening",
        ] {
            if let Some(path) = checker.discovery(property) {
                let steps: Vec<String> = path
                    .into_vec()
                    .into_iter()
                    .map(|(state, action)| {
                        format!(
                            "{action:?}\n    redis {:?}\n    ledger {:?}\n    settle {:?}\n    acks {:?}",
                            state.redis, state.ledger, state.settlers, state.acks
                        )
                    })
                    .collect();
                panic!("{property:?} fails:\n{}", steps.join("\n"));
            }
        }
        checker.assert_properties();
    }
}

#[test]
fn the_earlier_protocol_fails_both_ways_the_issue_reported() {
    if checked_on_another_pass() {
        return;
    }
    let started = std::time::Instant::now();
    let checker = check(Protocol::Earlier, BOUNDS[0]);
    for property in ["never quarantined: the books always explain the packet", "no grab acknowledged is destroyed"] {
        let path =
            checker.discovery(property).unwrap_or_else(|| panic!("the model finds no counterexample to {property:?}"));
        let actions: Vec<String> = path.clone().into_actions().iter().map(|action| format!("{action:?}")).collect();
        eprintln!("counterexample to {property:?} in the earlier protocol: {}", actions.join(" -> "));
    }
    eprintln!("figure: both counterexamples found in {:.1} s", started.elapsed().as_secs_f64());
}
