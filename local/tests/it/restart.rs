//! `make run` keeps its data: the script behind it (`scripts/run-local.sh`) is started, a packet
//! sent and partly grabbed, the script stopped with SIGTERM (it stops its Redis and DynamoDB
//! Local) and started again; the packet keeps its grabs, finishes, settles with its refund and
//! shows in history. The stack runs under a name of its own (`LOCAL_STACK_NAME`), on free ports.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use local::LocalAuthorizer;
use serde_json::{json, Value};

const SECRET: &str = "restart-test-secret";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `scripts/run-local.sh` on fixed ports and a stack name of its own.
struct RunLocal {
    child: Option<Child>,
    log: PathBuf,
    name: String,
    ports: [u16; 3],
}

impl RunLocal {
    fn workspace() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
    }

    async fn start(name: &str, ports: [u16; 3]) -> RunLocal {
        let log = std::env::temp_dir().join(format!("red-packets-{name}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let [api, redis, dynamo] = ports;
        let child = Command::new("scripts/run-local.sh")
            .current_dir(Self::workspace())
            // The test's own services, not the ones `make test` points the other tests at.
            .env_remove("REDIS_URL")
            .env_remove("REDIS_CLUSTER")
            .env_remove("AWS_ENDPOINT_URL_DYNAMODB")
            .env_remove("TABLE_NAME")
            .env("LOCAL_STACK_NAME", name)
            // Its API alone: the console and the app are the browser suites' to build.
            .env("MAKE_RUN_SITES", "skip")
            .env("PORT", api.to_string())
            .env("LOCAL_REDIS_PORT", redis.to_string())
            .env("LOCAL_DYNAMODB_PORT", dynamo.to_string())
            .env("LOCAL_JWT_SECRET", SECRET)
            .env("SETTLE_EVERY_SECONDS", "1")
            .env("MIN_EXPIRES_IN_SECONDS", "1")
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let run = RunLocal { child: Some(child), log, name: name.to_owned(), ports };
        for _ in 0..600 {
            if std::fs::read_to_string(&run.log).unwrap_or_default().contains("listening on") {
                return run;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("make run did not start: {}", std::fs::read_to_string(&run.log).unwrap_or_default());
    }

    /// SIGTERM, as Ctrl-C or a service manager would stop it; waits until it stopped its services.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
            let status = child.wait().unwrap();
            assert!(status.code().is_some(), "run-local.sh exits by itself on SIGTERM");
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.ports[0])
    }
}

impl Drop for RunLocal {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_file(&self.log);
        let _ = Command::new("scripts/stack.sh").arg("stop").arg(&self.name).current_dir(Self::workspace()).status();
        let _ = std::fs::remove_dir_all(Self::workspace().join(".local").join(&self.name));
    }
}

async fn call(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    user: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let token = LocalAuthorizer::new(SECRET).token(user, 600);
    let sends = method == reqwest::Method::POST && url.ends_with("/packets");
    let mut request = client.request(method, url).bearer_auth(token);
    if sends {
        request = request.header("idempotency-key", red_packets::domain::PacketId::random().to_string());
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// [`call`] without a body, asked again while it answers 503 (a service just started may not have
/// reached its Redis yet: "retry shortly", as the API tells every client), for 30 s at most.
async fn answered(client: &reqwest::Client, method: reqwest::Method, url: String, user: &str) -> (u16, Value) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = call(client, method.clone(), url.clone(), user, None).await;
        if status != 503 || std::time::Instant::now() > deadline {
            return (status, body);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn make_run_keeps_its_data_across_a_restart() {
    if std::env::var("TEST_PASS").is_ok_and(|pass| pass != "redis") {
        return; // runs services of its own: once per `make test` is enough (the first pass)
    }
    let name = format!("restart-test-{}", std::process::id());
    let ports = [free_port(), free_port(), free_port()];
    let client = reqwest::Client::new();
    let post = reqwest::Method::POST;

    let started = std::time::Instant::now();
    let mut run = RunLocal::start(&name, ports).await;
    // The packet must outlive a stop and a second start (DynamoDB Local's JVM): at least 30 s,
    // more on a machine busy enough that the first start was slow (make test's other stages).
    let expires_in = (started.elapsed().as_secs() * 5 / 2 + 10).max(30);
    let body = json!({ "total_cents": 1_000, "count": 4, "expires_in_seconds": expires_in });
    let (status, sent) = call(&client, post.clone(), run.url("/packets"), "alice", Some(body)).await;
    assert_eq!(status, 201, "{sent}");
    let id = sent["packet_id"].as_str().unwrap().to_owned();
    let (status, bob) = answered(&client, post.clone(), run.url(&format!("/packets/{id}/grab")), "bob").await;
    assert_eq!(status, 200, "{bob}");
    run.stop();

    let restarted = std::time::Instant::now();
    let run = RunLocal::start(&name, ports).await;
    let grab_url = run.url(&format!("/packets/{id}/grab"));
    let (status, again) = answered(&client, post.clone(), grab_url.clone(), "bob").await;
    assert_eq!((status, again["already_grabbed"].as_bool()), (200, Some(true)), "{again}");
    assert_eq!(again["amount_cents"], bob["amount_cents"], "bob's grab survived the restart");
    let (status, carol) = call(&client, post.clone(), grab_url, "carol", None).await;
    assert_eq!((status, carol["remaining_count"].as_u64()), (200, Some(2)), "{carol}");

    eprintln!("figure: make run restarted in {} ms", restarted.elapsed().as_millis());
    // Expiry at `expires_in` (a second start fits well within), settle every second:
    // the refund is what bob and carol did not take.
    let paid = bob["amount_cents"].as_u64().unwrap() + carol["amount_cents"].as_u64().unwrap();
    let mut view = Value::Null;
    for _ in 0..(expires_in * 10 + 300) {
        let (_, current) = call(&client, reqwest::Method::GET, run.url(&format!("/packets/{id}")), "alice", None).await;
        view = current;
        if view["settled"] == true {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!((view["settled"].as_bool(), view["status"].as_str()), (Some(true), Some("expired")), "{view}");
    assert_eq!(view["refund_cents"].as_u64(), Some(1_000 - paid), "{view}");
    let (status, history) =
        call(&client, reqwest::Method::GET, run.url("/me/packets?role=received"), "bob", None).await;
    assert_eq!(status, 200);
    assert!(history["items"].as_array().unwrap().iter().any(|item| item["packet_id"] == id.as_str()), "{history}");
}
