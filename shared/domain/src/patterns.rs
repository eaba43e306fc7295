//! Pattern rules over the ledger's events, with no I/O (docs/RISK.md, "Pattern detection"):
//! 接龙 chains in a chat, money cycles between two users, and one user grabbing in far more
//! chats than peers. The risk function feeds them what the events and the ledger say, and
//! writes the flags they raise; an operator lists flags and resolves each one.

use serde::{Deserialize, Serialize};

use super::grab::LoggedGrab;
use super::ids::{PacketId, UserId};
use super::money::Cents;
use super::risk::HoldScope;
use crate::clock::Millis;

pub use super::flags::{
    flag_id, Finding, FlagAssignment, FlagResolution, FlagResolved, FlagRule, FlagStatus, ListFlags, RiskFlag,
};

/// Most packets a chat's log keeps: a chain longer than this is flagged long before it fills.
pub const CHAT_LOG_PACKETS: usize = 64;

/// The rules' thresholds (the template's `Risk*` parameters). A zero turns its rule off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RiskRules {
    /// Handoffs in a row that make a 接龙 chain (`RISK_CHAIN_LINKS`).
    pub chain_links: u32,
    /// Most time between a packet and the next one of its chain (`RISK_CHAIN_WINDOW_SECONDS`).
    pub chain_window_ms: Millis,
    /// How far, in percent of the last packet's total, the next one's may be
    /// (`RISK_CHAIN_TOLERANCE_PERCENT`).
    pub chain_tolerance_percent: u32,
    /// The window money cycles are counted in (`RISK_CYCLE_WINDOW_SECONDS`).
    pub cycle_window_ms: Millis,
    /// Grabs each way between two users within a window that make a cycle
    /// (`RISK_CYCLE_MIN_EACH_WAY`).
    pub cycle_min_each_way: u32,
    /// Most net flow between them, in percent of the gross, for a cycle
    /// (`RISK_CYCLE_MAX_NET_PERCENT`).
    pub cycle_max_net_percent: u32,
    /// Distinct chats one user may grab in per business day before a flag (`RISK_CHATS_PER_DAY`).
    pub chats_per_day: u32,
    /// Packets of more shares (campaigns) are read by no rule (`RISK_MAX_SHARES`).
    pub max_shares: u32,
    /// The hold a new flag places on every user it names (`RISK_HOLD_ON_FLAG`), if any.
    pub hold_on_flag: Option<HoldScope>,
}

impl Default for RiskRules {
    fn default() -> Self {
        RiskRules::DEFAULT
    }
}

impl RiskRules {
    /// The template's defaults (the settings' defaults, `settings.rs`).
    pub const DEFAULT: RiskRules = RiskRules {
        chain_links: 5,
        chain_window_ms: 600_000,
        chain_tolerance_percent: 20,
        cycle_window_ms: 3_600_000,
        cycle_min_each_way: 5,
        cycle_max_net_percent: 20,
        chats_per_day: 50,
        max_shares: 100,
        hold_on_flag: None,
    };

    /// Whether a packet of `count` shares is read by the rules.
    pub fn reads(&self, count: u32) -> bool {
        count <= self.max_shares
    }

    /// Whether `next` total is within the tolerance of `last`.
    fn close_totals(&self, last: Cents, next: Cents) -> bool {
        last.abs_diff(next).saturating_mul(100) <= last.saturating_mul(u64::from(self.chain_tolerance_percent))
    }

    /// Most grabs between two users counted in one cycle window: enough to see a cycle of
    /// `cycle_min_each_way` each way among them, and a bound on the count's item.
    pub fn cycle_grabs_counted(&self) -> u32 {
        self.cycle_min_each_way.saturating_mul(4).max(20)
    }

    /// The index of the cycle window `at_ms` falls in.
    pub fn cycle_window(&self, at_ms: Millis) -> u64 {
        u64::try_from(at_ms).unwrap_or(0) / u64::try_from(self.cycle_window_ms.max(1)).unwrap_or(1)
    }
}

/// Who grabbed least and most of a packet every share of which was taken (the earliest grab
/// on a tie), and when its last share went: in 接龙 one of the two sends the next packet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handoff {
    /// The smallest share's grabber.
    pub least: UserId,
    /// The largest share's grabber.
    pub most: UserId,
    /// The last grab's time: the game's next packet is the chat's first one after it.
    pub finished_at_ms: Millis,
}

