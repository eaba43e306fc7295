//! The operators' API (`/ops/v1`, openapi.yaml's `operators` tag) over HTTP through the local
//! gateway, on the real DynamoDB Local: the operators' authorizer refuses an app user's token as
//! another issuer's (401) and every route refuses an operator without one of its roles (403
//! `forbidden`, naming them), before anything is read; the four-eyes rule compares the verified
//! subjects of two operators' tokens, never a name in a body; a hold placed through the API
//! names its operator and stops the user's withdrawals; the audit trail names each operator.

use std::sync::Arc;

use local::LocalAuthorizer;
use red_packets::domain::operators::Role;
use red_packets::domain::wallet::TopUp;
use red_packets::domain::{Funds, PacketId, UserId};
use red_packets::ports::Wallets;
use red_packets::routes::OPS_ROUTES;
use red_packets::{Clock, Config, SystemClock};
use serde_json::{json, Value};

struct Api {
    base: String,
    http: reqwest::Client,
    users: LocalAuthorizer,
    operators: LocalAuthorizer,
    functions: Arc<local::Functions>,
}

async fn serve() -> Api {
    serve_with(|_| {}).await
}

/// [`serve`] on a configuration of the test's own making (a table and Redis keys of its own).
async fn serve_with(tweak: impl FnOnce(&mut Config)) -> Api {
    serve_with_clock(tweak, Arc::new(SystemClock)).await
}

/// [`serve_with`], every function reading time from `clock`.
async fn serve_with_clock(tweak: impl FnOnce(&mut Config), clock: Arc<dyn Clock>) -> Api {
    let mut config = Config::from_env().expect("configuration");
    config.funds = Funds::Wallet;
    tweak(&mut config);
    let users = LocalAuthorizer::new("users-of-this-test");
    let mut functions =
        local::functions_with_clock(&config, users.clone(), clock).await.expect("services of make test");
    let operators = LocalAuthorizer::new("operators-of-this-test");
    functions.operators.authorizer = operators.clone();
    let functions = Arc::new(functions);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = local::router(functions.clone());
    tokio::spawn(async move { axum::serve(listener, router).await });
    Api { base, http: reqwest::Client::new(), users, operators, functions }
}

impl Api {
    fn token(&self, operator: &str, roles: &[&str]) -> String {
        self.operators.operator_token(operator, roles, 600)
    }

    async fn call(&self, method: &str, path: &str, token: Option<&str>, body: Option<&Value>) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn as_operator(
        &self,
        operator: &str,
        roles: &[&str],
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> (u16, Value) {
        self.call(method, path, Some(&self.token(operator, roles)), body).await
    }

    async fn top_up(&self, user: &str, amount_cents: u64) {
        let topup = TopUp {
            user: UserId::from_claim(user).unwrap(),
            amount_cents,
            reference: format!("pay-{}", PacketId::random()),
        };
        self.functions.operators.ledger.top_up(&topup, SystemClock.now_ms()).await.expect("top-up");
    }
}

/// A user of this run's own (the suites share one table).
fn fresh(name: &str) -> String {
    format!("{name}-{}", &PacketId::random().as_str()[..8])
}

/// Each route as a request: its path with sample parameters, and a body where it takes one.
fn sample(route: &str) -> (String, String, Option<Value>) {
    let (method, template) = route.split_once(' ').unwrap();
    let path = template
        .replace("{user}", "zoe")
        .replace("{reference}", "case-none")
        .replace("{flag_id}", "chain-none")
        .replace("{day}", "2026-11-28")
        .replace("{packet_id}", &"0".repeat(32))
        .replace("{withdrawal_id}", &format!("wd-{}", "0".repeat(32)));
    let body = (method == "POST").then(|| json!({}));
    (method.to_owned(), path, body)
}

#[tokio::test]
async fn every_route_refuses_another_issuers_token_and_an_operator_without_its_role() {
    let api = serve().await;
    let app_user = api.users.token("alice", 600);
    for &red_packets::routes::OpsRoute { key: route, action } in OPS_ROUTES {
        let (method, path, body) = sample(route);
        let (status, answer) = api.call(&method, &path, None, body.as_ref()).await;
        assert_eq!((status, &answer), (401, &json!({ "message": "Unauthorized" })), "{route} without a token");
        let (status, answer) = api.call(&method, &path, Some(&app_user), body.as_ref()).await;
        assert_eq!((status, &answer), (401, &json!({ "message": "Unauthorized" })), "{route}: an app user's token");

        let lacking: Vec<&str> =
            Role::ALL.iter().filter(|role| !action.roles().contains(role)).map(|role| role.as_str()).collect();
        let roles = if lacking.is_empty() { vec!["viewer"] } else { lacking };
        let (status, answer) = api.as_operator("otto", &roles, &method, &path, body.as_ref()).await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (403, Some("forbidden")),
            "{route} as {roles:?}: {answer}"
        );
        let named: Vec<&str> = action.roles().iter().map(|role| role.as_str()).collect();
        assert_eq!(answer["error"]["roles"], json!(named), "{route}: the roles, for a client to say them");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            action.roles().iter().all(|role| message.contains(role.as_str())),
            "{route}: names the roles: {message}"
        );
    }
    let (status, answer) = api.as_operator("otto", &["admin"], "GET", "/ops/v1/nothing-here", None).await;
    assert_eq!((status, &answer), (404, &json!({ "message": "Not Found" })), "a route the API does not have");
}

