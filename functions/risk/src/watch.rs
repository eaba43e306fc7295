//! The pattern rules run against the ledger, one event at a time. What the events say is
//! checked against the ledger (the truth): a packet's chat, sender and share count come from
//! its record, a finished packet's handoff from its grabs. Every step is safe to repeat, since
//! EventBridge delivers at least once and in no set order: the chat's log records a packet
//! once, a count is conditioned on what it counts, a flag's id comes from what it found.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use red_packets::clock::{rfc3339, Clock, Millis};
use red_packets::domain::hourly::Counted;
use red_packets::domain::patterns::{
    flag_id, over_chat_limit, Chain, ChatPacket, Finding, FlagRule, Handoff, PairFlow, PairGrab, RiskFlag, RiskRules,
};
use red_packets::domain::risk::{HoldRequest, HoldScope};
use red_packets::domain::{BusinessDay, Cents, ChatId, Packet, PacketId, UserId};
use red_packets::ports::{BusinessHours, Holds, Ledger, RiskLedger, StoreError};
use red_packets::Config;

/// Saves of a chat's log tried before the event fails (and Lambda delivers it again).
const CHAT_LOG_ATTEMPTS: usize = 8;

/// Packets an instance remembers the record of (a packet's grabs arrive together).
const REMEMBERED_PACKETS: usize = 10_000;

/// (day, user, chat) triples an instance remembers counted (a user grabs in the same few chats).
const REMEMBERED_CHATS: usize = 100_000;

/// Longest detail kept in a hold's reason.
const HOLD_REASON_CHARS: usize = 400;

/// A ledger event the rules read, as the bus delivers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// A packet was recorded.
    PacketSent { packet_id: PacketId },
    /// Every share of a packet was taken and settled.
    PacketFinished { packet_id: PacketId },
    /// A grab was recorded.
    GrabRecorded { packet_id: PacketId, grabber: UserId, amount_cents: Cents, grabbed_at_ms: Millis },
}

/// Why an event could not be watched.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The ledger could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Other writers kept saving the chat's log first.
    #[error("chat {0}'s log kept changing under {CHAT_LOG_ATTEMPTS} attempts")]
    Contended(ChatId),
}

/// The rules, their ledger and their clock.
pub struct Watch<L, C> {
    ledger: L,
    rules: RiskRules,
    business_day: BusinessDay,
    clock: C,
    packets: Mutex<HashMap<PacketId, Packet>>,
    /// Chats counted for a user's day whose step finished here: their next grabs write nothing.
    chats_counted: Mutex<HashSet<(String, UserId, ChatId)>>,
}

impl<L: Ledger + RiskLedger + Holds, C: Clock> Watch<L, C> {
    /// The rules of `config` on `ledger`.
    pub fn new(ledger: L, config: &Config, clock: C) -> Self {
        Watch {
            ledger,
            rules: config.risk_rules,
            business_day: config.business_day,
            clock,
            packets: Mutex::new(HashMap::new()),
            chats_counted: Mutex::new(HashSet::new()),
        }
    }

    /// Counts `counted` in the hourly view, once: `true` when counted now, `false` when its event
    /// was counted before.
    pub async fn count_hour(&self, counted: &Counted) -> Result<bool, WatchError>
    where
        L: BusinessHours,
    {
        Ok(self.ledger.count_event(counted, self.clock.now_ms()).await?)
    }

    /// The business day whose hours events are counted in.
    pub fn business_day(&self) -> &BusinessDay {
        &self.business_day
    }