impl Handoff {
    /// The handoff of a packet's grabs; `None` without grabs.
    pub fn of(grabs: &[LoggedGrab]) -> Option<Self> {
        let mut ordered: Vec<&LoggedGrab> = grabs.iter().collect();
        ordered.sort_by_key(|grab| grab.seq);
        let least = ordered.iter().min_by_key(|grab| grab.amount_cents)?;
        let largest = ordered.iter().map(|grab| grab.amount_cents).max()?;
        let most = ordered.iter().find(|grab| grab.amount_cents == largest)?;
        Some(Handoff {
            least: least.user.clone(),
            most: most.user.clone(),
            finished_at_ms: ordered.iter().map(|grab| grab.at_ms).max()?,
        })
    }
}

/// Which grabber sends the next packet of a chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The least lucky (接龙's usual rule).
    Least,
    /// The most lucky.
    Most,
}

/// A packet of a chat as the chain rule keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatPacket {
    /// The packet.
    pub packet_id: PacketId,
    /// Its sender.
    pub sender: UserId,
    /// Its total.
    pub total_cents: Cents,
    /// When it was sent.
    pub sent_at_ms: Millis,
    /// Set once every share was taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<Handoff>,
    /// The id of the chain flag it is part of: a chain is flagged once, and the log names its
    /// flag before the flag is raised, so whoever saved the log raises it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flag: Option<String>,
}

/// A chat's recent packets, in the order they were sent: what the chain rule reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatLog {
    /// At most [`CHAT_LOG_PACKETS`], none older than the chain could reach back.
    pub packets: Vec<ChatPacket>,
}

/// A 接龙 chain found in a chat: each packet after the first sent by the least or most lucky
/// grabber of the one before, of about its total, within the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    /// Its packets, first to last.
    pub packets: Vec<PacketId>,
    /// Their senders, in the same order.
    pub senders: Vec<UserId>,
    /// The money the chain moved (the packets' totals).
    pub total_cents: Cents,
}

impl ChatLog {
    /// Records what is known of a packet: added when new, its handoff filled in once known.
    /// A repeat changes nothing, so a redelivered event is harmless.
    pub fn record(&mut self, packet: ChatPacket) {
        match self.packets.iter_mut().find(|known| known.packet_id == packet.packet_id) {
            Some(known) => {
                if known.handoff.is_none() {
                    known.handoff = packet.handoff;
                }
            }
            None => {
                self.packets.push(packet);
                self.packets.sort_by(|a, b| (a.sent_at_ms, &a.packet_id).cmp(&(b.sent_at_ms, &b.packet_id)));
            }
        }
    }

    /// Forgets packets no chain can reach at `now_ms` any more (sent longer ago than a whole
    /// chain's windows), and the oldest past [`CHAT_LOG_PACKETS`].
    pub fn forget_old(&mut self, rules: &RiskRules, now_ms: Millis) {
        let reach = rules.chain_window_ms.saturating_mul(Millis::from(rules.chain_links) + 1);
        self.packets.retain(|packet| packet.sent_at_ms >= now_ms.saturating_sub(reach));
        let excess = self.packets.len().saturating_sub(CHAT_LOG_PACKETS);
        self.packets.drain(..excess);
    }

    /// The chains of at least `chain_links` handoffs none of whose packets is flagged yet, each
    /// played by one rule throughout: every packet sent by the least lucky grabber of the one
    /// before, or every one by the most lucky (a game has one rule; either one in turn is what
    /// ordinary turn-taking does by chance). A packet's successor is the chat's first packet
    /// sent after its last share went, when that packet is sent within the window, by the rule's
    /// grabber (not its own sender), of a total within the tolerance: a packet of anyone else in
    /// between is the chat going on, not the game.
    pub fn chains(&self, rules: &RiskRules) -> Vec<Chain> {
        if rules.chain_links == 0 {
            return Vec::new();
        }
        let mut chains: Vec<Chain> = Vec::new();
        for role in [Role::Least, Role::Most] {
            for chain in self.chains_under(role, rules) {
                if !chains.iter().any(|found| found.packets == chain.packets) {
                    chains.push(chain);
                }
            }
        }
        chains
    }

