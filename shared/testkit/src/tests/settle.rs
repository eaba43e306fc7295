//! Settle's state machine on the in-memory stores, in milliseconds and with no service: the
//! flows of DESIGN.md (persist, finalise with its refund, exactly once across crashes and
//! re-runs), and the faults settle decides on (a poison record is skipped and named, an
//! unreachable ledger ends the run, a lost live store is restored, a disagreement re-synced,
//! a packet the ledger lacks quarantined, a deadline resumed). The same flows run on Redis and
//! DynamoDB Local in `local/tests` (settle_and_query, money_safety, recovery, restart).

use std::sync::Arc;

use crate::memory::{MemoryLedger, MemoryStore};
use crate::ManualClock;
use red_packets::clock::{Clock, Millis};
use red_packets::config::Config;
use red_packets::domain::grab::{GrabAttempt, GrabOutcome, LoggedGrab};
use red_packets::domain::wallet::TopUp;
use red_packets::domain::{
    Cents, Funds, Packet, PacketId, PacketKind, PacketSpec, PacketStatus, PacketTerms, Seed, UserId,
};
use red_packets::ports::{Ledger, LiveStore, SettleLedger, Wallets};
use red_packets::settle::{FaultPoint, SettleError, SettleSummary, Settler};

type TestSettler = Settler<MemoryStore, MemoryLedger>;

fn user(name: &str) -> UserId {
    UserId::from_claim(name).unwrap()
}

struct World {
    clock: Arc<ManualClock>,
    store: Arc<MemoryStore>,
    settler: TestSettler,
}

impl World {
    fn new(funds: Funds) -> Self {
        let mut config = Config::from_lookup(|_| None).unwrap();
        config.funds = funds;
        config.settle_shards = 4;
        let clock = Arc::new(ManualClock::starting_now());
        let store = Arc::new(MemoryStore::new(config.settle_shards));
        let settler = Settler::new(store.clone(), MemoryLedger::new(&config)).with_clock(clock.clone());
        World { clock, store, settler }
    }

    fn store(&self) -> &MemoryStore {
        &self.store
    }

    fn ledger(&self) -> &MemoryLedger {
        self.settler.ledger()
    }

    /// A fixed packet of `count` shares of 100 cents from alice, sent as the send function
    /// does: recorded, then loaded.
    async fn send(&self, count: u32) -> Packet {
        let packet = self.record(count).await;
        self.store().load(&packet, &packet.shares()).await.unwrap();
        packet
    }

    /// The same packet recorded in the ledger only.
    async fn record(&self, count: u32) -> Packet {
        let spec = PacketSpec::open_to_all(PacketTerms::new(PacketKind::Fixed, Cents::from(count) * 100, count), 60);
        let packet = Packet::new(PacketId::random(), user("alice"), &spec, Seed::random(), self.clock.now_ms());
        self.ledger().record_packet(&packet, None).await.unwrap();
        packet
    }

    async fn grab(&self, packet: &Packet, who: &str) -> GrabOutcome {
        let attempt = GrabAttempt::by(user(who));
        red_packets::packets::grab(self.store(), self.ledger(), &packet.id, &attempt, self.clock.as_ref())
            .await
            .unwrap()
    }

    async fn run(&self) -> Result<SettleSummary, SettleError> {
        self.settler.run(0..=3, None).await
    }

    async fn settled(&self) -> SettleSummary {
        self.run().await.expect("a complete run")
    }

    fn expire(&self) {
        self.clock.advance(61_000);
    }

    async fn status(&self, packet: &Packet) -> (PacketStatus, Option<Cents>) {
        let recorded = self.ledger().ledger_packet(&packet.id).await.unwrap().expect("recorded");
        (recorded.status, recorded.refund_cents)
    }
}

#[tokio::test]
async fn an_expired_packet_is_persisted_refunded_and_retired_once() {
    let world = World::new(Funds::None);
    let packet = world.send(3).await;
    world.grab(&packet, "bob").await;
    world.grab(&packet, "carol").await;

    let first = world.settled().await;
    assert_eq!((first.grabs_persisted, first.finalised), (2, 0), "open: persisted, not finalised");
    world.expire();
    let second = world.settled().await;
    assert_eq!((second.finalised, second.refunded_cents, second.mismatches), (1, 100, 0));
    assert_eq!(world.status(&packet).await, (PacketStatus::Expired, Some(100)));
    assert!(world.store().snapshot(&packet.id).await.unwrap().is_none(), "retired from the live store");
    let third = world.settled().await;
    assert_eq!((third.packets, third.finalised), (0, 0), "nothing left to do, nothing done twice");
}

