//! Every sample in `events/` invoked on the function's real binary (built by `make test` before
//! the tests) under a Lambda Runtime API emulator, against the test Redis and DynamoDB Local:
//! what `sam local invoke -e events/<file>` does with Docker.

use std::path::PathBuf;
use std::time::Duration;

use local::runtime_api::{Invocation, LambdaProcess};
use red_packets::events;
use serde_json::Value;

/// Which binary each sample event is for.
const EVENT_FUNCTIONS: &[(&str, &str)] = &[
    ("send.json", "send"),
    ("grab.json", "grab"),
    ("query.json", "query"),
    ("history.json", "query"),
    ("settle.json", "settle"),
];

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

fn binary(name: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace().join("target"));
    let path = target.join("debug").join(name);
    assert!(path.exists(), "{} is missing: `cargo build --bins` first (make test does)", path.display());
    path
}

fn event(file: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(workspace().join("events").join(file)).unwrap()).unwrap()
}

async fn invoke(process: &LambdaProcess, event: Value) -> Value {
    match process.invoke(event, Duration::from_secs(30)).await {
        Ok(Invocation::Response(response)) => response,
        other => panic!("the function failed: {other:?}"),
    }
}

fn status_and_body(response: &Value) -> (u64, Value) {
    let body = response["body"].as_str().map(|text| serde_json::from_str(text).unwrap()).unwrap_or(Value::Null);
    (response["statusCode"].as_u64().unwrap(), body)
}

#[test]
fn every_sample_event_names_its_function() {
    let mut files: Vec<String> = std::fs::read_dir(workspace().join("events"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".json"))
        .collect();
    files.sort();
    let mut mapped: Vec<String> = EVENT_FUNCTIONS.iter().map(|(file, _)| file.to_string()).collect();
    mapped.sort();
    assert_eq!(files, mapped, "every file in events/ is invoked by this test");
}

#[tokio::test]
async fn the_sample_events_run_on_the_real_binaries() {
    let send = LambdaProcess::start(&binary("send"), "send").await.unwrap();
    let grab = LambdaProcess::start(&binary("grab"), "grab").await.unwrap();
    let query = LambdaProcess::start(&binary("query"), "query").await.unwrap();
    let settle = LambdaProcess::start(&binary("settle"), "settle").await.unwrap();

    // send.json: 201, and the same Idempotency-Key and body replay the same packet.
    let (status, packet) = status_and_body(&invoke(&send, event("send.json")).await);
    assert_eq!(status, 201, "{packet}");
    let (status, again) = status_and_body(&invoke(&send, event("send.json")).await);
    assert_eq!((status, &again["packet_id"]), (201, &packet["packet_id"]));
    let id = packet["packet_id"].as_str().unwrap();

    // grab.json and query.json name a packet that does not exist: 404.
    let (status, body) = status_and_body(&invoke(&grab, event("grab.json")).await);
    assert_eq!((status, body["error"]["code"].as_str()), (404, Some("not_found")));
    let (status, _) = status_and_body(&invoke(&query, event("query.json")).await);
    assert_eq!(status, 404);
    // history.json: a page of alice's own sent packets.
    let (status, history) = status_and_body(&invoke(&query, event("history.json")).await);
    assert_eq!(status, 200, "{history}");
    let items = history["items"].as_array().unwrap();
    assert!(!items.is_empty() && items.iter().all(|item| item["sender"] == "alice"), "{history}");
    // settle.json: a summary of the shards it names.
    let summary = invoke(&settle, event("settle.json")).await;
    assert_eq!(summary["shards"], serde_json::json!([0, 15]), "{summary}");
    assert_eq!(summary["mismatches"], 0);

    // The samples pointed at the packet just sent: bob grabs it, and anyone can view it.
    let mut grab_event = event("grab.json");
    events::set_packet_id(&mut grab_event, id);
    let (status, grabbed) = status_and_body(&invoke(&grab, grab_event).await);
    assert_eq!((status, grabbed["user"].as_str()), (200, Some("bob")), "{grabbed}");
    let mut query_event = event("query.json");
    events::set_packet_id(&mut query_event, id);
    let (status, view) = status_and_body(&invoke(&query, query_event).await);
    assert_eq!(status, 200);
    assert!(view["grabs"].as_array().unwrap().iter().any(|grab| grab["user"] == "bob"));

    for process in [send, grab, query, settle] {
        process.stop().await;
    }
}
