//! `sam local invoke`, literally: one of the template's functions, as `sam build` built it, in
//! the Lambda container SAM makes on a Docker daemon (the template's architecture, environment,
//! memory and timeout), answering one event. `scripts/sam-local.sh` sets the stage in `make
//! test` (the daemon, the arm64 base image, the debug `sam build`) and runs
//! `local/tests/events_on_binaries.rs` through this instead of the emulator on the host.
//!
//! The container reaches the test's Redis and DynamoDB Local at `host.docker.internal`, which
//! `--add-host host.docker.internal:host-gateway` points at the host's address on the Docker
//! bridge. The environment is what SAM resolves from the template, with the `--env-vars` file
//! written here on top: SAM applies a variable of that file only where the template declares it.
//! `--skip-pull-image`: the image is AWS's name on a daemon where it was built, not pulled
//! (`scripts/docker.sh base-image`).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::process::Command;

/// The built template `SAM_LOCAL_TEMPLATE` names, invoked through the project's SAM CLI.
pub struct SamLocal {
    sam: PathBuf,
    template: PathBuf,
    base_environment: Vec<(String, String)>,
}

/// The template's function that runs each binary (the default parameter set's).
pub fn function_of(binary: &str) -> &'static str {
    match binary {
        "send" => "SendFunction",
        "grab" => "GrabFunction",
        "query" => "QueryFunction",
        "settle" => "SettleFunction",
        "funds" => "FundsFunction",
        "operator" => "OperatorFunction",
        other => panic!("no function of template.yaml runs {other}"),
    }
}

/// A host address of the test's, as a container on the bridge reaches it.
fn from_the_container(url: &str) -> String {
    url.replace("127.0.0.1", "host.docker.internal").replace("localhost", "host.docker.internal")
}

impl SamLocal {
    /// From the environment `scripts/sam-local.sh` sets; `None` when it is not set (the tests
    /// then run the binaries under the emulator on the host).
    pub fn from_env() -> Option<SamLocal> {
        let template = PathBuf::from(std::env::var_os("SAM_LOCAL_TEMPLATE")?);
        let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().map(PathBuf::from).unwrap_or_default();
        let variable = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        // What the test's own run points at, as the container reaches it; the rest is the template's.
        let mut base_environment = Vec::new();
        for name in ["REDIS_URL", "AWS_ENDPOINT_URL_DYNAMODB"] {
            if let Some(url) = variable(name) {
                base_environment.push((name.to_owned(), from_the_container(&url)));
            }
        }
        base_environment
            .push(("REDIS_CLUSTER".to_owned(), variable("REDIS_CLUSTER").unwrap_or_else(|| "false".into())));
        // One settle pass per invocation, as the binary's default (and local-env.json) has it:
        // the template's 50 s of passes fit a schedule, not a test.
        base_environment.push(("SETTLE_DRAIN_SECONDS".to_owned(), "0".to_owned()));
        // The test's table: the template's would be its logical id, as SAM resolves a `!Ref`.
        let table =
            red_packets::Config::from_env().map(|config| config.table_name).unwrap_or_else(|_| "RedPackets".into());
        base_environment.push(("TABLE_NAME".to_owned(), table));
        for name in ["FUNDS", "PASSPHRASE_KEY"] {
            if let Some(value) = variable(name) {
                base_environment.push((name.to_owned(), value));
            }
        }
        Some(SamLocal { sam: workspace.join(".local/venv/bin/sam"), template, base_environment })
    }

    /// Invokes `function` (a logical id of the template) once with `event`, `environment` on top
    /// of the test's, and returns its answer: the JSON `sam local invoke` prints.
    pub async fn invoke(&self, function: &str, environment: &[(&str, &str)], event: &Value) -> Result<Value, String> {
        let mut variables = Map::new();
        for (name, value) in &self.base_environment {
            variables.insert(name.clone(), Value::from(value.as_str()));
        }
        for (name, value) in environment {
            variables.insert((*name).to_owned(), Value::from(*value));
        }
        let files = invocation_files(function);
        std::fs::write(&files.0, serde_json::to_vec(event).map_err(|error| error.to_string())?)
            .map_err(|error| format!("{}: {error}", files.0.display()))?;
        let env_vars = serde_json::json!({ function: variables });
        std::fs::write(&files.1, env_vars.to_string()).map_err(|error| format!("{}: {error}", files.1.display()))?;

        let mut command = Command::new(&self.sam);
        command
            .args(["local", "invoke", function, "--template"])
            .arg(&self.template)
            .arg("--event")
            .arg(&files.0)
            .arg("--env-vars")
            .arg(&files.1)
            .args(["--add-host", "host.docker.internal:host-gateway", "--skip-pull-image"])
            .env("SAM_CLI_TELEMETRY", "0")
            // With credentials in its environment SAM asks STS for the account, which takes
            // seconds to fail where AWS cannot be reached; the function gets SAM's own.
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_PROFILE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let output = tokio::time::timeout(Duration::from_secs(180), command.output())
            .await
            .map_err(|_| format!("sam local invoke {function}: no answer within 180 s"))?
            .map_err(|error| format!("sam local invoke {function}: {error} ({})", self.sam.display()))?;
        let _ = std::fs::remove_file(&files.0);
        let _ = std::fs::remove_file(&files.1);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail = |text: &str| {
            text.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n")
        };
        if !output.status.success() {
            return Err(format!("sam local invoke {function} exited {}:\n{}", output.status, tail(&stderr)));
        }
        // SAM prints the function's answer as the last line of its standard output.
        let answer = stdout.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or_default();
        serde_json::from_str(answer).map_err(|error| {
            format!("sam local invoke {function}: not a JSON answer ({error}): {stdout}\n{}", tail(&stderr))
        })
    }
}

/// The event file and the `--env-vars` file of one invocation.
fn invocation_files(function: &str) -> (PathBuf, PathBuf) {
    static INVOCATIONS: AtomicU64 = AtomicU64::new(0);
    let unique = format!("{function}-{}-{}", std::process::id(), INVOCATIONS.fetch_add(1, Ordering::Relaxed));
    let dir = std::env::temp_dir();
    (dir.join(format!("sam-event-{unique}.json")), dir.join(format!("sam-env-{unique}.json")))
}
