//! Money out and corrections, through the real handlers on the real Redis and DynamoDB Local:
//! a withdrawal asked for through `POST /me/withdrawals` and resolved by the payments system
//! through the funds function, each step delivered twice; adjustments one operator proposes
//! and only another approves; a chargeback; and the books (top-ups − withdrawals paid ±
//! adjustments = wallets + open packets + pending withdrawals) exact under live traffic of
//! every kind, with each planted difference of the new kinds classified.

use std::collections::HashMap;
use std::sync::Arc;

use crate::support::stack::Stack;
use aws_sdk_dynamodb::types::AttributeValue;
use lambda_runtime::{Context, Diagnostic, LambdaEvent};
use rand::{Rng, SeedableRng};
use red_packets::adapters::{DynamoLedger, ReportDirectory};
use red_packets::domain::books::{DifferenceClass, Reconciliation};
use red_packets::domain::wallet::TopUp;
use red_packets::domain::{Cents, Funds, MovementKind, UserId};
use red_packets::funds::{reconcile, Cutoff, FundsEntry};
use red_packets::ports::Wallets;
use red_packets::{Clock, Config};
use serde_json::{json, Value};

async fn wallet_stack(name: &str) -> Stack {
    let mut config = Config::from_env().expect("configuration");
    config.funds = Funds::Wallet;
    config.daily.max_sends = 1_000_000;
    config.daily.max_sent_cents = 1_000_000_000;
    Stack::with_config(name, config).await
}

fn user(name: &str) -> UserId {
    UserId::from_claim(name).unwrap()
}

async fn top_up(stack: &Stack, who: &str, amount_cents: Cents, reference: &str) {
    let topup = TopUp { user: user(who), amount_cents, reference: reference.into() };
    stack.ledger.top_up(&topup, stack.clock.now_ms()).await.expect("top-up");
}

async fn balance(stack: &Stack, who: &str) -> Cents {
    stack.ledger.balance(&user(who)).await.unwrap()
}

/// The funds entry points, as their callers reach them, each on a DynamoDB client of its own
/// (its calls recorded as that function's, for its role's check): the payments system's
/// requests invoke `funds`; an operator's (an adjustment step, the audit trail) are the
/// operators' API's route for it, called by the operator the payload names (its `proposer` or
/// `approver`, taken out of the body: the signed-in operator is the one), its answer under the
/// payload's key as the funds function answers; a refusal is read back as the payments entry
/// point would say it (`<field>: <message>`).
async fn funds(stack: &Stack, payload: Value) -> Result<Value, Diagnostic> {
    let entry =
        serde_json::from_value(payload.clone()).map_or(FundsEntry::Payments, |request| FundsEntry::serving(&request));
    if entry == FundsEntry::Payments {
        let client = local::calls::dynamodb(DynamoLedger::client_from_env().unwrap(), "funds");
        let ledger = DynamoLedger::new(client, &stack.config);
        let reports = ReportDirectory::new(std::env::temp_dir().join("money-out-reports"));
        let event = LambdaEvent::new(payload, Context::default());
        return funds::handle(&ledger, stack.clock.as_ref(), &reports, FundsEntry::Payments, event)
            .await
            .map(|response| serde_json::to_value(response).unwrap())
            .map_err(Diagnostic::from);
    }
    let (key, mut request) = payload
        .as_object()
        .and_then(|fields| fields.iter().next())
        .map(|(key, request)| (key.clone(), request.clone()))
        .unwrap();
    let text = |field: &str| request[field].as_str().unwrap_or_default().to_owned();
    // The operator, the route, its parameters and body, and the funds answer's key.
    let (operator, route, parameters, body, answer) = match key.as_str() {
        "propose_adjustment" => {
            let proposer = request.as_object_mut().and_then(|fields| fields.remove("proposer")).unwrap();
            let proposer = proposer.as_str().unwrap().to_owned();
            (proposer, "POST /ops/v1/adjustments", vec![], Some(request.clone()), "adjustment")
        }
        "approve_adjustment" => {
            let route = "POST /ops/v1/adjustments/{reference}/approve";
            (text("approver"), route, vec![("reference", text("reference"))], None, "adjustment")
        }
        "audit" => ("auditor".to_owned(), "GET /ops/v1/audit/{day}", vec![("day", text("day"))], None, "audit"),
        other => panic!("no operators' route for {other}"),
    };
    let parameters: Vec<(&str, &str)> = parameters.iter().map(|(name, value)| (*name, value.as_str())).collect();
    let (status, body) = stack.ops(&operator, route, &parameters, body.as_ref()).await;
    match status {
        200 => Ok(json!({ answer: body })),
        status => Err(Diagnostic {
            error_type: if status == 400 { "InvalidFundsRequest".into() } else { format!("HTTP {status}") },
            error_message: format!(
                "{}: {}",
                body["error"]["field"].as_str().unwrap_or(""),
                body["error"]["message"].as_str().unwrap_or("")
            ),
        }),
    }
}

