#!/usr/bin/env bash
# The operators' console in a real browser (part of `make test`; `make console-screenshots`
# regenerates docs/console/*.png the same way): checks that console/'s generated client follows
# openapi.yaml, builds the console (tsc, vite), starts the local API on a free port of 127.0.0.1
# serving it at /console/ (FUNDS=wallet, RISK_CHAIN_LINKS=2, BUSINESS_TIME_ZONE=Asia/Shanghai),
# and runs console/e2e/run.mjs, node's test runner
# driving Debian's Chromium through npm's playwright-core. Uses the services of the caller's
# environment (scripts/test.sh's) or starts its own, and stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

started=""
api=""
log=$(mktemp)
cleanup() {
  [ -n "$api" ] && kill "$api" 2>/dev/null || true
  [ -n "$started" ] && scripts/stack.sh stop "$started" >/dev/null 2>&1 || true
  rm -f "$log"
}
trap cleanup EXIT
if [ -z "${AWS_ENDPOINT_URL_DYNAMODB:-}" ] || [ -z "${REDIS_URL:-}" ]; then
  scripts/stack.sh install >/dev/null
  started="console-$$"
  eval "$(scripts/stack.sh start "$started" 0 0)"
fi
[ -x target/debug/local ] || cargo build -q -p local --locked

(cd console && npm run --silent check-generated && npm run --silent build >/dev/null)

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# A table and Redis keys of its own: its local API settles with the wallet on, which must not
# settle (and credit) the other suites' packets, nor write beside a reconciliation of theirs.
export FUNDS=wallet TABLE_NAME="RedPackets-console-$$" REDIS_KEY_PREFIX="console$$"
# 接龙 chains of two handoffs are flagged (e2e test 3 plays one); the business day is the one the
# console's config.json names (its day pickers' today), for the server and `local trial-balance`.
export RISK_CHAIN_LINKS=2 BUSINESS_TIME_ZONE=Asia/Shanghai
PORT=$port RUST_LOG=warn SETTLE_EVERY_SECONDS=1 ./target/debug/local serve >"$log" 2>&1 &
api=$!
for _ in $(seq 1 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
grep -q "listening on" "$log" || { cat "$log"; echo "the local API did not start"; exit 1; }

cd console
CONSOLE_URL="http://127.0.0.1:$port/console/" API_URL="http://127.0.0.1:$port" LOCAL_BIN="$root/target/debug/local" \
  node --test --test-timeout=120000 e2e/run.mjs
