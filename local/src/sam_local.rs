//! `sam local invoke`, literally: one of the template's functions, as `sam build` built it, in
//! the Lambda container SAM makes on a Docker daemon (the template's architecture, environment,
//! memory and timeout), answering one event. `scripts/sam-local.sh` sets the stage in `make
//! test` (the daemon, the arm64 base image, the debug `sam build`) and runs
//! `local/tests/it/events_on_binaries.rs` through this instead of the emulator on the host.
//!
//! The container reaches the test's Redis and DynamoDB Local at `host.docker.internal`, which
//! `--add-host host.docker.internal:host-gateway` points at the host's address on the Docker
//! bridge. The environment is what SAM resolves from the template, with the `--env-vars` file
//! written here on top: SAM applies a variable of that file only where the template declares it.
//! `--skip-pull-image`: the image is AWS's name on a daemon where it was built, not pulled
//! (`scripts/docker.sh base-image`).

use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::io::AsyncReadExt;
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
        "risk" => "RiskFunction",
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
        // An arm64 binary emulated by qemu, beside the browser suites on two cores: a settle
        // pass's Redis call once took longer than the deployed limit (twice the template's
        // 500 ms) in a fresh-clone `make test`. The emulator's speed is not what this stage tests.
        base_environment.push(("REDIS_TIMEOUT_MS".to_owned(), "3000".to_owned()));
        // The test's table: the template's would be its logical id, as SAM resolves a `!Ref`.
        let table =
            red_packets::Config::from_env().map(|config| config.table_name).unwrap_or_else(|_| "RedPackets".into());
        base_environment.push(("TABLE_NAME".to_owned(), table));
        if let Some(value) = variable("FUNDS") {
            base_environment.push(("FUNDS".to_owned(), value));
        }
        // The keys' secrets would be their logical ids, as SAM resolves a `!Ref`: empty, the
        // binaries use the local keys (`PASSPHRASE_KEY`, `MEMBERSHIP_KEYS` unset), as `make run` does.
        for name in ["PASSPHRASE_KEY_SECRET", "MEMBERSHIP_KEYS_SECRET"] {
            base_environment.push((name.to_owned(), String::new()));
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
        let output = run_with_one_retry(command, function).await;
        let _ = std::fs::remove_file(&files.0);
        let _ = std::fs::remove_file(&files.1);
        let output = output?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
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

/// How long one `sam local invoke` may take: a container's start, the binary's first answer and
/// SAM's own exit take seconds on this machine; two attempts fit the test's budget.
const ATTEMPT_LIMIT: Duration = Duration::from_secs(120);

/// What SAM's standard error shows once the function's container has taken the event (the
/// emulator inside prints it before the handler runs).
const INVOKED_MARK: &str = "START RequestId";

/// The last 30 lines of `text`.
fn tail(text: &str) -> String {
    text.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n")
}

/// What SAM prints when it gave up on its container before the function took the event: the
/// emulator inside (under qemu, for an arm64 function on this x86_64 machine) was not answering
/// within the function's timeout.
const NO_RESPONSE_MARK: &str = "No response from invoke container";

/// Runs `command` (one `sam local invoke`) to its exit, within [`ATTEMPT_LIMIT`]. SAM now and then
/// never gets its container to take the event (aws/aws-sam-cli#3714, #3901: "no response from
/// invoke container", or silence): such an attempt, killed at the limit or given up by SAM
/// itself, is run once more. One that the function took (its `START RequestId` printed) is never
/// run again, since the event may have been applied; it is an error naming what SAM printed.
async fn run_with_one_retry(mut command: Command, function: &str) -> Result<Output, String> {
    for attempt in 1..=2 {
        match run_within(&mut command, ATTEMPT_LIMIT).await? {
            Attempt::Exited(output) => {
                let stderr = String::from_utf8_lossy(&output.stderr);
                let never_taken = stderr.contains(NO_RESPONSE_MARK) && !stderr.contains(INVOKED_MARK);
                if attempt == 1 && never_taken {
                    eprintln!("sam local invoke {function}: SAM gave up on its container before it took the event; once more:\n{}", tail(&stderr));
                    continue;
                }
                return Ok(output);
            }
            Attempt::TimedOut { stderr } if attempt == 1 && !stderr.contains(INVOKED_MARK) => {
                eprintln!("sam local invoke {function}: the container never took the event within {ATTEMPT_LIMIT:?}; once more:\n{}", tail(&stderr));
            }
            Attempt::TimedOut { stderr } => {
                return Err(format!(
                    "sam local invoke {function}: no answer within {ATTEMPT_LIMIT:?} (attempt {attempt}); SAM printed:\n{}",
                    tail(&stderr)
                ));
            }
        }
    }
    unreachable!("the second attempt returns")
}

/// How one run of a command ended.
enum Attempt {
    Exited(Output),
    /// Killed at the limit, with what it had printed on its standard error.
    TimedOut {
        stderr: String,
    },
}

/// Runs `command`, collecting both its outputs as they come, and kills it at `limit`.
async fn run_within(command: &mut Command, limit: Duration) -> Result<Attempt, String> {
    let mut child = command.spawn().map_err(|error| format!("{command:?}: {error}"))?;
    let collect = |pipe: Option<Box<dyn tokio::io::AsyncRead + Send + Unpin>>| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&buffer);
        let reader = tokio::spawn(async move {
            let Some(mut pipe) = pipe else { return };
            let mut chunk = [0u8; 8192];
            while let Ok(read) = pipe.read(&mut chunk).await {
                if read == 0 {
                    break;
                }
                sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).extend_from_slice(&chunk[..read]);
            }
        });
        (buffer, reader)
    };
    let (stdout, stdout_reader) = collect(child.stdout.take().map(|pipe| Box::new(pipe) as _));
    let (stderr, stderr_reader) = collect(child.stderr.take().map(|pipe| Box::new(pipe) as _));
    let taken = |buffer: &Arc<Mutex<Vec<u8>>>| {
        std::mem::take(&mut *buffer.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    };
    match tokio::time::timeout(limit, child.wait()).await {
        Ok(status) => {
            let status = status.map_err(|error| format!("{command:?}: {error}"))?;
            let _ = stdout_reader.await;
            let _ = stderr_reader.await;
            Ok(Attempt::Exited(Output { status, stdout: taken(&stdout), stderr: taken(&stderr) }))
        }
        Err(_) => {
            let _ = child.kill().await;
            stdout_reader.abort();
            stderr_reader.abort();
            Ok(Attempt::TimedOut { stderr: String::from_utf8_lossy(&taken(&stderr)).into_owned() })
        }
    }
}

