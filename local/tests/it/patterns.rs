//! Pattern detection on the real stores: packets sent, grabbed and settled through the real
//! handlers on Redis and DynamoDB Local; the ledger's events read from the table's stream and
//! passed through template.yaml's events Pipe and the risk rule's pattern, as AWS would deliver
//! them; the risk function's handler running the rules on the ledger. A synthetic 接龙 chain is
//! flagged and an ordinary busy chat of the same size is not (with the wallet on); every event
//! delivered twice
//! raises nothing twice; operators list and resolve the flag through their URL; a money cycle
//! and a user grabbing in too many chats are flagged, and, when the stack says so, held.

use std::collections::HashMap;

use crate::support::stack::Stack;
use local::pipe::{bus_event, rule_detail_types, Pipe, StreamReader};
use red_packets::adapters::DynamoLedger;
use red_packets::domain::patterns::{FlagRule, RiskFlag, RiskRules};
use red_packets::domain::risk::HoldScope;
use red_packets::domain::wallet::TopUp;
use red_packets::domain::{Funds, UserId};
use red_packets::ports::Wallets;
use red_packets::{Clock, Config};
use risk::Watch;
use serde_json::{json, Value};

/// A stack with the risk function beside it, fed from the table's stream.
struct Watched {
    stack: Stack,
    watch: Watch<DynamoLedger, std::sync::Arc<red_packets_testkit::ManualClock>>,
    stream: StreamReader,
    pipe: Pipe,
    detail_types: Vec<String>,
    /// Every event delivered so far, to deliver again.
    delivered: Vec<Value>,
    /// Every `RiskFlagged` event the Pipe published.
    published_flags: Vec<Value>,
}

impl Watched {
    /// With the wallet on (`funds`), every one of [`MEMBERS`] and the test's other users holds a
    /// balance to send from.
    async fn new(name: &str, rules: RiskRules, funds: Funds) -> Watched {
        let mut config = Config::from_env().expect("configuration");
        config.funds = funds;
        config.risk_rules = rules;
        let stack = Stack::with_config(name, config).await;
        if funds == Funds::Wallet {
            for member in MEMBERS {
                let topup = TopUp {
                    user: UserId::from_claim(member).unwrap(),
                    amount_cents: 100_000,
                    reference: format!("pay-{member}"),
                };
                assert!(stack.ledger.top_up(&topup, stack.clock.now_ms()).await.unwrap().applied);
            }
        }
        let dynamodb = DynamoLedger::client_from_env().unwrap();
        let stream = StreamReader::enable(&dynamodb, &stack.config.table_name).await.expect("the table's stream");
        let ledger = DynamoLedger::new(local::calls::dynamodb(dynamodb, "risk"), &stack.config);
        let watch = Watch::new(ledger, &stack.config, stack.clock.clone());
        Watched {
            stack,
            watch,
            stream,
            pipe: Pipe::of_template(),
            detail_types: rule_detail_types("RiskFunction"),
            delivered: Vec::new(),
            published_flags: Vec::new(),
        }
    }

    /// Settles, then delivers every new event the rule lets through to the risk function:
    /// the flags raised.
    async fn settle_and_deliver(&mut self) -> Vec<RiskFlag> {
        self.stack.settle().await;
        let mut flags = Vec::new();
        for record in self.stream.read_new().await.expect("the stream") {
            let Some((detail_type, detail)) = self.pipe.publish(&record) else { continue };
            if detail_type == "RiskFlagged" {
                let errors: Vec<String> = crate::support::event_schema("RiskFlagged")
                    .iter_errors(&detail)
                    .map(|error| error.to_string())
                    .collect();
                assert!(errors.is_empty(), "{detail}: {errors:?}");
                self.published_flags.push(detail.clone());
            }
            if !self.detail_types.contains(&detail_type) {
                continue;
            }
            let event = bus_event(&detail_type, &detail);
            flags.extend(self.deliver(event.clone()).await);
            self.delivered.push(event);
        }
        flags
    }

    async fn deliver(&self, event: Value) -> Vec<RiskFlag> {
        let invocation = lambda_runtime::LambdaEvent::new(event, lambda_runtime::Context::default());
        risk::handle(&self.watch, invocation).await.expect("the risk function takes the event").flags
    }

