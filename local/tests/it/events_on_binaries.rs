//! Every sample in `events/` invoked on the function's real binary (the dev build `make test`
//! makes before the tests; `make invoke` and `make build` use the release build) under AWS's
//! Lambda Runtime Interface Emulator, against the test Redis and DynamoDB Local: what
//! `sam local invoke -e events/<file>` does inside its container.
//!
//! `make test` runs these tests a second time through `sam local invoke` itself
//! (`scripts/sam-local.sh` sets `SAM_LOCAL_TEMPLATE`): the template's functions, the same
//! binaries laid out as `sam build` lays them out, in SAM's Lambda containers of the host's
//! architecture on a Docker daemon of the run's own, with the same assertions. What only the binary on the host can show (a variable the template does not
//! declare, a file the function wrote) is checked in the first run alone.

use std::fmt;
use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::sync::OnceLock;

use local::rie::Rie;
use local::sam_local::{self, SamLocal};
use local::tls_front::TlsFront;
use red_packets::adapters::DynamoLedger;
use red_packets::ports::Ledger;
use red_packets_testkit::events;
use serde_json::{json, Value};

/// Which binary each sample event that is not an app route's is for (an app route's is its
/// route's, `red_packets::routes`).
const OTHER_EVENTS: &[(&str, &str)] = &[
    ("settle.json", "settle"),
    ("topup.json", "funds"),
    ("reconcile.json", "funds"),
    ("statement.json", "funds"),
    ("trial-balance.json", "funds"),
    ("withdrawal-paid.json", "funds"),
    ("withdrawal-failed.json", "funds"),
    ("adjustment-propose.json", "operator"),
    ("adjustment-approve.json", "operator"),
    ("risk.json", "risk"),
];

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

fn binary(name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace().join("target"));
    let path = target.join("debug").join(name);
    assert!(path.exists(), "{} is missing: `cargo build --workspace --bins` first (make test does)", path.display());
    path
}

/// `sam local invoke` when `make test`'s SAM stage runs these tests, else `None` (the emulator).
fn sam() -> Option<&'static SamLocal> {
    static SAM: OnceLock<Option<SamLocal>> = OnceLock::new();
    SAM.get_or_init(SamLocal::from_env).as_ref()
}

/// An event with the name a failed assertion reports it by: its file in `events/`, or what it is.
#[derive(Clone)]
struct Event {
    name: String,
    body: Value,
}

impl Event {
    fn named(name: &str, body: Value) -> Event {
        Event { name: name.to_owned(), body }
    }
}

impl Deref for Event {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.body
    }
}

impl DerefMut for Event {
    fn deref_mut(&mut self) -> &mut Value {
        &mut self.body
    }
}

fn event(file: &str) -> Event {
    let body = serde_json::from_str(&std::fs::read_to_string(workspace().join("events").join(file)).unwrap()).unwrap();
    Event::named(file, body)
}

/// A function's answer to one event, displayed with both, so that an assertion on it names the
/// function and the event that failed.
struct Answer {
    label: String,
    value: Value,
}

impl Deref for Answer {
    type Target = Value;
    fn deref(&self) -> &Value {
        &self.value
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.label, self.value)
    }
}

impl fmt::Debug for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

fn status_and_body(response: &Answer) -> (u64, Value) {
    let body = response["body"]
        .as_str()
        .map(|text| serde_json::from_str(text).unwrap_or_else(|error| panic!("{response}: body not JSON: {error}")))
        .unwrap_or(Value::Null);
    let status = response["statusCode"].as_u64().unwrap_or_else(|| panic!("not an HTTP answer: {response}"));
    (status, body)
}
#[test]
fn every_sample_event_names_its_function() {
    let mut files: Vec<String> = std::fs::read_dir(workspace().join("events"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".json"))
        .collect();
    files.sort();
    let routes = red_packets::routes::ROUTES.iter().map(|route| route.event.to_string());
    let mut mapped: Vec<String> = routes.chain(OTHER_EVENTS.iter().map(|(file, _)| file.to_string())).collect();
    mapped.sort();
    assert_eq!(files, mapped, "every file in events/ is invoked by this test");
}

/// One emulator at a time on this machine: it binds 127.0.0.1:9001 inside. (SAM's invocations
/// take it too: one container at a time on two cores.)
static EMULATOR: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Whether `name` is yet to run in SAM's containers in this process: the SAM stage runs each
/// function there once (its first event), which is what SAM adds over the emulator (the
/// template's environment as SAM resolves it, the arm64 build, SAM's own emulator and
/// container); its other events run on the host's binary under AWS's emulator, as in the first
/// pass, each invocation in SAM's containers costing about seven seconds under qemu.
fn first_in_sam(name: &str) -> bool {
    static SEEN: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if seen.iter().any(|function| function == name) {
        return false;
    }
    seen.push(name.to_owned());
    true
}