async fn books(stack: &Stack, when: &str) -> Reconciliation {
    let books = reconcile(&stack.ledger, Cutoff::quiet(), 1).await.expect("reconciliation runs");
    assert!(books.balanced(), "{when}: {:#?}", books.differences);
    books
}

/// A withdrawal's item, read raw.
async fn withdrawal_item(stack: &Stack, id: &str) -> HashMap<String, AttributeValue> {
    let dynamo = DynamoLedger::client_from_env().unwrap();
    let key = HashMap::from([
        ("pk".to_owned(), AttributeValue::S(format!("WITHDRAWAL#{id}"))),
        ("sk".to_owned(), AttributeValue::S("WITHDRAWAL".into())),
    ]);
    let item = dynamo.get_item().table_name(&stack.config.table_name).set_key(Some(key)).send().await.unwrap();
    item.item.expect("the withdrawal is in the ledger")
}

fn event_type(item: &HashMap<String, AttributeValue>) -> String {
    let event = item["event"].as_m().unwrap();
    event["type"].as_s().unwrap().clone()
}

#[tokio::test]
async fn a_withdrawal_paid_and_one_failed_each_delivered_twice_conserve_the_money() {
    let stack = wallet_stack("money-out-withdraw").await;
    top_up(&stack, "alice", 1_000, "mo-pay-1").await;

    // Asked for: debited at once, 201; a retry under its key is the same withdrawal, 200; the key with
    // another request is a 422, as for a send.
    let ask = json!({ "amount_cents": 300, "destination": "card-1" });
    let (status, paid) = stack.withdraw("alice", &ask, "out-1").await;
    assert_eq!(status, 201, "{paid}");
    assert_eq!((paid["status"].as_str(), paid["balance_cents"].as_u64()), (Some("pending"), Some(700)), "{paid}");
    let (again, replayed) = stack.withdraw("alice", &ask, "out-1").await;
    assert_eq!(
        (again, &replayed["withdrawal_id"], replayed["created"].as_bool()),
        (200, &paid["withdrawal_id"], Some(false))
    );
    assert_eq!(balance(&stack, "alice").await, 700, "a retry never debits twice");
    let (reused, reply) =
        stack.withdraw("alice", &json!({ "amount_cents": 301, "destination": "card-1" }), "out-1").await;
    assert_eq!((reused, reply["error"]["code"].as_str()), (422, Some("idempotency_key_reused")), "{reply}");
    let (short, reply) =
        stack.withdraw("alice", &json!({ "amount_cents": 701, "destination": "card-1" }), "out-2").await;
    assert_eq!((short, reply["error"]["code"].as_str()), (402, Some("insufficient_funds")), "{reply}");
    let (bad, reply) = stack.withdraw("alice", &json!({ "amount_cents": 0, "destination": "card-1" }), "out-3").await;
    assert_eq!((bad, reply["error"]["field"].as_str()), (400, Some("amount_cents")), "{reply}");
    let (status, failing) =
        stack.withdraw("alice", &json!({ "amount_cents": 200, "destination": "card-2" }), "out-4").await;
    assert_eq!(status, 201, "{failing}");
    assert_eq!(balance(&stack, "alice").await, 500);
    let pending = books(&stack, "two withdrawals pending").await;
    assert_eq!((pending.pending_withdrawals_cents, pending.withdrawn_cents), (500, 0));

    // The payments system's word, each delivered twice: paid once, failed once (the money back).
    let paid_id = paid["withdrawal_id"].as_str().unwrap();
    let failed_id = failing["withdrawal_id"].as_str().unwrap();
    let word =
        |outcome: &str, id: &str, reference: &str| json!({ outcome: { "withdrawal_id": id, "reference": reference } });
    for delivery in [true, false] {
        let result = funds(&stack, word("withdrawal_paid", paid_id, "payout-1")).await.unwrap();
        assert_eq!(result["withdrawal"]["applied"].as_bool(), Some(delivery), "{result}");
        assert_eq!(result["withdrawal"]["withdrawal"]["status"], "paid");
        let result = funds(&stack, word("withdrawal_failed", failed_id, "payout-2")).await.unwrap();
        assert_eq!(result["withdrawal"]["applied"].as_bool(), Some(delivery), "{result}");
    }
    assert_eq!(balance(&stack, "alice").await, 700, "the failed one's 200 came back, once");
    let contradiction = funds(&stack, word("withdrawal_failed", paid_id, "payout-1")).await.unwrap_err();
    assert_eq!(contradiction.error_type, "InvalidFundsRequest");
    assert!(contradiction.error_message.starts_with("withdrawal_id: already paid"), "{}", contradiction.error_message);
    let unknown = funds(&stack, word("withdrawal_paid", "wd-00000000000000000000000000000000", "p")).await.unwrap_err();
    assert!(unknown.error_message.contains("no such withdrawal"), "{}", unknown.error_message);

    // What the payments system reads to pay one out: the destination the user chose.
    let found = funds(&stack, json!({ "withdrawal": { "withdrawal_id": failed_id } })).await.unwrap();
    let found = &found["withdrawal_found"];
    assert_eq!(
        (found["destination"].as_str(), found["amount_cents"].as_u64(), found["status"].as_str()),
        (Some("card-2"), Some(200), Some("failed"))
    );
    let unknown =
        funds(&stack, json!({ "withdrawal": { "withdrawal_id": "wd-00000000000000000000000000000001" } })).await;
    assert!(unknown.unwrap_err().error_message.starts_with("withdrawal_id: no such withdrawal"));

    // Each step is an event on its item: asked for, then paid or failed.
    assert_eq!(event_type(&withdrawal_item(&stack, paid_id).await), "WithdrawalPaid");
    assert_eq!(event_type(&withdrawal_item(&stack, failed_id).await), "WithdrawalFailed");

    // The wallet shows each withdrawal's state, and the return.
    let (status, page) = stack.wallet("alice", "").await;
    assert_eq!(status, 200, "{page}");
    let line = |kind: &str, id: &str| {
        page["items"].as_array().unwrap().iter().find(|m| m["kind"] == kind && m["reference"] == id).cloned()
    };
    assert_eq!(line("withdrawal", paid_id).unwrap()["status"], "paid", "{page}");
    assert_eq!(line("withdrawal", failed_id).unwrap()["status"], "failed", "{page}");
    assert_eq!(line("withdrawal_return", failed_id).unwrap()["amount_cents"], 200, "{page}");
    assert_eq!(page["balance_cents"], 700);

    let books = books(&stack, "after both resolutions").await;
    assert_eq!((books.topups_cents, books.withdrawn_cents, books.pending_withdrawals_cents), (1_000, 300, 0));
    assert_eq!(books.balances_cents, 700);
}

