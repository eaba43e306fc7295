//! `grab.lua` against the library's model of a live packet ([`LiveState`], which the in-memory
//! live store runs on: one model, two uses), on the real Redis: packets open to all, for
//! recipients only, for a chat's members only, with a passphrase, or several of these; random
//! sequences of grabs (repeats, strangers, right, wrong and missing passphrases, membership
//! tickets for the packet's chat, for another and none among them), batches of grabs in one `grab_many.lua`
//! call (the coalescer's), clock moves, closes, cancels, persisted marks and re-syncs from the
//! ledger's state, on packets open at once and scheduled ones (grabs before their opening among
//! the steps), each answer compared with what the model says (a batch's with the same grabs
//! one by one), and the packet's log and shares compared at the end. At every grab the ledger's
//! answer for the same state (`LedgerPacket::grab_outcome`, what a grab Redis lost is answered
//! from) is compared too: with the model's, and with the script's. Unknown packets' lookup
//! states in a table test; the commands a grab costs counted by Redis.

use std::collections::HashMap;

use proptest::prelude::*;
use red_packets::adapters::redis::scripts::{self, Lookup, ScriptGrab};
use red_packets::adapters::RedisStore;
use red_packets::domain::access::{Passphrase, PassphraseKey};
use red_packets::domain::grab::{GrabAttempt, LoggedGrab};
use red_packets::domain::ledger::{LedgerPacket, ShareClaim, ShareHolder};
use red_packets::domain::live::{Gate, LiveGrab, LiveState};
use red_packets::domain::{
    Access, Cents, ChatId, GrabOutcome, Packet, PacketId, PacketKind, PacketSpec, PacketStatus, PacketTerms,
    PassphraseDigest, Seed, UserId,
};
use red_packets::ports::{Frozen, LiveStore, PacketImage, SettleIndex};
use red_packets::Config;

const START_MS: i64 = 1_700_000_000_000;
const LIFETIME_MS: i64 = 60_000;

/// The passphrase a grab carries.
#[derive(Debug, Clone, Copy)]
enum Phrase {
    None,
    Right,
    Wrong,
}

/// The chat a grab's verified membership ticket names, if it carries one.
#[derive(Debug, Clone, Copy)]
enum Ticket {
    None,
    /// For the packet's chat.
    Ours,
    /// For another chat.
    Other,
}

/// What a grab carries: a passphrase and a ticket.
type Carried = (Phrase, Ticket);

#[derive(Debug, Clone)]
enum Step {
    /// User `n` grabs after the clock moved `advance_ms`, carrying a passphrase and a ticket.
    Grab { user: u8, advance_ms: i64, phrase: Phrase, ticket: Ticket },
    /// Settle's close at the current time.
    Close,
    /// The sender cancels at the current time.
    Cancel,
    /// Settle confirms the first `n` grabs (mod the log's length + 1).
    Persist(usize),
    /// Settle's re-sync: Redis replaced by the ledger's state (the model's).
    Resync,
    /// Users grab together after the clock moved `advance_ms`: one `grab_many.lua` call, the
    /// coalescer's batch.
    Batch { advance_ms: i64, grabs: Vec<(u8, Carried)> },
}

fn phrase() -> impl Strategy<Value = Phrase> {
    prop_oneof![Just(Phrase::Right), Just(Phrase::Wrong), Just(Phrase::None)]
}

fn ticket() -> impl Strategy<Value = Ticket> {
    prop_oneof![2 => Just(Ticket::Ours), 1 => Just(Ticket::Other), 1 => Just(Ticket::None)]
}

/// How far the clock moves before a grab: mostly not at all, sometimes half the packet's
/// lifetime (two of those land exactly on its deadline, where a grab is already too late).
fn advance_ms() -> impl Strategy<Value = i64> {
    prop_oneof![3 => Just(0i64), 1 => Just(LIFETIME_MS / 2), 1 => 0i64..40_000]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        10 => (0u8..12, advance_ms(), phrase(), ticket())
            .prop_map(|(user, advance_ms, phrase, ticket)| Step::Grab { user, advance_ms, phrase, ticket }),
        1 => Just(Step::Close),
        1 => Just(Step::Cancel),
        1 => (0usize..20).prop_map(Step::Persist),
        1 => Just(Step::Resync),
        3 => (advance_ms(), proptest::collection::vec((0u8..12, (phrase(), ticket())), 2..10))
            .prop_map(|(advance_ms, grabs)| Step::Batch { advance_ms, grabs }),
    ]
}

