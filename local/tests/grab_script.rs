//! `grab.lua` against a straightforward model, on the real Redis: random sequences of grabs
//! (repeats among them), clock moves, closes, persisted marks and re-syncs from the ledger's
//! state, each answer compared with what the model says, and the packet's log and shares
//! compared at the end. Unknown packets' lookup states in a table test.

mod support;

use std::collections::HashMap;

use proptest::prelude::*;
use red_packets::adapters::redis::scripts::{self, Lookup, ScriptGrab};
use red_packets::adapters::RedisStore;
use red_packets::domain::settlement::LoggedGrab;
use red_packets::domain::{Cents, GrabOutcome, Packet, PacketId, PacketKind, PacketSpec, Seed, SplitRule, UserId};
use red_packets::ports::{CloseOutcome, LiveStore, SettleQueue};
use red_packets::Config;

const START_MS: i64 = 1_700_000_000_000;
const LIFETIME_MS: i64 = 60_000;

/// What a grab should answer, and the packet as it should be, kept the plain way.
struct Model {
    count: u32,
    expires_at_ms: i64,
    /// Shares not yet taken, as (seq, amount), in order.
    shares: Vec<(u32, Cents)>,
    grabs: Vec<LoggedGrab>,
    closed: bool,
    persisted: usize,
}

impl Model {
    fn of(packet: &Packet) -> Self {
        Model {
            count: packet.count,
            expires_at_ms: packet.expires_at_ms,
            shares: packet.shares().into_iter().enumerate().map(|(n, amount)| (n as u32 + 1, amount)).collect(),
            grabs: Vec::new(),
            closed: false,
            persisted: 0,
        }
    }

    fn grab(&mut self, user: &UserId, now_ms: i64) -> ScriptGrab {
        let decided = |outcome| ScriptGrab::Decided { outcome, dirtied: false };
        if let Some(prior) = self.grabs.iter().find(|grab| &grab.user == user) {
            return decided(GrabOutcome::Already {
                amount_cents: prior.amount_cents,
                grabbed_at_ms: prior.at_ms,
                remaining_count: self.shares.len() as u32,
            });
        }
        if self.shares.is_empty() {
            return decided(GrabOutcome::SoldOut);
        }
        if self.closed || now_ms >= self.expires_at_ms {
            return decided(GrabOutcome::Expired);
        }
        let (seq, amount_cents) = self.shares.remove(0);
        let dirtied = self.grabs.len() == self.persisted;
        self.grabs.push(LoggedGrab { seq, user: user.clone(), amount_cents, at_ms: now_ms });
        ScriptGrab::Decided {
            outcome: GrabOutcome::Grabbed { amount_cents, grabbed_at_ms: now_ms, remaining_count: self.count - seq },
            dirtied,
        }
    }

    fn close(&mut self, now_ms: i64) -> CloseOutcome {
        if self.closed || self.shares.is_empty() || now_ms >= self.expires_at_ms {
            self.closed = true;
            CloseOutcome::Closed
        } else {
            CloseOutcome::StillOpen
        }
    }
}

#[derive(Debug, Clone)]
enum Step {
    /// User `n` grabs after the clock moved `advance_ms`.
    Grab { user: u8, advance_ms: i64 },
    /// Settle's close at the current time.
    Close,
    /// Settle confirms the first `n` grabs (mod the log's length + 1).
    Persist(usize),
    /// Settle's re-sync: Redis replaced by the ledger's state (the model's).
    Resync,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (0u8..12, prop_oneof![3 => Just(0i64), 1 => 0i64..40_000]).prop_map(|(user, advance_ms)| Step::Grab { user, advance_ms }),
        1 => Just(Step::Close),
        1 => (0usize..20).prop_map(Step::Persist),
        1 => Just(Step::Resync),
    ]
}

fn packet(count: u32, kind: PacketKind) -> Packet {
    let spec = PacketSpec {
        total_cents: u64::from(count) * 100,
        count,
        kind,
        split: (kind == PacketKind::Lucky).then_some(SplitRule::DoubleAverage),
        greeting: None,
        expires_in_seconds: (LIFETIME_MS / 1000) as u32,
    };
    Packet::new(PacketId::random(), UserId::from_claim("sender").unwrap(), &spec, Seed::random(), START_MS)
}

fn store() -> RedisStore {
    let mut config = Config::from_env().expect("configuration");
    config.redis.key_prefix = format!("t-script-{}", &PacketId::random().as_str()[..8]);
    RedisStore::new(&config)
}