/// A function's binary with `environment` on top of the test's, answering each event: under
/// AWS's emulator on the host, or, in the SAM stage, the first event of each function through
/// `sam local invoke` of the template's function ([`first_in_sam`]). The caller holds
/// [`EMULATOR`].
async fn on_emulator_with(name: &str, environment: &[(&str, &str)], mut events: Vec<Event>) -> Vec<Answer> {
    let mut answers = Vec::new();
    let proxy = ledger_proxy(name);
    let mut in_sam = vec![("AWS_ENDPOINT_URL_DYNAMODB", proxy.as_str())];
    in_sam.extend_from_slice(environment);
    // On the host the binary signs with credentials of its own: the proxy records the key id
    // beside the listener's binary, and a call signed by another is noticed (scripts/permissions.py).
    let mut on_host = vec![("AWS_ENDPOINT_URL_DYNAMODB", proxy.as_str()), ("AWS_ACCESS_KEY_ID", name)];
    on_host.extend_from_slice(environment);
    if let Some(sam) = sam().filter(|_| !events.is_empty() && first_in_sam(name)) {
        let function = sam_local::function_of(name);
        let event = events.remove(0);
        let label = format!("{function} (sam local invoke) with {}", event.name);
        let value = sam.invoke(function, &in_sam, &event).await.unwrap_or_else(|error| panic!("{label}: {error}"));
        answers.push(Answer { label, value });
        if events.is_empty() {
            return answers;
        }
    }
    let environment = on_host.as_slice();
    let rie = Rie::start_with(&binary(name), environment).await.unwrap_or_else(|error| panic!("{name}: {error}"));
    for event in events {
        let label = format!("{name} with {}", event.name);
        let value = rie.invoke(&event).await.unwrap_or_else(|error| panic!("{label}: {error}"));
        answers.push(Answer { label, value });
    }
    rie.stop().await;
    answers
}

/// The URL of `binary`'s recording proxy in front of the test's DynamoDB Local
/// (`local::call_proxy`), started on first use: every call the shipped binary makes is recorded
/// under its name. On 127.0.0.1, or for SAM's containers on the run's Docker bridge
/// (`DOCKER_GATEWAY`), where they reach the host.
fn ledger_proxy(binary: &str) -> String {
    static PROXIES: std::sync::Mutex<Vec<(&'static str, String)>> = std::sync::Mutex::new(Vec::new());
    let mut proxies = PROXIES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, url)) = proxies.iter().find(|(name, _)| *name == binary) {
        return url.clone();
    }
    let upstream = std::env::var("AWS_ENDPOINT_URL_DYNAMODB").expect("make test's DynamoDB Local");
    let bind = match (sam(), std::env::var("DOCKER_GATEWAY")) {
        (Some(_), Ok(gateway)) => gateway.parse().expect("DOCKER_GATEWAY is an address"),
        _ => std::net::IpAddr::from([127, 0, 0, 1]),
    };
    let binary: &'static str = Box::leak(binary.to_owned().into_boxed_str());
    let proxy = local::call_proxy::CallProxy::start(binary, "dynamodb", &upstream, bind)
        .unwrap_or_else(|error| panic!("{binary}'s recording proxy: {error}"));
    proxies.push((binary, proxy.url().to_owned()));
    proxy.url().to_owned()
}

async fn on_emulator(name: &str, events: Vec<Event>) -> Vec<Answer> {
    on_emulator_with(name, &[], events).await
}

/// The test's ledger (make test's DynamoDB Local), its table made.
async fn ready_ledger() -> DynamoLedger {
    let config = red_packets::Config::from_env().unwrap();
    let ledger = DynamoLedger::new(DynamoLedger::client_from_env().expect("a DynamoDB client"), &config);
    ledger.ensure_table().await.expect("DynamoDB Local (make test) is reachable");
    ledger
}