fn key() -> PassphraseKey {
    PassphraseKey::new("grab-script-test")
}

fn digest(phrase: &str) -> PassphraseDigest {
    key().digest(&Passphrase::new(phrase).unwrap())
}

fn carried(phrase: Phrase) -> Option<PassphraseDigest> {
    match phrase {
        Phrase::None => None,
        Phrase::Right => Some(digest("芝麻开门")),
        Phrase::Wrong => Some(digest("open sesame")),
    }
}

/// The chat of a members-only packet.
fn our_chat() -> ChatId {
    ChatId::parse("family:2026").unwrap()
}

/// A grab by user `n` carrying `phrase` and `ticket`.
fn attempt(n: u8, (phrase, ticket): Carried) -> GrabAttempt {
    let member_of = match ticket {
        Ticket::None => None,
        Ticket::Ours => Some(our_chat()),
        Ticket::Other => ChatId::parse("office"),
    };
    GrabAttempt { user: user(n), passphrase: carried(phrase), member_of }
}

/// Users as a `sub` may name them: colons, spaces and more than ASCII.
fn user(n: u8) -> UserId {
    UserId::from_claim(&format!("user:{n} 用户 {n}")).unwrap()
}

/// Who may grab: `recipients` (a bit per user 0..8, none for a packet open to all), a passphrase
/// or not, and the members of [`our_chat`] only or not.
fn access(recipients: Option<u8>, passphrase: bool, members_only: bool) -> Access {
    let recipients = recipients.map(|bits| {
        let mut users: Vec<UserId> = (0..8).filter(|n| bits & (1 << n) != 0).map(user).collect();
        users.sort();
        users
    });
    Access {
        recipients, passphrase: passphrase.then(|| digest("芝麻开门")), members_of: members_only.then(our_chat)
    }
}

/// A scheduled packet's opening: grabs in the first 20 s of a case are too early.
const OPENS_AT_MS: i64 = START_MS + 20_000;

fn packet(count: u32, kind: PacketKind) -> Packet {
    scheduled_packet(count, kind, None)
}

/// A packet sent at `START_MS`, opening at `opens_at_ms` when given.
fn scheduled_packet(count: u32, kind: PacketKind, opens_at_ms: Option<i64>) -> Packet {
    let spec = PacketSpec {
        opens_at_ms,
        ..PacketSpec::open_to_all(PacketTerms::new(kind, u64::from(count) * 100, count), (LIFETIME_MS / 1000) as u32)
    };
    Packet::new(PacketId::random(), UserId::from_claim("sender").unwrap(), &spec, Seed::random(), START_MS)
}

/// A grab by `name` carrying `phrase`.
fn phrase_grab(name: &str, phrase: &str) -> GrabAttempt {
    GrabAttempt { passphrase: Some(digest(phrase)), ..GrabAttempt::by(UserId::from_claim(name).unwrap()) }
}

fn store() -> RedisStore {
    let mut config = Config::from_env().expect("configuration");
    config.redis.key_prefix = format!("t-script-{}", &PacketId::random().as_str()[..8]);
    RedisStore::new(&config)
}

/// The ledger once settle persisted every grab so far: the model's grabs and their claims,
/// cancelled when the model is, open (settle has not finalised it).
fn ledger_of(model: &LiveState, now_ms: i64) -> LedgerPacket {
    let claim = |grab: &LoggedGrab| ShareClaim {
        seq: grab.seq,
        amount_cents: grab.amount_cents,
        holder: ShareHolder::Grabber { user: grab.user.clone(), at_ms: grab.at_ms },
    };
    LedgerPacket {
        packet: model.packet.clone(),
        status: PacketStatus::Open,
        refund_cents: None,
        refund_item_cents: None,
        grabs: model.grabs.clone(),
        claims: model.grabs.iter().map(claim).collect(),
        cancelled_at_ms: (model.gate == Gate::Cancelled).then_some(now_ms),
    }
}