async fn run(store: &RedisStore, count: u32, kind: PacketKind, steps: &[Step]) -> Result<(), TestCaseError> {
    let packet = packet(count, kind);
    store.load(&packet, &packet.shares()).await.expect("the test Redis (make test) is reachable");
    let mut model = Model::of(&packet);
    let mut conn = store.connection().await.unwrap();
    let keys = store.keys(&packet.id);
    let mut now_ms = START_MS;
    for (n, step) in steps.iter().enumerate() {
        match step {
            Step::Grab { user, advance_ms } => {
                now_ms += advance_ms;
                let user = UserId::from_claim(&format!("user:{user}")).unwrap();
                let answer = scripts::grab(&mut conn, &keys, &user, now_ms, 5_000).await.unwrap();
                prop_assert_eq!(answer, model.grab(&user, now_ms), "step {} of {:?}", n, steps);
            }
            Step::Close => {
                let closed = scripts::close(&mut conn, &keys, now_ms).await.unwrap();
                prop_assert_eq!(closed, model.close(now_ms), "step {} of {:?}", n, steps);
            }
            Step::Persist(confirmed) => {
                let confirmed = confirmed % (model.grabs.len() + 1);
                let mark = scripts::mark_persisted(&mut conn, &keys, confirmed).await.unwrap();
                model.persisted = model.persisted.max(confirmed);
                prop_assert_eq!(mark, model.persisted);
            }
            Step::Resync => {
                let shares: Vec<Cents> = model.shares.iter().map(|(_, amount)| *amount).collect();
                store.resync(&packet, &model.grabs, &shares).await.unwrap();
                // The ledger's state is all persisted; a closed packet reloads open, as settle's re-sync does.
                model.persisted = model.grabs.len();
                model.closed = false;
            }
        }
    }
    let live = store.snapshot(&packet.id).await.unwrap().expect("loaded");
    prop_assert_eq!(&live.grabs, &model.grabs);
    prop_assert_eq!(live.remaining_count, model.shares.len() as u32);
    prop_assert_eq!(live.persisted, model.persisted);
    prop_assert_eq!(live.open, !model.closed);
    let paid: Cents = live.grabs.iter().map(|grab| grab.amount_cents).sum::<Cents>()
        + model.shares.iter().map(|(_, amount)| amount).sum::<Cents>();
    prop_assert_eq!(paid, packet.total_cents, "grabs and shares left always add up to the total");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn grab_lua_answers_as_the_model_does(
        count in 1u32..8,
        lucky in any::<bool>(),
        steps in proptest::collection::vec(step(), 1..40),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let store = store();
        let kind = if lucky { PacketKind::Lucky } else { PacketKind::Fixed };
        runtime.block_on(run(&store, count, kind, &steps))?;
    }
}

/// An id Redis does not hold: the first caller claims the lookup, the others wait for its
/// verdict, and the verdict answers everyone until it lapses.
#[tokio::test]
async fn unknown_ids_go_through_the_lookup_states() {
    let store = store();
    let mut conn = store.connection().await.unwrap();
    let user = UserId::from_claim("bob").unwrap();
    let mut asked = HashMap::new();
    for verdict in ["absent", "recorded"] {
        let keys = store.keys(&PacketId::random());
        let first = scripts::grab(&mut conn, &keys, &user, START_MS, 5_000).await.unwrap();
        let second = scripts::grab(&mut conn, &keys, &user, START_MS, 5_000).await.unwrap();
        let _: () = redis::cmd("SET").arg(&keys.lookup).arg(verdict).query_async(&mut conn).await.unwrap();
        let after = scripts::grab(&mut conn, &keys, &user, START_MS, 5_000).await.unwrap();
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
    let redis = support::OwnRedis::start();
    let store = RedisStore::new(&redis.config());
    let packet = packet(5, PacketKind::Lucky);
    store.load(&packet, &packet.shares()).await.unwrap();
    let keys = store.keys(&packet.id);
    let mut conn = store.connection().await.unwrap();
    let user = UserId::from_claim("bob").unwrap();
    // Loads the script (NOSCRIPT, SCRIPT LOAD) on another packet first.
    scripts::grab(&mut conn, &store.keys(&PacketId::random()), &user, START_MS, 5_000).await.unwrap();
    let mut commands = Vec::new();
    for _ in 0..2 {
        let before = local::probe::redis_commands_executed(&store).await.unwrap();
        scripts::grab(&mut conn, &keys, &user, START_MS, 5_000).await.unwrap();
        let after = local::probe::redis_commands_executed(&store).await.unwrap();
        commands.push(after - before);
    }
    eprintln!("figure: grab.lua commands, fresh and repeat (EVALSHA included): {commands:?}");
    assert_eq!(commands, [5, 3], "EVALSHA + HMGET LPOP HSET RPUSH, then EVALSHA + HMGET LLEN");
}