    /// Runs the rules `event` concerns: the flags it raised (none when it raised nothing new).
    pub async fn observe(&self, event: &Observed) -> Result<Vec<RiskFlag>, WatchError> {
        match event {
            Observed::PacketSent { packet_id } => {
                let Some((packet, chat)) = self.chat_packet(packet_id).await? else { return Ok(Vec::new()) };
                self.chain_step(&chat, entry(&packet, None)).await
            }
            Observed::PacketFinished { packet_id } => {
                let Some((packet, chat)) = self.chat_packet(packet_id).await? else { return Ok(Vec::new()) };
                let Some(recorded) = self.ledger.ledger_packet(packet_id).await? else { return Ok(Vec::new()) };
                let handoff = Handoff::of(&recorded.grabs);
                self.chain_step(&chat, entry(&packet, handoff)).await
            }
            Observed::GrabRecorded { packet_id, grabber, amount_cents, grabbed_at_ms } => {
                let Some(packet) = self.read_packet(packet_id).await? else { return Ok(Vec::new()) };
                let mut flags = Vec::new();
                if let Some(chat) = &packet.terms.chat_id {
                    flags.extend(self.chats_step(&packet, chat, grabber, *grabbed_at_ms).await?);
                }
                flags.extend(self.cycle_step(&packet, grabber, *amount_cents, *grabbed_at_ms).await?);
                Ok(flags)
            }
        }
    }

    /// The packet and its chat, when it has one and the rules read it.
    async fn chat_packet(&self, id: &PacketId) -> Result<Option<(Packet, ChatId)>, StoreError> {
        let packet = self.read_packet(id).await?;
        Ok(packet.and_then(|packet| packet.terms.chat_id.clone().map(|chat| (packet, chat))))
    }

    /// The packet's record, when the rules read packets of its size (a campaign's is not).
    async fn read_packet(&self, id: &PacketId) -> Result<Option<Packet>, StoreError> {
        let remembered = self.packets.lock().ok().and_then(|packets| packets.get(id).cloned());
        let packet = match remembered {
            Some(packet) => packet,
            None => {
                let Some(packet) = self.ledger.sent_packet(id).await? else {
                    tracing::warn!(packet_id = %id, "an event names a packet the ledger does not hold");
                    return Ok(None);
                };
                if let Ok(mut packets) = self.packets.lock() {
                    if packets.len() >= REMEMBERED_PACKETS {
                        packets.clear();
                    }
                    packets.insert(id.clone(), packet.clone());
                }
                packet
            }
        };
        Ok(self.rules.reads(packet.terms.count).then_some(packet))
    }

    /// Records `packet` in its chat's log, marks the chains it completes with their flags' ids
    /// and saves the log over the version read (again from the read when another writer saved
    /// first); then raises every chain flag the saved log names. Only a saved log's chains are
    /// raised, so two writers racing cannot flag one game twice, and a step after a failure
    /// between the save and the flag raises it (a flag raised before answers nothing new).
    async fn chain_step(&self, chat: &ChatId, packet: ChatPacket) -> Result<Vec<RiskFlag>, WatchError> {
        if self.rules.chain_links == 0 {
            return Ok(Vec::new());
        }
        for _ in 0..CHAT_LOG_ATTEMPTS {
            let (mut log, version) = self.ledger.chat_log(chat).await?;
            let before = log.clone();
            log.record(packet.clone());
            let newest = log.packets.iter().map(|packet| packet.sent_at_ms).max().unwrap_or(packet.sent_at_ms);
            log.forget_old(&self.rules, newest);
            for chain in log.chains(&self.rules) {
                let first = chain.packets.first().map(PacketId::as_str).unwrap_or_default();
                log.mark_flagged(&chain, &flag_id(FlagRule::Chain, &[chat.as_str(), first]));
            }
            let reach = self.rules.chain_window_ms.saturating_mul(Millis::from(self.rules.chain_links) + 1);
            let keep_until = self.clock.now_ms().max(newest).saturating_add(reach).saturating_add(86_400_000);
            // A redelivery that changes nothing writes nothing.
            if log != before && !self.ledger.save_chat_log(chat, &log, version, keep_until).await? {
                continue;
            }
            let mut flags = Vec::new();
            for (flag_id, chain) in log.flagged_chains() {
                flags.extend(self.raise(chain_flag(chat, flag_id, &chain, &self.rules, self.now())).await?);
            }
            return Ok(flags);
        }
        Err(WatchError::Contended(chat.clone()))
    }