#[tokio::test]
async fn a_sold_out_packet_is_finished_with_no_refund_before_it_expires() {
    let world = World::new(Funds::None);
    let packet = world.send(2).await;
    world.grab(&packet, "bob").await;
    world.grab(&packet, "carol").await;
    let summary = world.settled().await;
    assert_eq!((summary.finalised, summary.refunded_cents), (1, 0));
    assert_eq!(world.status(&packet).await, (PacketStatus::Finished, Some(0)));
}

#[tokio::test]
async fn a_crash_at_any_point_is_finished_by_the_next_run_and_pays_once() {
    for point in FaultPoint::ALL {
        let world = World::new(Funds::Wallet);
        let topup = TopUp { user: user("alice"), amount_cents: 1_000, reference: "pay-1".into() };
        world.ledger().top_up(&topup, 0).await.unwrap();
        let packet = world.send(4).await;
        world.grab(&packet, "bob").await;
        world.expire();
        let crashed = Settler::new(world.store.clone(), world.ledger().clone())
            .with_clock(world.clock.clone())
            .crashing_at(Some(point))
            .run(0..=3, None)
            .await;
        assert!(matches!(crashed, Err(SettleError::Crashed(at)) if at == point), "{point:?}: {crashed:?}");
        world.settled().await;
        world.settled().await;
        assert_eq!(world.status(&packet).await, (PacketStatus::Expired, Some(300)), "{point:?}");
        assert_eq!(world.ledger().balance(&user("alice")), 1_000 - 400 + 300, "{point:?}: refunded once");
        assert_eq!(world.ledger().balance(&user("bob")), 100, "{point:?}: credited once");
    }
}

#[tokio::test]
async fn a_poison_packet_is_skipped_and_named_and_the_run_goes_on() {
    let world = World::new(Funds::None);
    let poison = world.send(2).await;
    let healthy = world.send(2).await;
    for packet in [&poison, &healthy] {
        world.grab(packet, "bob").await;
    }
    world.ledger().reject_writes_of(&poison.id);
    let summary = world.settled().await;
    assert_eq!(summary.failed_packets, vec![poison.id.to_string()]);
    assert_eq!((summary.failed, summary.grabs_persisted), (1, 1), "the healthy packet's grab is persisted");
}

#[tokio::test]
async fn an_unreachable_ledger_ends_the_run_and_the_next_one_finishes() {
    let world = World::new(Funds::None);
    let packet = world.send(2).await;
    world.grab(&packet, "bob").await;
    world.expire();
    world.ledger().set_unreachable(true);
    let stopped = world.run().await;
    assert!(matches!(stopped, Err(SettleError::Unavailable { .. })), "{stopped:?}");
    world.ledger().set_unreachable(false);
    assert_eq!(world.settled().await.finalised, 1);
    assert_eq!(world.status(&packet).await, (PacketStatus::Expired, Some(100)));
}

#[tokio::test]
async fn a_slow_ledger_slows_the_run_and_every_packet_is_finalised_once() {
    let world = World::new(Funds::None);
    let mut packets = Vec::new();
    for _ in 0..20 {
        let packet = world.send(2).await;
        world.grab(&packet, "bob").await;
        packets.push(packet);
    }
    world.expire();
    world.ledger().time_out_settle_writes(12);
    let summary = world.settled().await;
    assert_eq!(summary.finalised, 20, "one run finalises every packet: {summary:?}");
    assert!(summary.slowed >= 1, "packets settled again: {summary:?}");
    assert!(summary.least_in_flight < 16, "fewer packets in flight after the timeouts: {summary:?}");
    assert_eq!(summary.left_for_later, 0, "{summary:?}");
    for packet in &packets {
        assert_eq!(world.status(packet).await, (PacketStatus::Expired, Some(100)), "refunded once");
    }
    assert_eq!(world.settled().await.finalised, 0, "nothing finalised twice");
}

#[tokio::test]
async fn a_ledger_that_keeps_timing_out_leaves_the_packet_for_the_next_run() {
    let world = World::new(Funds::None);
    let packet = world.send(2).await;
    world.grab(&packet, "bob").await;
    world.expire();
    world.ledger().time_out_settle_writes(u32::MAX);
    let summary = world.settled().await;
    assert_eq!((summary.left_for_later, summary.finalised), (1, 0), "{summary:?}");
    world.ledger().time_out_settle_writes(0);
    assert_eq!(world.settled().await.finalised, 1);
    assert_eq!(world.status(&packet).await, (PacketStatus::Expired, Some(100)));
}