/// What the ledger must answer for `user`, from the model: the passphrase is not the ledger's to
/// test, so the model's answer to the right phrase with no wrong try counted; a share to hand
/// out is the live store's to give (`None`).
fn ledger_expects(model: &LiveState, attempt: &GrabAttempt, now_ms: i64) -> Option<GrabOutcome> {
    let mut unlocked = model.clone();
    unlocked.wrong_tries.clear();
    let right = GrabAttempt { passphrase: model.packet.access.passphrase.clone(), ..attempt.clone() };
    match unlocked.grab(&right, now_ms) {
        LiveGrab::Decided { outcome: GrabOutcome::Grabbed { .. }, .. } | LiveGrab::Resyncing => None,
        LiveGrab::Decided { outcome, .. } => Some(outcome),
    }
}

/// The ledger's answer for `attempt` (its passphrase left out: not the ledger's to test) in the
/// model's state, once held to what the model implies.
fn ledger_answer(model: &LiveState, attempt: &GrabAttempt, now_ms: i64) -> Result<Option<GrabOutcome>, TestCaseError> {
    let asked = GrabAttempt { passphrase: None, ..attempt.clone() };
    let said = ledger_of(model, now_ms).grab_outcome(&asked, now_ms);
    prop_assert_eq!(said, ledger_expects(model, attempt, now_ms), "the ledger's answer");
    Ok(said)
}

/// `error`, with the step it failed at and the whole case.
fn at_step(error: TestCaseError, n: usize, steps: &[Step]) -> TestCaseError {
    TestCaseError::fail(format!("{error}, step {n} of {steps:?}"))
}

/// The script's answer against the ledger's for the same state: a share taken is the live
/// store's alone; a refusal of the passphrase is not the ledger's to give.
fn ledger_agrees(script: &ScriptGrab, ledger: Option<GrabOutcome>) -> bool {
    match script {
        ScriptGrab::Decided { outcome: GrabOutcome::Grabbed { .. }, .. } => ledger.is_none(),
        ScriptGrab::Decided { outcome: GrabOutcome::WrongPassphrase | GrabOutcome::TooManyAttempts, .. } => true,
        ScriptGrab::Decided { outcome, .. } => ledger == Some(*outcome),
        _ => true,
    }
}

