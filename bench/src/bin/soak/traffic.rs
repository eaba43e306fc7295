//! The clients: steady, mixed traffic through the local API at fixed rates, remembering every
//! answer that promised money, so the end of the soak can hold the ledger to it; beside them the
//! payments system resolving withdrawals and two operators adjusting wallets (`money.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use local::LocalAuthorizer;
use rand::seq::IndexedRandom;
use rand::Rng;
use red_packets::{Clock, SystemClock};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use crate::money::{self, Desk};

/// Users sending and grabbing.
pub const USERS: usize = 2_000;
/// The scheduler's tick; each route runs every so many ticks.
const TICK: Duration = Duration::from_millis(10);
/// Grabs per tick (200 a second).
const GRABS_PER_TICK: usize = 2;
/// A packet view every so many ticks (10 a second).
const VIEW_EVERY: u64 = 10;
/// A history page every so many ticks (5 a second).
const HISTORY_EVERY: u64 = 20;
/// A send every so many ticks (2 a second).
const SEND_EVERY: u64 = 50;
/// A withdrawal asked for every so many ticks (1 a second), and one resolved as often.
const WITHDRAW_EVERY: u64 = 100;
/// An adjustment proposed and approved every so many ticks (every 5 seconds).
const ADJUST_EVERY: u64 = 500;
/// A withdrawal's largest amount, cents.
const MAX_WITHDRAWAL_CENTS: u64 = 5_000;
/// Nine grabs in ten go to the most recent packets.
const HOT_PACKETS: usize = 30;
/// Requests in flight at most.
const IN_FLIGHT: usize = 64;
/// Errors kept word for word (the count is exact either way).
const ERRORS_KEPT: usize = 100;
/// One fresh grab in so many is followed until it shows in its grabber's `received` history.
const FRESHNESS_PROBE_EVERY: u32 = 50;
/// How often a probe reads the history, and how long it waits at most.
const FRESHNESS_POLL: Duration = Duration::from_millis(100);
const FRESHNESS_GIVE_UP: Duration = Duration::from_secs(30);
/// DESIGN's freshness promise: a grab in its grabber's history within 5 s, p99.
pub const FRESHNESS_P99_LIMIT_MS: f64 = 5_000.0;

/// A packet the soak sent, as the send answer described it.
#[derive(Debug, Clone)]
pub struct SentPacket {
    /// Its id.
    pub id: String,
    /// The total sent.
    pub total_cents: u64,
    /// Its shares.
    pub count: u32,
    /// When it expires (the send's clock, give or take a second).
    pub expires_at_ms: i64,
}

/// A withdrawal a user asked for and the API took (201).
#[derive(Debug, Clone)]
pub struct AskedWithdrawal {
    /// Its id.
    pub id: String,
    /// Whose.
    pub user: String,
    /// How much.
    pub amount_cents: u64,
    /// `paid` or `failed` once the payments system answered; `None` while pending.
    pub resolved: Option<&'static str>,
}

/// What the soak's clients saw.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Every withdrawal taken, in the order asked.
    pub withdrawals: Vec<AskedWithdrawal>,
    /// Every adjustment applied: (reference, user, cents in: negative for a debit).
    pub adjustments: Vec<(String, String, i64)>,
    /// Answers about money out and corrections that broke a promise (a second debit for one
    /// key, a word applied twice, a proposer approving their own adjustment).
    pub money_out_violations: Vec<String>,
    /// Every packet sent.
    pub packets: Vec<SentPacket>,
    /// Every fresh 200 to a grab: (packet, user) -> amount.
    pub acknowledged: HashMap<(String, String), u64>,
    /// Every repeat 200 to a grab: (packet, user, amount it named).
    pub repeats: Vec<(String, String, u64)>,
    /// A fresh 200 for a (packet, user) that already had one.
    pub paid_twice: Vec<String>,
    /// Every fresh 200 to a grab, with when it was asked and answered (epoch ms): (packet, user,
    /// amount, asked, answered).
    pub fresh_acks: Vec<(String, String, u64, i64, i64)>,
    /// Packet views whose figures did not add up.
    pub bad_views: Vec<String>,
    /// Idempotent replays of a send that named another packet.
    pub bad_replays: Vec<String>,
    /// Transport failures, 5xx, and answers no client should get (the first few, word for word).
    pub errors: Vec<String>,
    /// Errors in all.
    pub error_count: u64,
    /// Requests by route and status.
    pub statuses: HashMap<(&'static str, u16), u64>,
    /// Probed grabs: ms from the grab's 200 to the grab in its grabber's `received` history.
    pub freshness_ms: Vec<f64>,
    /// Probed grabs that never showed in the history within [`FRESHNESS_GIVE_UP`].
    pub never_fresh: Vec<String>,
}

