#!/usr/bin/env bash
# `make run`: installs what is missing, builds the console and the app when they are missing or
# older than their sources, starts Redis and DynamoDB Local under .local/run (unless
# REDIS_URL / AWS_ENDPOINT_URL_DYNAMODB point elsewhere), both keeping their data there across
# restarts, and serves the local API on http://127.0.0.1:$PORT until Ctrl-C or SIGTERM, then
# stops what it started. LOCAL_STACK_NAME (default run) names the folder under .local/.
set -euo pipefail
cd "$(dirname "$0")/.."

redis_port=${LOCAL_REDIS_PORT:-6479}
dynamo_port=${LOCAL_DYNAMODB_PORT:-8479}
[ -n "${REDIS_URL:-}" ] && redis_port=-
[ -n "${AWS_ENDPOINT_URL_DYNAMODB:-}" ] && dynamo_port=-

scripts/stack.sh install-services

# The operators' console and the H5 app, served under /console/ and /app/: built when missing or
# older than their sources (npm ci the first time, then each one's build: about a minute each on
# two cores). MAKE_RUN_SITES=skip leaves them as they are (the suites that start make run for its
# API alone).
stale() { # stale DIST SOURCE...: true when DIST/index.html is missing or older than a source file
  local built="$1/index.html"; shift
  [ -f "$built" ] || return 0
  [ -n "$(find "$@" -newer "$built" -type f -print -quit 2>/dev/null)" ]
}
if [ "${MAKE_RUN_SITES:-build}" != skip ]; then
  if stale console/dist console/src console/index.html console/package-lock.json openapi.yaml; then
    echo "building the operators' console into console/dist (older than its sources, or missing)"
    scripts/stack.sh install-console
    (cd console && npm run --silent build >/dev/null)
  fi
  if stale app/dist app/src app/index.html app/package-lock.json sdk/src openapi.yaml; then
    echo "building the H5 app into app/dist (older than its sources, or missing)"
    scripts/stack.sh install-app
    (cd sdk && npm run --silent build >/dev/null)
    (cd app && npm run --silent build >/dev/null)
  fi
fi
# The workspace's feature set (not `local`'s alone), so `make test`'s build of the workspace serves
# this one: `-p local` would build num-traits without its default feature, and the AWS SDK again.
cargo build --workspace --bin local
name=${LOCAL_STACK_NAME:-run}
# `sam local invoke`'s containers reach the host at docker0's address on Linux (host-gateway):
# Redis listens there too when the interface exists. (Docker Desktop reaches the host's loopback.)
if [ -z "${LOCAL_BIND:-}" ]; then
  LOCAL_BIND=$( (ip -4 -o addr show docker0 2>/dev/null || true) | awk '{print $4}' | cut -d/ -f1 | head -1)
  export LOCAL_BIND
fi
if [ -n "$LOCAL_BIND" ]; then
  echo "Redis listens on $LOCAL_BIND too, for sam local invoke's containers (local-env.json)"
fi
exports=$(scripts/stack.sh start "$name" "$redis_port" "$dynamo_port" persist)
trap 'scripts/stack.sh stop "$name"' EXIT
eval "$exports"

cat <<HOWTO
The wallet is on (FUNDS=wallet): a sender needs a balance before sending. In another shell, top
one up as the payments system would (once per REF; a fresh one when left out):
  make topup U=alice CENTS=50000 [REF=payment-1]
  make reconcile        # the books as of a minute ago balance, or each difference, RECONCILIATION_MISMATCH, exit 1
  make trial-balance DAY=$(date -u +%F)     # reports/trial-balance/<day>.as-of-<cut-off>.jsonl and .csv
  make statement U=alice DAY=$(date -u +%F) # reports/statements/<day>/alice.as-of-<cut-off>.jsonl and .csv
HOWTO
./target/debug/local serve &
server=$!
trap 'kill -TERM "$server" 2>/dev/null || true' INT TERM
wait "$server" || true
wait "$server" 2>/dev/null || true
