#!/usr/bin/env bash
# `make run`: installs what is missing, starts Redis and DynamoDB Local under .local/run (unless
# REDIS_URL / AWS_ENDPOINT_URL_DYNAMODB point elsewhere), and serves the local API on
# http://127.0.0.1:$PORT until Ctrl-C or SIGTERM, then stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."

redis_port=${LOCAL_REDIS_PORT:-6479}
dynamo_port=${LOCAL_DYNAMODB_PORT:-8479}
[ -n "${REDIS_URL:-}" ] && redis_port=-
[ -n "${AWS_ENDPOINT_URL_DYNAMODB:-}" ] && dynamo_port=-

scripts/stack.sh install-services
cargo build -p local
exports=$(scripts/stack.sh start run "$redis_port" "$dynamo_port")
trap 'scripts/stack.sh stop run' EXIT
eval "$exports"

./target/debug/local serve &
server=$!
trap 'kill -TERM "$server" 2>/dev/null || true' INT TERM
wait "$server" || true
wait "$server" 2>/dev/null || true