#[tokio::test]
async fn an_adjustment_is_refused_to_its_proposer_and_applied_once_by_another_operator() {
    let stack = wallet_stack("money-out-adjust").await;
    let proposal = json!({ "propose_adjustment": {
        "reference": "case-1", "user": "bob", "direction": "credit", "amount_cents": 120,
        "reason": "a revoked grab made whole", "proposer": "anna" } });
    let proposed = funds(&stack, proposal.clone()).await.unwrap();
    assert_eq!(proposed["adjustment"]["adjustment"]["status"], "proposed", "{proposed}");
    assert_eq!(balance(&stack, "bob").await, 0, "a proposal moves no money");
    let again = funds(&stack, proposal.clone()).await.unwrap();
    assert_eq!(again["adjustment"]["applied"].as_bool(), Some(false), "the same proposal twice is one");
    let mut other = proposal.clone();
    other["propose_adjustment"]["amount_cents"] = json!(121);
    let reused = funds(&stack, other).await.unwrap_err();
    assert!(reused.error_message.starts_with("reference:"), "{}", reused.error_message);

    let approve = |approver: &str| json!({ "approve_adjustment": { "reference": "case-1", "approver": approver } });
    let own = funds(&stack, approve("anna")).await.unwrap_err();
    assert_eq!(own.error_type, "InvalidFundsRequest");
    assert!(own.error_message.starts_with("approver: the proposer"), "{}", own.error_message);
    assert_eq!(balance(&stack, "bob").await, 0, "refused: nothing moved");

    let applied = funds(&stack, approve("ben")).await.unwrap();
    assert_eq!(applied["adjustment"]["applied"].as_bool(), Some(true), "{applied}");
    assert_eq!(applied["adjustment"]["adjustment"]["approver"], "ben", "the signer, not a name in the body");
    assert_eq!(applied["adjustment"]["balance_cents"], 120);
    for approver in ["ben", "carl"] {
        let replay = funds(&stack, approve(approver)).await.unwrap();
        assert_eq!(replay["adjustment"]["applied"].as_bool(), Some(false), "applied once: {replay}");
    }
    assert_eq!(balance(&stack, "bob").await, 120);

    // The movement names both operators, in the ledger and in its event.
    let items = stack.ledger.books_items().await.unwrap();
    let credit = items.iter().find_map(|item| match item {
        red_packets::domain::books::LedgerItem::Movement(m) if m.reference.as_deref() == Some("case-1") => {
            Some(m.key.clone())
        }
        _ => None,
    });
    let dynamo = DynamoLedger::client_from_env().unwrap();
    let key = HashMap::from([
        ("pk".to_owned(), AttributeValue::S("WALLET#bob".into())),
        ("sk".to_owned(), AttributeValue::S(credit.expect("the adjustment's movement"))),
    ]);
    let movement = dynamo.get_item().table_name(&stack.config.table_name).set_key(Some(key)).send().await.unwrap();
    let event = movement.item.unwrap()["event"].as_m().unwrap().clone();
    assert_eq!(
        (event["proposed_by"].as_s().unwrap().as_str(), event["approved_by"].as_s().unwrap().as_str()),
        ("anna", "ben")
    );
    assert_eq!(event["type"].as_s().unwrap(), "WalletCredited");

    // A debit the balance does not cover stays proposed: no balance goes below zero.
    let debit = json!({ "propose_adjustment": {
        "reference": "case-2", "user": "bob", "direction": "debit", "amount_cents": 121,
        "reason": "a correction", "proposer": "anna" } });
    funds(&stack, debit).await.unwrap();
    let short =
        funds(&stack, json!({ "approve_adjustment": { "reference": "case-2", "approver": "ben" } })).await.unwrap_err();
    assert!(short.error_message.starts_with("amount_cents: the balance 120"), "{}", short.error_message);
    let books = books(&stack, "after the adjustments").await;
    assert_eq!((books.adjusted_in_cents, books.adjusted_out_cents, books.balances_cents), (120, 0, 120));
}