#[tokio::test]
async fn the_sample_events_run_on_the_function_binaries_under_aws_lambda_rie() {
    let _emulator = EMULATOR.lock().await;
    ready_ledger().await;
    // Each sample event runs once in SAM's containers; its replay (the same key, reference or
    // word again), the binary's own behaviour, under the emulator only: a container is seconds.
    let replays = sam().is_none();

    // send.json: 201, and the same Idempotency-Key and body replay the same packet.
    // A second send under a key of this run's own: a packet of this run's own (every pass of make
    // test shares one DynamoDB Local, where the sample's key replays one packet, cancelled below).
    let mut fresh_send = event("send.json");
    let fresh_key = red_packets::domain::PacketId::random().to_string();
    events::set_header(&mut fresh_send, "Idempotency-Key", Some(&fresh_key));
    let mut sends = vec![event("send.json"), fresh_send];
    if replays {
        sends.push(event("send.json"));
    }
    let sent = on_emulator("send", sends).await;
    let (status, packet) = status_and_body(&sent[0]);
    assert_eq!(status, 201, "{}", sent[0]);
    if let Some(replayed) = sent.get(2) {
        let (status, again) = status_and_body(replayed);
        assert_eq!((status, &again["packet_id"]), (201, &packet["packet_id"]), "{replayed}");
    }
    let id = packet["packet_id"].as_str().unwrap();

    // grab.json names a packet that does not exist: 404; pointed at the packet just sent: bob grabs it.
    let mut grab_event = event("grab.json");
    events::set_packet_id(&mut grab_event, id);
    grab_event.name = "grab.json, on the packet sent".into();
    let grabs = on_emulator("grab", vec![event("grab.json"), grab_event.clone()]).await;
    let (status, body) = status_and_body(&grabs[0]);
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("not_found")), "{}", grabs[0]);
    let (status, grabbed) = status_and_body(&grabs[1]);
    assert_eq!((status, grabbed["user"].as_str()), (200, Some("bob")), "{}", grabs[1]);

    let (status, fresh) = status_and_body(&sent[1]);
    assert_eq!(status, 201, "{}", sent[1]);
    if sam().is_none() {
        grab_with_max_concurrency(fresh["packet_id"].as_str().unwrap()).await;
    }

    // query.json: 404 for its own id, the view for the packet just sent; history.json: alice's page.
    let mut query_event = event("query.json");
    events::set_packet_id(&mut query_event, id);
    query_event.name = "query.json, on the packet sent".into();
    let mut shared_event = event("shared.json");
    events::set_packet_id(&mut shared_event, id);
    shared_event.name = "shared.json, on the packet sent".into();
    let queries =
        on_emulator("query", vec![event("query.json"), query_event, event("history.json"), shared_event]).await;
    assert_eq!(status_and_body(&queries[0]).0, 404, "{}", queries[0]);
    let (status, view) = status_and_body(&queries[1]);
    assert_eq!(status, 200, "{}", queries[1]);
    assert!(view["grabs"].as_array().unwrap().iter().any(|grab| grab["user"] == "bob"), "{}", queries[1]);
    let (status, history) = status_and_body(&queries[2]);
    assert_eq!(status, 200, "{}", queries[2]);
    let items = history["items"].as_array().unwrap();
    assert!(!items.is_empty() && items.iter().all(|item| item["sender"] == "alice"), "{}", queries[2]);
    // shared.json: no token, the view without the caller's own fields, kept by anyone: 2 s while
    // open, for good once settled (the sample's packet, replayed by every pass of make test, is
    // open on the first pass and settled by the cancel below on later ones).
    let (status, shared) = status_and_body(&queries[3]);
    assert_eq!(
        (status, shared.get("eligible"), &shared["grab_count"]),
        (200, None, &view["grab_count"]),
        "{}",
        queries[3]
    );
    let kept_for = match shared["settled"].as_bool() {
        Some(true) => "public, max-age=31536000, immutable",
        _ => "public, max-age=2",
    };
    assert_eq!(queries[3]["headers"]["cache-control"], kept_for, "{}", queries[3]);

    // cancel.json: 404 for its own id; alice cancels the packet just sent: 200, cancelled.
    let mut cancel_event = event("cancel.json");
    events::set_packet_id(&mut cancel_event, id);
    cancel_event.name = "cancel.json, on the packet sent".into();
    let cancels = on_emulator("send", vec![event("cancel.json"), cancel_event]).await;
    assert_eq!(status_and_body(&cancels[0]).0, 404, "{}", cancels[0]);
    let (status, cancelled) = status_and_body(&cancels[1]);
    assert_eq!((status, cancelled["status"].as_str()), (200, Some("cancelled")), "{}", cancels[1]);

    // settle.json: a summary of the shards it names; a malformed payload is an error whose
    // errorType says what went wrong (lambda_runtime's Diagnostic), not a Rust type name.
    let malformed = Event::named(r#"{"shards":"all"}"#, serde_json::json!({ "shards": "all" }));
    let settled = on_emulator("settle", vec![event("settle.json"), malformed]).await;
    assert_eq!(settled[0]["shards"], serde_json::json!([0, 15]), "{}", settled[0]);
    assert_eq!(settled[0]["mismatches"], 0, "{}", settled[0]);
    assert_eq!(settled[1]["errorType"], "InvalidSettleRequest", "{}", settled[1]);

    // risk.json: a packet the ledger does not hold raises nothing; pointed at the packet just
    // sent (no chat), neither; an event without a packet id names its error type.
    let mut on_packet = event("risk.json");
    on_packet["detail"]["packet_id"] = Value::String(id.to_owned());
    on_packet.name = "risk.json, on the packet sent".into();
    let mut broken = event("risk.json");
    broken["detail"]["packet_id"] = Value::String("not-a-packet".into());
    broken.name = "risk.json without a packet id".into();
    let watched = on_emulator("risk", vec![event("risk.json"), on_packet, broken]).await;
    for answer in &watched[..2] {
        assert_eq!(
            (answer["event"].as_str(), answer["flags"].as_array().map(Vec::len)),
            (Some("PacketSent"), Some(0)),
            "{answer}"
        );
    }
    assert_eq!(watched[2]["errorType"], "InvalidRiskEvent", "{}", watched[2]);

    // topup.json on the funds function (the wallet on): credited once, by reference (an earlier
    // pass of make test on this DynamoDB Local may have applied it); wallet.json shows the
    // balance; reconcile.json finds the books balanced; a bad payload names its error type;
    // statement.json and trial-balance.json write their JSON lines and CSV (to a directory: no
    // REPORTS_BUCKET; in SAM's container its default, /tmp/reports, which this test cannot read).
    let reports = std::env::temp_dir().join(format!("events-reports-{}", std::process::id()));
    let reports_dir = reports.display().to_string();
    let wallet = [("FUNDS", "wallet"), ("REPORTS_BUCKET", ""), ("REPORTS_DIR", reports_dir.as_str())];
    let mut funds_events = vec![
        event("topup.json"),
        event("reconcile.json"),
        Event::named(r#"{"withdraw":1}"#, serde_json::json!({ "withdraw": 1 })),
        event("statement.json"),
        event("trial-balance.json"),
    ];
    if replays {
        funds_events.push(event("topup.json"));
    }
    let funded = on_emulator_with("funds", &wallet, funds_events).await;
    assert_eq!(funded[3]["statement"]["report"]["user"], "alice", "{}", funded[3]);
    assert_eq!(funded[4]["trial_balance"]["report"]["day"], "2026-11-23", "{}", funded[4]);
    for (answer, report) in [(&funded[3], &funded[3]["statement"]), (&funded[4], &funded[4]["trial_balance"])] {
        let written: Vec<&str> = report["written"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert_eq!(written.len(), 2, "{answer}");
        if answer.label.contains("(sam local invoke)") {
            assert!(written.iter().all(|file| file.starts_with("/tmp/reports/")), "{answer}");
            continue;
        }
        for file in written {
            let body = std::fs::read_to_string(file).unwrap_or_else(|error| panic!("{file}: {error}"));
            assert!(!body.is_empty() && (file.ends_with(".csv") || body.lines().all(|l| l.starts_with('{'))), "{file}");
        }
    }
    assert!(funded[0]["topup"]["applied"].is_boolean(), "{}", funded[0]);
    if let Some(replayed) = funded.get(5) {
        assert_eq!(replayed["topup"]["applied"], false, "a reference is credited once: {replayed}");
    }
    let top_up_answer = funded.get(5).unwrap_or(&funded[0]);
    let balance = top_up_answer["topup"]["balance_cents"].as_u64().unwrap();
    // 500.00 credited once; an earlier pass (the SAM stage after the emulator's) paid the sample
    // withdrawal of 20.00 out of it, once.
    assert!(balance == 50_000 || balance == 48_000, "{top_up_answer}");
    assert_eq!(funded[1]["reconcile"]["differences"], serde_json::json!([]), "{}", funded[1]);
    assert_eq!(funded[2]["errorType"], "InvalidFundsRequest", "{}", funded[2]);
    let wallets = on_emulator_with("query", &wallet, vec![event("wallet.json")]).await;
    let (status, page) = status_and_body(&wallets[0]);
    assert_eq!((status, page["balance_cents"].as_u64()), (200, Some(balance)), "{}", wallets[0]);
    let topped_up = page["items"].as_array().unwrap().iter().any(|item| item["kind"] == "topup");
    assert!(topped_up, "the sample top-up is in the wallet: {}", wallets[0]);

    // withdraw.json on send: alice's 20.00 out, pending (a replay of an earlier pass answers 200
    // with the withdrawal as it is now); withdrawal-paid.json on funds: paid once, however often
    // delivered; withdrawal-failed.json contradicts it and is refused.
    let withdrawals = if replays { vec![event("withdraw.json"); 2] } else { vec![event("withdraw.json")] };
    let out = on_emulator_with("send", &wallet, withdrawals).await;
    let (status, first) = status_and_body(&out[0]);
    assert!(matches!(status, 200 | 201), "{}", out[0]);
    if let Some(replayed) = out.get(1) {
        let (status, again) = status_and_body(replayed);
        assert_eq!(
            (status, &again["withdrawal_id"], again["created"].as_bool()),
            (200, &first["withdrawal_id"], Some(false)),
            "{replayed}"
        );
    }
    let paid: Value =
        serde_json::from_str(&std::fs::read_to_string(workspace().join("events/withdrawal-paid.json")).unwrap())
            .unwrap();
    assert_eq!(first["withdrawal_id"], paid["withdrawal_paid"]["withdrawal_id"], "the samples name one withdrawal");
    let mut words = vec![event("withdrawal-paid.json"), event("withdrawal-failed.json")];
    if replays {
        words.push(event("withdrawal-paid.json"));
    }
    let resolved = on_emulator_with("funds", &wallet, words).await;
    assert_eq!(resolved[0]["withdrawal"]["withdrawal"]["status"], "paid", "{}", resolved[0]);
    assert_eq!(resolved[1]["errorType"], "InvalidFundsRequest", "{}", resolved[1]);
    if let Some(replayed) = resolved.get(2) {
        assert_eq!(replayed["withdrawal"]["applied"], false, "paid once: {replayed}");
    }

    // adjustment-propose.json and adjustment-approve.json on operator, the operators' API (anna's
    // token, then ben's): proposed, then applied once (an earlier pass may have done both: the
    // same answers, applied false); the approval with anna's own token is refused naming the
    // approver, with a support agent's 403. The payments entry point refuses an adjustment.
    let by = |sub: &str, roles: &str, name: &str| {
        let mut approval = event("adjustment-approve.json");
        approval.body["requestContext"]["authorizer"]["jwt"]["claims"] = json!({ "sub": sub, "cognito:groups": roles });
        approval.name = name.into();
        approval
    };
    let own = by("anna@example.com", "[support finance]", "adjustment-approve.json by its proposer");
    let support = by("sam@example.com", "[support]", "adjustment-approve.json by a support agent");
    let steps = vec![event("adjustment-propose.json"), own, support, event("adjustment-approve.json")];
    let adjusted = on_emulator_with("operator", &wallet, steps).await;
    let (status, proposed) = status_and_body(&adjusted[0]);
    assert_eq!(status, 200, "{}", adjusted[0]);
    assert_eq!(proposed["adjustment"]["proposer"], "anna@example.com", "{}", adjusted[0]);
    let (status, own) = status_and_body(&adjusted[1]);
    assert_eq!((status, own["error"]["field"].as_str()), (400, Some("approver")), "{}", adjusted[1]);
    let (status, support) = status_and_body(&adjusted[2]);
    assert_eq!((status, support["error"]["code"].as_str()), (403, Some("forbidden")), "{}", adjusted[2]);
    let (status, approved) = status_and_body(&adjusted[3]);
    assert_eq!((status, approved["adjustment"]["status"].as_str()), (200, Some("applied")), "{}", adjusted[3]);
    let proposal_body: Value =
        serde_json::from_str(event("adjustment-propose.json")["body"].as_str().unwrap()).unwrap();
    let mut proposal = json!({ "propose_adjustment": proposal_body });
    proposal["propose_adjustment"]["proposer"] = "anna".into();
    let refused =
        on_emulator_with("funds", &wallet, vec![Event::named("a proposal on the payments entry point", proposal)])
            .await;
    assert_eq!(refused[0]["errorType"], "InvalidFundsRequest", "{}", refused[0]);
    assert!(refused[0]["errorMessage"].as_str().unwrap().contains("OperatorFunction"), "{}", refused[0]);
}

/// The same binary as Lambda Managed Instances run it: AWS_LAMBDA_MAX_CONCURRENCY workers (the
/// runtime's run_concurrent) sharing one store; carol grabs `packet_id`, then repeats. The
/// variable reaches the binary alone, through a wrapper: the emulator itself switches to a mode
/// of its own when it sees it, which starts no bootstrap outside /var/task. (The host's binary
/// only: SAM runs no Managed Instances.)
async fn grab_with_max_concurrency(packet_id: &str) {
    let wrapper = std::env::temp_dir().join(format!("grab-max-concurrency-{}", std::process::id()));
    std::fs::write(&wrapper, format!("#!/bin/sh\nAWS_LAMBDA_MAX_CONCURRENCY=4 exec {}\n", binary("grab").display()))
        .unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut carol_grabs = event("grab.json");
    events::set_packet_id(&mut carol_grabs, packet_id);
    events::set_caller(&mut carol_grabs, Some("carol"));
    let rie = Rie::start(&wrapper).await.unwrap_or_else(|error| panic!("grab, concurrent: {error}"));
    let mut concurrent = Vec::new();
    for event in [carol_grabs.clone(), carol_grabs] {
        let value = rie.invoke(&event).await.unwrap_or_else(|error| panic!("grab, concurrent: {error}"));
        concurrent.push(Answer { label: "grab (AWS_LAMBDA_MAX_CONCURRENCY=4) with grab.json as carol".into(), value });
    }
    rie.stop().await;
    std::fs::remove_file(&wrapper).unwrap();
    // The emulator's own mode serves one poller at a time, and may hand an invocation to a second
    // worker's poll: which answer comes back first (the grab or its repeat) is the emulator's;
    // that carol holds one share, the same in both, is the binary's.
    let answers: Vec<_> = concurrent.iter().map(status_and_body).collect();
    for (status, body) in &answers {
        assert_eq!((*status, body["user"].as_str()), (200, Some("carol")), "{concurrent:?}");
    }
    assert_eq!(answers[0].1["amount_cents"], answers[1].1["amount_cents"], "one share: {concurrent:?}");
    assert_eq!(answers[1].1["already_grabbed"], true, "{concurrent:?}");
}

/// The ledger over TLS, as in AWS: `send`'s binary reaches DynamoDB Local through a TLS
/// front. Told to trust the front's authority (`AWS_CA_BUNDLE`) it records the packet; trusting
/// only the Amazon Trust Services roots compiled in, it refuses the front's certificate and the
/// send is a 503, so the certificate is checked.
#[tokio::test]
async fn the_ledger_is_reached_over_tls_trusting_only_the_roots_it_is_given() {
    if sam().is_some() {
        // AWS_CA_BUNDLE is no variable of the template's, so SAM's --env-vars cannot set it.
        println!("the host's binary only: the SAM stage cannot point a function at the TLS front");
        return;
    }
    let _emulator = EMULATOR.lock().await;
    let ledger = ready_ledger().await;
    let endpoint = std::env::var("AWS_ENDPOINT_URL_DYNAMODB").expect("make test sets AWS_ENDPOINT_URL_DYNAMODB");
    let backend: SocketAddr = endpoint.trim_start_matches("http://").trim_end_matches('/').parse().expect("host:port");
    let front = TlsFront::start(backend).await.expect("TLS front");
    let bundle = std::env::temp_dir().join(format!("tls-front-{}.pem", std::process::id()));
    std::fs::write(&bundle, front.authority_pem()).unwrap();
    let url = front.url();
    let mut send = event("send.json");
    send["headers"]["idempotency-key"] = Value::from(format!("tls-{}", std::process::id()));

    let trusted = on_emulator_with(
        "send",
        &[("AWS_ENDPOINT_URL_DYNAMODB", &url), ("AWS_CA_BUNDLE", bundle.to_str().unwrap())],
        vec![send.clone()],
    )
    .await;
    let untrusted =
        on_emulator_with("send", &[("AWS_ENDPOINT_URL_DYNAMODB", &url), ("AWS_CA_BUNDLE", "")], vec![send]).await;
    std::fs::remove_file(&bundle).unwrap();

    let (status, packet) = status_and_body(&trusted[0]);
    assert_eq!(status, 201, "{}", trusted[0]);
    let id = red_packets::domain::PacketId::parse(packet["packet_id"].as_str().unwrap()).unwrap();
    assert!(ledger.ledger_packet(&id).await.unwrap().is_some(), "the packet sent over TLS is in the ledger");
    let (status, body) = status_and_body(&untrusted[0]);
    assert_eq!((status, body["error"]["code"].as_str()), (503, Some("unavailable")), "{}", untrusted[0]);
}

/// An event as `sam local generate-event apigateway http-api-proxy` makes it (AWS's own shape:
/// a base64 body, cookies, JWT claims, stage variables), with what API Gateway fills in for one
/// of our routes: the route key, the path and its parameters, the caller's claims, the query.
fn generated_event(method: &str, route_key: &str, path: &str, sub: &str, body: Option<&str>) -> Event {
    let sam = workspace().join(".local/venv/bin/sam");
    let mut command = std::process::Command::new(&sam);
    command.args(["local", "generate-event", "apigateway", "http-api-proxy", "--method", method, "--path"]);
    command.arg(path.trim_start_matches('/').split('?').next().unwrap());
    if let Some(body) = body {
        command.args(["--body", body]);
    }
    let output = command.env("SAM_CLI_TELEMETRY", "0").output().expect("SAM CLI (make test installs it)");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let mut event: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(event["isBase64Encoded"], true, "AWS's shape: the body arrives base64");
    event["routeKey"] = Value::from(route_key);
    event["requestContext"]["routeKey"] = Value::from(route_key);
    let query = path.split_once('?').map_or("", |(_, query)| query);
    event["rawQueryString"] = Value::from(query);
    let parameters: serde_json::Map<String, Value> = query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(name, value)| (name.to_owned(), Value::from(value)))
        .collect();
    event["queryStringParameters"] = Value::Object(parameters);
    event["headers"]["content-type"] = Value::from("application/json");
    if route_key == "POST /packets" {
        event["headers"]["idempotency-key"] = Value::from(red_packets::domain::PacketId::random().to_string());
    }
    event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = Value::from(sub);
    let segments: Vec<&str> = path.split('?').next().unwrap().split('/').collect();
    if let (Some(&"packets"), Some(id)) = (segments.get(1), segments.get(2)) {
        event["pathParameters"] = serde_json::json!({ "packet_id": id });
    } else {
        event.as_object_mut().unwrap().remove("pathParameters");
    }
    Event::named(&format!("sam local generate-event {route_key} as {sub}"), event)
}

/// Every route answers AWS's own event shape, made by `sam local generate-event` at test time,
/// on the function's binary under the emulator: a send, its packet's grab and view, the
/// sender's history and wallet, and the cancel.
#[tokio::test]
async fn events_made_by_sam_local_generate_event_run_on_every_route() {
    let _emulator = EMULATOR.lock().await;
    ready_ledger().await;
    let body = r#"{"total_cents":300,"count":3}"#;
    let sent =
        on_emulator("send", vec![generated_event("POST", "POST /packets", "/packets", "erin", Some(body))]).await;
    let (status, packet) = status_and_body(&sent[0]);
    assert_eq!(status, 201, "{}", sent[0]);
    let id = packet["packet_id"].as_str().unwrap().to_owned();

    let grab =
        generated_event("POST", "POST /packets/{packet_id}/grab", &format!("/packets/{id}/grab"), "frank", Some(""));
    let grabs = on_emulator("grab", vec![grab]).await;
    let (status, grabbed) = status_and_body(&grabs[0]);
    assert_eq!((status, grabbed["user"].as_str()), (200, Some("frank")), "{}", grabs[0]);

    let queries = on_emulator_with(
        "query",
        &[("FUNDS", "wallet")],
        vec![
            generated_event("GET", "GET /packets/{packet_id}", &format!("/packets/{id}"), "frank", None),
            generated_event("GET", "GET /me/packets", "/me/packets?role=sent&limit=5", "erin", None),
            generated_event("GET", "GET /me/wallet", "/me/wallet?limit=5", "erin", None),
        ],
    )
    .await;
    let (status, view) = status_and_body(&queries[0]);
    assert_eq!((status, view["packet_id"].as_str()), (200, Some(id.as_str())), "{}", queries[0]);
    let (status, history) = status_and_body(&queries[1]);
    assert_eq!(status, 200, "{}", queries[1]);
    assert!(history["items"].as_array().unwrap().iter().any(|item| item["packet_id"] == id.as_str()), "{}", queries[1]);
    let (status, wallet) = status_and_body(&queries[2]);
    assert_eq!(status, 200, "{}", queries[2]);
    assert!(wallet["balance_cents"].is_u64(), "{}", queries[2]);

    let cancel =
        generated_event("POST", "POST /packets/{packet_id}/cancel", &format!("/packets/{id}/cancel"), "erin", Some(""));
    let cancels = on_emulator("send", vec![cancel]).await;
    let (status, cancelled) = status_and_body(&cancels[0]);
    assert_eq!((status, cancelled["status"].as_str()), (200, Some("cancelled")), "{}", cancels[0]);
}

/// The CloudWatch Logs filter pattern of the template's metric filter `name`, as a matcher of one
/// log line: the unstructured syntax the template uses, quoted terms that must all appear, or
/// with `?` before each, any of them.
fn metric_filter(name: &str) -> (String, impl Fn(&str) -> bool) {
    let template: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(workspace().join("template.yaml")).unwrap()).unwrap();
    let properties = &template["Resources"][name]["Properties"];
    let metric = properties["MetricTransformations"][0]["MetricName"].as_str().unwrap().to_owned();
    let pattern =
        properties["FilterPattern"].as_str().unwrap_or_else(|| panic!("{name}: no filter pattern")).to_owned();
    let any = pattern.trim_start().starts_with('?');
    let terms: Vec<String> =
        pattern.split('"').enumerate().filter(|(index, _)| index % 2 == 1).map(|(_, term)| term.to_owned()).collect();
    assert!(!terms.is_empty(), "{name}: a pattern of quoted terms: {pattern}");
    let matches = move |line: &str| {
        if any {
            terms.iter().any(|term| line.contains(term.as_str()))
        } else {
            terms.iter().all(|term| line.contains(term.as_str()))
        }
    };
    (metric, matches)
}