async fn run(
    store: &RedisStore,
    count: u32,
    kind: PacketKind,
    scheduled: bool,
    access: Access,
    steps: &[Step],
) -> Result<(), TestCaseError> {
    let mut packet = scheduled_packet(count, kind, scheduled.then_some(OPENS_AT_MS));
    packet.terms.chat_id = Some(our_chat());
    packet.access = access;
    store.load(&packet, &packet.shares()).await.expect("the test Redis (make test) is reachable");
    let mut model = LiveState::new(&packet, &packet.shares());
    let mut conn = store.connection().await.unwrap();
    let keys = store.keys(&packet.id);
    let mut now_ms = START_MS;
    for (n, step) in steps.iter().enumerate() {
        match step {
            Step::Grab { user: n_user, advance_ms, phrase, ticket } => {
                now_ms += advance_ms;
                let attempt = attempt(*n_user, (*phrase, *ticket));
                let said = ledger_answer(&model, &attempt, now_ms).map_err(|error| at_step(error, n, steps))?;
                let answer = scripts::grab(&mut conn, &keys, &attempt, now_ms).await.unwrap();
                prop_assert!(
                    ledger_agrees(&answer, said),
                    "grab.lua {:?}, ledger {:?}, step {} of {:?}",
                    answer,
                    said,
                    n,
                    steps
                );
                prop_assert_eq!(answer, model.grab(&attempt, now_ms).into(), "step {} of {:?}", n, steps);
            }
            Step::Batch { advance_ms, grabs } => {
                now_ms += advance_ms;
                let batch: Vec<GrabAttempt> =
                    grabs.iter().map(|(n_user, carried)| attempt(*n_user, *carried)).collect();
                let answers = scripts::grab_many(&mut conn, &keys, now_ms, &batch).await.unwrap();
                let mut one_by_one: Vec<ScriptGrab> = Vec::new();
                let mut ledger_says = Vec::new();
                for attempt in &batch {
                    let said = ledger_answer(&model, attempt, now_ms).map_err(|error| at_step(error, n, steps))?;
                    ledger_says.push(said);
                    one_by_one.push(model.grab(attempt, now_ms).into());
                }
                for (answer, said) in answers.iter().zip(&ledger_says) {
                    prop_assert!(
                        ledger_agrees(answer, *said),
                        "grab_many.lua {:?}, ledger {:?}, step {} of {:?}",
                        answer,
                        said,
                        n,
                        steps
                    );
                }
                prop_assert_eq!(answers, one_by_one, "step {} of {:?}", n, steps);
            }
            Step::Cancel => {
                let cancelled = scripts::cancel(&mut conn, &keys, now_ms).await.unwrap();
                prop_assert_eq!(cancelled, model.cancel(now_ms), "step {} of {:?}", n, steps);
            }
            Step::Close => {
                let closed = scripts::close(&mut conn, &keys, now_ms, false).await.unwrap();
                prop_assert_eq!(closed, model.close(now_ms, false), "step {} of {:?}", n, steps);
            }
            Step::Persist(confirmed) => {
                let confirmed = confirmed % (model.grabs.len() + 1);
                if confirmed > 0 {
                    // A mark naming another grab at that place (a failover's) changes nothing.
                    let stranger = LoggedGrab { user: user(99), ..model.grabs[confirmed - 1].clone() };
                    let mark = scripts::mark_persisted(&mut conn, &keys, confirmed, &stranger).await.unwrap();
                    prop_assert_eq!(mark, model.mark_persisted(confirmed, &stranger));
                    let last = model.grabs[confirmed - 1].clone();
                    let mark = scripts::mark_persisted(&mut conn, &keys, confirmed, &last).await.unwrap();
                    prop_assert_eq!(mark, model.mark_persisted(confirmed, &last));
                }
            }
            Step::Resync => {
                // Frozen first, as settle's re-sync is; the freeze's log is every grab so far.
                let token = format!("resync-{n}");
                let frozen = store.freeze(&packet.id, &token).await.unwrap();
                let cancelled = model.gate == Gate::Cancelled;
                prop_assert_eq!(frozen, Frozen::Log { grabs: model.freeze(&token), partial: false });
                if model.packet.access.is_open_to_all() {
                    let fresh = GrabAttempt::by(user(200));
                    let answer = scripts::grab(&mut conn, &keys, &fresh, now_ms).await.unwrap();
                    prop_assert_eq!(answer, model.grab(&fresh, now_ms).into(), "no fresh grab while frozen");
                    prop_assert_eq!(answer, ScriptGrab::Resyncing);
                }
                let image =
                    PacketImage { packet: &packet, cancelled, closed: false, grabs: &model.grabs, pool: &model.pool };
                let stale = store.resync(image, "another").await;
                prop_assert!(!stale.unwrap(), "a replace under another token changes nothing");
                prop_assert!(!model.frozen_by("another"));
                prop_assert!(store.resync(image, &token).await.unwrap());
                prop_assert!(model.frozen_by(&token));
                // The ledger's state is all persisted; a closed packet reloads open (a cancelled
                // one closed), as settle's re-sync does; wrong tries are not ledger state.
                model = LiveState::restored(image);
            }
        }
    }
    let live = store.snapshot(&packet.id).await.unwrap().expect("loaded");
    prop_assert_eq!(&live, &model.snapshot(), "Redis holds what the model holds");
    prop_assert_eq!(&live.packet.access, &packet.access, "Redis describes who may grab as it was loaded");
    let paid: Cents = live.grabs.iter().map(|grab| grab.amount_cents).sum::<Cents>()
        + model.pool.iter().map(|(_, amount)| amount).sum::<Cents>();
    prop_assert_eq!(paid, packet.terms.total_cents, "grabs and shares left always add up to the total");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn grab_lua_answers_as_the_model_does(
        count in 1u32..8,
        lucky in any::<bool>(),
        recipients in proptest::option::of(1u8..=255),
        passphrase in any::<bool>(),
        members_only in any::<bool>(),
        scheduled in any::<bool>(),
        steps in proptest::collection::vec(step(), 1..40),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let store = store();
        let kind = if lucky { PacketKind::Lucky } else { PacketKind::Fixed };
        runtime.block_on(run(&store, count, kind, scheduled, access(recipients, passphrase, members_only), &steps))?;
    }
}