#[tokio::test]
async fn a_chargeback_reverses_its_top_up_once_and_no_more_than_it() {
    let stack = wallet_stack("money-out-chargeback").await;
    top_up(&stack, "alice", 500, "cb-pay-1").await;
    top_up(&stack, "bob", 900, "cb-pay-2").await;
    let chargeback = |reference: &str, who: &str, amount: Cents, topup: &str| {
        json!({ "propose_adjustment": {
            "reference": reference, "user": who, "direction": "debit", "amount_cents": amount,
            "reason": "card network chargeback", "proposer": "fin.kim", "chargeback_of": topup } })
    };
    let approve = |reference: &str| json!({ "approve_adjustment": { "reference": reference, "approver": "fin.lee" } });
    let refused = |result: Result<Value, Diagnostic>| result.unwrap_err().error_message;

    funds(&stack, chargeback("cb-1", "alice", 500, "cb-pay-1")).await.unwrap();
    let applied = funds(&stack, approve("cb-1")).await.unwrap();
    assert_eq!(applied["adjustment"]["balance_cents"], 0, "{applied}");
    // The same top-up again, another user's top-up, more than the top-up: each refused.
    funds(&stack, chargeback("cb-2", "alice", 500, "cb-pay-1")).await.unwrap();
    top_up(&stack, "alice", 600, "cb-pay-3").await;
    assert!(
        refused(funds(&stack, approve("cb-2")).await).starts_with("chargeback_of: the top-up was charged back already")
    );
    funds(&stack, chargeback("cb-3", "alice", 100, "cb-pay-2")).await.unwrap();
    assert!(
        refused(funds(&stack, approve("cb-3")).await).starts_with("chargeback_of: the top-up credited another user")
    );
    funds(&stack, chargeback("cb-4", "bob", 901, "cb-pay-2")).await.unwrap();
    assert!(
        refused(funds(&stack, approve("cb-4")).await).starts_with("chargeback_of: more than the top-up's 900 cents")
    );
    assert_eq!((balance(&stack, "alice").await, balance(&stack, "bob").await), (600, 900), "only cb-1 moved money");
    let books = books(&stack, "after the chargebacks").await;
    assert_eq!((books.topups_cents, books.adjusted_out_cents, books.balances_cents), (2_000, 500, 1_500));
}