#[tokio::test]
async fn a_packet_the_live_store_lost_is_restored_from_the_ledger_by_the_sweep() {
    let world = World::new(Funds::None);
    let packet = world.send(3).await;
    world.grab(&packet, "bob").await;
    world.settled().await;
    world.store().lose_everything();
    let summary = world.settled().await;
    assert_eq!(summary.restored, 1, "the sweep reads the ledger's open packets after a loss");
    let live = world.store().snapshot(&packet.id).await.unwrap().expect("restored");
    assert_eq!((live.grabs.len(), live.remaining_count), (1, 2), "with its grab, and the rest to hand out");
    assert!(matches!(world.grab(&packet, "bob").await, GrabOutcome::Already { .. }), "bob keeps his share");
}

#[tokio::test]
async fn a_grab_the_ledger_refuses_is_reported_re_synced_and_its_user_made_whole() {
    let world = World::new(Funds::None);
    let packet = world.send(3).await;
    // The ledger pays share 1 to carol (a grab a failover lost from Redis)...
    let carol = LoggedGrab { seq: 1, user: user("carol"), amount_cents: 100, at_ms: world.clock.now_ms() };
    world.ledger().record_grabs(&packet, &[carol]).await.unwrap();
    // ...while Redis handed share 1 to bob.
    world.grab(&packet, "bob").await;
    let summary = world.settled().await;
    assert!(summary.mismatches >= 1, "{summary:?}");
    assert_eq!((summary.resynced, summary.regranted), (1, 1), "bob gets the next share instead: {summary:?}");
    let recorded = world.ledger().ledger_packet(&packet.id).await.unwrap().unwrap();
    let paid: Vec<(String, u32)> = recorded.grabs.iter().map(|grab| (grab.user.to_string(), grab.seq)).collect();
    assert_eq!(paid, [("carol".to_owned(), 1), ("bob".to_owned(), 2)]);
    let live = world.store().snapshot(&packet.id).await.unwrap().unwrap();
    assert_eq!(live.grabs, recorded.grabs, "Redis holds the ledger's state again");
}

#[tokio::test]
async fn a_packet_the_ledger_never_recorded_is_quarantined_and_listed() {
    let world = World::new(Funds::None);
    let recorded = world.send(2).await;
    let mut stray = recorded.clone();
    stray.id = PacketId::random();
    world.store().load(&stray, &stray.shares()).await.unwrap();
    world.grab(&stray, "bob").await;
    world.expire();
    let summary = world.settled().await;
    assert_eq!(summary.quarantined, 1, "{summary:?}");
    assert_eq!(world.settler.quarantined().await.unwrap(), vec![stray.id.clone()]);
    assert_eq!(world.status(&recorded).await.0, PacketStatus::Expired, "the other packet settles");
}

#[tokio::test]
async fn a_cancelled_packet_refunds_every_share_left() {
    let world = World::new(Funds::None);
    let packet = world.send(3).await;
    world.grab(&packet, "bob").await;
    let now: Millis = world.clock.now_ms();
    world.ledger().cancel(&packet.id, &user("alice"), now).await.unwrap();
    world.store().cancel(&packet.id, now).await.unwrap();
    assert_eq!(world.settled().await.refunded_cents, 200);
    assert_eq!(world.status(&packet).await, (PacketStatus::Cancelled, Some(200)));
}

#[tokio::test]
async fn a_run_past_its_deadline_starts_nothing_and_the_next_resumes() {
    let world = World::new(Funds::None);
    let packet = world.send(2).await;
    world.grab(&packet, "bob").await;
    world.expire();
    let wall = Arc::new(ManualClock::starting_now());
    let late = Settler::new(world.store.clone(), world.ledger().clone()).with_clock(world.clock.clone());
    let deadline = wall.now_ms();
    let summary = late.with_wall_clock(wall).run(0..=3, Some(deadline)).await.unwrap();
    assert_eq!((summary.packets, summary.stopped_early), (0, true));
    assert_eq!(world.settled().await.finalised, 1);
}

#[tokio::test]
async fn a_replay_settles_every_held_packet_again_and_pays_nothing_twice() {
    let world = World::new(Funds::None);
    let packet = world.send(3).await;
    world.grab(&packet, "bob").await;
    world.grab(&packet, "carol").await;
    assert_eq!(world.settled().await.grabs_persisted, 2);
    assert_eq!(world.settled().await.packets, 0, "persisted: no work left");

    assert_eq!(world.settler.replay(0..=3).await.unwrap(), 1, "the one packet the live store holds");
    let replayed = world.settled().await;
    assert_eq!((replayed.packets, replayed.mismatches, replayed.failed), (1, 0, 0), "{replayed:?}");
    let recorded = world.ledger().ledger_packet(&packet.id).await.unwrap().unwrap();
    assert_eq!(recorded.grabs.len(), 2, "the ledger's writes refused what it held: no grab twice");
    world.expire();
    assert_eq!(world.settled().await.refunded_cents, 100, "refunded once");
}
