//! AWS's own Lambda Runtime Interface Emulator (`aws-lambda-rie`, shipped in the `aws-sam-cli`
//! wheel under `samcli/local/rapid/`): what `sam local invoke` runs inside its container, run
//! here on the host with a function's real `bootstrap` and no Docker. `make test` invokes every
//! sample event through it; `make bench` measures cold starts with it; `make invoke` is it.
//!
//! The emulator serves invocations on the address given and runs the runtime API for the
//! function on 127.0.0.1:9001 inside, so one runs at a time per machine.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::process::{Child, Command};

/// The emulator's fixed runtime API address.
pub const RUNTIME_API: &str = "127.0.0.1:9001";

/// A function binary running under the emulator.
pub struct Rie {
    child: Child,
    url: String,
    log: PathBuf,
    client: reqwest::Client,
    started: Instant,
}

/// Where the emulator is: `LAMBDA_RIE`, else the one in the project's SAM CLI virtualenv.
pub fn emulator() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("LAMBDA_RIE") {
        return Ok(PathBuf::from(path));
    }
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_owned).unwrap_or_default();
    let arch = if cfg!(target_arch = "aarch64") { "arm64" } else { "x86_64" };
    let lib = workspace.join(".local/venv/lib");
    let found = std::fs::read_dir(&lib)
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| python.path().join(format!("site-packages/samcli/local/rapid/aws-lambda-rie-{arch}")))
        .find(|path| path.exists());
    found.ok_or_else(|| format!("aws-lambda-rie-{arch} not found under {} (make test installs SAM CLI)", lib.display()))
}

impl Rie {
    /// Starts `binary` under the emulator, with the current environment, serving invocations on
    /// a free loopback port; waits until it listens.
    pub async fn start(binary: &Path) -> Result<Rie, String> {
        Self::start_with(binary, &[]).await
    }

    /// [`Rie::start`], with `overrides` on top of the current environment (an empty value unsets
    /// the variable).
    pub async fn start_with(binary: &Path, overrides: &[(&str, &str)]) -> Result<Rie, String> {
        let emulator = emulator()?;
        if std::net::TcpListener::bind(RUNTIME_API).is_err() {
            return Err(format!("{RUNTIME_API} is taken: another aws-lambda-rie is running"));
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|error| error.to_string())?
            .port();
        let log = std::env::temp_dir().join(format!("aws-lambda-rie-{port}.log"));
        let file = std::fs::File::create(&log).map_err(|error| error.to_string())?;
        let mut command = Command::new(&emulator);
        for (name, value) in overrides {
            if value.is_empty() {
                command.env_remove(name);
            } else {
                command.env(name, value);
            }
        }
        let child = command
            .arg("--runtime-interface-emulator-address")
            .arg(format!("127.0.0.1:{port}"))
            .arg(binary)
            .stdin(Stdio::null())
            .stdout(file.try_clone().map_err(|error| error.to_string())?)
            .stderr(file)
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| format!("{}: {error}", emulator.display()))?;
        let rie = Rie {
            child,
            url: format!("http://127.0.0.1:{port}/2015-03-31/functions/function/invocations"),
            log,
            client: reqwest::Client::new(),
            started: Instant::now(),
        };
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                // The runtime API too: the emulator may answer on its invocation port before it
                // listens on RUNTIME_API, and a function it starts then dies on a refused
                // connection (seen once in make test). Within two seconds; past them, as before.
                for _ in 0..200 {
                    if tokio::net::TcpStream::connect(RUNTIME_API).await.is_ok() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                return Ok(rie);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Err(format!("aws-lambda-rie did not listen on {port}: {}", rie.output()))
    }

    /// One invocation: the function's response, or the error document (`errorType`,
    /// `errorMessage`) the runtime reported.
    pub async fn invoke(&self, event: &Value) -> Result<Value, String> {
        let response = self
            .client
            .post(&self.url)
            .json(event)
            .timeout(Duration::from_secs(60))
            .send()
            .await
            .map_err(|error| format!("invocation failed: {error}; emulator said: {}", self.output()))?;
        response.json().await.map_err(|error| format!("unreadable answer: {error}; emulator said: {}", self.output()))
    }

    /// Time since the emulator was started.
    pub fn since_start(&self) -> Duration {
        self.started.elapsed()
    }

    /// The function's init duration as the emulator reports it (`INIT REPORT(durationMs: …)`:
    /// from starting the bootstrap until it first asked for an event), once it has been invoked.
    pub fn init_duration_ms(&self) -> Option<f64> {
        let output = self.output();
        let report = output.split("INIT REPORT(durationMs: ").nth(1)?;
        report.split(')').next()?.trim().parse().ok()
    }

    /// The function's own process (the emulator's child), once started.
    pub fn function_pid(&self) -> Option<u32> {
        let pid = self.child.id()?;
        // The emulator is a Go program: any of its threads may have started the function.
        let threads = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
        threads.flatten().find_map(|thread| {
            let children = std::fs::read_to_string(thread.path().join("children")).ok()?;
            children.split_whitespace().next()?.parse().ok()
        })
    }

    /// What the emulator and the function printed so far.
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops the emulator and the function, freeing its ports.
    pub async fn stop(mut self) {
        if let Some(function) = self.function_pid() {
            let _ = std::process::Command::new("kill").args(["-KILL", &function.to_string()]).status();
        }
        let _ = self.child.kill().await;
        let _ = self.child.wait().await;
        let _ = std::fs::remove_file(&self.log);
        for _ in 0..100 {
            if std::net::TcpListener::bind(RUNTIME_API).is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