    /// Counts the chat among those `grabber` grabbed in that business day; flags a user past
    /// the limit, once a day (a delivery again after a failure finds the count as it was).
    async fn chats_step(
        &self,
        packet: &Packet,
        chat: &ChatId,
        grabber: &UserId,
        grabbed_at_ms: Millis,
    ) -> Result<Option<RiskFlag>, StoreError> {
        let limit = self.rules.chats_per_day;
        if limit == 0 {
            return Ok(None);
        }
        let day = self.business_day.day_of(grabbed_at_ms);
        let counted = (day.clone(), grabber.clone(), chat.clone());
        if self.chats_counted.lock().is_ok_and(|known| known.contains(&counted)) {
            // This instance counted it, and raised its flag if it had one: nothing to write.
            return Ok(None);
        }
        let chats = self.ledger.count_chat(grabber, &day, chat, limit).await?;
        let flag = if over_chat_limit(chats, &self.rules) {
            let finding = Finding {
                users: vec![grabber.clone()],
                chat_id: None,
                packets: vec![packet.id.clone()],
                amount_cents: 0,
                detail: format!("{grabber} grabbed in {chats} chats on {day}, past the limit of {limit}"),
            };
            let id = flag_id(FlagRule::Chats, &[grabber.as_str(), &day]);
            self.raise(RiskFlag::raised(id, FlagRule::Chats, finding, self.now())).await?
        } else {
            None
        };
        // Remembered only once the step is done: a failure above leaves the retry to count again.
        if let Ok(mut known) = self.chats_counted.lock() {
            if known.len() >= REMEMBERED_CHATS {
                known.clear();
            }
            known.insert(counted);
        }
        Ok(flag)
    }

    /// Counts the grab in the flow between the grabber and the sender; flags a cycle once per
    /// pair and window (a delivery again after a failure finds the flow as it was).
    async fn cycle_step(
        &self,
        packet: &Packet,
        grabber: &UserId,
        amount_cents: Cents,
        grabbed_at_ms: Millis,
    ) -> Result<Option<RiskFlag>, StoreError> {
        if self.rules.cycle_min_each_way == 0 || *grabber == packet.sender {
            return Ok(None);
        }
        let window = self.rules.cycle_window(grabbed_at_ms);
        let keep_until = self.clock.now_ms().max(grabbed_at_ms) + 2 * self.rules.cycle_window_ms + 86_400_000;
        let grab = PairGrab {
            window,
            packet: &packet.id,
            sender: &packet.sender,
            grabber,
            amount_cents,
            keep_until_ms: keep_until,
            most_grabs: self.rules.cycle_grabs_counted(),
        };
        let flow = self.ledger.count_flow(grab).await?;
        if !flow.is_cycle(&self.rules) {
            return Ok(None);
        }
        let (first, second) =
            if grabber <= &packet.sender { (grabber, &packet.sender) } else { (&packet.sender, grabber) };
        let PairFlow { first_took, second_took } = flow;
        let finding = Finding {
            users: vec![first.clone(), second.clone()],
            chat_id: None,
            packets: vec![packet.id.clone()],
            amount_cents: first_took.cents + second_took.cents,
            detail: format!(
                "{first} took {} shares ({} cents) of {second}'s packets and {second} took {} ({} cents) of {first}'s within one window",
                first_took.grabs, first_took.cents, second_took.grabs, second_took.cents
            ),
        };
        let id_parts = [first.as_str(), second.as_str(), &window.to_string()];
        self.raise(RiskFlag::raised(flag_id(FlagRule::Cycle, &id_parts), FlagRule::Cycle, finding, self.now())).await
    }

