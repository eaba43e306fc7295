#!/usr/bin/env bash
# A Docker daemon of the project's own, for `sam local invoke` (scripts/sam-local.sh): no image is
# ever pulled, so the base image the functions run in (the host's architecture: the host's own
# binaries run in it natively) is built here from Debian's packages.
#
#   scripts/docker.sh install         Debian's docker.io, if missing
#   scripts/docker.sh start NAME      a bridge and a dockerd of NAME's own (its data and sockets in a folder under /tmp,
#                                     out of the repository `sam build` reads; its log under
#                                     .local/NAME/docker; no iptables rules, no host sysctl
#                                     changed); prints
#                                     `export DOCKER_HOST=... DOCKER_GATEWAY=...`: the socket, and
#                                     the host's address on the bridge, where containers reach the
#                                     host's services
#   scripts/docker.sh stop NAME       stops what `start NAME` started
#   scripts/docker.sh arch            the host's architecture as Lambda names it: x86_64 or arm64
#   scripts/docker.sh base-image      builds public.ecr.aws/lambda/provided:al2023-<arch> on the
#                                     daemon `start` started (DOCKER_HOST), and on no other
#   scripts/docker.sh answers         exit 0 when a daemon answers at DOCKER_HOST (or the default)
#
# The base image stands in for AWS's, under its name, on this daemon alone: the C library and a
# static busybox (the shell `sam local invoke` builds its image layer with), from Debian's
# packages of the host's architecture, fetched by apt with a state of its own (the host's apt is
# not touched), and the variables AWS's image sets. SAM adds its own copy of AWS's Runtime Interface Emulator on top and
# mounts the function's built artifact at /var/task.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
case "$(uname -m)" in
  aarch64 | arm64) lambda_arch=arm64 debian_arch=arm64 ;;
  *) lambda_arch=x86_64 debian_arch=amd64 ;;
esac
base_image=public.ecr.aws/lambda/provided:al2023-$lambda_arch