/// An id Redis does not hold: the first caller claims the lookup, the others wait for its
/// verdict, and the verdict answers everyone until it lapses.
#[tokio::test]
async fn unknown_ids_go_through_the_lookup_states() {
    let store = store();
    let mut conn = store.connection().await.unwrap();
    let user = GrabAttempt::by(UserId::from_claim("bob").unwrap());
    let mut asked = HashMap::new();
    for verdict in ["absent", "recorded"] {
        let keys = store.keys(&PacketId::random());
        let first = scripts::grab(&mut conn, &keys, &user, START_MS).await.unwrap();
        let second = scripts::grab(&mut conn, &keys, &user, START_MS).await.unwrap();
        let _: () = redis::cmd("SET").arg(&keys.lookup).arg(verdict).query_async(&mut conn).await.unwrap();
        let after = scripts::grab(&mut conn, &keys, &user, START_MS).await.unwrap();
        asked.insert(verdict, (first, second, after));
    }
    assert_eq!(
        asked["absent"],
        (
            ScriptGrab::AskLedger(Lookup::Claimed),
            ScriptGrab::LookupPending,
            ScriptGrab::Decided { outcome: GrabOutcome::NotFound, dirtied: false }
        )
    );
    assert_eq!(asked["recorded"].2, ScriptGrab::AskLedger(Lookup::Recorded));
}

/// The costs the script's header promises, counted by Redis itself: a fresh grab runs 4
/// commands inside the script, a repeat 2.
#[tokio::test]
async fn a_fresh_grab_is_four_commands_and_a_repeat_two() {
    let redis = crate::support::OwnRedis::start();
    let store = RedisStore::new(&redis.config());
    let packet = packet(5, PacketKind::Lucky);
    store.load(&packet, &packet.shares()).await.unwrap();
    let keys = store.keys(&packet.id);
    let mut conn = store.connection().await.unwrap();
    let user = GrabAttempt::by(UserId::from_claim("bob").unwrap());
    // Loads the script (NOSCRIPT, SCRIPT LOAD) on another packet first.
    scripts::grab(&mut conn, &store.keys(&PacketId::random()), &user, START_MS).await.unwrap();
    let mut commands = Vec::new();
    for _ in 0..2 {
        let before = local::probe::redis_commands_executed(&store).await.unwrap();
        scripts::grab(&mut conn, &keys, &user, START_MS).await.unwrap();
        let after = local::probe::redis_commands_executed(&store).await.unwrap();
        commands.push(after - before);
    }
    eprintln!("figure: grab.lua commands, fresh and repeat (EVALSHA included): {commands:?}");
    assert_eq!(commands, [5, 3], "EVALSHA + HMGET LPOP HSET RPUSH, then EVALSHA + HMGET LLEN");

    // A chat's phrase packet: the gate rides in the same HMGET, the caller's recipient and
    // wrong-try fields in a second.
    let mut gated = self::packet(5, PacketKind::Lucky);
    gated.access = Access {
        recipients: Some(vec![UserId::from_claim("bob").unwrap(), UserId::from_claim("carol").unwrap()]),
        passphrase: Some(digest("芝麻开门")),
        members_of: None,
    };
    store.load(&gated, &gated.shares()).await.unwrap();
    let keys = store.keys(&gated.id);
    let attempts = [
        ("a member with the phrase", phrase_grab("bob", "芝麻开门")),
        ("a stranger", phrase_grab("mallory", "芝麻开门")),
        ("a wrong phrase", phrase_grab("carol", "open sesame")),
    ];
    let mut gated_commands = Vec::new();
    for (_, attempt) in &attempts {
        let before = local::probe::redis_commands_executed(&store).await.unwrap();
        scripts::grab(&mut conn, &keys, attempt, START_MS).await.unwrap();
        let after = local::probe::redis_commands_executed(&store).await.unwrap();
        gated_commands.push(after - before);
    }
    eprintln!(
        "figure: grab.lua commands on a chat's phrase packet (member, stranger, wrong phrase): {gated_commands:?}"
    );
    assert_eq!(
        gated_commands,
        [6, 3, 4],
        "a grab's 4 and the caller's HMGET; HMGET HMGET refuses; HMGET HMGET HINCRBY counts a wrong try"
    );

    // A members-only packet: the ticket's chat is compared in the same second HMGET, which reads
    // the packet's chat beside the caller's fields; nothing else is read for it, here or before.
    let mut members = self::packet(5, PacketKind::Lucky);
    members.terms.chat_id = Some(our_chat());
    members.access = Access { members_of: Some(our_chat()), ..Access::default() };
    store.load(&members, &members.shares()).await.unwrap();
    let keys = store.keys(&members.id);
    let with_ticket = GrabAttempt { member_of: Some(our_chat()), ..GrabAttempt::by(user_named("bob")) };
    let without = GrabAttempt::by(user_named("carol"));
    let mut members_commands = Vec::new();
    for attempt in [&with_ticket, &without] {
        let before = local::probe::redis_commands_executed(&store).await.unwrap();
        scripts::grab(&mut conn, &keys, attempt, START_MS).await.unwrap();
        let after = local::probe::redis_commands_executed(&store).await.unwrap();
        members_commands.push(after - before);
    }
    eprintln!("figure: grab.lua commands on a members-only packet (a ticket, none): {members_commands:?}");
    assert_eq!(members_commands, [6, 3], "a gated packet's costs: the chat rides in the caller's HMGET");

    // A campaign's packet before its opening answers from the first HMGET: cheaper than a
    // sold-out answer on an open packet (HMGET, then an LPOP that finds the pool empty).
    let campaign = scheduled_packet(2, PacketKind::Lucky, Some(OPENS_AT_MS));
    store.load(&campaign, &campaign.shares()).await.unwrap();
    let sold_out = self::packet(1, PacketKind::Fixed);
    store.load(&sold_out, &sold_out.shares()).await.unwrap();
    scripts::grab(&mut conn, &store.keys(&sold_out.id), &GrabAttempt::by(user_named("carol")), START_MS).await.unwrap();
    let mut refusals = Vec::new();
    for (id, expected) in
        [(&campaign.id, GrabOutcome::NotYetOpen { opens_at_ms: OPENS_AT_MS }), (&sold_out.id, GrabOutcome::SoldOut)]
    {
        let before = local::probe::redis_commands_executed(&store).await.unwrap();
        let answer = scripts::grab(&mut conn, &store.keys(id), &user, START_MS).await.unwrap();
        let after = local::probe::redis_commands_executed(&store).await.unwrap();
        assert_eq!(answer, ScriptGrab::Decided { outcome: expected, dirtied: false });
        refusals.push(after - before);
    }
    eprintln!("figure: grab.lua commands, not open yet and sold out: {refusals:?}");
    assert_eq!(
        refusals,
        [2, 4],
        "EVALSHA + HMGET before the opening; EVALSHA + HMGET LPOP LPUSH sold out (the pool's end mark popped and put back)"
    );
}