    /// Raises `flag` unless it was raised before: first the holds the stack places on a flag's
    /// users, then the flag, so a flag is never there without its holds, and a delivery again
    /// after a failure between the two places the rest. A user held already keeps that hold.
    /// Returns the flag when new.
    async fn raise(&self, mut flag: RiskFlag) -> Result<Option<RiskFlag>, StoreError> {
        if self.ledger.flag(&flag.flag_id).await?.is_some() {
            return Ok(None);
        }
        if let Some(scope) = self.rules.hold_on_flag {
            let reason: String =
                format!("flag {}: {}", flag.flag_id, flag.detail).chars().take(HOLD_REASON_CHARS).collect();
            let held: HashMap<UserId, HoldScope> =
                self.ledger.holds().await?.into_iter().map(|hold| (hold.user, hold.scope)).collect();
            // A user held already keeps the hold as it is, with its operator and reason: a flag
            // neither narrows nor rewrites an operator's hold.
            for user in flag.users.iter().filter(|user| !held.contains_key(*user)) {
                let hold = HoldRequest {
                    user: user.clone(),
                    scope,
                    operator: format!("risk:{}", flag.rule.as_str()),
                    reason: reason.clone(),
                    expires_at: None,
                };
                self.ledger.place_hold(&hold, self.clock.now_ms()).await?;
            }
            flag.hold = Some(scope);
        }
        if !self.ledger.raise_flag(&flag).await? {
            return Ok(None);
        }
        metrics::counter!("RiskFlags", "rule" => flag.rule.as_str()).increment(1);
        tracing::warn!(flag_id = %flag.flag_id, rule = flag.rule.as_str(), users = ?flag.users, detail = %flag.detail, "risk flag raised");
        Ok(Some(flag))
    }

    fn now(&self) -> String {
        rfc3339(self.clock.now_ms())
    }
}

/// `packet` as its chat's log keeps it.
fn entry(packet: &Packet, handoff: Option<Handoff>) -> ChatPacket {
    ChatPacket {
        packet_id: packet.id.clone(),
        sender: packet.sender.clone(),
        total_cents: packet.terms.total_cents,
        sent_at_ms: packet.created_at_ms,
        handoff,
        flag: None,
    }
}

