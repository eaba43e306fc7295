//! The operators' API (`/ops/v1`, openapi.yaml's `operators` tag) over HTTP through the local
//! gateway, on the real DynamoDB Local: the operators' authorizer refuses an app user's token as
//! another issuer's (401) and every route refuses an operator without one of its roles (403
//! `forbidden`, naming them), before anything is read; the four-eyes rule compares the verified
//! subjects of two operators' tokens, never a name in a body; a hold placed through the API
//! names its operator and stops the user's withdrawals; the audit trail names each operator.

use std::sync::Arc;

use funds::ops_api::ROUTES;
use local::LocalAuthorizer;
use red_packets::domain::operators::Role;
use red_packets::domain::wallet::TopUp;
use red_packets::domain::{Funds, PacketId, UserId};
use red_packets::ports::Wallets;
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
    let mut config = Config::from_env().expect("configuration");
    config.funds = Funds::Wallet;
    let users = LocalAuthorizer::new("users-of-this-test");
    let mut functions = local::functions(&config, users.clone()).await.expect("services of make test");
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
        .replace("{packet_id}", &"0".repeat(32));
    let body = (method == "POST").then(|| json!({}));
    (method.to_owned(), path, body)
}

#[tokio::test]
async fn every_route_refuses_another_issuers_token_and_an_operator_without_its_role() {
    let api = serve().await;
    let app_user = api.users.token("alice", 600);
    for (route, action) in ROUTES {
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