    fn chains_under(&self, role: Role, rules: &RiskRules) -> Vec<Chain> {
        let packets = &self.packets;
        // Every packet's predecessors under the rule: a packet is the next round of each
        // packet it is the chat's first packet after.
        let mut predecessors: Vec<Vec<usize>> = vec![Vec::new(); packets.len()];
        for (index, packet) in packets.iter().enumerate() {
            let Some(handoff) = &packet.handoff else { continue };
            let next_sender = match role {
                Role::Least => &handoff.least,
                Role::Most => &handoff.most,
            };
            // The chat's first packet at or after the last share went: the game's next round, or not.
            let next = packets
                .iter()
                .enumerate()
                .skip(index + 1)
                .find(|(_, next)| next.sent_at_ms >= handoff.finished_at_ms)
                .filter(|(_, next)| {
                    next.sent_at_ms - handoff.finished_at_ms <= rules.chain_window_ms
                        && next.sender != packet.sender
                        && next.sender == *next_sender
                        && rules.close_totals(packet.total_cents, next.total_cents)
                });
            if let Some((next, _)) = next {
                predecessors[next].push(index);
            }
        }
        // The longest run of handoffs ending at each packet (packets are in send order, so a
        // predecessor's run is known before its successor's), and the predecessor it runs from.
        let mut links = vec![0usize; packets.len()];
        let mut from: Vec<Option<usize>> = vec![None; packets.len()];
        for index in 0..packets.len() {
            if let Some(&best) = predecessors[index].iter().max_by_key(|&&before| (links[before], before)) {
                links[index] = links[best] + 1;
                from[index] = Some(best);
            }
        }
        let continued: Vec<bool> = (0..packets.len()).map(|index| from.contains(&Some(index))).collect();
        let mut chains = Vec::new();
        for end in (0..packets.len()).filter(|&index| !continued[index] && links[index] >= rules.chain_links as usize) {
            let mut members = vec![end];
            while let Some(before) = from[*members.last().expect("an end")] {
                members.push(before);
            }
            members.reverse();
            if members.iter().all(|&index| packets[index].flag.is_none()) {
                chains.push(Chain {
                    packets: members.iter().map(|&index| packets[index].packet_id.clone()).collect(),
                    senders: members.iter().map(|&index| packets[index].sender.clone()).collect(),
                    total_cents: members.iter().map(|&index| packets[index].total_cents).sum(),
                });
            }
        }
        chains
    }

    /// Marks `chain`'s packets as part of the flag `flag_id`.
    pub fn mark_flagged(&mut self, chain: &Chain, flag_id: &str) {
        for packet in &mut self.packets {
            if chain.packets.contains(&packet.packet_id) {
                packet.flag = Some(flag_id.to_owned());
            }
        }
    }

    /// Every chain flag the log names, with the chain's packets it still holds, in send order.
    pub fn flagged_chains(&self) -> Vec<(String, Chain)> {
        let mut chains: Vec<(String, Chain)> = Vec::new();
        for packet in &self.packets {
            let Some(flag_id) = &packet.flag else { continue };
            let index = match chains.iter().position(|(id, _)| id == flag_id) {
                Some(index) => index,
                None => {
                    let empty = Chain { packets: Vec::new(), senders: Vec::new(), total_cents: 0 };
                    chains.push((flag_id.clone(), empty));
                    chains.len() - 1
                }
            };
            let chain = &mut chains[index].1;
            chain.packets.push(packet.packet_id.clone());
            chain.senders.push(packet.sender.clone());
            chain.total_cents += packet.total_cents;
        }
        chains
    }
}

/// Grabs one way between two users within a cycle window: the grabber took `grabs` shares of
/// the other's packets, `cents` in all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flow {
    /// How many shares.
    pub grabs: u32,
    /// How much.
    pub cents: Cents,
}

/// One grab between two users, to count in their flow (`RiskLedger::count_flow`).
#[derive(Debug, Clone, Copy)]
pub struct PairGrab<'a> {
    /// The cycle window it falls in.
    pub window: u64,
    /// The packet grabbed.
    pub packet: &'a PacketId,
    /// Its sender.
    pub sender: &'a UserId,
    /// Its grabber.
    pub grabber: &'a UserId,
    /// The share.
    pub amount_cents: Cents,
    /// Until when the count is kept.
    pub keep_until_ms: Millis,
    /// Most grabs counted in the window ([`RiskRules::cycle_grabs_counted`]).
    pub most_grabs: u32,
}

