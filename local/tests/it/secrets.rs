//! The deployment's keys read at run time from Secrets Manager (moto's server standing in,
//! `AWS_ENDPOINT_URL_SECRETS_MANAGER`), through the real handlers: a membership key rotated
//! under a flood of ticket grabs with no deploy (both keys accepted, then the old one refused,
//! each within the refresh bound, and no grab refused that a key in force signed), and the
//! passphrase key read from its secret by send and grab alike. The calls are recorded as the
//! functions' own (`AWS_CALL_LOG`), from which the template's permissions are checked.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::stack::Stack;
use red_packets::domain::membership::MembershipKeys;
use red_packets::domain::{ChatId, PacketId, UserId};
use red_packets::secrets::SecretsManager;
use red_packets::{Clock, Config};
use serde_json::json;

const OLD: &str = "membership-key-old-0001";
const NEW: &str = "membership-key-new-0002";
/// How long a key read from its secret is kept in these tests (`SECRETS_REFRESH_SECONDS`).
const REFRESH: Duration = Duration::from_secs(1);
/// The bound a rotation is in force within: the refresh, and a quarter of a second for a busy
/// machine's scheduling and moto's write.
const BOUND: Duration = Duration::from_millis(1_250);
const CALLERS: usize = 8;
/// Each caller's pause between its grabs (the packet's 50,000 shares last the flood).
const PAUSE: Duration = Duration::from_millis(2);

/// A secret of the test's own named `<what>-<run>` holding `text`: its ARN.
async fn secret(what: &str, text: &str) -> String {
    let client = SecretsManager::client_from_env().expect("a Secrets Manager client");
    let name = format!("red-packets-it-{what}-{}", &PacketId::random().as_str()[..8]);
    let created = client.create_secret().name(name).secret_string(text).send().await.expect("moto answers");
    created.arn.expect("an ARN")
}

async fn put(arn: &str, text: &str) {
    let client = SecretsManager::client_from_env().expect("a Secrets Manager client");
    client.put_secret_value().secret_id(arn).secret_string(text).send().await.expect("moto answers");
}

/// One grab of the flood: the key its ticket was signed with, when it began and ended (since the
/// flood began), and its answer.
struct Grab {
    key: &'static str,
    began: Duration,
    ended: Duration,
    status: u16,
}