/// An `INTERNAL_ERROR` planted on the path that moves money: an adjustment whose item the ledger
/// cannot read. The operators' binary answers it 500 `internal` (a response, not a Lambda
/// error), and its log line is counted by the template's `OperatorServerErrors` filter, the metric
/// `OperatorErrorsAlarm` watches. (The emulator's output only: SAM's is its own.)
#[tokio::test]
async fn a_corrupt_adjustment_answers_500_and_counts_toward_the_operators_alarm() {
    if sam().is_some() {
        return;
    }
    let _emulator = EMULATOR.lock().await;
    // A table of its own: the corrupt item would be every later reconciliation's difference.
    let mut config = red_packets::Config::from_env().unwrap();
    config.table_name = format!("RedPackets-corrupt-{}", &red_packets::domain::PacketId::random().as_str()[..8]);
    let client = DynamoLedger::client_from_env().expect("a DynamoDB client");
    DynamoLedger::new(client.clone(), &config).ensure_table().await.expect("DynamoDB Local (make test) is reachable");
    let reference = format!("case-corrupt-{}", red_packets::domain::PacketId::random());
    let text = aws_sdk_dynamodb::types::AttributeValue::S;
    client
        .put_item()
        .table_name(&config.table_name)
        .item("pk", text(format!("ADJUSTMENT#{reference}")))
        .item("sk", text("ADJUSTMENT".into()))
        .item("amount_cents", text("not a number".into()))
        .send()
        .await
        .expect("the corrupt adjustment is planted");
    let mut approval = event("adjustment-approve.json");
    events::set_route(
        &mut approval.body,
        "POST /ops/v1/adjustments/{reference}/approve",
        &[("reference", reference.as_str())],
    );
    approval.name = "adjustment-approve.json on a corrupt adjustment".into();

    let proxy = ledger_proxy("operator");
    let environment = [
        ("FUNDS", "wallet"),
        ("TABLE_NAME", config.table_name.as_str()),
        ("AWS_ENDPOINT_URL_DYNAMODB", proxy.as_str()),
        ("AWS_ACCESS_KEY_ID", "operator"),
    ];
    let rie = Rie::start_with(&binary("operator"), &environment).await.unwrap();
    let value = rie.invoke(&approval).await.unwrap();
    let output = rie.output();
    rie.stop().await;
    let answer = Answer { label: "operator with a corrupt adjustment".into(), value };
    let (status, body) = status_and_body(&answer);
    assert_eq!((status, body["error"]["code"].as_str()), (500, Some("internal")), "{answer}");
    assert!(!body.to_string().contains("not a number"), "the detail stays in the log: {answer}");

    let (metric, counted) = metric_filter("OperatorServerErrors");
    let lines: Vec<&str> = output.lines().filter(|line| counted(line)).collect();
    assert_eq!(lines.len(), 1, "{metric} counts the one 500; the binary logged:\n{output}");
    assert!(lines[0].contains(red_packets::telemetry::INTERNAL_ERROR), "{}", lines[0]);
    let template: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(workspace().join("template.yaml")).unwrap()).unwrap();
    let alarm = format!("{:?}", template["Resources"]["OperatorErrorsAlarm"]["Properties"]["Metrics"]);
    assert!(alarm.contains(&format!("String(\"{metric}\")")), "OperatorErrorsAlarm watches {metric}: {alarm}");
}

