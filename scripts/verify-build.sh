#!/usr/bin/env bash
# `make verify-build`: the artifacts `make deploy` would ship, tested. Every arm64 `bootstrap`
# of `make build`, found through the built template (.aws-sam/build/template.yaml), runs under
# AWS's Lambda Runtime Interface Emulator through Debian's qemu-user
# (qemu-aarch64 with the arm64 C library) and answers every sample event of its function, plus
# the routes' events made by `sam local generate-event`, against the services of `make run`.
# Fails on an invocation error or a 5xx. Run it after `make build`, before `make deploy`.
set -euo pipefail
cd "$(dirname "$0")/.."

# Which binary answers which sample event: an app route's event (its routeKey) goes to the binary
# of the function whose HttpApi event serves that route in template.yaml; the others as
# local/tests/it/events_on_binaries.rs's OTHER_EVENTS maps them.
declare -A events=(
  [settle]="settle.json"
  [funds]="topup.json reconcile.json statement.json trial-balance.json withdrawal-paid.json withdrawal-failed.json"
  [operator]="adjustment-propose.json adjustment-approve.json"
  [risk]="risk.json"
)
while read -r binary event; do
  events[$binary]="${events[$binary]:-} $event"
done < <(.local/venv/bin/python scripts/built_artifacts.py --route-events)
# Each function's artifact, from the built template (scripts/built_artifacts.py): the functions
# the deployment creates, its parameters from samconfig.toml's deploy parameter_overrides and then
# PARAMETER_OVERRIDES (e.g. PARAMETER_OVERRIDES=GrabCompute=managed-instances), each artifact once.
# The two grab functions share one build (.aws-sam/build/GrabFunction-Shared, or the cache after a
# cached rebuild). Exits 2, naming the function, if any function's bootstrap is missing.
artifacts=$(.local/venv/bin/python scripts/built_artifacts.py --samconfig samconfig.toml \
  --parameter-overrides "${PARAMETER_OVERRIDES:-}")
declare -A seen=()
while read -r function binary bootstrap; do
  [ -n "${events[$binary]+set}" ] || { echo "$function runs binary $binary, which has no sample events here"; exit 2; }
  seen[$binary]=1
done <<<"$artifacts"
for binary in "${!events[@]}"; do
  [ -n "${seen[$binary]+set}" ] || { echo "no function of .aws-sam/build/template.yaml runs $binary"; exit 2; }
done

scripts/stack.sh install-qemu
emulator=$(scripts/invoke.sh --emulator)
export REDIS_URL=${REDIS_URL:-redis://127.0.0.1:${LOCAL_REDIS_PORT:-6479}}
export AWS_ENDPOINT_URL_DYNAMODB=${AWS_ENDPOINT_URL_DYNAMODB:-http://127.0.0.1:${LOCAL_DYNAMODB_PORT:-8479}}
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-local} AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-local}
export AWS_REGION=${AWS_REGION:-us-east-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

generated() { # generated METHOD PATH ROUTE_KEY BODY QUERY: sam's own event shape for one of our routes
  SAM_CLI_TELEMETRY=0 .local/venv/bin/sam local generate-event apigateway http-api-proxy \
    --method "$1" --path "${2#/}" --body "$4" |
    python3 -c 'import json, sys
event = json.load(sys.stdin)
event["routeKey"] = event["requestContext"]["routeKey"] = sys.argv[1]
event["rawQueryString"] = sys.argv[2]
event["queryStringParameters"] = dict(pair.split("=", 1) for pair in sys.argv[2].split("&") if "=" in pair)
event["headers"]["content-type"] = "application/json"
event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = "verify-build"
event.pop("pathParameters", None)
print(json.dumps(event))' "$3" "$5"
}
generated POST /packets "POST /packets" '{"total_cents":100,"count":1}' "" >"$work/send-generated.json"
generated GET /me/packets "GET /me/packets" "" "role=sent&limit=5" >"$work/query-generated.json"

failures=0
while read -r function binary bootstrap <&4; do # (fd 4: nothing in the loop may read the list)
  printf '#!/bin/sh\nexec qemu-aarch64 -L /usr/aarch64-linux-gnu %q\n' "$bootstrap" >"$work/$function"
  chmod +x "$work/$function"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
  "$emulator" --runtime-interface-emulator-address "127.0.0.1:$port" "$work/$function" >"$work/$function.log" 2>&1 &
  rie=$!
  for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
  files=""
  for event in ${events[$binary]}; do files="$files events/$event"; done
  [ -f "$work/$binary-generated.json" ] && files="$files $work/$binary-generated.json"
  for file in $files; do
    answer=$(python3 - "http://127.0.0.1:$port/2015-03-31/functions/function/invocations" "$file" <<'PY'
import sys, urllib.request
with open(sys.argv[2], "rb") as event:
    request = urllib.request.Request(sys.argv[1], data=event.read(), method="POST")
print(urllib.request.urlopen(request, timeout=120).read().decode())
PY
)
    verdict=$(python3 -c 'import json, sys
answer = json.loads(sys.argv[1])
if "errorType" in answer and answer["errorType"] not in ("InvalidSettleRequest", "InvalidFundsRequest"):
    print("FAILED " + answer["errorType"])
elif isinstance(answer.get("statusCode"), int) and answer["statusCode"] >= 500:
    print("FAILED " + str(answer["statusCode"]))
else:
    print("ok " + str(answer.get("statusCode", "answered")))' "$answer")
    echo "  $function ($(file -b "$bootstrap" | cut -d, -f2 | xargs)) $(basename "$file"): $verdict"
    case "$verdict" in FAILED*) failures=$((failures + 1)); echo "$answer" | cut -c1-400 ;; esac
  done
  kill "$rie" 2>/dev/null || true
  wait "$rie" 2>/dev/null || true
done 4<<<"$artifacts"
[ "$failures" = 0 ] || { echo "$failures invocation(s) failed on the arm64 artifacts"; exit 1; }
echo "every arm64 artifact answered its events"