    /// A packet of `total_cents` in `count` shares sent by `sender` into `chat`, grabbed by
    /// `grabbers` in that order: its id and each grabber's share.
    async fn round(
        &self,
        chat: &str,
        sender: &str,
        total_cents: u64,
        grabbers: &[&str],
    ) -> (String, Vec<(String, u64)>) {
        let body = json!({ "total_cents": total_cents, "count": grabbers.len(), "chat_id": chat });
        let id = self.stack.send(sender, body).await;
        let mut shares = Vec::new();
        for grabber in grabbers {
            let (status, grab) = self.stack.grab(&id, grabber).await;
            assert_eq!(status, 200, "{grab}");
            shares.push((grabber.to_string(), grab["amount_cents"].as_u64().unwrap()));
        }
        (id, shares)
    }
}

/// The least lucky grabber (the earliest on a tie), the most lucky, and one of neither.
fn ranks(shares: &[(String, u64)]) -> (String, String, String) {
    let least = shares.iter().min_by_key(|(_, amount)| *amount).unwrap();
    let most = shares.iter().rev().max_by_key(|(_, amount)| *amount).unwrap();
    let most = shares.iter().find(|(_, amount)| *amount == most.1).unwrap();
    let middle = shares.iter().find(|(user, _)| *user != least.0 && *user != most.0).unwrap();
    (least.0.clone(), most.0.clone(), middle.0.clone())
}

const MEMBERS: [&str; 6] = ["ann", "ben", "cat", "dan", "eve", "fay"];

/// `sender`'s chat-mates who grab: every member but the sender, four of them.
fn grabbers(sender: &str) -> Vec<&'static str> {
    MEMBERS.iter().copied().filter(|member| *member != sender).take(4).collect()
}

/// Four packets in `chat`, each a minute after the one before, of about the same total; each
/// after the first sent by whom `next` picks from the one before's (least, most, neither).
async fn play(watched: &mut Watched, chat: &str, next: fn(&(String, String, String)) -> String) -> Vec<RiskFlag> {
    let mut sender = "ann".to_owned();
    let mut flags = Vec::new();
    for (round, total) in [1_000, 1_050, 980, 1_020].into_iter().enumerate() {
        let (_, shares) = watched.round(chat, &sender, total, &grabbers(&sender)).await;
        flags.extend(watched.settle_and_deliver().await);
        assert!(round == 3 || flags.is_empty(), "no flag before the third handoff");
        sender = next(&ranks(&shares));
        watched.stack.clock.advance(60_000);
    }
    flags
}

#[tokio::test]
async fn a_jielong_chain_is_flagged_and_a_busy_chat_of_the_same_size_is_not() {
    // With the wallet on: a finished packet's grabs are its grabbers' credits, read in a batch.
    let rules = RiskRules { chain_links: 3, ..RiskRules::default() };
    let mut watched = Watched::new("jielong", rules, Funds::Wallet).await;
    // The same members, amounts and pace: in the busy chat whoever sends next grabbed neither
    // least nor most of the packet before.
    let busy = play(&mut watched, "busy-chat", |(_, _, neither)| neither.clone()).await;
    assert!(busy.is_empty(), "an ordinary busy chat is not a chain: {busy:?}");
    let flags = play(&mut watched, "jielong-chat", |(least, _, _)| least.clone()).await;
    assert_eq!(flags.len(), 1, "one chain, flagged once: {flags:?}");
    let chain = &flags[0];
    assert_eq!((chain.rule, chain.chat_id.as_ref().map(|chat| chat.as_str())), (FlagRule::Chain, Some("jielong-chat")));
    assert_eq!(chain.packets.len(), 4, "three handoffs: {chain:?}");
    assert_eq!(chain.amount_cents, 1_000 + 1_050 + 980 + 1_020);

    // Every event again, as EventBridge may deliver it: nothing new.
    for event in watched.delivered.clone() {
        assert!(watched.deliver(event).await.is_empty(), "a redelivered event raises nothing");
    }
    // The flag is on the bus, as its own event.
    watched.settle_and_deliver().await;
    assert_eq!(watched.published_flags.len(), 1, "{:?}", watched.published_flags);
    let event = &watched.published_flags[0];
    assert_eq!(
        (event["reference"].as_str(), event["chat_id"].as_str()),
        (Some(chain.flag_id.as_str()), Some("jielong-chat"))
    );

    // Operators list it and resolve it, once.
    let stack = &watched.stack;
    let (status, listed) = stack.ops("anna", "GET /ops/v1/flags", &[], None).await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(1), "{listed}");
    let resolve = json!({ "outcome": "confirmed", "note": "a 接龙 game" });
    let flag = [("flag_id", chain.flag_id.as_str())];
    let (status, resolved) = stack.ops("anna", "POST /ops/v1/flags/{flag_id}/resolve", &flag, Some(&resolve)).await;
    assert_eq!((status, resolved["changed"].as_bool()), (200, Some(true)), "{resolved}");
    let (_, again) = stack.ops("ben", "POST /ops/v1/flags/{flag_id}/resolve", &flag, Some(&resolve)).await;
    assert_eq!(again["changed"].as_bool(), Some(false), "resolved once: {again}");
    assert_eq!(again["flag"]["resolved_by"], "anna");
    let (_, open) = stack.ops("anna", "GET /ops/v1/flags", &[], None).await;
    assert_eq!(open["items"].as_array().map(Vec::len), Some(0), "{open}");
    let day = stack.config.business_day.day_of(stack.clock.now_ms());
    let (_, audit) = stack.ops("anna", "GET /ops/v1/audit/{day}", &[("day", &day)], None).await;
    let entries: Vec<&Value> =
        audit["entries"].as_array().unwrap().iter().filter(|entry| entry["action"] == "flag_resolved").collect();
    assert_eq!(entries.len(), 1, "{audit}");
}