/// The event file and the `--env-vars` file of one invocation.
fn invocation_files(function: &str) -> (PathBuf, PathBuf) {
    static INVOCATIONS: AtomicU64 = AtomicU64::new(0);
    let unique = format!("{function}-{}-{}", std::process::id(), INVOCATIONS.fetch_add(1, Ordering::Relaxed));
    let dir = std::env::temp_dir();
    (dir.join(format!("sam-event-{unique}.json")), dir.join(format!("sam-env-{unique}.json")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.args(["-c", script]).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        command
    }

    #[tokio::test]
    async fn a_run_past_its_limit_is_killed_with_what_it_printed() {
        let mut command = shell("echo 'START RequestId: 1' >&2; sleep 30");
        let attempt = run_within(&mut command, Duration::from_millis(500)).await.unwrap();
        let Attempt::TimedOut { stderr } = attempt else { panic!("a 30 s sleep finished within 0.5 s") };
        assert!(stderr.contains(INVOKED_MARK), "{stderr}");
    }

    #[tokio::test]
    async fn a_run_within_its_limit_keeps_both_outputs() {
        let mut command = shell("echo '{\"ok\":1}'; echo log >&2");
        let Attempt::Exited(output) = run_within(&mut command, Duration::from_secs(10)).await.unwrap() else {
            panic!("echo timed out")
        };
        assert!(output.status.success());
        assert_eq!((output.stdout.as_slice(), output.stderr.as_slice()), (&b"{\"ok\":1}\n"[..], &b"log\n"[..]));
    }
}