#[tokio::test]
async fn an_adjustment_needs_two_verified_operators_and_moves_the_balance_once() {
    let api = serve().await;
    let user = fresh("zoe");
    api.top_up(&user, 1_000).await;
    let reference = format!("case-{}", PacketId::random());
    let proposal = json!({ "reference": reference, "user": user, "direction": "credit", "amount_cents": 500,
                           "reason": "goodwill, ticket 17" });

    let (status, found) = api.as_operator("sam", &["support"], "GET", &format!("/ops/v1/users/{user}"), None).await;
    assert_eq!((status, found["balance_cents"].as_u64()), (200, Some(1_000)), "{found}");
    let mut named = proposal.clone();
    named["proposer"] = json!("somebody-else");
    let (status, refused) = api.as_operator("sam", &["support"], "POST", "/ops/v1/adjustments", Some(&named)).await;
    assert_eq!(
        (status, refused["error"]["field"].as_str()),
        (400, Some("proposer")),
        "a body never names the operator: {refused}"
    );

    let (status, proposed) = api.as_operator("sam", &["support"], "POST", "/ops/v1/adjustments", Some(&proposal)).await;
    assert_eq!((status, proposed["adjustment"]["proposer"].as_str()), (200, Some("sam")), "{proposed}");
    let approve = format!("/ops/v1/adjustments/{reference}/approve");
    let (status, refused) = api.as_operator("sam", &["support"], "POST", &approve, None).await;
    assert_eq!(status, 403, "support proposes, never approves: {refused}");
    let (status, refused) = api.as_operator("sam", &["support", "finance"], "POST", &approve, None).await;
    assert_eq!(
        (status, refused["error"]["field"].as_str()),
        (400, Some("approver")),
        "never its own proposer: {refused}"
    );

    let (status, approved) = api.as_operator("fay", &["finance"], "POST", &approve, None).await;
    assert_eq!(
        (status, approved["applied"].as_bool(), approved["balance_cents"].as_u64()),
        (200, Some(true), Some(1_500)),
        "{approved}"
    );
    assert_eq!(approved["adjustment"]["approver"], "fay");
    let (status, again) = api.as_operator("fay", &["finance"], "POST", &approve, None).await;
    assert_eq!(
        (status, again["applied"].as_bool(), again["balance_cents"].as_u64()),
        (200, Some(false), Some(1_500)),
        "once: {again}"
    );
    let (_, found) =
        api.as_operator("sam", &["support"], "GET", &format!("/ops/v1/users/{user}/movements"), None).await;
    let (status, sent) =
        api.as_operator("sam", &["support"], "GET", &format!("/ops/v1/users/{user}/packets?role=sent"), None).await;
    assert_eq!((status, sent["items"].as_array().map(Vec::len)), (200, Some(0)), "{sent}");
    let credits: Vec<&Value> =
        found["items"].as_array().unwrap().iter().filter(|item| item["amount_cents"] == 500).collect();
    assert_eq!(credits.len(), 1, "one movement: {found}");

    let day = &red_packets::clock::rfc3339(SystemClock.now_ms())[..10];
    let (status, audit) = api.as_operator("fay", &["finance"], "GET", &format!("/ops/v1/audit/{day}"), None).await;
    assert_eq!(status, 200, "{audit}");
    let steps: Vec<(String, String)> = audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["subject"].as_str() == Some(reference.as_str()))
        .map(|entry| (entry["action"].as_str().unwrap().to_owned(), entry["actor"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(
        steps,
        vec![("adjustment_proposed".into(), "sam".into()), ("adjustment_approved".into(), "fay".into())],
        "the audit trail names both verified operators: {audit}"
    );
}

#[tokio::test]
async fn a_hold_placed_through_the_api_names_its_operator_and_stops_money_out() {
    let api = serve().await;
    let user = fresh("ring");
    api.top_up(&user, 2_000).await;
    let hold = json!({ "scope": "money_out", "reason": "cash-out ring, ticket 4713" });
    let (status, placed) =
        api.as_operator("rita", &["risk"], "POST", &format!("/ops/v1/users/{user}/hold"), Some(&hold)).await;
    assert_eq!(
        (status, placed["changed"].as_bool(), placed["hold"]["operator"].as_str()),
        (200, Some(true), Some("rita")),
        "{placed}"
    );
    let (_, listed) = api.as_operator("sam", &["support"], "GET", "/ops/v1/holds", None).await;
    assert!(
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|held| held["user"] == user.as_str() && held["scope"] == "money_out"),
        "{listed}"
    );
    let (_, found) = api.as_operator("sam", &["support"], "GET", &format!("/ops/v1/users/{user}"), None).await;
    assert_eq!(found["hold"]["scope"], "money_out", "the user's page shows the hold: {found}");

    // The send function's book of holds reads the ledger on its first check: refused at once.
    let token = api.users.token(&user, 600);
    let withdraw = |key: &'static str| {
        api.http
            .post(format!("{}/me/withdrawals", api.base))
            .bearer_auth(&token)
            .header("idempotency-key", key)
            .json(&json!({ "amount_cents": 100, "destination": "card-1" }))
    };
    let refused = withdraw("out-1").send().await.unwrap();
    assert_eq!(refused.status(), 403);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "account_held", "{body}");
    let (_, found) = api.as_operator("sam", &["support"], "GET", &format!("/ops/v1/users/{user}"), None).await;
    assert_eq!(found["balance_cents"], 2_000, "nothing debited: {found}");

    let lift = json!({ "reason": "cleared, ticket 4714" });
    let (status, lifted) =
        api.as_operator("rita", &["risk"], "POST", &format!("/ops/v1/users/{user}/hold/lift"), Some(&lift)).await;
    assert_eq!((status, lifted["changed"].as_bool(), &lifted["hold"]), (200, Some(true), &Value::Null), "{lifted}");
}

/// A packet read through the operators' API is the ledger's record as its sender sees it: a
/// greeting that is markup comes back as the text it is (the console shows it as text).
#[tokio::test]
async fn a_packet_is_read_from_the_ledger_with_its_greeting_as_sent() {
    let api = serve().await;
    let sender = fresh("alice");
    api.top_up(&sender, 1_000).await;
    let greeting = "<img src=x onerror=alert(1)>";
    let sent = api
        .http
        .post(format!("{}/packets", api.base))
        .bearer_auth(api.users.token(&sender, 600))
        .header("idempotency-key", PacketId::random().to_string())
        .json(&json!({ "total_cents": 300, "count": 3, "greeting": greeting }))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 201);
    let sent: Value = sent.json().await.unwrap();
    let id = sent["packet_id"].as_str().unwrap();

    let (status, view) = api.as_operator("sam", &["support"], "GET", &format!("/ops/v1/packets/{id}"), None).await;
    assert_eq!(
        (status, view["greeting"].as_str(), view["sender"].as_str()),
        (200, Some(greeting), Some(sender.as_str())),
        "{view}"
    );
    assert_eq!((view["total_cents"].as_u64(), view["count"].as_u64()), (Some(300), Some(3)));
    let unknown = format!("/ops/v1/packets/{}", PacketId::random());
    let (status, missing) = api.as_operator("sam", &["support"], "GET", &unknown, None).await;
    assert_eq!((status, missing["error"]["code"].as_str()), (404, Some("not_found")), "{missing}");
}

/// Every item of a queue route, paging `limit` at a time (bounded: 50 pages).
async fn all_pages(api: &Api, roles: &[&str], path: &str, limit: u32) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..50 {
        let separator = if path.contains('?') { '&' } else { '?' };
        let mut url = format!("{path}{separator}limit={limit}");
        if let Some(cursor) = &cursor {
            url.push_str(&format!("&cursor={cursor}"));
        }
        let (status, page) = api.as_operator("otto", roles, "GET", &url, None).await;
        assert_eq!(status, 200, "{url}: {page}");
        items.extend(page["items"].as_array().unwrap().iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return items,
        }
    }
    panic!("{path}: more than 50 pages");
}

fn today() -> String {
    let config = Config::from_env().expect("configuration");
    config.business_day.day_of(SystemClock.now_ms())
}