/// The money between two users within a cycle window, each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PairFlow {
    /// Shares the first (in id order) took of the second's packets.
    pub first_took: Flow,
    /// Shares the second took of the first's packets.
    pub second_took: Flow,
}

impl PairFlow {
    /// Whether the two pass money back and forth: at least `cycle_min_each_way` grabs each way
    /// and a net flow of at most `cycle_max_net_percent` of the gross.
    pub fn is_cycle(&self, rules: &RiskRules) -> bool {
        let (first, second) = (self.first_took, self.second_took);
        let gross = first.cents.saturating_add(second.cents);
        rules.cycle_min_each_way > 0
            && first.grabs >= rules.cycle_min_each_way
            && second.grabs >= rules.cycle_min_each_way
            && gross > 0
            && first.cents.abs_diff(second.cents).saturating_mul(100)
                <= gross.saturating_mul(u64::from(rules.cycle_max_net_percent))
    }
}

/// Whether a user who grabbed in `chats` distinct chats this business day is past the limit
/// (the flag's id, from the user and the day, makes it one flag a day).
pub fn over_chat_limit(chats: u32, rules: &RiskRules) -> bool {
    rules.chats_per_day > 0 && chats > rules.chats_per_day
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str) -> UserId {
        UserId::from_claim(name).unwrap()
    }

    fn id(n: u8) -> PacketId {
        PacketId::parse(&format!("{n:032x}")).unwrap()
    }

    fn sent(n: u8, sender: &str, total_cents: Cents, at_ms: Millis, least: Option<&str>) -> ChatPacket {
        ChatPacket {
            packet_id: id(n),
            sender: user(sender),
            total_cents,
            sent_at_ms: at_ms,
            handoff: least.map(|least| Handoff {
                least: user(least),
                most: user("zed"),
                finished_at_ms: at_ms + 60_000,
            }),
            flag: None,
        }
    }

    /// The rules with chains of three handoffs (four packets).
    fn three_links() -> RiskRules {
        RiskRules { chain_links: 3, ..RiskRules::default() }
    }

    /// A chain of `links` handoffs: each packet's least lucky grabber sends the next.
    fn chain_log(links: u8) -> ChatLog {
        let mut log = ChatLog::default();
        let names = ["a", "b", "c", "d", "e", "f", "g"];
        for n in 0..=links {
            let sender = names[usize::from(n)];
            let least = names.get(usize::from(n) + 1).copied();
            let finished = n < links;
            log.record(sent(n, sender, 1000 + u64::from(n) * 10, i64::from(n) * 120_000, least.filter(|_| finished)));
        }
        log
    }

    #[test]
    fn a_chain_of_k_handoffs_is_found_and_one_short_is_not() {
        let rules = three_links();
        assert!(chain_log(2).chains(&rules).is_empty(), "two handoffs are not a chain of three");
        let chains = chain_log(3).chains(&rules);
        assert_eq!(chains.len(), 1);
        assert_eq!(chains[0].packets, (0..4).map(id).collect::<Vec<_>>());
        assert_eq!(chains[0].total_cents, 1000 + 1010 + 1020 + 1030);
    }

    #[test]
    fn a_chain_breaks_on_a_late_packet_a_far_total_another_sender_or_another_rule() {
        let rules = three_links();
        let mut late = chain_log(3);
        late.packets[3].sent_at_ms = late.packets[2].sent_at_ms + 60_000 + rules.chain_window_ms + 1;
        assert!(late.chains(&rules).is_empty());
        let mut far = chain_log(3);
        far.packets[2].total_cents = 2000;
        assert!(far.chains(&rules).is_empty());
        let mut other = chain_log(3);
        other.packets[1].sender = user("x");
        assert!(other.chains(&rules).is_empty());
        // Another member's packet after the second one's last share, before the third: the chat
        // went on, the game did not.
        let mut interleaved = chain_log(3);
        interleaved.record(sent(9, "x", 1000, 180_001, None));
        assert!(interleaved.chains(&rules).is_empty());
        // The second handoff to the most lucky grabber instead: least, most, least is no game's rule.
        let mut mixed = chain_log(3);
        mixed.packets[1].handoff = Some(Handoff { least: user("zed"), most: user("c"), finished_at_ms: 180_000 });
        assert!(mixed.chains(&rules).is_empty());
        let mut most = chain_log(3);
        for packet in most.packets.iter_mut() {
            packet.handoff =
                packet.handoff.take().map(|handoff| Handoff { least: handoff.most, most: handoff.least, ..handoff });
        }
        assert_eq!(most.chains(&rules).len(), 1, "the most lucky sending next throughout is a chain too");
    }

    #[test]
    fn the_order_events_arrive_in_does_not_matter_and_a_repeat_changes_nothing() {
        let rules = three_links();
        let whole = chain_log(3);
        let mut reversed = ChatLog::default();
        for packet in whole.packets.iter().rev() {
            let mut bare = packet.clone();
            bare.handoff = None;
            reversed.record(bare);
        }
        for packet in whole.packets.iter().rev() {
            reversed.record(packet.clone());
            reversed.record(packet.clone());
        }
        assert_eq!(reversed, whole);
        assert_eq!(reversed.chains(&rules).len(), 1);
    }

    /// An unrelated packet that also hands off to the game's next sender does not cut the game:
    /// the next round continues the longer run.
    #[test]
    fn a_round_two_packets_hand_off_to_continues_the_longer_run() {
        let rules = three_links();
        let mut log = chain_log(3);
        // Sent after the game's second packet, finished before its third went out, its least
        // lucky grabber the third's sender.
        let mut stray = sent(9, "x", 1000, 130_000, Some("c"));
        stray.handoff.as_mut().unwrap().finished_at_ms = 170_000;
        log.record(stray);
        let chains = log.chains(&rules);
        assert_eq!(chains.len(), 1, "{chains:?}");
        assert_eq!(chains[0].packets, (0..4).map(id).collect::<Vec<_>>());
    }

    #[test]
    fn a_flagged_chain_is_not_found_again_and_old_packets_are_forgotten() {
        let rules = three_links();
        let mut log = chain_log(3);
        let chain = log.chains(&rules).remove(0);
        log.mark_flagged(&chain, "chain-0011223344556677");
        assert!(log.chains(&rules).is_empty());
        let flagged = log.flagged_chains();
        assert_eq!(flagged.len(), 1);
        assert_eq!((flagged[0].0.as_str(), &flagged[0].1), ("chain-0011223344556677", &chain));
        log.forget_old(&rules, 4 * rules.chain_window_ms + 1);
        assert_eq!(log.packets.len(), 3, "the first packet is out of any chain's reach");
    }

    #[test]
    fn handoffs_name_the_least_and_most_lucky_earliest_on_a_tie() {
        let (a, b, c, d, e) = (user("a"), user("b"), user("c"), user("d"), user("e"));
        let grab =
            |seq, user: &UserId, amount_cents, at_ms| LoggedGrab { seq, user: user.clone(), amount_cents, at_ms };
        let grabs =
            [grab(3, &c, 9, 30), grab(1, &a, 5, 10), grab(2, &b, 1, 20), grab(4, &d, 1, 40), grab(5, &e, 9, 50)];
        let handoff = Handoff::of(&grabs).unwrap();
        assert_eq!(handoff, Handoff { least: b.clone(), most: c.clone(), finished_at_ms: 50 });
        assert_eq!(Handoff::of(&[]), None);
    }

    #[test]
    fn a_cycle_needs_enough_grabs_each_way_and_a_small_net() {
        let rules = RiskRules::default();
        let flow = |grabs, cents| Flow { grabs, cents };
        assert!(PairFlow { first_took: flow(5, 1000), second_took: flow(5, 900) }.is_cycle(&rules));
        assert!(!PairFlow { first_took: flow(4, 1000), second_took: flow(5, 900) }.is_cycle(&rules));
        assert!(!PairFlow { first_took: flow(5, 1000), second_took: flow(5, 500) }.is_cycle(&rules));
        assert!(!PairFlow::default().is_cycle(&RiskRules { cycle_min_each_way: 0, ..rules }));
    }

    #[test]
    fn the_chat_limit_is_passed_by_the_first_chat_over_it_and_zero_turns_it_off() {
        let rules = RiskRules { chats_per_day: 3, ..RiskRules::default() };
        let flagged: Vec<u32> = (1..6).filter(|&chats| over_chat_limit(chats, &rules)).collect();
        assert_eq!(flagged, vec![4, 5]);
        assert!(!over_chat_limit(1, &RiskRules { chats_per_day: 0, ..rules }));
    }
}
