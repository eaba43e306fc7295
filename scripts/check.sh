#!/usr/bin/env bash
# `make check`: rustfmt and clippy (warnings are errors), then every test that needs no service
# (the domain, the Lua model, the handlers and settle on the in-memory stores). `make test` runs
# the lint part first (`scripts/check.sh lint`).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== the binaries' and the tests' builds resolve the same features"
scripts/same_features.sh
echo "== cargo clippy --all-targets -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
if [ "${1:-}" = lint ]; then
  exit 0
fi
echo "== the service-free tests: every crate's unit tests (the handlers and settle on the in-memory stores) and the recovery model"
# No store is reachable here: a test that needed one would fail, not pass quietly.
no_services=(env -u REDIS_URL -u AWS_ENDPOINT_URL_DYNAMODB -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY FUNDS=none RUST_LOG=warn)
"${no_services[@]}" cargo test --workspace --lib --bins --locked
"${no_services[@]}" cargo test -p red-packets --test recovery_model --locked
