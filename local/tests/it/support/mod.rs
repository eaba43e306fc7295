//! Test support shared by the integration tests that need a Redis of their own: the server,
//! and the sample events as requests.

pub mod cluster;
pub mod reasons;
pub mod slow_ledger;
pub mod stack;
pub mod throttled;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use lambda_http::Request;
use local::Functions;
use red_packets::Config;
use red_packets_testkit::events;
use serde_json::{json, Value};

/// The JSON Schema of ledger events of `event_type` (`events/schemas/<type>.json`).
pub fn event_schema(event_type: &str) -> jsonschema::Validator {
    let path = format!("{}/../events/schemas/{event_type}.json", env!("CARGO_MANIFEST_DIR"));
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("a schema per event type")).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

const SEND_EVENT: &str = include_str!("../../../../events/send.json");
const GRAB_EVENT: &str = include_str!("../../../../events/grab.json");

/// `events/send.json` with `body` and a fresh `Idempotency-Key`.
pub fn send_request(body: Value) -> Request {
    let mut event: Value = serde_json::from_str(SEND_EVENT).unwrap();
    events::set_header(&mut event, "Idempotency-Key", Some(&red_packets::domain::PacketId::random().to_string()));
    events::set_body(&mut event, &body.to_string());
    events::to_request(&event).unwrap()
}

/// `events/grab.json` for `user` on packet `id`.
pub fn grab_request(id: &str, user: &str) -> Request {
    let mut event: Value = serde_json::from_str(GRAB_EVENT).unwrap();
    events::set_packet_id(&mut event, id);
    events::set_caller(&mut event, Some(user));
    events::to_request(&event).unwrap()
}

/// Sends a lucky packet of `total_cents` in `count` shares through the send handler; its id.
pub async fn send_packet(functions: &Functions, total_cents: u64, count: u32) -> String {
    let body = json!({ "total_cents": total_cents, "count": count });
    let response = send::handle(&functions.send, send_request(body)).await.unwrap();
    assert_eq!(response.status(), 201);
    let body: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
    body["packet_id"].as_str().unwrap().to_owned()
}

/// A server of this test's own (`REDIS_SERVER`: Redis or Valkey), with AOF fsynced on every write.
pub struct OwnRedis {
    port: u16,
    dir: PathBuf,
    fsync: &'static str,
    primary: Option<u16>,
    child: Option<Child>,
}

impl OwnRedis {
    pub fn start() -> OwnRedis {
        Self::start_with("always")
    }

    /// A redis-server replicating `primary`.
    pub fn replica_of(primary: &OwnRedis) -> OwnRedis {
        Self::start_replicating(primary.fsync, Some(primary.port))
    }

    /// A redis-server whose AOF is fsynced by `fsync` (`always` or `everysec`).
    pub fn start_with(fsync: &'static str) -> OwnRedis {
        Self::start_replicating(fsync, None)
    }

    pub fn start_replicating(fsync: &'static str, primary: Option<u16>) -> OwnRedis {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = std::env::temp_dir().join(format!("red-packets-faults-{port}"));
        std::fs::create_dir_all(&dir).unwrap();
        let mut redis = OwnRedis { port, dir, fsync, primary, child: None };
        redis.spawn();
        redis
    }

    pub fn spawn(&mut self) {
        // REDIS_SERVER: the engine of this test pass (Debian's redis-server, or valkey-server).
        let server = std::env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        let mut command = Command::new(server);
        if let Some(primary) = self.primary {
            command.args(["--replicaof", "127.0.0.1", &primary.to_string()]);
        }
        let child = command
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string(), "--save", ""])
            .args(["--appendonly", "yes", "--appendfsync", self.fsync, "--maxmemory-policy", "noeviction"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server (make test installs it)");
        self.child = Some(child);
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("redis-server did not start on {}", self.port);
    }

    /// Stops the process (SIGSTOP) without killing it: a node that answers nobody for a while.
    pub fn pause(&self) {
        self.signal("STOP");
    }

    /// Lets a paused process run again (SIGCONT).
    pub fn resume(&self) {
        self.signal("CONT");
    }

    fn signal(&self, name: &str) {
        let pid = self.child.as_ref().expect("running").id().to_string();
        let status = Command::new("kill").args([&format!("-{name}"), &pid]).status().unwrap();
        assert!(status.success(), "kill -{name} {pid}");
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap(); // SIGKILL: no goodbye, like a crashed node
            child.wait().unwrap();
        }
    }

    pub fn config(&self) -> Config {
        let mut config = Config::from_env().unwrap();
        config.redis.url = format!("redis://127.0.0.1:{}", self.port);
        config.redis.cluster = false;
        config.redis.timeout = Duration::from_millis(300);
        config
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