/// The audit trail's steps on `subject` today: (action, actor).
async fn steps_on(api: &Api, subject: &str) -> Vec<(String, String)> {
    let (status, audit) = api.as_operator("otto", &["admin"], "GET", &format!("/ops/v1/audit/{}", today()), None).await;
    assert_eq!(status, 200, "{audit}");
    audit["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["subject"].as_str() == Some(subject))
        .map(|entry| (entry["action"].as_str().unwrap().to_owned(), entry["actor"].as_str().unwrap().to_owned()))
        .collect()
}

#[tokio::test]
async fn pending_proposals_are_listed_until_approved_rejected_or_withdrawn() {
    let api = serve().await;
    let user = fresh("yan");
    api.top_up(&user, 1_000).await;
    let case = format!("case-{}", &PacketId::random().as_str()[..12]);
    let [approved, rejected, withdrawn] = ["a", "r", "w"].map(|step| format!("{case}-{step}"));
    for (reference, cents) in [(&approved, 100), (&rejected, 200), (&withdrawn, 300)] {
        let proposal = json!({ "reference": reference, "user": user, "direction": "credit", "amount_cents": cents,
                               "reason": "goodwill" });
        let (status, proposed) =
            api.as_operator("sam", &["support"], "POST", "/ops/v1/adjustments", Some(&proposal)).await;
        assert_eq!(status, 200, "{proposed}");
    }
    let mine = |items: Vec<Value>| -> Vec<String> {
        items
            .into_iter()
            .filter_map(|item| item["reference"].as_str().map(str::to_owned))
            .filter(|reference| reference.starts_with(&case))
            .collect()
    };
    let pending = mine(all_pages(&api, &["support"], "/ops/v1/adjustments/pending", 2).await);
    assert_eq!(pending, [approved.clone(), rejected.clone(), withdrawn.clone()], "oldest first, through pages of two");

    let reason = json!({ "reason": "duplicate of another case" });
    let reject = format!("/ops/v1/adjustments/{rejected}/reject");
    let (status, refused) = api.as_operator("sam", &["support", "finance"], "POST", &reject, Some(&reason)).await;
    assert_eq!((status, refused["error"]["field"].as_str()), (400, Some("operator")), "not by its proposer: {refused}");
    let (status, closed) = api.as_operator("fay", &["finance"], "POST", &reject, Some(&reason)).await;
    assert_eq!(
        (status, closed["applied"].as_bool(), closed["adjustment"]["status"].as_str()),
        (200, Some(true), Some("rejected")),
        "{closed}"
    );
    assert_eq!(closed["adjustment"]["closed_by"], "fay");
    let (status, again) = api.as_operator("fay", &["finance"], "POST", &reject, Some(&reason)).await;
    assert_eq!((status, again["applied"].as_bool()), (200, Some(false)), "once: {again}");
    let approve_rejected = format!("/ops/v1/adjustments/{rejected}/approve");
    let (status, refused) = api.as_operator("fay", &["finance"], "POST", &approve_rejected, None).await;
    assert_eq!((status, refused["error"]["field"].as_str()), (400, Some("reference")), "{refused}");

    let withdraw = format!("/ops/v1/adjustments/{withdrawn}/withdraw");
    let (status, refused) = api.as_operator("fay", &["finance"], "POST", &withdraw, Some(&reason)).await;
    assert_eq!((status, refused["error"]["field"].as_str()), (400, Some("operator")), "only its proposer: {refused}");
    let (status, closed) = api.as_operator("sam", &["support"], "POST", &withdraw, Some(&reason)).await;
    assert_eq!((status, closed["adjustment"]["status"].as_str()), (200, Some("withdrawn")), "{closed}");

    let approve = format!("/ops/v1/adjustments/{approved}/approve");
    let (status, applied) = api.as_operator("fay", &["finance"], "POST", &approve, None).await;
    assert_eq!(
        (status, applied["balance_cents"].as_u64()),
        (200, Some(1_100)),
        "only the approved one moved: {applied}"
    );
    let pending = mine(all_pages(&api, &["finance"], "/ops/v1/adjustments/pending", 100).await);
    assert!(pending.is_empty(), "none of them waits any more: {pending:?}");
    assert_eq!(
        steps_on(&api, &rejected).await,
        [("adjustment_proposed".to_owned(), "sam".to_owned()), ("adjustment_rejected".into(), "fay".into())]
    );
    assert_eq!(
        steps_on(&api, &withdrawn).await,
        [("adjustment_proposed".to_owned(), "sam".to_owned()), ("adjustment_withdrawn".into(), "sam".into())]
    );

    // Each read by its reference, whatever its state, by any operator role.
    let read = |reference: &str| format!("/ops/v1/adjustments/{reference}");
    for (reference, status, by) in
        [(&approved, "applied", "fay"), (&rejected, "rejected", "fay"), (&withdrawn, "withdrawn", "sam")]
    {
        let (code, found) = api.as_operator("rita", &["risk"], "GET", &read(reference), None).await;
        assert_eq!(
            (code, found["status"].as_str(), found["user"].as_str()),
            (200, Some(status), Some(user.as_str())),
            "{found}"
        );
        let actor = if status == "applied" { &found["approver"] } else { &found["closed_by"] };
        assert_eq!(
            (actor.as_str(), found["proposer"].as_str(), found["currency"].is_object()),
            (Some(by), Some("sam"), true)
        );
    }
    assert_eq!(api.as_operator("sam", &["support"], "GET", &read(&format!("{case}-none")), None).await.0, 404);
    let (status, list) = api.as_operator("sam", &["support"], "GET", &read("pending"), None).await;
    assert_eq!((status, list["items"].is_array()), (200, true), "pending names the list: {list}");
    let under_the_lists_name = json!({ "reference": "pending", "user": user, "direction": "credit", "amount_cents": 1,
                                       "reason": "would be unreadable" });
    let (status, refused) =
        api.as_operator("sam", &["support"], "POST", "/ops/v1/adjustments", Some(&under_the_lists_name)).await;
    assert_eq!((status, refused["error"]["field"].as_str()), (400, Some("reference")), "{refused}");
}

#[tokio::test]
async fn flags_are_paged_by_status_assigned_and_resolved_once() {
    use red_packets::domain::patterns::{Finding, FlagRule, RiskFlag};
    use red_packets::ports::RiskLedger;
    let api = serve().await;
    let run = PacketId::random().as_str()[..12].to_owned();
    let ids: Vec<String> = (0..3).map(|n| format!("chain-{run}-{n}")).collect();
    for (n, id) in ids.iter().enumerate() {
        let finding = Finding {
            users: vec![UserId::from_claim(&fresh("link")).unwrap()],
            chat_id: None,
            packets: vec![PacketId::random()],
            amount_cents: 1_000,
            detail: "three handoffs to the least lucky".into(),
        };
        let raised_at = format!("2026-11-28T00:00:0{n}.000Z");
        let flag = RiskFlag::raised(id.clone(), FlagRule::Chain, finding, raised_at);
        assert!(api.functions.operators.ledger.raise_flag(&flag).await.unwrap());
    }
    let mine = |items: Vec<Value>| -> Vec<String> {
        items
            .into_iter()
            .filter_map(|flag| flag["flag_id"].as_str().map(str::to_owned))
            .filter(|id| id.contains(run.as_str()))
            .collect()
    };
    assert_eq!(mine(all_pages(&api, &["support"], "/ops/v1/flags?status=open", 1).await), ids, "pages of one");

    let assign = format!("/ops/v1/flags/{}/assign", ids[0]);
    let (status, assigned) = api.as_operator("rita", &["risk"], "POST", &assign, Some(&json!({}))).await;
    assert_eq!(
        (status, assigned["changed"].as_bool(), assigned["flag"]["assignee"].as_str()),
        (200, Some(true), Some("rita")),
        "to the signed-in operator by default: {assigned}"
    );
    let (_, moved) = api.as_operator("rita", &["risk"], "POST", &assign, Some(&json!({ "assignee": "rex" }))).await;
    assert_eq!(moved["flag"]["assignee"], "rex", "{moved}");

    let resolve = format!("/ops/v1/flags/{}/resolve", ids[0]);
    let note = json!({ "outcome": "confirmed", "note": "a 接龙 game" });
    let (status, resolved) = api.as_operator("rex", &["risk"], "POST", &resolve, Some(&note)).await;
    assert_eq!((status, resolved["flag"]["status"].as_str()), (200, Some("confirmed")), "{resolved}");
    let (_, late) = api.as_operator("rita", &["risk"], "POST", &assign, Some(&json!({}))).await;
    assert_eq!(late["changed"].as_bool(), Some(false), "a resolved flag is not assigned: {late}");

    assert_eq!(mine(all_pages(&api, &["risk"], "/ops/v1/flags", 2).await), &ids[1..], "open by default");
    assert_eq!(mine(all_pages(&api, &["risk"], "/ops/v1/flags?status=confirmed", 50).await), &ids[..1]);
    assert_eq!(
        steps_on(&api, &ids[0]).await,
        [
            ("flag_assigned".to_owned(), "rita".to_owned()),
            ("flag_assigned".into(), "rita".into()),
            ("flag_resolved".into(), "rex".into())
        ]
    );
}

/// Pending withdrawals are listed, and each read by its id (`GET /ops/v1/withdrawals/{id}`, not by
/// risk), until the payments system resolves them; then it reads paid, with its reference.
#[tokio::test]
async fn pending_withdrawals_are_listed_until_the_payments_system_resolves_them() {
    use red_packets::domain::withdrawal::{WithdrawalResolution, WithdrawalStatus};
    use red_packets::ports::Withdrawals;
    let api = serve().await;
    let user = fresh("payee");
    api.top_up(&user, 1_000).await;
    let asked = api
        .http
        .post(format!("{}/me/withdrawals", api.base))
        .bearer_auth(api.users.token(&user, 600))
        .header("idempotency-key", format!("out-{}", PacketId::random()))
        .json(&json!({ "amount_cents": 400, "destination": "card-1" }))
        .send()
        .await
        .unwrap();
    assert_eq!(asked.status(), 201);
    let asked: Value = asked.json().await.unwrap();
    let id = asked["withdrawal_id"].as_str().unwrap().to_owned();
    let listed = |items: Vec<Value>| items.into_iter().find(|item| item["withdrawal_id"] == id.as_str());

    let found = listed(all_pages(&api, &["finance"], "/ops/v1/withdrawals/pending", 10).await).expect("listed");
    assert_eq!((found["user"].as_str(), found["overdue"].as_bool()), (Some(user.as_str()), Some(false)), "{found}");
    let overdue = listed(all_pages(&api, &["finance"], "/ops/v1/withdrawals/pending?overdue=true", 10).await);
    assert!(overdue.is_none(), "asked for a moment ago: not overdue");
    let (status, refused) =
        api.as_operator("otto", &["finance"], "GET", "/ops/v1/withdrawals/pending?overdue=soon", None).await;
    assert_eq!((status, refused["error"]["field"].as_str()), (400, Some("overdue")), "{refused}");
    let one = format!("/ops/v1/withdrawals/{id}");
    let (status, read) = api.as_operator("sam", &["support"], "GET", &one, None).await;
    assert_eq!(status, 200, "{read}");
    assert_eq!(
        (read["user"].as_str(), read["amount_cents"].as_u64(), read["status"].as_str(), read["overdue"].as_bool()),
        (Some(user.as_str()), Some(400), Some("pending"), Some(false)),
        "{read}"
    );
    let (status, _) = api.as_operator("rita", &["risk"], "GET", &one, None).await;
    assert_eq!(status, 403, "risk reads no withdrawal");
    let unknown = format!("/ops/v1/withdrawals/wd-{}", "0".repeat(32));
    assert_eq!(api.as_operator("sam", &["support"], "GET", &unknown, None).await.0, 404);

    let resolution = WithdrawalResolution { withdrawal_id: id.clone(), reference: "payout-1".into() };
    let ledger = &api.functions.operators.ledger;
    let paid = ledger.resolve_withdrawal(&resolution, WithdrawalStatus::Paid, SystemClock.now_ms()).await.unwrap();
    assert!(paid.applied);
    assert!(listed(all_pages(&api, &["finance"], "/ops/v1/withdrawals/pending", 100).await).is_none(), "resolved");
    let (status, read) = api.as_operator("sam", &["support"], "GET", &one, None).await;
    assert_eq!(
        (status, read["status"].as_str(), read["reference"].as_str(), read["overdue"].as_bool()),
        (200, Some("paid"), Some("payout-1"), Some(false)),
        "{read}"
    );
    assert!(read["resolved_at"].is_string(), "{read}");
}

/// The business days around `now_ms`: (the day before yesterday, yesterday, today, tomorrow),
/// read after the writes a test makes, so a write just before midnight still falls within
/// yesterday..=today.
fn days_around(now_ms: i64) -> [String; 4] {
    let zone = Config::from_env().expect("configuration").business_day;
    let today = zone.day_of(now_ms);
    let (start, end) = zone.bounds(&today).unwrap();
    let yesterday = zone.day_of(start - 1);
    let before = zone.day_of(zone.bounds(&yesterday).unwrap().0 - 1);
    [before, yesterday, today, zone.day_of(end)]
}

/// Periods: a user's statement from one business day to another (JSON and CSV), the audit trail
/// of a period, and the pending withdrawals requested within one; a period backwards or longer
/// than 31 days is a 400 naming `to`.
#[tokio::test]
async fn statements_audit_trails_and_pending_withdrawals_are_read_over_a_period() {
    // A statement stops at the latest cut-off, a minute before its clock's now: this API's clock
    // runs two minutes ahead, so the writes made now are behind its cut-off.
    let clock = Arc::new(red_packets_testkit::ManualClock::starting_now());
    clock.advance(120_000);
    let api = serve_with_clock(|_| {}, clock.clone()).await;
    let user = fresh("period");
    api.top_up(&user, 1_000).await;
    let hold = json!({ "scope": "money_out", "reason": "a period's audit" });
    let held = format!("/ops/v1/users/{user}/hold");
    assert_eq!(api.as_operator("rita", &["risk"], "POST", &held, Some(&hold)).await.0, 200);
    let lift = json!({ "reason": "checked" });
    assert_eq!(api.as_operator("rita", &["risk"], "POST", &format!("{held}/lift"), Some(&lift)).await.0, 200);
    let asked = api
        .http
        .post(format!("{}/me/withdrawals", api.base))
        .bearer_auth(api.users.token(&user, 600))
        .header("idempotency-key", format!("out-{}", PacketId::random()))
        .json(&json!({ "amount_cents": 300, "destination": "card-1" }))
        .send()
        .await
        .unwrap();
    assert_eq!(asked.status(), 201);
    let id = asked.json::<Value>().await.unwrap()["withdrawal_id"].as_str().unwrap().to_owned();
    let [before, yesterday, today, tomorrow] = days_around(clock.now_ms());

    // The statement of yesterday..=today: one period, the top-up and the withdrawal in it.
    let statement = format!("/ops/v1/users/{user}/statements/{yesterday}?to={today}");
    let (status, period) = api.as_operator("fay", &["finance"], "GET", &statement, None).await;
    assert_eq!(status, 200, "{period}");
    assert_eq!(
        (
            period["day"].as_str(),
            period["to"].as_str(),
            period["opening_cents"].as_i64(),
            period["closing_cents"].as_i64()
        ),
        (Some(yesterday.as_str()), Some(today.as_str()), Some(0), Some(700)),
        "{period}"
    );
    let kinds: Vec<&str> =
        period["lines"].as_array().unwrap().iter().map(|line| line["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["topup", "withdrawal"], "{period}");
    let response = api
        .http
        .get(format!("{}{statement}&format=csv", api.base))
        .bearer_auth(api.token("fay", &["finance"]))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["content-disposition"].to_str().unwrap(),
        format!("attachment; filename=\"statement-{yesterday}-to-{today}.csv\"")
    );
    let csv = response.text().await.unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 1 + 4, "a header, the opening, two movements, the closing: {csv}");
    assert!(rows[1].starts_with(&format!("{user},{yesterday},opening,,0,0,")), "{csv}");
    assert!(rows[4].starts_with(&format!("{user},{today},closing,,0,700,")), "{csv}");
    let (status, day) =
        api.as_operator("fay", &["finance"], "GET", &format!("/ops/v1/users/{user}/statements/{today}"), None).await;
    assert_eq!((status, day.get("to")), (200, None), "a day's statement reads as before: {day}");

    // The audit trail of yesterday..=today holds the hold's two steps; the day before, neither.
    let steps = |answer: &Value| -> Vec<String> {
        let entries = answer["entries"].as_array().unwrap().iter();
        entries
            .filter(|entry| entry["subject"] == user.as_str())
            .map(|entry| entry["action"].as_str().unwrap().to_owned())
            .collect()
    };
    let (status, trail) =
        api.as_operator("sam", &["support"], "GET", &format!("/ops/v1/audit/{yesterday}?to={today}"), None).await;
    assert_eq!((status, trail["to"].as_str()), (200, Some(today.as_str())), "{trail}");
    let mut both = steps(&trail);
    both.sort(); // this API's clock stands still: both steps bear the same instant
    assert_eq!(both, ["hold_lifted", "hold_placed"], "{trail}");
    let placed = trail["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["subject"] == user.as_str() && entry["action"] == "hold_placed");
    assert_eq!(
        placed.map(|entry| &entry["facts"]),
        Some(&json!({ "scope": "money_out", "words": "a period's audit" })),
        "its facts apart, for the console to word: {trail}"
    );
    let (status, earlier) = api.as_operator("sam", &["support"], "GET", &format!("/ops/v1/audit/{before}"), None).await;
    assert_eq!((status, steps(&earlier).len(), earlier["to"].is_null()), (200, 0, true), "{earlier}");

    // The pending withdrawals requested within a period.
    let listed = |items: Vec<Value>| items.iter().any(|item| item["withdrawal_id"] == id.as_str());
    let within = format!("/ops/v1/withdrawals/pending?from={yesterday}&to={today}");
    assert!(listed(all_pages(&api, &["finance"], &within, 10).await), "requested within the period");
    let earlier = format!("/ops/v1/withdrawals/pending?to={before}");
    assert!(!listed(all_pages(&api, &["finance"], &earlier, 10).await), "requested after the period");
    let later = format!("/ops/v1/withdrawals/pending?from={tomorrow}");
    assert!(!listed(all_pages(&api, &["finance"], &later, 10).await), "requested before the period");

    // Periods that are not one: each a 400 naming its field.
    for (path, field) in [
        (format!("/ops/v1/users/{user}/statements/2026-01-01?to=2026-02-01"), "to"),
        (format!("/ops/v1/users/{user}/statements/{today}?to={yesterday}"), "to"),
        ("/ops/v1/audit/2026-01-01?to=2026-02-01".to_owned(), "to"),
        ("/ops/v1/audit/2026-01-01?to=soon".to_owned(), "to"),
        (format!("/ops/v1/withdrawals/pending?from={today}&to={yesterday}"), "to"),
        ("/ops/v1/withdrawals/pending?from=soon".to_owned(), "from"),
    ] {
        let (status, refused) = api.as_operator("fay", &["finance"], "GET", &path, None).await;
        assert_eq!((status, refused["error"]["field"].as_str()), (400, Some(field)), "{path}: {refused}");
    }
}

/// An overdue withdrawal's order sent to the payments system again: finance or admin only, with
/// a reason, in the audit trail; once an hour (the hour's second changes nothing); never one on
/// time, never one resolved; no money moves.
#[tokio::test]
async fn an_overdue_withdrawal_is_sent_again_once_an_hour_by_finance_and_moves_no_money() {
    use red_packets::domain::withdrawal::{
        WithdrawalRequest, WithdrawalResolution, WithdrawalStatus, OVERDUE_AFTER_MS,
    };
    use red_packets::ports::Withdrawals;
    let api = serve().await;
    let ledger = &api.functions.operators.ledger;
    let user = fresh("late");
    api.top_up(&user, 1_000).await;
    let payee = UserId::from_claim(&user).unwrap();
    let request = WithdrawalRequest { amount_cents: 400, destination: "card-1".into() };
    let day_ago = SystemClock.now_ms() - OVERDUE_AFTER_MS - 60_000;
    let late = format!("wd-{}", PacketId::random());
    ledger.request_withdrawal(&payee, &late, &request, day_ago).await.unwrap();
    let on_time = format!("wd-{}", PacketId::random());
    ledger.request_withdrawal(&payee, &on_time, &request, SystemClock.now_ms()).await.unwrap();
    let user_page = format!("/ops/v1/users/{user}");
    let balance =
        || async { api.as_operator("sam", &["support"], "GET", &user_page, None).await.1["balance_cents"].as_i64() };
    assert_eq!(balance().await, Some(200));

    let reason = json!({ "reason": "no word from the payments system for a day; ticket 88" });
    let resend = |id: &str| format!("/ops/v1/withdrawals/{id}/resend");
    let (status, _) = api.as_operator("sam", &["support"], "POST", &resend(&late), Some(&reason)).await;
    assert_eq!(status, 403, "support does not resend");
    let (status, sent) = api.as_operator("fay", &["finance"], "POST", &resend(&late), Some(&reason)).await;
    assert_eq!(
        (status, sent["changed"].as_bool(), sent["withdrawal"]["status"].as_str()),
        (200, Some(true), Some("pending")),
        "{sent}"
    );
    let (status, again) = api.as_operator("otto", &["admin"], "POST", &resend(&late), Some(&reason)).await;
    assert_eq!((status, again["changed"].as_bool()), (200, Some(false)), "once an hour: {again}");
    assert_eq!(balance().await, Some(200), "no money moved");
    let (_, read) = api.as_operator("fay", &["finance"], "GET", &format!("/ops/v1/withdrawals/{late}"), None).await;
    assert_eq!((read["status"].as_str(), read["overdue"].as_bool()), (Some("pending"), Some(true)), "{read}");

    let (status, trail) =
        api.as_operator("sam", &["support"], "GET", &format!("/ops/v1/users/{user}/audit"), None).await;
    assert_eq!(status, 200, "{trail}");
    let resent: Vec<&Value> =
        trail["items"].as_array().unwrap().iter().filter(|entry| entry["action"] == "withdrawal_resent").collect();
    assert_eq!(resent.len(), 1, "one entry, for the one that sent: {trail}");
    assert_eq!((resent[0]["subject"].as_str(), resent[0]["actor"].as_str()), (Some(late.as_str()), Some("fay")));
    let words = "no word from the payments system for a day; ticket 88";
    assert_eq!(resent[0]["facts"], json!({ "amount_cents": 400, "words": words }), "{trail}");

    for (id, why) in [(&on_time, "not overdue"), (&format!("wd-{}", "0".repeat(32)), "unknown")] {
        let (status, refused) = api.as_operator("fay", &["finance"], "POST", &resend(id), Some(&reason)).await;
        assert_eq!((status, refused["error"]["field"].as_str()), (400, Some("withdrawal_id")), "{why}: {refused}");
    }
    let (status, refused) = api.as_operator("fay", &["finance"], "POST", &resend(&late), Some(&json!({}))).await;
    assert_eq!((status, refused["error"]["code"].as_str()), (400, Some("invalid_request")), "a reason: {refused}");
    let paid = WithdrawalResolution { withdrawal_id: late.clone(), reference: "payout-late".into() };
    ledger.resolve_withdrawal(&paid, WithdrawalStatus::Paid, SystemClock.now_ms()).await.unwrap();
    let (status, refused) = api.as_operator("fay", &["finance"], "POST", &resend(&late), Some(&reason)).await;
    assert_eq!((status, refused["error"]["field"].as_str()), (400, Some("withdrawal_id")), "paid: {refused}");
}

/// Two operators sending the same overdue withdrawal's order again at once: the write decides
/// (the hour's resent item is new only), so one of them publishes it, the other is told nothing
/// changed (or, on a transaction conflict, to retry: a 503), and the trail holds one entry.
#[tokio::test]
async fn two_resends_at_once_send_the_order_once() {
    use red_packets::domain::withdrawal::{WithdrawalRequest, OVERDUE_AFTER_MS};
    use red_packets::ports::Withdrawals;
    // A clock that stands still: both calls fall in the same hour, whenever the test runs.
    let clock = Arc::new(red_packets_testkit::ManualClock::starting_now());
    let api = serve_with_clock(|_| {}, clock.clone()).await;
    let user = fresh("twice");
    api.top_up(&user, 1_000).await;
    let payee = UserId::from_claim(&user).unwrap();
    let request = WithdrawalRequest { amount_cents: 250, destination: "card-1".into() };
    let id = format!("wd-{}", PacketId::random());
    let ledger = &api.functions.operators.ledger;
    ledger.request_withdrawal(&payee, &id, &request, clock.now_ms() - OVERDUE_AFTER_MS - 1).await.unwrap();
    let reason = json!({ "reason": "the payments system lost it" });
    let path = format!("/ops/v1/withdrawals/{id}/resend");
    let (fay, otto) = tokio::join!(
        api.as_operator("fay", &["finance"], "POST", &path, Some(&reason)),
        api.as_operator("otto", &["admin"], "POST", &path, Some(&reason)),
    );
    for (status, answer) in [&fay, &otto] {
        assert!(*status == 200 || *status == 503, "{status}: {answer}");
    }
    let sent = [&fay, &otto].iter().filter(|(_, answer)| answer["changed"].as_bool() == Some(true)).count();
    assert_eq!(sent, 1, "one of them sent it: {fay:?} {otto:?}");
    let (_, trail) = api.as_operator("sam", &["support"], "GET", &format!("/ops/v1/users/{user}/audit"), None).await;
    let entries = trail["items"].as_array().unwrap().iter().filter(|entry| entry["action"] == "withdrawal_resent");
    assert_eq!(entries.count(), 1, "{trail}");
}

#[tokio::test]
async fn reports_are_computed_on_request_and_downloaded_as_the_funds_function_files_them() {
    use red_packets::adapters::ReportDirectory;
    use red_packets::funds::{run, DayReport, FundsRequest, FundsResponse};
    let api = serve().await;
    // A day long closed: its cut-offs are fixed, so the ledger's other writers change nothing in it.
    let day = "2026-01-05";
    let path = format!("/ops/v1/reports/trial-balance/{day}");
    let response = api
        .http
        .get(format!("{}{path}?format=csv", api.base))
        .bearer_auth(api.token("fay", &["finance"]))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/csv; charset=utf-8");
    assert_eq!(
        response.headers()["content-disposition"].to_str().unwrap(),
        format!("attachment; filename=\"trial-balance-{day}.csv\"")
    );
    let downloaded = response.text().await.unwrap();

    let dir = std::env::temp_dir().join(format!("ops-reports-{}", PacketId::random()));
    let reports = ReportDirectory::new(dir.to_string_lossy().into_owned());
    let request = FundsRequest::TrialBalance(DayReport { day: Some(day.into()) });
    let ledger = &api.functions.operators.ledger;
    let FundsResponse::TrialBalance { written, .. } = run(ledger, &SystemClock, &reports, &request).await.unwrap()
    else {
        panic!("a trial balance")
    };
    let filed = written.iter().find(|path| path.ends_with(".csv")).expect("a CSV filed");
    assert_eq!(downloaded, std::fs::read_to_string(filed).unwrap(), "byte for byte the funds function's CSV");
    let _ = std::fs::remove_dir_all(&dir);

    let (status, report) = api.as_operator("fay", &["finance"], "GET", &path, None).await;
    assert_eq!((status, report["day"].as_str(), report["rows"].as_array().map(Vec::len)), (200, Some(day), Some(13)));
    let (status, refused) = api.as_operator("fay", &["finance"], "GET", &format!("{path}?format=pdf"), None).await;
    assert_eq!((status, refused["error"]["field"].as_str()), (400, Some("format")), "{refused}");
    let (status, refused) =
        api.as_operator("fay", &["finance"], "GET", "/ops/v1/reports/trial-balance/2999-01-01", None).await;
    assert_eq!((status, refused["error"]["field"].as_str()), (400, Some("day")), "not begun: {refused}");

    let user = fresh("stmt");
    let (status, statement) = api
        .as_operator("sam", &["support"], "GET", &format!("/ops/v1/users/{user}/statements/{}", today()), None)
        .await;
    assert_eq!(
        (status, statement["user"].as_str(), statement["opening_cents"].as_i64()),
        (200, Some(user.as_str()), Some(0)),
        "{statement}"
    );

    let (status, reconciled) =
        api.as_operator("fay", &["finance"], "POST", "/ops/v1/reconciliations", Some(&json!({}))).await;
    assert_eq!(status, 200, "{reconciled}");
    assert!(reconciled["differences"].is_array() && reconciled["items"].as_u64() > Some(0), "{reconciled}");
    let later = json!({ "as_of": "2999-01-01T00:00:00Z" });
    let (status, refused) = api.as_operator("fay", &["finance"], "POST", "/ops/v1/reconciliations", Some(&later)).await;
    assert_eq!((status, refused["error"]["field"].as_str()), (400, Some("as_of")), "{refused}");
}

/// A packet as Redis and the ledger each hold it: a grab Redis acknowledged and settle has not
/// persisted yet is pending, not a difference; a packet set aside in quarantine says since when,
/// and a finance operator's release takes it out, in the audit trail.
#[tokio::test]
async fn a_packets_two_sides_are_shown_and_a_quarantined_packet_is_released_once() {
    use red_packets::ports::SettleIndex;
    // A table and Redis keys of its own: the released packet is settle's work, due now, and the
    // suites' settle runs (FUNDS=none among them) must not finalise a packet sent with the wallet.
    let own = PacketId::random().as_str()[..8].to_owned();
    let api = serve_with(|config| {
        config.table_name = format!("RedPackets-sides-{own}");
        config.redis.key_prefix = format!("sides{own}");
    })
    .await;
    let (sender, grabber) = (fresh("sally"), fresh("gus"));
    api.top_up(&sender, 1_000).await;
    let sent = api
        .http
        .post(format!("{}/packets", api.base))
        .bearer_auth(api.users.token(&sender, 600))
        .header("idempotency-key", PacketId::random().to_string())
        .json(&json!({ "total_cents": 300, "count": 3 }))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 201);
    let id = sent.json::<Value>().await.unwrap()["packet_id"].as_str().unwrap().to_owned();
    let grabbed = api
        .http
        .post(format!("{}/packets/{id}/grab", api.base))
        .bearer_auth(api.users.token(&grabber, 600))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(grabbed.status(), 200);

    let sides = format!("/ops/v1/packets/{id}/sides");
    let (status, both) = api.as_operator("sam", &["support"], "GET", &sides, None).await;
    assert_eq!(status, 200, "{both}");
    assert_eq!(
        (both["ledger"]["status"].as_str(), both["ledger"]["grabs"].as_u64()),
        (Some("open"), Some(0)),
        "{both}"
    );
    assert_eq!(
        (both["live"]["grabs"].as_u64(), both["live"]["remaining_count"].as_u64()),
        (Some(1), Some(2)),
        "{both}"
    );
    let row = &both["grabs"][0];
    assert_eq!(
        (row["user"].as_str(), &row["ledger_cents"], row["pending"].as_bool()),
        (Some(grabber.as_str()), &Value::Null, Some(true))
    );
    assert_eq!(both["differences"], json!([]), "a grab not persisted yet is no difference: {both}");
    assert_eq!(both["quarantined_at"], Value::Null);

    let packet = PacketId::parse(&id).unwrap();
    let live = api.functions.operators.live.as_ref();
    live.quarantine(&packet, 0, SystemClock.now_ms()).await.unwrap();
    let (_, held) = api.as_operator("sam", &["support"], "GET", &sides, None).await;
    assert!(held["quarantined_at"].is_string(), "{held}");
    let release = format!("/ops/v1/packets/{id}/release");
    let reason = json!({ "reason": "the ledger's grab items explain it, ticket 88" });
    let (status, released) = api.as_operator("fay", &["finance"], "POST", &release, Some(&reason)).await;
    assert_eq!((status, released["released"].as_bool()), (200, Some(true)), "{released}");
    let (_, again) = api.as_operator("fay", &["finance"], "POST", &release, Some(&reason)).await;
    assert_eq!(again["released"].as_bool(), Some(false), "out of quarantine already: {again}");
    let (_, free) = api.as_operator("sam", &["support"], "GET", &sides, None).await;
    assert_eq!(free["quarantined_at"], Value::Null, "{free}");
    let steps = steps_on(&api, &id).await;
    assert_eq!(steps[0], ("packet_released".to_owned(), "fay".to_owned()), "{steps:?}");

    let unknown = format!("/ops/v1/packets/{}/sides", PacketId::random());
    let (status, _) = api.as_operator("sam", &["support"], "GET", &unknown, None).await;
    assert_eq!(status, 404, "neither store holds it");
}

/// A user's page reads the flags naming them and the audit entries concerning them, every day's,
/// newest first, each flag as it stands now.
#[tokio::test]
async fn a_users_flags_and_audit_entries_are_read_newest_first() {
    use red_packets::domain::patterns::{Finding, FlagRule, RiskFlag};
    use red_packets::ports::RiskLedger;
    let api = serve().await;
    let (user, other) = (fresh("rina"), fresh("otis"));
    api.top_up(&user, 1_000).await;
    let ids: Vec<String> = (0..2).map(|n| format!("cycle-{}-{n}", &PacketId::random().as_str()[..12])).collect();
    for (n, id) in ids.iter().enumerate() {
        let finding = Finding {
            users: vec![UserId::from_claim(&user).unwrap(), UserId::from_claim(&other).unwrap()],
            chat_id: None,
            packets: vec![PacketId::random()],
            amount_cents: 500,
            detail: "money back and forth".into(),
        };
        let flag = RiskFlag::raised(id.clone(), FlagRule::Cycle, finding, format!("2026-11-2{n}T00:00:00.000Z"));
        assert!(api.functions.operators.ledger.raise_flag(&flag).await.unwrap());
    }
    let resolve = json!({ "outcome": "dismissed", "note": "family" });
    let path = format!("/ops/v1/flags/{}/resolve", ids[0]);
    assert_eq!(api.as_operator("rita", &["risk"], "POST", &path, Some(&resolve)).await.0, 200);
    let flags = all_pages(&api, &["support"], &format!("/ops/v1/users/{user}/flags"), 1).await;
    let seen: Vec<(&str, &str)> =
        flags.iter().map(|flag| (flag["flag_id"].as_str().unwrap(), flag["status"].as_str().unwrap())).collect();
    assert_eq!(seen, [(ids[1].as_str(), "open"), (ids[0].as_str(), "dismissed")], "newest first, as they stand");
    assert_eq!(all_pages(&api, &["support"], &format!("/ops/v1/users/{other}/flags"), 10).await.len(), 2);

    let hold = json!({ "scope": "grab", "reason": "watching" });
    let held = format!("/ops/v1/users/{user}/hold");
    assert_eq!(api.as_operator("rita", &["risk"], "POST", &held, Some(&hold)).await.0, 200);
    let lift = json!({ "reason": "cleared" });
    assert_eq!(api.as_operator("rita", &["risk"], "POST", &format!("{held}/lift"), Some(&lift)).await.0, 200);
    let reference = format!("case-{}", &PacketId::random().as_str()[..12]);
    let proposal = json!({ "reference": reference, "user": user, "direction": "credit", "amount_cents": 50, "reason": "goodwill" });
    assert_eq!(api.as_operator("sam", &["support"], "POST", "/ops/v1/adjustments", Some(&proposal)).await.0, 200);
    let entries = all_pages(&api, &["support"], &format!("/ops/v1/users/{user}/audit"), 2).await;
    let steps: Vec<(&str, &str)> =
        entries.iter().map(|entry| (entry["action"].as_str().unwrap(), entry["actor"].as_str().unwrap())).collect();
    assert_eq!(
        steps,
        [("adjustment_proposed", "sam"), ("hold_lifted", "rita"), ("hold_placed", "rita")],
        "newest first, through pages of two: {entries:?}"
    );
    assert!(entries.iter().all(|entry| entry["user"] == user.as_str()));
}

/// The operators' operations' fields that name a user or an amount, read from openapi.yaml: a
/// path's `{user}`, a body's property of schema `UserId`, a body's integer with both bounds.
fn bounded_fields(contract: &Value) -> Vec<(String, String, String, Value)> {
    let resolve = |schema: &Value| -> Value {
        match schema["$ref"].as_str() {
            Some(reference) => {
                let name = reference.trim_start_matches("#/components/schemas/");
                contract["components"]["schemas"][name].clone()
            }
            None => schema.clone(),
        }
    };
    let mut fields = Vec::new();
    for (path, operations) in contract["paths"].as_object().unwrap() {
        if !path.starts_with("/ops/v1") {
            continue;
        }
        for (method, operation) in operations.as_object().unwrap() {
            let method = method.to_uppercase();
            if path.contains("{user}") {
                fields.push((method.clone(), path.clone(), "user".into(), json!({ "in": "path" })));
            }
            let body = resolve(&operation["requestBody"]["content"]["application/json"]["schema"]);
            for (name, property) in body["properties"].as_object().into_iter().flatten() {
                let names_a_user = property["$ref"] == "#/components/schemas/UserId";
                let bounded = property["type"] == "integer" && property.get("minimum").is_some();
                if names_a_user || (bounded && property.get("maximum").is_some()) {
                    fields.push((method.clone(), path.clone(), name.clone(), resolve(property)));
                }
            }
        }
    }
    fields
}

/// A body every check below starts from, valid but for the field it changes.
fn valid_body(method: &str, path: &str) -> Option<Value> {
    match (method, path) {
        ("POST", "/ops/v1/adjustments") => Some(json!({
            "reference": fresh("bounds"), "user": "zoe", "direction": "credit", "amount_cents": 100,
            "reason": "a boundary test",
        })),
        ("POST", "/ops/v1/users/{user}/hold") => Some(json!({ "scope": "money_out", "reason": "a boundary test" })),
        ("POST", "/ops/v1/users/{user}/hold/lift") => Some(json!({ "reason": "a boundary test" })),
        ("POST", _) => Some(json!({})),
        _ => None,
    }
}

/// Every operation's user-naming and amount field, as the contract lists them, refused past its
/// bounds with the app's error shape naming the field (a user no token can be would make a wallet
/// the books cannot read), and its bounds themselves accepted as far as the field goes.
#[tokio::test]
async fn every_user_and_amount_field_of_the_contract_is_refused_past_its_bounds() {
    let api = serve().await;
    let contract: Value = serde_yaml::from_str(include_str!("../../../openapi.yaml")).unwrap();
    let fields = bounded_fields(&contract);
    let roles = ["support", "finance", "risk", "admin"];
    let refused = |field: &str, (status, answer): &(u16, Value)| {
        *status == 400 && answer["error"]["code"] == "invalid_request" && answer["error"]["field"] == field
    };
    let mut tried = 0;
    for (method, path, field, schema) in &fields {
        if schema["in"] == "path" {
            for bad in ["%07zoe".to_owned(), "z".repeat(257)] {
                let concrete = sample(&format!("{method} {path}")).1.replace("/zoe", &format!("/{bad}"));
                let answer =
                    api.as_operator("otto", &roles, method, &concrete, valid_body(method, path).as_ref()).await;
                assert!(refused("user", &answer), "{method} {path} with user {bad:?}: {answer:?}");
                tried += 1;
            }
            continue;
        }
        let base = valid_body(method, path)
            .unwrap_or_else(|| panic!("{method} {path} names {field}: give it a valid body in valid_body"));
        let (bad, good): (Vec<Value>, Vec<Value>) = if schema["type"] == "integer" {
            let (min, max) = (schema["minimum"].as_i64().unwrap(), schema["maximum"].as_i64().unwrap());
            (vec![json!(min - 1), json!(max + 1)], vec![json!(min), json!(max)])
        } else {
            (vec![json!(""), json!("z".repeat(257)), json!("zo\u{7}e")], vec![json!("z".repeat(256)), json!("佐伊")])
        };
        for value in bad {
            let mut body = base.clone();
            body[field.as_str()] = value.clone();
            let answer = api.as_operator("otto", &roles, method, path, Some(&body)).await;
            assert!(refused(field, &answer), "{method} {path} with {field} {value}: {answer:?}");
            tried += 1;
        }
        for value in good {
            let mut body = valid_body(method, path).unwrap();
            body[field.as_str()] = value.clone();
            let answer = api.as_operator("otto", &roles, method, path, Some(&body)).await;
            assert!(!refused(field, &answer) && answer.0 < 500, "{method} {path} with {field} {value}: {answer:?}");
        }
    }
    assert!(
        fields.iter().any(|(_, path, field, _)| path == "/ops/v1/adjustments" && field == "user"),
        "the contract's adjustment names its user as a UserId: {fields:?}"
    );
    assert!(tried >= 10, "{tried} refusals tried");
}

/// The hourly view (`GET /ops/v1/reports/hours/{day}`), kept by the risk function from the
/// ledger's events: a day of traffic on a table of its own (a top-up, sends, grabs, a cancel,
/// settle, two withdrawals paid and failed), its stream passed through template.yaml's Pipe and
/// the risk function's rule, every event delivered twice and the whole in a shuffled order. The
/// route's hours equal a count of the published events by type and business hour, and its totals
/// their sum; the rule names exactly the types the function reads.
#[tokio::test]
async fn the_hourly_view_counts_each_ledger_event_once_whatever_its_deliveries() {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    use red_packets::domain::withdrawal::{WithdrawalResolution, WithdrawalStatus};
    use red_packets::ports::Withdrawals;

    let mut types: Vec<String> =
        risk::event_types().iter().map(|kind| json!(kind).as_str().unwrap().to_owned()).collect();
    let mut ruled = local::pipe::rule_detail_types("RiskFunction");
    types.sort();
    ruled.sort();
    assert_eq!(ruled, types, "template.yaml's rule names the types the risk function reads");

    let mut config = Config::from_env().expect("configuration");
    config.funds = Funds::Wallet;
    let stack = crate::support::stack::Stack::with_config("hours", config).await;
    let dynamodb = red_packets::adapters::DynamoLedger::client_from_env().unwrap();
    let mut stream = local::pipe::StreamReader::enable(&dynamodb, &stack.config.table_name).await.expect("the stream");
    let alice = UserId::from_claim("alice").unwrap();
    let topup = TopUp { user: alice.clone(), amount_cents: 5_000, reference: "pay-hours-1".into() };
    stack.ledger.top_up(&topup, stack.clock.now_ms()).await.unwrap();
    let finished = stack.send("alice", json!({ "total_cents": 300, "count": 3 })).await;
    for user in ["bob", "carol", "dave"] {
        assert_eq!(stack.grab(&finished, user).await.0, 200);
    }
    stack.clock.advance(3_600_000); // the next hour
    let cancelled = stack.send("alice", json!({ "total_cents": 400, "count": 4 })).await;
    assert_eq!(stack.grab(&cancelled, "bob").await.0, 200);
    assert_eq!(stack.cancel(&cancelled, "alice").await.0, 200);
    stack.settle().await;
    stack.settle().await;
    let mut withdrawals = Vec::new();
    for key in ["hours-out-1", "hours-out-2"] {
        let (status, receipt) =
            stack.withdraw("alice", &json!({ "amount_cents": 120, "destination": "card-1" }), key).await;
        assert_eq!(status, 201, "{receipt}");
        withdrawals.push(receipt["withdrawal_id"].as_str().unwrap().to_owned());
    }
    for (id, outcome) in withdrawals.iter().zip([WithdrawalStatus::Paid, WithdrawalStatus::Failed]) {
        let resolution = WithdrawalResolution { withdrawal_id: id.clone(), reference: format!("po-{id}") };
        stack.ledger.resolve_withdrawal(&resolution, outcome, stack.clock.now_ms()).await.unwrap();
    }

    let pipe = local::pipe::Pipe::of_template();
    let records = stream.read_new().await.expect("the stream's records");
    let published: Vec<(String, Value)> = records
        .iter()
        .filter_map(|record| pipe.publish(record))
        .filter(|(detail_type, _)| ruled.contains(detail_type))
        .collect();
    // The count the view must equal: each published event of a counted type, by business hour.
    let measure = |detail_type: &str| match detail_type {
        "PacketSent" => Some("sent"),
        "GrabRecorded" => Some("grabbed"),
        "PacketRefunded" => Some("refunded"),
        "GrabRevoked" => Some("revoked"),
        "WithdrawalRequested" => Some("withdrawal_requested"),
        "WithdrawalPaid" => Some("withdrawal_paid"),
        "WithdrawalFailed" => Some("withdrawal_failed"),
        _ => None,
    };
    let mut expected: std::collections::BTreeMap<(String, u64, &str), (u64, u64)> = Default::default();
    for (detail_type, detail) in &published {
        let Some(measure) = measure(detail_type) else { continue };
        let at = red_packets::clock::parse_rfc3339(detail["occurred_at"].as_str().unwrap()).unwrap();
        let hour = stack.config.business_day.hour_of(at);
        let tally = expected.entry((hour.day, u64::from(hour.hour), measure)).or_default();
        tally.0 += 1;
        tally.1 += detail["amount_cents"].as_str().unwrap().parse::<u64>().unwrap();
    }
    let counted: u64 = expected.values().map(|(count, _)| count).sum();
    assert_eq!(counted, 2 + 4 + 1 + 2 + 1 + 1, "sends, grabs, the refund, withdrawals asked, paid, failed");

    let mut deliveries: Vec<Value> = published
        .iter()
        .flat_map(|(detail_type, detail)| std::iter::repeat_n(local::pipe::bus_event(detail_type, detail), 2))
        .collect();
    deliveries.shuffle(&mut rand::rngs::StdRng::seed_from_u64(20_261_207));
    let watch = risk::Watch::new(stack.ledger.clone(), &stack.config, SystemClock);
    let mut counted_now = 0;
    for event in deliveries {
        let watched = risk::handle(&watch, lambda_runtime::LambdaEvent::new(event, lambda_runtime::Context::default()))
            .await
            .expect("the risk function takes the event");
        counted_now += u64::from(watched.counted == Some(true));
    }
    assert_eq!(counted_now, counted, "each event counted at one of its two deliveries");

    let api = serve_with(|config| config.table_name = stack.config.table_name.clone()).await;
    let days: std::collections::BTreeSet<String> = expected.keys().map(|(day, ..)| day.clone()).collect();
    for day in days {
        let (status, view) =
            api.as_operator("sue", &["support"], "GET", &format!("/ops/v1/reports/hours/{day}"), None).await;
        assert_eq!(status, 200, "{view}");
        assert_eq!(view["hours"].as_array().unwrap().len(), 24);
        let mut totals: std::collections::BTreeMap<&str, (u64, u64)> = Default::default();
        for hour in view["hours"].as_array().unwrap() {
            for measure in [
                "sent",
                "grabbed",
                "refunded",
                "revoked",
                "withdrawal_requested",
                "withdrawal_paid",
                "withdrawal_failed",
            ] {
                let tally = (hour[measure]["count"].as_u64().unwrap(), hour[measure]["amount_cents"].as_u64().unwrap());
                let want =
                    expected.get(&(day.clone(), hour["hour"].as_u64().unwrap(), measure)).copied().unwrap_or_default();
                assert_eq!(tally, want, "{day} hour {} {measure}", hour["hour"]);
                let total = totals.entry(measure).or_default();
                total.0 += tally.0;
                total.1 += tally.1;
            }
        }
        for (measure, (count, cents)) in totals {
            assert_eq!(
                (view["totals"][measure]["count"].as_u64(), view["totals"][measure]["amount_cents"].as_u64()),
                (Some(count), Some(cents)),
                "{day} {measure}"
            );
        }
        assert_eq!(view["time_zone"], stack.config.business_day.zone());
    }
    let (status, refused) = api.as_operator("sue", &["support"], "GET", "/ops/v1/reports/hours/2026-13-45", None).await;
    assert_eq!((status, refused["error"]["field"].as_str()), (400, Some("day")), "{refused}");
}
