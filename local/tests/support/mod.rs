//! Test support shared by the integration tests that need a Redis of their own.

#![allow(dead_code)] // each test binary uses its own subset

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use red_packets::Config;

/// A redis-server of this test's own, with AOF fsynced on every write.
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
        let mut command = Command::new("redis-server");
        if let Some(primary) = self.primary {
            command.args(["--replicaof", "127.0.0.1", &primary.to_string()]);
        }
        let child = command
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string(), "--save", ""])
            .args(["--appendonly", "yes", "--appendfsync", self.fsync])
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