log() { printf '[docker] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

install() {
  command -v dockerd >/dev/null && return
  log "installing Debian packages: docker.io"
  as_root apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends docker.io >/dev/null
}

free_subnet() { # a 10.213.N.0/24 no route of the host covers
  local taken; taken=$(ip -4 route show | awk '{print $1}')
  for n in $(shuf -i 1-250); do
    grep -q "^10\.213\.$n\." <<<"$taken" || { echo "10.213.$n"; return; }
  done
  log "no free 10.213.N.0/24 subnet"; return 1
}

start() {
  local name=$1 dir="$root/.local/$1/docker"
  stop "$name" 2>/dev/null || true
  mkdir -p "$dir"
  # A bridge of the run's own (short name: 15 bytes at most), so a laptop's docker0 is not touched.
  local bridge="rp$(printf '%s' "$name" | cksum | cut -c1-8)" subnet; subnet=$(free_subnet)
  as_root ip link add "$bridge" type bridge
  as_root ip addr add "$subnet.1/24" dev "$bridge"
  as_root ip link set "$bridge" up
  echo "$bridge" >"$dir/bridge"
  # The daemon's sockets under a short path (a unix socket path holds 108 bytes at most).
  local run; run=$(mktemp -d /tmp/rp-docker.XXXXXX)
  echo "$run" >"$dir/run"
  as_root dockerd --data-root "$run/data" --exec-root "$run/exec" --pidfile "$run/dockerd.pid" \
    -H "unix://$run/docker.sock" --bridge "$bridge" --iptables=false --ip-masq=false \
    --ip-forward=false --host-gateway-ip "$subnet.1" --log-level warn \
    </dev/null >"$dir/dockerd.log" 2>&1 &
  for _ in $(seq 1 200); do
    DOCKER_HOST="unix://$run/docker.sock" docker version >/dev/null 2>&1 && break
    sleep 0.1
  done
  DOCKER_HOST="unix://$run/docker.sock" docker version >/dev/null 2>&1 ||
    { log "dockerd did not answer within 20 s (log: $dir/dockerd.log)"; tail -5 "$dir/dockerd.log" >&2; return 1; }
  log "dockerd on unix://$run/docker.sock, bridge $bridge at $subnet.1 (log: $dir/dockerd.log)"
  echo "export DOCKER_HOST=unix://$run/docker.sock"
  echo "export DOCKER_GATEWAY=$subnet.1"
}

stop() {
  local name=$1 dir="$root/.local/$1/docker"
  if [ -f "$dir/run" ]; then
    local run pid; run=$(cat "$dir/run")
    if [ -f "$run/dockerd.pid" ]; then
      pid=$(cat "$run/dockerd.pid")
      # Containers first (sam local invoke removes its own; a run cut short may leave one).
      DOCKER_HOST="unix://$run/docker.sock" docker ps -aq 2>/dev/null |
        xargs -r env DOCKER_HOST="unix://$run/docker.sock" docker rm -f >/dev/null 2>&1 || true
      as_root kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do as_root kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      as_root kill -9 "$pid" 2>/dev/null || true
    fi
    as_root umount "$run/exec/netns/"* 2>/dev/null || true
    as_root rm -rf "$run"
    rm -f "$dir/run"
  fi
  if [ -f "$dir/bridge" ]; then
    as_root ip link delete "$(cat "$dir/bridge")" 2>/dev/null || true
    rm -f "$dir/bridge"
  fi
}

base_image() {
  case "${DOCKER_HOST:-}" in
    unix:///tmp/rp-docker.*) ;;
    *) log "base-image builds into a daemon of scripts/docker.sh start only (DOCKER_HOST=${DOCKER_HOST:-})"; return 2 ;;
  esac
  local work; work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  local apt=(-o "APT::Architecture=$debian_arch" -o "APT::Architectures::=$debian_arch" -o "Dir::State=$work/state"
    -o "Dir::State::status=$work/state/status" -o "Dir::Cache=$work/cache" -o Debug::NoLocking=1
    -o APT::Sandbox::User=root)
  mkdir -p "$work/state/lists/partial" "$work/cache/archives/partial" "$work/rootfs"
  touch "$work/state/status"
  log "fetching Debian's $debian_arch libc6, libgcc-s1 and busybox-static (apt, a state of its own)"
  apt-get "${apt[@]}" update -qq >/dev/null
  (cd "$work" && apt-get "${apt[@]}" download -qq libc6 libgcc-s1 busybox-static >/dev/null)
  for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$work/rootfs"; done
  rm -rf "$work/rootfs/usr/share"
  for tool in sh mv chmod cp ls cat env mkdir rm ln; do ln -sf busybox "$work/rootfs/bin/$tool"; done
  mkdir -p "$work/rootfs/var/task" "$work/rootfs/var/runtime" "$work/rootfs/var/rapid" "$work/rootfs/opt" \
    "$work/rootfs/tmp"
  chmod 1777 "$work/rootfs/tmp"
  # What AWS's provided.al2023 image sets (its Dockerfile's ENV and WORKDIR).
  cat >"$work/Dockerfile" <<'EOF'
FROM scratch
COPY rootfs/ /
ENV LANG=en_US.UTF-8 TZ=:/etc/localtime PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LD_LIBRARY_PATH=/var/lang/lib:/lib64:/usr/lib64:/var/runtime:/var/runtime/lib:/var/task:/var/task/lib:/opt/lib \
    LAMBDA_TASK_ROOT=/var/task LAMBDA_RUNTIME_DIR=/var/runtime
WORKDIR /var/task
EOF
  DOCKER_BUILDKIT=0 docker build -q --platform "linux/$debian_arch" -t "$base_image" "$work" >"$work/build.log" 2>&1 ||
    { cat "$work/build.log" >&2; return 1; }
  log "built $base_image ($(docker image inspect "$base_image" --format '{{.Architecture}}, {{.Size}} bytes'))"
}

case "${1:-}" in
  install) install ;;
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  base-image) base_image ;;
  arch) echo "$lambda_arch" ;;
  answers) docker version >/dev/null 2>&1 ;;
  *) echo "usage: $0 install|start NAME|stop NAME|arch|base-image|answers" >&2; exit 2 ;;
esac