fn user_named(name: &str) -> UserId {
    UserId::from_claim(name).unwrap()
}

/// Each call of a staged load or a paged read, at most.
const PER_CALL: std::time::Duration = std::time::Duration::from_secs(5);

/// A packet larger than one call carries (`scripts::LOAD_CHUNK` entries) is staged a chunk at a
/// time and renamed into place: loaded, and replaced by a re-sync, Redis holds what the model
/// of the same image holds, its snapshot and freeze read back every entry a page at a time, and
/// no staged key is left behind.
#[tokio::test]
async fn a_packet_too_large_for_one_call_is_staged_and_loads_whole() {
    let store = store();
    const COUNT: u32 = 12_000;
    let packet = packet(COUNT, PacketKind::Lucky);
    let shares = packet.shares();
    let grabs: Vec<LoggedGrab> = (1..=7_000u32)
        .map(|seq| LoggedGrab {
            seq,
            user: user_named(&format!("fan {seq}")),
            amount_cents: shares[seq as usize - 1],
            at_ms: START_MS + i64::from(seq),
        })
        .collect();
    let pool: Vec<(u32, Cents)> = (7_001..=COUNT).map(|seq| (seq, shares[seq as usize - 1])).collect();
    let image = PacketImage { packet: &packet, cancelled: false, closed: false, grabs: &grabs, pool: &pool };
    assert!(grabs.len() + pool.len() > scripts::LOAD_CHUNK);
    let keys = store.keys(&packet.id);
    let mut conn = store.connection().await.unwrap();
    let loaded = scripts::load(&mut conn, &keys, scripts::LoadMode::Add, image, PER_CALL).await.unwrap();
    assert_eq!(loaded, scripts::Loaded::Now);
    let model = LiveState::restored(image);
    assert_eq!(store.snapshot(&packet.id).await.unwrap().unwrap(), model.snapshot(), "loaded whole");
    let again = scripts::load(&mut conn, &keys, scripts::LoadMode::Add, image, PER_CALL).await.unwrap();
    assert_eq!(again, scripts::Loaded::Already, "a second add changes nothing");

    let Frozen::Log { grabs: frozen, .. } = store.freeze(&packet.id, "big").await.unwrap() else { panic!("held") };
    assert_eq!(frozen, grabs, "the freeze reads every grab back, a page at a time");
    let fewer = &grabs[..6_500];
    let more: Vec<(u32, Cents)> = (6_501..=COUNT).map(|seq| (seq, shares[seq as usize - 1])).collect();
    let replaced = PacketImage { grabs: fewer, pool: &more, ..image };
    assert!(store.resync(replaced, "big").await.unwrap(), "replaced under its freeze");
    assert_eq!(store.snapshot(&packet.id).await.unwrap().unwrap(), LiveState::restored(replaced).snapshot());

    // A staged load whose staged keys came up short (a stage key expired, a failover lost a
    // chunk) changes nothing, even a replace under its freeze: load.lua answers 4.
    let frozen = store.freeze(&packet.id, "short").await.unwrap();
    assert!(matches!(frozen, Frozen::Log { .. }));
    let stage = keys.staged("short");
    let _: () = redis::cmd("RPUSH").arg(&stage.pool).arg("1:5:0").query_async(&mut conn).await.unwrap();
    let fields =
        serde_json::to_string(&red_packets::adapters::redis::record::LoadFields::of(&packet, false, false)).unwrap();
    let answer: i64 = redis::Script::new(include_str!("../../../shared/redis/lua/load.lua"))
        .key(&keys.packet)
        .key(&keys.pool)
        .key(&keys.grabs)
        .key(&stage.packet)
        .key(&stage.pool)
        .key(&stage.grabs)
        .arg("replace")
        .arg(fields)
        .arg("short")
        .arg("staged")
        .arg(0)
        .arg(2)
        .arg(0)
        .invoke_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(answer, 4, "one share staged where two were");
    let after = store.snapshot(&packet.id).await.unwrap().unwrap();
    assert_eq!((after.grabs.len(), after.remaining_count, after.frozen), (6_500, COUNT - 6_500, true), "unchanged");

    // While another caller holds the staging lease of a large packet Redis lost, an add stages
    // nothing and says so.
    let lost = scheduled_packet(COUNT, PacketKind::Fixed, None);
    let lost_keys = store.keys(&lost.id);
    let lease = format!("{}:staging", lost_keys.packet);
    let _: () = redis::cmd("SET").arg(&lease).arg(1).arg("PX").arg(60_000).query_async(&mut conn).await.unwrap();
    let lost_pool: Vec<(u32, Cents)> = (1..).zip(lost.shares()).collect();
    let lost_image = PacketImage { packet: &lost, cancelled: false, closed: false, grabs: &[], pool: &lost_pool };
    let busy = scripts::load(&mut conn, &lost_keys, scripts::LoadMode::Add, lost_image, PER_CALL).await.unwrap();
    assert_eq!(busy, scripts::Loaded::Staging);
    let held: bool = redis::cmd("EXISTS").arg(&lost_keys.packet).query_async(&mut conn).await.unwrap();
    assert!(!held, "nothing loaded under another's lease");
    let _: () = redis::cmd("DEL").arg(&lease).query_async(&mut conn).await.unwrap();
    let loaded = scripts::load(&mut conn, &lost_keys, scripts::LoadMode::Add, lost_image, PER_CALL).await.unwrap();
    assert_eq!(loaded, scripts::Loaded::Now);
    let released: bool = redis::cmd("EXISTS").arg(&lease).query_async(&mut conn).await.unwrap();
    assert!(!released, "the lease goes with the load");

    let staged: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:*:stage:*", keys.packet.rsplit_once(':').unwrap().0))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(staged.is_empty(), "no staged key is left: {staged:?}");
}