/// Live traffic of every kind (sends, grabs, top-ups, withdrawals asked for and resolved either
/// way, adjustments approved) while reconciliation runs: no false difference at any run; then
/// each planted difference of the new kinds is classified.
#[tokio::test]
async fn the_books_are_exact_under_live_traffic_of_every_kind_and_name_each_planted_difference() {
    const RUNS: usize = 12;
    const LANDING_MS: i64 = 3_000;
    let stack = Arc::new(wallet_stack("money-out-live").await);
    let users: Vec<String> = (0..4).map(|n| format!("mo-u{n}")).collect();
    for user in &users {
        top_up(&stack, user, 1_000_000, &format!("mo-{user}-0")).await;
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let rounds: Arc<Vec<std::sync::atomic::AtomicU32>> = Arc::new((0..4).map(|_| Default::default()).collect());
    let mut traffic = Vec::new();
    for (n, user) in users.iter().cloned().enumerate() {
        let (stack, stop, rounds) = (stack.clone(), stop.clone(), rounds.clone());
        traffic.push(tokio::spawn(async move {
            let mut rng = rand::rngs::StdRng::seed_from_u64(n as u64 + 100);
            let mut round = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                round += 1;
                rounds[n].store(round, std::sync::atomic::Ordering::Relaxed);
                let count = rng.random_range(1..=3u64);
                let id =
                    stack.send(&user, json!({ "total_cents": rng.random_range(count..=500), "count": count })).await;
                let grabber = format!("mo-u{}", (n + 1 + round as usize) % 4);
                stack.grab(&id, &grabber).await;
                let ask = json!({ "amount_cents": rng.random_range(1..=300), "destination": "card-1" });
                let (status, withdrawal) = stack.withdraw(&user, &ask, &format!("live-{round}")).await;
                assert_eq!(status, 201, "{withdrawal}");
                let id = withdrawal["withdrawal_id"].as_str().unwrap().to_owned();
                let outcome = ["withdrawal_paid", "pending", "withdrawal_failed"][(round as usize - 1) % 3];
                if outcome != "pending" {
                    let word = json!({ outcome: { "withdrawal_id": id, "reference": format!("po-{id}") } });
                    funds(&stack, word).await.unwrap();
                }
                // Every round an adjustment, credits and debits in turn: every kind is in the
                // traffic from each user's second round, however slowly the machine runs.
                {
                    let reference = format!("live-{user}-{round}");
                    let direction = if round.is_multiple_of(2) { "debit" } else { "credit" };
                    let proposal = json!({ "propose_adjustment": {
                        "reference": reference, "user": user, "direction": direction, "amount_cents": 25,
                        "reason": "live traffic", "proposer": "anna" } });
                    funds(&stack, proposal).await.unwrap();
                    funds(&stack, json!({ "approve_adjustment": { "reference": reference, "approver": "ben" } }))
                        .await
                        .unwrap();
                }
                tokio::time::sleep(std::time::Duration::from_millis(30)).await;
            }
        }));
    }
    {
        let (stack, stop) = (stack.clone(), stop.clone());
        traffic.push(tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                stack.settle().await;
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }));
    }
    tokio::time::sleep(std::time::Duration::from_millis(LANDING_MS as u64 + 500)).await;
    let mut read = Vec::new();
    for run in 0..RUNS {
        let cutoff = Cutoff { as_of_ms: red_packets::SystemClock.now_ms() - LANDING_MS, landing_ms: LANDING_MS };
        let books = reconcile(&stack.ledger, cutoff, 1).await.expect("reconciliation runs");
        assert!(books.balanced(), "run {run} during traffic: {:#?}", books.differences);
        read.push((
            books.withdrawn_cents,
            books.pending_withdrawals_cents,
            books.adjusted_in_cents,
            books.adjusted_out_cents,
        ));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // Every user through the three outcomes at least (bounded: a minute at most).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while rounds.iter().any(|done| done.load(std::sync::atomic::Ordering::Relaxed) < 4)
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for task in traffic {
        task.await.expect("traffic ran");
    }
    assert!(read.iter().any(|run| run.1 > 0), "live runs found pending withdrawals: {read:?}");
    stack.settle().await;
    let quiet = books(&stack, "once the traffic stopped").await;
    let kinds =
        (quiet.withdrawn_cents, quiet.pending_withdrawals_cents, quiet.adjusted_in_cents, quiet.adjusted_out_cents);
    assert!(kinds.0 > 0 && kinds.1 > 0 && kinds.2 > 0 && kinds.3 > 0, "every new kind was in the traffic: {kinds:?}");
    eprintln!(
        "figure: {RUNS} reconciliations during live traffic of every kind, 0 differences; at the end: withdrawn {} pending {} adjusted +{} -{}",
        quiet.withdrawn_cents, quiet.pending_withdrawals_cents, quiet.adjusted_in_cents, quiet.adjusted_out_cents
    );

    // Plant one difference of each new kind, straight into the table.
    let dynamo = DynamoLedger::client_from_env().unwrap();
    let table = stack.config.table_name.clone();
    let items = stack.ledger.books_items().await.unwrap();
    // The first movement of `kind` in a wallet other than `not_of`'s.
    let movement_but = |kind: red_packets::domain::MovementKind, not_of: &str| {
        items.iter().find_map(|item| match item {
            red_packets::domain::books::LedgerItem::Movement(m) if m.kind == kind && m.user.as_str() != not_of => {
                Some((m.user.to_string(), m.key.clone(), m.reference.clone().unwrap()))
            }
            _ => None,
        })
    };
    let movement = |kind| movement_but(kind, "");
    let key = |pk: String, sk: String| {
        HashMap::from([("pk".to_owned(), AttributeValue::S(pk)), ("sk".to_owned(), AttributeValue::S(sk))])
    };
    use red_packets::domain::MovementKind as Kind;
    // A failed withdrawal's return, and the debit of another user's withdrawal (so that this
    // wallet no longer adds up, whatever the two amounts).
    let (return_user, return_key, return_id) = movement(Kind::WithdrawalReturn).unwrap();
    let (debit_user, debit_key, debit_id) = movement_but(Kind::Withdrawal, &return_user).unwrap();
    dynamo
        .delete_item()
        .table_name(&table)
        .set_key(Some(key(format!("WALLET#{debit_user}"), debit_key)))
        .send()
        .await
        .unwrap();
    dynamo
        .delete_item()
        .table_name(&table)
        .set_key(Some(key(format!("WALLET#{return_user}"), return_key)))
        .send()
        .await
        .unwrap();
    let (_, _, adjusted) = movement(Kind::AdjustmentCredit).unwrap();
    let revert = dynamo
        .update_item()
        .table_name(&table)
        .set_key(Some(key(format!("ADJUSTMENT#{adjusted}"), "ADJUSTMENT".into())));
    revert.update_expression("REMOVE written_at_ms").send().await.unwrap();
    let books = reconcile(&stack.ledger, Cutoff::quiet(), 1).await.expect("a report, not an abort");
    let has = |class: DifferenceClass, text: &str| {
        assert!(
            books.differences.iter().any(|d| d.class == class && d.to_string().contains(text)),
            "{class:?} {text:?} not in {:#?}",
            books.differences
        );
    };
    has(DifferenceClass::MovementMissing, &format!("withdrawal:{debit_id}: withdrawal debit: 1 for"));
    has(DifferenceClass::MovementMissing, &format!("withdrawal_return:{return_id}: failed withdrawal's return: 1 for"));
    has(
        DifferenceClass::MovementTwice,
        &format!("adjustment:{adjusted}: adjustment credit: 0 for 0 expected, 1 moved"),
    );
    has(DifferenceClass::WalletDiffers, &format!("wallet:{debit_user}: balance"));
}