/// The flag `flag_id` of `chain` in `chat`, raised at `raised_at`.
fn chain_flag(chat: &ChatId, flag_id: String, chain: &Chain, rules: &RiskRules, raised_at: String) -> RiskFlag {
    let mut users: Vec<UserId> = Vec::new();
    for sender in &chain.senders {
        if !users.contains(sender) {
            users.push(sender.clone());
        }
    }
    let finding = Finding {
        users,
        chat_id: Some(chat.clone()),
        packets: chain.packets.clone(),
        amount_cents: chain.total_cents,
        detail: format!(
            "{} packets in chat {chat}, each sent within {} s by the least or most lucky grabber of the one before, of a total within {} %",
            chain.packets.len(),
            rules.chain_window_ms / 1000,
            rules.chain_tolerance_percent
        ),
    };
    RiskFlag::raised(flag_id, FlagRule::Chain, finding, raised_at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use red_packets::domain::patterns::FlagRule;
    use red_packets::domain::{PacketKind, PacketSpec, PacketTerms, Seed};
    use red_packets::ports::RiskLedger;
    use red_packets_testkit::memory::MemoryLedger;
    use red_packets_testkit::ManualClock;

    fn user(name: &str) -> UserId {
        UserId::from_claim(name).unwrap()
    }

    fn watch(rules: RiskRules) -> (Watch<MemoryLedger, ManualClock>, MemoryLedger) {
        let mut config = Config::from_lookup(|name| (name == "FUNDS").then(|| "none".to_owned())).unwrap();
        config.risk_rules = rules;
        let ledger = MemoryLedger::new(&config);
        (Watch::new(ledger.clone(), &config, ManualClock::starting_now()), ledger)
    }

    /// A packet of one share from `sender` recorded in `ledger`, and its grab by `grabber`.
    async fn exchange(ledger: &MemoryLedger, sender: &str, grabber: &str) -> Observed {
        let spec = PacketSpec::open_to_all(PacketTerms::new(PacketKind::Fixed, 100, 1), 3_600);
        let packet = Packet::new(PacketId::random(), user(sender), &spec, Seed::random(), 1_000);
        ledger.record_packet(&packet, None).await.unwrap();
        Observed::GrabRecorded { packet_id: packet.id, grabber: user(grabber), amount_cents: 100, grabbed_at_ms: 2_000 }
    }

    fn cycles(hold_on_flag: Option<HoldScope>) -> RiskRules {
        RiskRules { cycle_min_each_way: 1, hold_on_flag, ..RiskRules::default() }
    }

    /// A delivery that counted the grab closing a cycle and then failed before the flag (the
    /// count's write landed, the flag's did not) raises the flag when Lambda delivers it again.
    #[tokio::test]
    async fn a_delivery_again_after_a_failure_between_count_and_flag_raises_the_flag() {
        let (watch, ledger) = watch(cycles(None));
        let to_bob = exchange(&ledger, "alice", "bob").await;
        assert!(watch.observe(&to_bob).await.unwrap().is_empty(), "one way is no cycle");
        let to_alice = exchange(&ledger, "bob", "alice").await;
        let Observed::GrabRecorded { packet_id, .. } = &to_alice else { unreachable!() };
        let (bob, alice) = (user("bob"), user("alice"));
        let counted = PairGrab {
            window: 0,
            packet: packet_id,
            sender: &bob,
            grabber: &alice,
            amount_cents: 100,
            keep_until_ms: 0,
            most_grabs: 20,
        };
        ledger.count_flow(counted).await.unwrap();
        let flags = watch.observe(&to_alice).await.unwrap();
        assert_eq!(flags.iter().map(|flag| flag.rule).collect::<Vec<_>>(), [FlagRule::Cycle]);
        assert!(watch.observe(&to_alice).await.unwrap().is_empty(), "and once only");
    }

    /// A flag's hold goes on the users it names, but one an operator held keeps that hold as
    /// placed, from everything or from sending alone.
    #[tokio::test]
    async fn a_flags_hold_never_narrows_an_operators_hold() {
        let (watch, ledger) = watch(cycles(Some(HoldScope::Grab)));
        let everything = HoldRequest {
            user: user("alice"),
            scope: HoldScope::All,
            operator: "anna".into(),
            reason: "fraud".into(),
            expires_at: None,
        };
        ledger.place_hold(&everything, 0).await.unwrap();
        let sending = HoldRequest {
            user: user("carol"),
            scope: HoldScope::Send,
            operator: "anna".into(),
            reason: "spam".into(),
            expires_at: None,
        };
        ledger.place_hold(&sending, 0).await.unwrap();
        watch.observe(&exchange(&ledger, "carol", "alice").await).await.unwrap();
        watch.observe(&exchange(&ledger, "alice", "carol").await).await.unwrap();
        watch.observe(&exchange(&ledger, "alice", "bob").await).await.unwrap();
        let flags = watch.observe(&exchange(&ledger, "bob", "alice").await).await.unwrap();
        assert_eq!(flags[0].hold, Some(HoldScope::Grab));
        let holds: HashMap<String, (HoldScope, String)> = ledger
            .holds()
            .await
            .unwrap()
            .into_iter()
            .map(|hold| (hold.user.to_string(), (hold.scope, hold.operator)))
            .collect();
        assert_eq!(holds["alice"], (HoldScope::All, "anna".to_owned()));
        assert_eq!(holds["bob"], (HoldScope::Grab, "risk:cycle".to_owned()));
        assert_eq!(holds["carol"], (HoldScope::Send, "anna".to_owned()), "an operator's hold stays as placed");
    }
}
