#!/usr/bin/env bash
# `make test`: installs what is missing, starts a Redis and a DynamoDB Local of its own on free
# ports, runs every unit and integration test against them, lints the SAM template, and stops
# what it started, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/stack.sh install
name="test-$$"
exports=$(scripts/stack.sh start "$name" 0 0)
trap 'scripts/stack.sh stop "$name"' EXIT
eval "$exports"
# Settings from the caller's shell must not leak into the tests.
unset TABLE_NAME REDIS_CLUSTER GRAB_WAIT_REPLICAS MAX_TOTAL_CENTS MAX_COUNT SETTLE_SHARDS \
  MIN_EXPIRES_IN_SECONDS MAX_EXPIRES_IN_SECONDS DEFAULT_EXPIRES_IN_SECONDS REDIS_TIMEOUT_MS
export RUST_LOG=${RUST_LOG:-warn}

log=".local/$name/cargo-test.log"
cargo build --workspace --bins --locked
# The functions' release binaries, for AWS's Runtime Interface Emulator (events_on_binaries.rs).
cargo build --release --locked -p send -p grab -p query -p settle
LAMBDA_RIE=$(scripts/invoke.sh --emulator)
export LAMBDA_RIE
echo "== every test, on single-node Redis"
cargo test --workspace --locked 2>&1 | tee "$log"

echo "== schemathesis against openapi.yaml on the local API"
scripts/fuzz.sh

echo "== every test again, on a local three-master Redis Cluster"
cluster_exports=$(scripts/stack.sh cluster "$name")
(eval "$cluster_exports" && cargo test --workspace --locked) 2>&1 | tee -a "$log"
summary=$(awk '/^test result:/ { passed += $4; failed += $6 } END { printf "%d passed, %d failed", passed, failed }' "$log")

echo "sam validate --lint"
.local/venv/bin/sam validate --lint --region us-east-1 --template template.yaml
echo "the SAM transform on template.yaml, for every parameter set (scripts/transform.py)"
.local/venv/bin/python scripts/transform.py
echo "openapi-spec-validator openapi.yaml"
.local/venv/bin/openapi-spec-validator openapi.yaml
echo "$summary"