/// A business day in `Asia/Shanghai` on the real stores: it runs from 16:00 to 16:00 UTC, and its
/// trial balance and a user's statement, with every kind of movement in it, add up to the
/// movements the ledger holds for it, to the cent.
#[tokio::test]
async fn a_shanghai_days_trial_balance_and_statement_add_up_to_its_movements() {
    use red_packets::domain::books::LedgerItem;
    use red_packets::funds::{statement, trial_balance};

    let mut config = Config::from_env().expect("configuration");
    config.funds = Funds::Wallet;
    config.business_day = red_packets::domain::BusinessDay::parse("Asia/Shanghai").unwrap();
    let stack = Stack::with_config("money-out-shanghai", config).await;
    top_up(&stack, "sh-alice", 1_000, "sh-pay-1").await;
    let id = stack.send("sh-alice", json!({ "total_cents": 300, "count": 2 })).await;
    assert_eq!(stack.grab(&id, "sh-bob").await.0, 200);
    let (status, out) =
        stack.withdraw("sh-alice", &json!({ "amount_cents": 100, "destination": "card-1" }), "sh-out").await;
    assert_eq!(status, 201, "{out}");
    let word = json!({ "withdrawal_paid": { "withdrawal_id": out["withdrawal_id"], "reference": "sh-payout" } });
    funds(&stack, word).await.unwrap();
    let proposal = json!({ "propose_adjustment": {
        "reference": "sh-case", "user": "sh-alice", "direction": "credit", "amount_cents": 20,
        "reason": "goodwill", "proposer": "anna" } });
    funds(&stack, proposal).await.unwrap();
    funds(&stack, json!({ "approve_adjustment": { "reference": "sh-case", "approver": "ben" } })).await.unwrap();
    stack.settle().await;

    let items = stack.ledger.books_items().await.unwrap();
    let stamps: Vec<i64> = items
        .iter()
        .filter_map(|item| match item {
            LedgerItem::Movement(m) => Some(m.written_at_ms),
            _ => None,
        })
        .collect();
    let days = red_packets::ports::Books::business_day(&stack.ledger);
    let day = days.day_of(stamps[0]);
    let (start, end) = days.bounds(&day).unwrap();
    assert_eq!((end - start, start % 86_400_000), (86_400_000, 16 * 3_600_000), "{day}: 16:00 to 16:00 UTC");
    let now = red_packets::SystemClock.now_ms();
    let opening = Cutoff { as_of_ms: start - 1, landing_ms: 0 };
    let closing = Cutoff { as_of_ms: (end - 1).min(now), landing_ms: 0 };
    let report = trial_balance(&stack.ledger, &day, opening, closing).await.unwrap();
    assert!(report.balanced, "{report:#?}");
    let row = |account: &str| report.rows.iter().find(|row| row.account == account).unwrap().cents;
    let in_day = |kind: MovementKind| -> i128 {
        items
            .iter()
            .filter_map(|item| match item {
                LedgerItem::Movement(m) if m.kind == kind && (start..end).contains(&m.written_at_ms) => {
                    Some(i128::from(m.amount_cents))
                }
                _ => None,
            })
            .sum()
    };
    assert_eq!(row("topups_in"), in_day(MovementKind::Topup));
    assert_eq!(row("withdrawals_paid"), in_day(MovementKind::Withdrawal));
    assert_eq!(row("adjustments_in"), in_day(MovementKind::AdjustmentCredit));
    assert_eq!(row("sent"), in_day(MovementKind::Send));
    assert_eq!(row("grabbed"), in_day(MovementKind::Grab));
    let moved: i128 = items
        .iter()
        .filter_map(|item| match item {
            LedgerItem::Movement(m) if m.written_at_ms < end => Some(m.kind.delta(m.amount_cents)),
            _ => None,
        })
        .sum();
    assert_eq!(row("wallets_closing"), moved, "the wallets at the day's close are its movements");
    assert_eq!(report.currency.code(), "CNY");

    let alice = statement(&stack.ledger, &user("sh-alice"), &day).await.unwrap();
    let lines: i128 = alice.lines.iter().map(|line| line.amount_cents).sum();
    assert_eq!(alice.closing_cents - alice.opening_cents, lines);
    let hers = items
        .iter()
        .filter(|item| matches!(item, LedgerItem::Movement(m) if m.user.as_str() == "sh-alice" && (start..end).contains(&m.written_at_ms)))
        .count();
    assert_eq!(alice.lines.len(), hers, "one line per movement of her day");
    if (start..end).contains(&now) {
        assert_eq!(alice.closing_cents, i128::from(balance(&stack, "sh-alice").await), "her balance now");
    }
    eprintln!(
        "figure: Shanghai day {day} [{} .. {}): topups {} sent {} grabbed {} withdrawn {} adjusted +{}, balanced",
        red_packets::clock::rfc3339(start),
        red_packets::clock::rfc3339(end),
        row("topups_in"),
        row("sent"),
        row("grabbed"),
        row("withdrawals_paid"),
        row("adjustments_in")
    );
}