#[tokio::test]
async fn a_money_cycle_and_a_user_in_too_many_chats_are_flagged_and_held() {
    let rules = RiskRules {
        cycle_min_each_way: 3,
        chats_per_day: 3,
        hold_on_flag: Some(HoldScope::Grab),
        ..RiskRules::default()
    };
    let mut watched = Watched::new("cycles", rules, Funds::None).await;
    // alice and bob pass 1.00 back and forth three times each; carol grabs from alice as often
    // but never gives back.
    for _ in 0..3 {
        let to_bob =
            watched.stack.send("alice", json!({ "total_cents": 100, "count": 1, "recipients": ["bob"] })).await;
        assert_eq!(watched.stack.grab(&to_bob, "bob").await.0, 200);
        let to_alice =
            watched.stack.send("bob", json!({ "total_cents": 100, "count": 1, "recipients": ["alice"] })).await;
        assert_eq!(watched.stack.grab(&to_alice, "alice").await.0, 200);
        let to_carol =
            watched.stack.send("alice", json!({ "total_cents": 100, "count": 1, "recipients": ["carol"] })).await;
        assert_eq!(watched.stack.grab(&to_carol, "carol").await.0, 200);
    }
    // mallory grabs in four chats, peggy in three.
    for n in 0..4 {
        let (_, _) =
            watched.round(&format!("chat-{n}"), "host", 100, &["mallory", "peggy"][..if n < 3 { 2 } else { 1 }]).await;
    }
    let flags = watched.settle_and_deliver().await;
    let mut by_rule: HashMap<FlagRule, Vec<&RiskFlag>> = HashMap::new();
    for flag in &flags {
        by_rule.entry(flag.rule).or_default().push(flag);
    }
    let cycles = &by_rule[&FlagRule::Cycle];
    assert_eq!(cycles.len(), 1, "{flags:?}");
    let names: Vec<&str> = cycles[0].users.iter().map(|user| user.as_str()).collect();
    assert_eq!(names, ["alice", "bob"], "carol takes without giving back: {flags:?}");
    let chats = &by_rule[&FlagRule::Chats];
    assert_eq!(chats.len(), 1, "{flags:?}");
    assert_eq!(chats[0].users[0].as_str(), "mallory", "peggy grabbed in three chats, the limit: {flags:?}");
    assert!(flags.iter().all(|flag| flag.hold == Some(HoldScope::Grab)), "{flags:?}");

    // The holds the flags placed, named as the rule's, stop grabs at the next refresh.
    let (_, holds) = watched.stack.ops("anna", "GET /ops/v1/holds", &[], None).await;
    let mut held: Vec<(&str, &str)> = holds["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hold| (hold["user"].as_str().unwrap(), hold["operator"].as_str().unwrap()))
        .collect();
    held.sort();
    assert_eq!(held, [("alice", "risk:cycle"), ("bob", "risk:cycle"), ("mallory", "risk:chats")], "{holds}");
    watched.stack.clock.advance(watched.stack.config.hold_refresh.as_millis() as i64 + 1);
    let next = watched.stack.send("host", json!({ "total_cents": 100, "count": 2 })).await;
    let (status, refused) = watched.stack.grab(&next, "mallory").await;
    assert_eq!((status, refused["error"]["code"].as_str()), (403, Some("account_held")), "{refused}");
    assert_eq!(watched.stack.grab(&next, "peggy").await.0, 200, "peggy is not held");

    for event in watched.delivered.clone() {
        assert!(watched.deliver(event).await.is_empty(), "a redelivered event raises nothing");
    }
}
