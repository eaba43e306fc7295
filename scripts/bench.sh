#!/usr/bin/env bash
# `make bench`: release binaries, a Redis and a DynamoDB Local of its own, then the bench binary,
# which writes the run's figures to bench/results/ (latest.json and the charts) and renders
# BENCHMARKS.md from bench/BENCHMARKS.md.j2 and them (`cargo run -p bench -- render` renders it
# again from the committed data alone).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/stack.sh install-services
# The functions on their own, as sam build builds them, then the bench with the test kit: one
# command would unify the bench's dependencies' features into the functions, and the cold starts
# would measure binaries that are not the ones that ship.
cargo build --release --locked -p send -p grab -p query -p settle -p funds
cargo build --release --locked -p bench
name="bench-$$"
exports=$(scripts/stack.sh start "$name" 0 0)
trap 'scripts/stack.sh stop "$name"' EXIT
eval "$exports"
unset TABLE_NAME REDIS_CLUSTER GRAB_WAIT_REPLICAS REDIS_KEY_PREFIX
# The benches measure the packet paths, not money: their senders hold no balance.
FUNDS=none RUST_LOG=${RUST_LOG:-error} target/release/bench