impl Outcome {
    /// Requests made.
    pub fn requests(&self) -> u64 {
        self.statuses.values().sum()
    }

    /// Requests by "route status", for the report.
    pub fn tally(&self) -> Value {
        let mut tally: Vec<_> = self.statuses.iter().collect();
        tally.sort();
        Value::Object(tally.into_iter().map(|((route, status), n)| (format!("{route} {status}"), json!(n))).collect())
    }

    fn error(&mut self, message: String) {
        self.error_count += 1;
        if self.errors.len() < ERRORS_KEPT {
            self.errors.push(message);
        }
    }
}

struct Clients {
    http: reqwest::Client,
    url: String,
    tokens: Vec<String>,
    desk: Desk,
    outcome: Mutex<Outcome>,
}

impl Clients {
    fn record(&self, route: &'static str, status: u16) {
        *self.lock().statuses.entry((route, status)).or_default() += 1;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Outcome> {
        self.outcome.lock().expect("no client panics while holding the outcome")
    }

    fn user(&self, n: usize) -> (String, &str) {
        (format!("soak-u{n}"), &self.tokens[n])
    }

    /// One request; transport failures and 5xx are errors. Returns the status and JSON body.
    async fn call(&self, route: &'static str, request: reqwest::RequestBuilder) -> Option<(StatusCode, Value)> {
        match request.send().await {
            Ok(response) => {
                let status = response.status();
                self.record(route, status.as_u16());
                let body: Value = response.json().await.unwrap_or(Value::Null);
                if status.is_server_error() {
                    self.lock().error(format!("{route}: {status} {body}"));
                    return None;
                }
                Some((status, body))
            }
            Err(error) => {
                self.record(route, 0);
                self.lock().error(format!("{route}: {error}"));
                None
            }
        }
    }

    async fn send(&self) {
        let (sender, token) = self.user(rand::rng().random_range(0..USERS));
        let (body, expires_in_seconds) = random_packet();
        let key = format!("{:032x}", rand::rng().random::<u128>());
        let post = || {
            self.http
                .post(format!("{}/packets", self.url))
                .bearer_auth(token)
                .header("Idempotency-Key", &key)
                .json(&body)
        };
        let Some((status, answer)) = self.call("send", post()).await else { return };
        if status != StatusCode::CREATED {
            self.lock().error(format!("send by {sender}: {status} {answer}"));
            return;
        }
        let id = answer["packet_id"].as_str().unwrap_or_default().to_owned();
        let packet = SentPacket {
            id: id.clone(),
            total_cents: body["total_cents"].as_u64().unwrap_or_default(),
            count: body["count"].as_u64().unwrap_or_default() as u32,
            expires_at_ms: SystemClock.now_ms() + 1_000 * expires_in_seconds,
        };
        self.lock().packets.push(packet);
        if rand::rng().random_bool(0.05) {
            // A client retrying after a lost answer: the same key and body name the same packet.
            if let Some((status, replay)) = self.call("send replay", post()).await {
                if status != StatusCode::CREATED || replay["packet_id"] != answer["packet_id"] {
                    self.lock().bad_replays.push(format!("{id}: {status} {replay}"));
                }
            }
        }
    }

    async fn grab(&self) {
        let (packet, user) = {
            let outcome = self.lock();
            // Mostly the newest packets; now and then any packet, expired and settled ones included.
            let newest = outcome.packets.len().saturating_sub(HOT_PACKETS);
            let pool = if rand::rng().random_bool(0.9) { &outcome.packets[newest..] } else { &outcome.packets[..] };
            let Some(packet) = pool.choose(&mut rand::rng()) else { return };
            (packet.id.clone(), rand::rng().random_range(0..USERS))
        };
        let (user, token) = self.user(user);
        let request = self.http.post(format!("{}/packets/{packet}/grab", self.url)).bearer_auth(token);
        let asked_ms = SystemClock.now_ms();
        let Some((status, body)) = self.call("grab", request).await else { return };
        match status {
            StatusCode::OK => {
                let amount = body["amount_cents"].as_u64().unwrap_or_default();
                let fresh = {
                    let mut outcome = self.lock();
                    if body["already_grabbed"] != true {
                        outcome.fresh_acks.push((packet.clone(), user.clone(), amount, asked_ms, SystemClock.now_ms()));
                    }
                    if body["already_grabbed"] == true {
                        outcome.repeats.push((packet.clone(), user.clone(), amount));
                        false
                    } else if let Some(earlier) = outcome.acknowledged.insert((packet.clone(), user.clone()), amount) {
                        outcome.paid_twice.push(format!("{user} on {packet}: {earlier} then {amount}"));
                        false
                    } else {
                        true
                    }
                };
                if fresh && rand::rng().random_ratio(1, FRESHNESS_PROBE_EVERY) {
                    self.follow_to_history(&packet, &user, token).await;
                }
            }
            StatusCode::CONFLICT | StatusCode::GONE => {}
            _ => self.lock().error(format!("grab {user} on {packet}: {status} {body}")),
        }
    }

    async fn view(&self) {
        let packet = {
            let outcome = self.lock();
            let Some(packet) = outcome.packets.choose(&mut rand::rng()) else { return };
            packet.clone()
        };
        let (_, token) = self.user(rand::rng().random_range(0..USERS));
        let request = self.http.get(format!("{}/packets/{}", self.url, packet.id)).bearer_auth(token);
        let Some((status, view)) = self.call("view", request).await else { return };
        if status != StatusCode::OK {
            self.lock().error(format!("view {}: {status} {view}", packet.id));
            return;
        }
        let grabs = view["grabs"].as_array().map(Vec::as_slice).unwrap_or_default();
        let grabbed: u64 = grabs.iter().filter_map(|grab| grab["amount_cents"].as_u64()).sum();
        let remaining = view["remaining_cents"].as_u64().unwrap_or_default();
        let remaining_count = view["remaining_count"].as_u64().unwrap_or_default();
        if grabbed + remaining != packet.total_cents || grabs.len() as u64 + remaining_count != u64::from(packet.count)
        {
            self.lock().bad_views.push(format!("{}: {view}", packet.id));
        }
    }

    /// Reads `user`'s `received` history until the grab of `packet` answered just now shows.
    async fn follow_to_history(&self, packet: &str, user: &str, token: &str) {
        let granted = Instant::now();
        while granted.elapsed() < FRESHNESS_GIVE_UP {
            let request = self.http.get(format!("{}/me/packets?role=received&limit=5", self.url)).bearer_auth(token);
            if let Some((StatusCode::OK, page)) = self.call("history", request).await {
                let items = page["items"].as_array().map(Vec::as_slice).unwrap_or_default();
                if items.iter().any(|item| item["packet_id"] == packet) {
                    self.lock().freshness_ms.push(granted.elapsed().as_secs_f64() * 1000.0);
                    return;
                }
            }
            tokio::time::sleep(FRESHNESS_POLL).await;
        }
        self.lock().never_fresh.push(format!("{user} on {packet}"));
    }

    /// A user asks for a withdrawal (now and then retrying it under its key, which must name the
    /// same withdrawal and debit nothing more).
    async fn withdraw(&self) {
        let (user, token) = self.user(rand::rng().random_range(0..USERS));
        let amount_cents = rand::rng().random_range(1..=MAX_WITHDRAWAL_CENTS);
        let body = json!({ "amount_cents": amount_cents, "destination": format!("card-{}", &user[6..]) });
        let key = format!("{:032x}", rand::rng().random::<u128>());
        let post = || {
            self.http
                .post(format!("{}/me/withdrawals", self.url))
                .bearer_auth(token)
                .header("Idempotency-Key", &key)
                .json(&body)
        };
        let Some((status, receipt)) = self.call("withdraw", post()).await else { return };
        if status != StatusCode::CREATED {
            self.lock().error(format!("withdrawal by {user}: {status} {receipt}"));
            return;
        }
        let id = receipt["withdrawal_id"].as_str().unwrap_or_default().to_owned();
        self.lock().withdrawals.push(AskedWithdrawal {
            id: id.clone(),
            user: user.clone(),
            amount_cents,
            resolved: None,
        });
        if rand::rng().random_bool(0.1) {
            if let Some((status, replay)) = self.call("withdraw replay", post()).await {
                if status != StatusCode::OK
                    || replay["withdrawal_id"] != receipt["withdrawal_id"]
                    || replay["created"] != false
                {
                    self.lock().money_out_violations.push(format!("{user}'s retry of {id}: {status} {replay}"));
                }
            }
        }
    }

    /// The payments system answers the oldest pending withdrawal: paid two times in three, else
    /// failed; the word delivered twice, applied the first time only.
    async fn resolve(&self) {
        let picked = {
            let mut outcome = self.lock();
            let pending = outcome.withdrawals.iter_mut().find(|withdrawal| withdrawal.resolved.is_none());
            pending.map(|withdrawal| {
                let outcome = if rand::rng().random_ratio(2, 3) { "paid" } else { "failed" };
                withdrawal.resolved = Some(outcome);
                (withdrawal.id.clone(), outcome)
            })
        };
        let Some((id, outcome)) = picked else { return };
        let word = money::word(&format!("withdrawal_{outcome}"), &id, &format!("payout-{id}"));
        for (delivery, applied) in [(1, true), (2, false)] {
            match self.desk.payments(word.clone()).await {
                Ok(answer) if answer["withdrawal"]["applied"] == applied => {}
                answer => self
                    .lock()
                    .money_out_violations
                    .push(format!("{id} {outcome}, delivery {delivery}: applied must be {applied}: {answer:?}")),
            }
        }
    }

    /// One operator proposes a credit or a debit to a user's wallet; the proposer's own approval
    /// is refused; another operator's applies it, once.
    async fn adjust(&self) {
        let user = format!("soak-u{}", rand::rng().random_range(0..USERS));
        let credit = rand::rng().random_bool(0.5);
        let amount_cents = rand::rng().random_range(1..=2_000u64);
        let reference = format!("soak-case-{:016x}", rand::rng().random::<u64>());
        let proposal = json!({
            "reference": reference, "user": user, "direction": if credit { "credit" } else { "debit" },
            "amount_cents": amount_cents, "reason": "soak: a support case" });
        let approve = "POST /ops/v1/adjustments/{reference}/approve";
        let case = [("reference", reference.as_str())];
        let mut broken = Vec::new();
        let (status, proposed) = self.desk.operator("soak-anna", "POST /ops/v1/adjustments", &[], proposal).await;
        if status != 200 {
            broken.push(format!("{reference}: the proposal answered {status} {proposed}"));
        }
        let (status, own) = self.desk.operator("soak-anna", approve, &case, json!({})).await;
        if status != 400 {
            broken.push(format!("{reference}: the proposer's own approval answered {status} {own}"));
        }
        for (approver, applied) in [("soak-ben", true), ("soak-ben", false)] {
            let (status, answer) = self.desk.operator(approver, approve, &case, json!({})).await;
            if status != 200 || answer["applied"] != applied {
                broken.push(format!("{reference}: approval by {approver} must apply {applied}: {status} {answer}"));
            }
        }
        let mut outcome = self.lock();
        if broken.is_empty() {
            let signed = if credit { amount_cents as i64 } else { -(amount_cents as i64) };
            outcome.adjustments.push((reference, user, signed));
        }
        outcome.money_out_violations.extend(broken);
    }

    async fn history(&self) {
        let (user, token) = self.user(rand::rng().random_range(0..USERS));
        let role = if rand::rng().random_bool(0.5) { "sent" } else { "received" };
        let request = self.http.get(format!("{}/me/packets?role={role}&limit=20", self.url)).bearer_auth(token);
        let Some((status, page)) = self.call("history", request).await else { return };
        if status != StatusCode::OK {
            self.lock().error(format!("history of {user}: {status} {page}"));
        }
    }
}

/// A packet body as a mobile client would send it: lucky (either rule) or fixed, 1 to 100
/// shares, 20 to 90 seconds to live so packets expire and settle during the soak.
fn random_packet() -> (Value, i64) {
    let mut rng = rand::rng();
    let count: u64 = rng.random_range(1..=100);
    let expires_in_seconds: i64 = rng.random_range(20..=90);
    let body = if rng.random_bool(0.2) {
        json!({ "total_cents": count * rng.random_range(1..=200), "count": count, "kind": "fixed",
                "expires_in_seconds": expires_in_seconds })
    } else {
        let split = if rng.random_bool(0.5) { "double_average" } else { "line_cut" };
        json!({ "total_cents": rng.random_range(count..=20_000), "count": count, "kind": "lucky", "split": split,
                "greeting": "恭喜发财", "expires_in_seconds": expires_in_seconds })
    };
    (body, expires_in_seconds)
}

#[derive(Debug, Clone, Copy)]
enum Job {
    Send,
    Grab,
    View,
    History,
    Withdraw,
    Resolve,
    Adjust,
}

/// Runs the traffic for `duration` at the fixed rates, then waits for the requests in flight.
pub async fn run(url: &str, duration: Duration) -> Outcome {
    let authorizer = LocalAuthorizer::from_env();
    let tokens = (0..USERS).map(|n| authorizer.token(&format!("soak-u{n}"), duration.as_secs() + 3_600)).collect();
    let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("an HTTP client");
    let clients = Arc::new(Clients {
        http,
        url: url.to_owned(),
        tokens,
        desk: Desk::from_env(),
        outcome: Mutex::new(Outcome::default()),
    });
    let permits = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for tick in 0u64.. {
        ticks.tick().await;
        if started.elapsed() >= duration {
            break;
        }
        let mut jobs = vec![Job::Grab; GRABS_PER_TICK];
        if tick % SEND_EVERY == 0 {
            jobs.push(Job::Send);
        }
        if tick % VIEW_EVERY == 0 {
            jobs.push(Job::View);
        }
        if tick % HISTORY_EVERY == 0 {
            jobs.push(Job::History);
        }
        if tick % WITHDRAW_EVERY == 0 {
            jobs.push(Job::Withdraw);
        }
        if tick % WITHDRAW_EVERY == WITHDRAW_EVERY / 2 {
            jobs.push(Job::Resolve);
        }
        if tick % ADJUST_EVERY == ADJUST_EVERY / 4 {
            jobs.push(Job::Adjust);
        }
        for job in jobs {
            let (clients, permits) = (clients.clone(), permits.clone());
            tasks.spawn(async move {
                let _permit = permits.acquire_owned().await.expect("the semaphore is never closed");
                match job {
                    Job::Send => clients.send().await,
                    Job::Grab => clients.grab().await,
                    Job::View => clients.view().await,
                    Job::History => clients.history().await,
                    Job::Withdraw => clients.withdraw().await,
                    Job::Resolve => clients.resolve().await,
                    Job::Adjust => clients.adjust().await,
                }
            });
        }
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    let clients = Arc::into_inner(clients).expect("every task is done");
    clients.outcome.into_inner().expect("no client panicked")
}
