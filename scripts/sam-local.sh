#!/usr/bin/env bash
# `sam local invoke`, literally: the template's functions in SAM's Lambda containers (the
# template's environment, memory and timeout) on a Docker daemon, as the host's own binaries.
#
#   scripts/sam-local.sh build        the host's debug binaries (`cargo build --workspace --bins`,
#                                     nothing to do after make test's build) laid out as `sam
#                                     build` lays them out, into .local/sam-local/build, the
#                                     template's architecture the host's (scripts/sam_stage.py):
#                                     they run in SAM's containers natively, with no second build
#                                     for arm64 and no qemu (an arm64 debug function under qemu
#                                     took seconds to answer, and timed out on a busy machine).
#                                     The arm64 build the stack deploys is `make build`'s, run
#                                     under AWS's emulator by `make verify-build`.
#   scripts/sam-local.sh test         local/tests/it/events_on_binaries.rs through `sam local invoke`
#                                     (SAM_LOCAL_TEMPLATE): every function with every event in
#                                     events/ and the routes' generated events, against the
#                                     services REDIS_URL and AWS_ENDPOINT_URL_DYNAMODB name, which
#                                     must listen on DOCKER_GATEWAY too
#   scripts/sam-local.sh readme NAME  the README's `sam local invoke` commands, run exactly as
#                                     printed, against `make run` itself (ports 6479, 8479)
#
# DOCKER_HOST names the daemon (scripts/docker.sh start), which holds AWS's base image for the
# host's architecture as built here (scripts/docker.sh base-image); every invocation skips the pull.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build_dir=.local/sam-local/build
export SAM_CLI_TELEMETRY=0

build() {
  scripts/stack.sh install-sam >&2
  cargo build --workspace --bins --locked >&2
  rm -rf "$build_dir"
  "$root/.local/venv/bin/python" scripts/sam_stage.py "$build_dir" "$root/target/debug" "$(scripts/docker.sh arch)"
}

run_tests() {
  # (The TLS test sets AWS_CA_BUNDLE, a variable the template does not declare: the host's only.)
  # (Through scripts/run_tests.py, which runs the binary `cargo test --workspace` built: `cargo
  # test -p local` would build it again, under that package's features alone.)
  SAM_LOCAL_TEMPLATE="$root/$build_dir/template.yaml" "$root/.local/venv/bin/python" scripts/run_tests.py \
    --no-record --package local --test events_on_binaries -- --skip the_ledger_is_reached_over_tls
}

# The README's commands between its "sam-local-invoke" markers, each run exactly as printed, from
# a folder laid out as the repository is after `sam build` (.aws-sam/build: this stage's build,
# the debug one; samconfig.toml, local-env.json, events/), against `make run` itself on its own
# ports, its Redis listening on the bridge as it does on docker0. Fails unless each answers
# without an error: no errorType, no 5xx.
readme() {
  local name=$1 checkout; checkout=$(mktemp -d)
  local commands; commands=$(awk '/<!-- sam-local-invoke -->/{on=1; next} /<!-- \/sam-local-invoke -->/{on=0} on && /^sam local invoke /' README.md)
  [ -n "$commands" ] || { echo "README.md has no sam local invoke command between its markers"; return 1; }
  for port in 6479 8479; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "port $port is taken (make run is up?): the README's commands need make run's ports; stop it and run make test again"
      return 1
    fi
  done
  mkdir -p "$checkout/.aws-sam"
  ln -s "$root/$build_dir" "$checkout/.aws-sam/build"
  ln -s "$root/events" "$checkout/events"
  cp local-env.json samconfig.toml "$checkout/"
  local port; port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
  # make run as a developer starts it: its own services and settings, not make test's (whose
  # services and FUNDS=none are in the caller's environment).
  local as_typed=(env -u REDIS_URL -u REDIS_CLUSTER -u AWS_ENDPOINT_URL_DYNAMODB -u TABLE_NAME -u FUNDS -u PASSPHRASE_KEY)
  "${as_typed[@]}" LOCAL_STACK_NAME="$name" LOCAL_BIND="$DOCKER_GATEWAY" PORT="$port" MAKE_RUN_SITES=skip \
    scripts/run-local.sh >".local/$name-run.log" 2>&1 &
  local run=$!
  # shellcheck disable=SC2064 # expanded now: the values of this call
  trap "kill -TERM $run 2>/dev/null || true; wait $run 2>/dev/null || true; rm -rf '$checkout'" RETURN
  # make run's local API makes the table at its start; then the payments system tops alice up.
  for _ in $(seq 1 600); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null ||
    { tail -20 ".local/$name-run.log"; echo "make run did not start within 60 s"; return 1; }
  "${as_typed[@]}" AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8479 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local \
    AWS_REGION=us-east-1 ./target/debug/local topup alice 50000 >/dev/null
  local failures=0 line answer
  while read -r line; do
    echo "\$ $line"
    answer=$(cd "$checkout" && env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN \
      PATH="$root/.local/venv/bin:$PATH" bash -c "$line" 2>"$checkout/stderr" | tail -1) || true
    echo "$answer"
    python3 -c 'import json, sys
answer = json.loads(sys.argv[1])
sys.exit(1 if "errorType" in answer or answer.get("statusCode", 200) >= 500 else 0)' "$answer" 2>/dev/null ||
      { failures=$((failures + 1)); tail -20 "$checkout/stderr"; }
  done <<<"$commands"
  [ "$failures" = 0 ] || { echo "$failures of the README's sam local invoke commands failed"; return 1; }
}

case "${1:-}" in
  build) build ;;
  test) run_tests ;;
  readme) shift; readme "$@" ;;
  *) echo "usage: $0 build|test|readme NAME" >&2; exit 2 ;;
esac
