# Sourced by the browser suites (scripts/console-e2e.sh, scripts/app-e2e.sh): services and a
# local API of their own for one run, stopped on exit, also on failure.
#   local_api_start NAME   uses the caller's services (scripts/test.sh's) or starts its own,
#                          then serves the local API on a free port of 127.0.0.1 with a table and
#                          Redis keys named after NAME (its settle runs with the wallet on must
#                          not settle, credit or reconcile the other suites' packets), settling
#                          every second; sets API_URL and exports the services' settings.
# Settings for the API (FUNDS, RISK_…) are exported by the caller before the call.

local_api_started=""
local_api_pid=""
local_api_log=$(mktemp)
local_api_stop() {
  [ -n "$local_api_pid" ] && kill "$local_api_pid" 2>/dev/null || true
  [ -n "$local_api_started" ] && scripts/stack.sh stop "$local_api_started" >/dev/null 2>&1 || true
  rm -f "$local_api_log"
}
trap local_api_stop EXIT

local_api_start() {
  local name=$1
  if [ -z "${AWS_ENDPOINT_URL_DYNAMODB:-}" ] || [ -z "${REDIS_URL:-}" ]; then
    scripts/stack.sh install >/dev/null
    local_api_started="$name-$$"
    eval "$(scripts/stack.sh start "$local_api_started" 0 0)"
  fi
  [ -x target/debug/local ] || cargo build -q -p local --locked
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  export TABLE_NAME="RedPackets-$name-$$" REDIS_KEY_PREFIX="$name$$"
  PORT=$port RUST_LOG=warn SETTLE_EVERY_SECONDS=1 ./target/debug/local serve >"$local_api_log" 2>&1 &
  local_api_pid=$!
  for _ in $(seq 1 100); do grep -q "listening on" "$local_api_log" && break; sleep 0.1; done
  grep -q "listening on" "$local_api_log" || { cat "$local_api_log"; echo "the local API did not start"; exit 1; }
  API_URL="http://127.0.0.1:$port"
  export API_URL
}