/// An S3 that keeps nothing and answers every request 200 (what the reports hold is
/// funds_reports.rs's subject), on a thread of its own; its URL.
fn accepting_s3() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = axum::Router::new().fallback(|| async { ([("etag", "\"stand-in\"")], "") });
                axum::serve(listener, app).await.unwrap();
            });
        });
        url
    })
    .clone()
}

/// The funds binary files its reports in the bucket with the S3 client its `main` builds
/// (`Reports::from_env`), through its recording proxy: the `PutObject` its role must allow is
/// recorded under funds, from the binary. (The emulator only: SAM's containers are not given an
/// S3 endpoint.)
#[tokio::test]
async fn the_funds_binary_files_a_trial_balance_in_the_bucket_with_its_own_client() {
    if sam().is_some() {
        return;
    }
    let _emulator = EMULATOR.lock().await;
    ready_ledger().await;
    let s3 = local::call_proxy::CallProxy::start("funds", "s3", &accepting_s3(), [127, 0, 0, 1].into()).unwrap();
    let ledger = ledger_proxy("funds");
    let environment = [
        ("FUNDS", "wallet"),
        ("REPORTS_BUCKET", "reports"),
        ("AWS_ENDPOINT_URL_S3", s3.url()),
        ("AWS_ENDPOINT_URL_DYNAMODB", ledger.as_str()),
        ("AWS_ACCESS_KEY_ID", "funds"),
    ];
    let rie = Rie::start_with(&binary("funds"), &environment).await.unwrap();
    let value = rie.invoke(&event("trial-balance.json")).await.unwrap();
    rie.stop().await;
    let answer = Answer { label: "funds with trial-balance.json, REPORTS_BUCKET set".into(), value };
    assert_eq!(answer["trial_balance"]["report"]["day"], "2026-11-23", "{answer}");
    assert!(answer.to_string().contains("s3://reports/"), "filed in the bucket: {answer}");
}