/// The day's audit trail on the real stores: each adjustment step and withdrawal resolution,
/// with who did it and why, read back by business day through the operators' API, and
/// nothing for a step the ledger refused.
#[tokio::test]
async fn every_operator_and_payments_action_is_in_its_days_audit_trail() {
    let stack = wallet_stack("money-out-audit").await;
    top_up(&stack, "au-alice", 500, "au-pay-1").await;
    let (_, out) = stack.withdraw("au-alice", &json!({ "amount_cents": 200, "destination": "card-1" }), "au-out").await;
    let id = out["withdrawal_id"].as_str().unwrap().to_owned();
    let step = || stack.clock.advance(1_000);
    funds(&stack, json!({ "withdrawal_failed": { "withdrawal_id": id, "reference": "au-po-1" } })).await.unwrap();
    step();
    funds(&stack, json!({ "withdrawal_failed": { "withdrawal_id": id, "reference": "au-po-1" } })).await.unwrap();
    step();
    let proposal = json!({ "propose_adjustment": {
        "reference": "au-case", "user": "au-alice", "direction": "debit", "amount_cents": 50,
        "reason": "duplicate compensation", "proposer": "anna" } });
    funds(&stack, proposal).await.unwrap();
    step();
    funds(&stack, json!({ "approve_adjustment": { "reference": "au-case", "approver": "anna" } })).await.unwrap_err();
    step();
    funds(&stack, json!({ "approve_adjustment": { "reference": "au-case", "approver": "ben" } })).await.unwrap();

    let day = red_packets::ports::Books::business_day(&stack.ledger).day_of(stack.clock.now_ms());
    let trail = funds(&stack, json!({ "audit": { "day": day } })).await.unwrap();
    let entries = trail["audit"]["entries"].as_array().unwrap();
    let steps: Vec<(&str, &str, String)> = entries
        .iter()
        .map(|e| {
            (e["action"].as_str().unwrap(), e["subject"].as_str().unwrap(), e["actor"].as_str().unwrap().to_owned())
        })
        .collect();
    assert_eq!(
        steps,
        vec![
            ("withdrawal_failed", id.as_str(), "payments-system".to_owned()),
            ("adjustment_proposed", "au-case", "anna".to_owned()),
            ("adjustment_approved", "au-case", "ben".to_owned()),
        ],
        "once each, in time order; the refused approval and the second delivery left none: {trail}"
    );
    assert!(entries[0]["reason"].as_str().unwrap().contains("au-po-1"), "{trail}");
    assert!(entries[2]["reason"].as_str().unwrap().contains("debit 50 to au-alice: duplicate compensation"), "{trail}");
    let other_day = funds(&stack, json!({ "audit": { "day": "2020-01-01" } })).await.unwrap();
    assert_eq!(other_day["audit"]["entries"], json!([]));
    let bad = funds(&stack, json!({ "audit": { "day": "today" } })).await.unwrap_err();
    assert!(bad.error_message.starts_with("day:"), "{}", bad.error_message);
}