/// The membership key rotated while 8 callers grab a members-only packet 2 ms apart, each
/// grab's ticket signed by the old key or the new one in turn: the secret holds the old key,
/// then "<new>,<old>", then the new key alone. A grab signed with a key the secret held
/// throughout `BOUND` before it began until it ended is never refused; a grab signed with the
/// new key is accepted from `BOUND` after it was put in, and one signed with the old key refused
/// from `BOUND` after it was taken out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_membership_key_rotates_under_a_flood_of_ticket_grabs_with_no_deploy() {
    let arn = secret("membership-keys", OLD).await;
    let mut config = Config::from_env().expect("configuration");
    config.membership_keys_secret = Some(arn.clone());
    config.secrets_refresh = REFRESH;
    config.limits.max_count = 50_000;
    config.limits.max_total_cents = 5_000_000;
    config.daily.max_sent_cents = 5_000_000;
    let stack = Arc::new(Stack::with_config("rotation", config).await);
    let body = json!({ "total_cents": 5_000_000, "count": 50_000, "chat_id": "family", "members_only": true });
    let id = stack.send("alice", body).await;

    let (stop, grabs) = (Arc::new(AtomicBool::new(false)), Arc::new(Mutex::new(Vec::new())));
    let flood_began = Instant::now();
    let callers: Vec<_> = (0..CALLERS)
        .map(|caller| {
            let (stack, id, stop, grabs) = (stack.clone(), id.clone(), stop.clone(), grabs.clone());
            tokio::spawn(async move {
                for n in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let (user, key) = (format!("member-{caller}-{n}"), if (caller + n) % 2 == 0 { OLD } else { NEW });
                    let expires_at = (stack.clock.now_ms() / 1000 + 300) as u64;
                    let ticket = MembershipKeys::parse(key).unwrap().sign(
                        &ChatId::parse("family").unwrap(),
                        &UserId::from_claim(&user).unwrap(),
                        expires_at,
                    );
                    let began = flood_began.elapsed();
                    let (status, answer) = stack.grab_with_ticket(&id, &user, Some(&ticket)).await;
                    assert!(matches!(status, 200 | 403), "{status} {answer}");
                    if status == 403 {
                        assert_eq!(answer["error"]["code"], "not_eligible", "{answer}");
                    }
                    grabs.lock().unwrap().push(Grab { key, began, ended: flood_began.elapsed(), status });
                    tokio::time::sleep(PAUSE).await;
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let both_in = flood_began.elapsed();
    put(&arn, &format!("{NEW},{OLD}")).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let old_out = flood_began.elapsed();
    put(&arn, NEW).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::SeqCst);
    for caller in callers {
        caller.await.unwrap();
    }

    let grabs = std::mem::take(&mut *grabs.lock().unwrap());
    let in_force = |grab: &Grab| match grab.key {
        OLD => grab.ended < old_out,
        _ => grab.began >= both_in + BOUND,
    };
    let refused_in_force: Vec<_> =
        grabs.iter().filter(|grab| grab.status != 200 && in_force(grab)).map(|grab| (grab.key, grab.began)).collect();
    let new_too_late =
        grabs.iter().filter(|grab| grab.key == NEW && grab.status != 200 && grab.began >= both_in + BOUND);
    let old_too_long =
        grabs.iter().filter(|grab| grab.key == OLD && grab.status == 200 && grab.began >= old_out + BOUND);
    let new_before = grabs.iter().filter(|grab| grab.key == NEW && grab.status == 200 && grab.ended < both_in).count();
    let first_new = grabs.iter().filter(|grab| grab.key == NEW && grab.status == 200).map(|grab| grab.ended).min();
    let last_old = grabs.iter().filter(|grab| grab.key == OLD && grab.status == 200).map(|grab| grab.began).max();
    let count = |key: &str, status: u16| grabs.iter().filter(|grab| grab.key == key && grab.status == status).count();
    eprintln!(
        "figure: membership key rotation (refresh {REFRESH:?}): {} ticket grabs by {CALLERS} callers; old key {} accepted, {} refused; new key {} accepted, {} refused; the new key first accepted {:?} after it was put in, the old last accepted in a grab begun {:?} after it was taken out; {} refused that a key in force signed",
        grabs.len(),
        count(OLD, 200),
        count(OLD, 403),
        count(NEW, 200),
        count(NEW, 403),
        first_new.map(|at| at.saturating_sub(both_in)),
        last_old.map(|at| at.saturating_sub(old_out)),
        refused_in_force.len(),
    );
    assert!(grabs.len() > 100, "the flood grabbed: {}", grabs.len());
    assert!(refused_in_force.is_empty(), "grabs refused that a key in force signed: {refused_in_force:?}");
    assert_eq!(new_too_late.count(), 0, "the new key accepted within {BOUND:?} of its arrival");
    assert_eq!(old_too_long.count(), 0, "the old key refused within {BOUND:?} of its removal");
    assert_eq!(new_before, 0, "no grab signed with a key the secret never held was accepted");
    assert!(count(OLD, 403) > 0 && count(NEW, 200) > 0 && count(OLD, 200) > 0, "every phase was met");
}

/// A passphrase packet whose key send and grab both read from its secret: the right phrase pays,
/// a wrong one is refused, as with the environment's key.
#[tokio::test]
async fn send_and_grab_digest_passphrases_under_the_key_in_the_secret() {
    let arn = secret("passphrase-key", "a-passphrase-key-read-at-run-time").await;
    let mut config = Config::from_env().expect("configuration");
    config.passphrase_key_secret = Some(arn);
    let stack = Stack::with_config("phrase-secret", config).await;
    let id = stack.send("alice", json!({ "total_cents": 300, "count": 3, "passphrase": "恭喜发财" })).await;
    let (status, answer) = stack.grab_with(&id, "bob", Some(&json!({ "passphrase": "恭喜" }))).await;
    assert_eq!((status, answer["error"]["code"].as_str()), (403, Some("wrong_passphrase")), "{answer}");
    let (status, answer) = stack.grab_with(&id, "bob", Some(&json!({ "passphrase": "恭喜发财" }))).await;
    assert_eq!(status, 200, "{answer}");
}
