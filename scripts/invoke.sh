#!/usr/bin/env bash
# `make invoke FN=grab EVENT=events/grab.json`: one event on one function, against the Redis and
# DynamoDB Local of `make run`, and which way it ran:
# - where a Docker daemon answers (DOCKER_HOST, else the default socket): `sam local invoke` of
#   the template's function, its debug binary laid out as `sam build` lays it out
#   (scripts/sam-local.sh build), with local-env.json (make run's ports);
# - otherwise: the function's release binary under AWS's Lambda Runtime Interface Emulator (the
#   `aws-lambda-rie` that `sam local invoke` runs inside its container, shipped in the aws-sam-cli
#   wheel) on the host, reaching make run's services unless REDIS_URL / AWS_ENDPOINT_URL_DYNAMODB
#   say otherwise.
#
#   scripts/invoke.sh --emulator     prints the emulator's path (installing SAM CLI if needed)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/stack.sh install-sam >&2
case "$(uname -m)" in
  aarch64 | arm64) arch=arm64 ;;
  *) arch=x86_64 ;;
esac
rapid=$(.local/venv/bin/python -c 'import os, samcli; print(os.path.join(os.path.dirname(samcli.__file__), "local", "rapid"))')
emulator="$rapid/aws-lambda-rie-$arch"
[ -x "$emulator" ] || chmod +x "$emulator"
if [ "${1:-}" = --emulator ]; then
  echo "$emulator"
  exit 0
fi

fn=${FN:?FN=send|grab|query|settle|funds|operator|risk}
case "$fn" in
  send | grab | query | settle | funds | operator | risk) ;;
  *) echo "no such function: $fn (send, grab, query, settle, funds, operator or risk)" >&2; exit 2 ;;
esac
# The funds function has no HTTP route: its default event is the daily reconciliation.
default_event=events/$fn.json
[ "$fn" = funds ] && default_event=events/reconcile.json
[ "$fn" = operator ] && default_event=events/adjustment-propose.json
event=${EVENT:-$default_event}
[ -f "$event" ] || { echo "no such event file: $event" >&2; exit 2; }

if command -v docker >/dev/null && docker version >/dev/null 2>&1; then
  function=$(echo "$fn" | sed 's/./\U&/')Function
  echo "make invoke: sam local invoke $function (Docker at ${DOCKER_HOST:-the default socket})" >&2
  scripts/sam-local.sh build >&2
  exec env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN SAM_CLI_TELEMETRY=0 \
    .local/venv/bin/sam local invoke "$function" --template .local/sam-local/build/template.yaml \
    --event "$event" --env-vars local-env.json --add-host host.docker.internal:host-gateway --skip-pull-image
fi
echo "make invoke: $fn's release binary under AWS's emulator on the host (no Docker daemon answers)" >&2
# All seven binaries, so one build serves every invocation.
cargo build --release --locked -p send -p grab -p query -p settle -p funds -p risk >&2
export REDIS_URL=${REDIS_URL:-redis://127.0.0.1:${LOCAL_REDIS_PORT:-6479}}
export AWS_ENDPOINT_URL_DYNAMODB=${AWS_ENDPOINT_URL_DYNAMODB:-http://127.0.0.1:${LOCAL_DYNAMODB_PORT:-8479}}
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-local} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-local}
export AWS_REGION=${AWS_REGION:-us-east-1}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
log=$(mktemp)
"$emulator" --runtime-interface-emulator-address "127.0.0.1:$port" "target/release/$fn" >"$log" 2>&1 &
rie=$!
trap 'kill "$rie" 2>/dev/null || true; wait "$rie" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
python3 - "http://127.0.0.1:$port/2015-03-31/functions/function/invocations" "$event" <<'PY'
import sys, urllib.request
with open(sys.argv[2], "rb") as event:
    request = urllib.request.Request(sys.argv[1], data=event.read(), method="POST")
print(urllib.request.urlopen(request, timeout=60).read().decode())
PY
grep -E "REPORT|INIT REPORT" "$log" >&2 || true