/// The payments system's word delivered four times at once, for twenty withdrawals: each applied
/// exactly once, every other delivery a replay (never an error), and the money returned once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_deliveries_of_one_word_apply_it_once() {
    use red_packets::domain::withdrawal::{WithdrawalResolution, WithdrawalStatus};
    use red_packets::ports::Withdrawals;

    let stack = Arc::new(wallet_stack("money-out-concurrent").await);
    top_up(&stack, "cc-alice", 100_000, "cc-pay-1").await;
    let mut ids = Vec::new();
    for n in 0..20 {
        let (status, out) = stack
            .withdraw("cc-alice", &json!({ "amount_cents": 100, "destination": "card-1" }), &format!("cc-{n}"))
            .await;
        assert_eq!(status, 201, "{out}");
        ids.push(out["withdrawal_id"].as_str().unwrap().to_owned());
    }
    let mut deliveries = Vec::new();
    for (n, id) in ids.iter().enumerate() {
        let outcome = if n % 2 == 0 { WithdrawalStatus::Paid } else { WithdrawalStatus::Failed };
        for _ in 0..4 {
            let (stack, resolution) =
                (stack.clone(), WithdrawalResolution { withdrawal_id: id.clone(), reference: format!("po-{id}") });
            deliveries.push(tokio::spawn(async move {
                stack.ledger.resolve_withdrawal(&resolution, outcome, stack.clock.now_ms()).await
            }));
        }
    }
    let mut applied = 0;
    for delivery in futures::future::join_all(deliveries).await {
        let result = delivery.unwrap().expect("a second delivery is a replay, never an error");
        applied += usize::from(result.applied);
    }
    assert_eq!(applied, ids.len(), "each word applied once");
    assert_eq!(balance(&stack, "cc-alice").await, 100_000 - 10 * 100, "the ten failed ones returned once each");
    books(&stack, "after the concurrent deliveries").await;
}
