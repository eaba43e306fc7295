#!/usr/bin/env bash
# `make check`: rustfmt and clippy (warnings are errors), then every test that needs no service
# (the domain, the Lua model, the handlers and settle on the in-memory stores). `make test` runs
# the lint part first (`scripts/check.sh lint`).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy --all-targets -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
if [ "${1:-}" = lint ]; then
  exit 0
fi
echo "== the service-free tests (unit tests of every crate)"
# No store is reachable here: a test that needed one would fail, not pass quietly.
env -u REDIS_URL -u AWS_ENDPOINT_URL_DYNAMODB FUNDS=none RUST_LOG=warn cargo test --workspace --lib --bins --locked
