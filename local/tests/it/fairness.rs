//! The verifiable split (`docs/FAIRNESS.md`), through the real handlers against the Redis and
//! DynamoDB Local `make test` starts: a send publishes its commitment before anyone grabs and no
//! answer carries the seed until the packet is settled; then `scripts/verify_split.py`, a
//! verifier outside the Rust code (Python, the standard library and PyPI's pycryptodome),
//! recomputes 1,000 settled packets of every kind and split from their revealed seeds, exactly,
//! and refuses a view with one share or one seed digit changed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use crate::support::stack::Stack;
use futures::stream::{self, StreamExt};
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

/// Packets the verifier recomputes.
const PACKETS: usize = 1_000;
/// Senders they are spread over (each sender's daily limit is 200 sends).
const SENDERS: usize = 10;

/// The Python the verifier runs under: `SPLIT_VERIFIER_PYTHON`, else the project's virtualenv,
/// where `make test` installs pycryptodome.
fn python() -> PathBuf {
    std::env::var_os("SPLIT_VERIFIER_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".local/venv/bin/python"))
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Runs the verifier on `views` (one settled view per line): its exit code and what it printed.
fn verifier_on(views: &[Value], name: &str) -> (i32, String) {
    let file = std::env::temp_dir().join(format!("split-views-{name}-{}.jsonl", std::process::id()));
    let lines: Vec<String> = views.iter().map(Value::to_string).collect();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let output = Command::new(python())
        .arg(repo().join("scripts/verify_split.py"))
        .arg(&file)
        .output()
        .unwrap_or_else(|error| panic!("running {} (make test installs it): {error}", python().display()));
    std::fs::remove_file(&file).ok();
    let printed = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    (output.status.code().unwrap_or(-1), printed)
}

fn is_hex_digest(value: &Value) -> bool {
    value.as_str().is_some_and(|text| text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The send answers the commitment; neither the send, a grab, a view nor the history carries the
/// seed while a share can still be taken (nor once every share is taken but settle has not run);
/// the settled view reveals the seed the ledger holds, under the commitment published at send.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_commitment_comes_with_the_send_and_the_seed_only_with_settle() {
    let stack = Stack::new("commit").await;
    let (status, sent) = stack.try_send("alice", &json!({ "total_cents": 1_000, "count": 3 })).await;
    assert_eq!(status, 201, "{sent}");
    assert!(is_hex_digest(&sent["commitment"]), "the send answers a commitment: {sent}");
    assert_eq!((sent["seed"].clone(), sent["split_version"].clone()), (Value::Null, json!(2)));
    let id = sent["packet_id"].as_str().unwrap().to_owned();
    let seed = stack.recorded(&id).await.packet.seed.to_hex();

    let mut answers = vec![sent.clone()];
    for user in ["bob", "carol", "dave"] {
        let (status, grabbed) = stack.grab(&id, user).await;
        assert_eq!(status, 200, "{grabbed}");
        answers.push(grabbed);
        let (_, view) = stack.view(&id, user).await;
        assert_eq!(view["commitment"], sent["commitment"], "the commitment never changes");
        answers.push(view);
    }
    answers.push(stack.history("alice", "role=sent").await.1);
    for answer in &answers {
        assert!(!answer.to_string().contains(&seed), "an answer before settle carries the seed: {answer}");
    }

    stack.settle().await;
    let (_, settled) = stack.view(&id, "bob").await;
    assert_eq!(settled["settled"], json!(true), "{settled}");
    assert_eq!((settled["seed"].as_str(), &settled["commitment"]), (Some(seed.as_str()), &sent["commitment"]));
    let shares: Vec<u64> =
        settled["grabs"].as_array().unwrap().iter().map(|grab| grab["share"].as_u64().unwrap()).collect();
    assert_eq!(shares, [1, 2, 3], "each grab names the share it took, in grab order");
    let (code, printed) = verifier_on(&[settled], "commit");
    assert_eq!(code, 0, "{printed}");
}

/// 1,000 packets of every kind and split (lucky double-average and line-cut, fixed), of 1 to 12
/// shares, grabbed to the last share, in part or not at all, some cancelled, all settled: the
/// verifier recomputes every share and refund from the revealed seeds and finds them equal to
/// the ledger's, and it refuses a view whose share or seed was changed by one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_verifier_recomputes_a_thousand_settled_packets_from_their_seeds() {
    if std::env::var("TEST_PASS").is_ok_and(|pass| pass != "redis") {
        return; // the split is the same on every Redis topology: the first pass checks it
    }
    let stack = Arc::new(Stack::new("verify").await);
    let mut rng = rand::rngs::StdRng::seed_from_u64(20_261_127);
    let plans: Vec<(usize, Value, usize, bool)> = (0..PACKETS)
        .map(|n| {
            let count = rng.random_range(1..=12u64);
            let mut body = match n % 3 {
                0 => json!({ "count": count, "total_cents": rng.random_range(count..=20_000) }),
                1 => json!({ "split": "line_cut", "count": count, "total_cents": rng.random_range(count..=20_000) }),
                _ => json!({ "kind": "fixed", "count": count, "total_cents": count * rng.random_range(1..=1_000u64) }),
            };
            body["expires_in_seconds"] = json!(60);
            let grabs = match rng.random_range(0..4) {
                0 => 0,
                1 => count as usize,
                _ => rng.random_range(0..=count as usize),
            };
            (n % SENDERS, body, grabs, n % 7 == 0)
        })
        .collect();

    let ids: Vec<String> = stream::iter(plans.iter().enumerate())
        .map(|(n, (sender, body, grabs, cancel))| {
            let stack = stack.clone();
            async move {
                let sender = format!("sender-{sender}");
                let id = stack.send(&sender, body.clone()).await;
                for grabber in 0..*grabs {
                    let (status, answer) = stack.grab(&id, &format!("grabber-{n}-{grabber}")).await;
                    assert_eq!(status, 200, "{answer}");
                }
                if *cancel {
                    let (status, answer) = stack.cancel(&id, &sender).await;
                    assert!(status == 200 || status == 409, "{answer}");
                }
                id
            }
        })
        .buffered(8)
        .collect()
        .await;

    stack.clock.advance(61_000);
    for _ in 0..20 {
        let summary = stack.settle().await;
        if serde_json::to_value(&summary).unwrap().to_string().contains("\"finalised\":0") {
            break;
        }
    }
    let views: Vec<Value> = stream::iter(ids.iter().zip(&plans))
        .map(|(id, (sender, ..))| {
            let stack = stack.clone();
            async move { stack.view(id, &format!("sender-{sender}")).await.1 }
        })
        .buffered(16)
        .collect()
        .await;
    let settled = views.iter().filter(|view| view["settled"] == json!(true)).count();
    assert_eq!(settled, PACKETS, "every packet is settled");
    let kinds = |kind: &str, split: Value| views.iter().filter(|v| v["kind"] == kind && v["split"] == split).count();
    assert!(kinds("lucky", json!("double_average")) > 300 && kinds("lucky", json!("line_cut")) > 300);
    assert!(kinds("fixed", Value::Null) > 300);

    let (code, printed) = verifier_on(&views, "thousand");
    assert_eq!(code, 0, "{printed}");
    let grabs: usize = views.iter().map(|view| view["grabs"].as_array().unwrap().len()).sum();
    eprintln!("figure: scripts/verify_split.py on {PACKETS} settled packets ({grabs} grabs): {}", printed.trim());
    let shares: u64 = views.iter().map(|view| view["count"].as_u64().unwrap()).sum();
    assert!(printed.contains(&format!("{PACKETS} packets checked, {shares} shares recomputed, 0 failed")), "{printed}");

    // The verifier can fail: one share one cent off, one seed digit changed.
    let grabbed =
        views.iter().position(|view| view["kind"] == "lucky" && !view["grabs"].as_array().unwrap().is_empty());
    let mut off_by_a_cent = views[grabbed.expect("a lucky packet with grabs")].clone();
    off_by_a_cent["grabs"][0]["amount_cents"] = json!(off_by_a_cent["grabs"][0]["amount_cents"].as_u64().unwrap() + 1);
    let mut other_seed = views[0].clone();
    let seed = other_seed["seed"].as_str().unwrap().to_owned();
    let flipped = if seed.starts_with('0') { "1" } else { "0" };
    other_seed["seed"] = json!(format!("{flipped}{}", &seed[1..]));
    let (code, printed) = verifier_on(&[off_by_a_cent, other_seed], "tampered");
    assert_eq!(code, 1, "{printed}");
    assert!(printed.contains("2 packets checked") && printed.contains("2 failed"), "{printed}");
    assert!(printed.contains("does not hash to the published commitment"), "{printed}");
}
