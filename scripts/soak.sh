#!/usr/bin/env bash
# `make soak` (not part of `make test`): SOAK_SECONDS (default 600) of steady mixed traffic, with
# a simulated failover every SOAK_FAILOVER_EVERY_SECONDS (default 60: the newest open packet's keys
# put back 1 s) —
# top-ups, sends, grabs, packet views, history pages, withdrawals (the payments system paying or
# failing each, its word delivered twice) and adjustments (proposed by one operator, approved by
# another) — against the local API (release build) on a Redis
# and a DynamoDB Local of its own, with settle on its local schedule (every second, the default). Afterwards it
# waits for every packet to expire and settle, checks every invariant of DESIGN.md and that the
# API's memory stayed flat, reconciles the whole ledger (invariant 8), prints the report and writes bench/results/soak-<seconds>s.json.
# Then the fleet's own faults, long: a whole shard resharded and failovers in a row (fleet.rs).
# Exits non-zero on any error or violation. Stops what it started, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/stack.sh install-services
cargo build --release --locked -p local -p bench --bin local --bin soak
name="soak-$$"
exports=$(scripts/stack.sh start "$name" 0 0)
api=
trap '[ -n "$api" ] && kill "$api" 2>/dev/null; scripts/stack.sh stop "$name"' EXIT
eval "$exports"
unset REDIS_CLUSTER GRAB_WAIT_REPLICAS REDIS_KEY_PREFIX MAX_TOTAL_CENTS MAX_COUNT SETTLE_SHARDS \
  MAX_EXPIRES_IN_SECONDS DEFAULT_EXPIRES_IN_SECONDS REDIS_TIMEOUT_MS MAX_RECIPIENTS PASSPHRASE_KEY

# The soak's few hundred users send for as long as it runs: the daily limits are another
# test's subject (who_may_grab.rs), so they are lifted here.
export TABLE_NAME="RedPacketsSoak" LOCAL_JWT_SECRET="soak-$$-$RANDOM" MIN_EXPIRES_IN_SECONDS=10 \
  MAX_SENDS_PER_DAY=1000000000 MAX_SENT_CENTS_PER_DAY=1000000000000
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
log=".local/$name/local.log"
PORT=$port RUST_LOG=warn target/release/local serve >"$log" 2>&1 &
api=$!
for _ in $(seq 1 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
grep -q "listening on" "$log" || { cat "$log"; echo "the local API did not start"; exit 1; }

# The wallet is on (FUNDS=wallet, the default): the payments system tops every soak user up
# first (one reference each, through the funds function's handler), so sends are paid.
echo "topping up soak-u0..soak-u1999"
seq 0 1999 | xargs -P 8 -I{} sh -c 'target/release/local topup soak-u{} 100000000 soak-topup-{} >/dev/null'

SOAK_URL="http://127.0.0.1:$port" SOAK_PID=$api SOAK_LOG=$log target/release/soak

# Invariant 8 on top of the soak's own verification: every balance, movement, top-up and packet
# of the whole ledger reconciles (exits non-zero with RECONCILIATION_MISMATCH otherwise).
echo "reconciling the whole ledger"
target/release/local reconcile | tail -12

# Recovery never destroys (invariant 10), over many more seeds than `make test` runs: randomized
# schedules of grabs, settles (crashed, overlapping) and failovers against this Redis and
# DynamoDB Local (SOAK_RECOVERY_SEEDS, default 500).
echo "randomized failovers: ${SOAK_RECOVERY_SEEDS:-500} seeds"
FUNDS=none RECOVERY_SEEDS=${SOAK_RECOVERY_SEEDS:-500} cargo test --locked -p local --test it recovery::randomized -- --nocapture 2>&1 \
  | grep -E "figure|seed .* failed|test result"

# A fleet's own faults, long (local/tests/it/fleet.rs's ignored tests; `make test` runs the short
# ones): every slot of one shard moved to another under a flood of grabs (FLEET_SLOTS, default
# 5,461), and a hot packet's primary killed round the shards (FLEET_FAILOVERS, default 6), each
# on a Valkey cluster of its own.
echo "the fleet's own faults, long: a shard's every slot moved, ${FLEET_FAILOVERS:-6} failovers"
REDIS_SERVER=$(scripts/stack.sh valkey-server) FUNDS=none cargo test --locked -p local --test it -- fleet:: --ignored \
  --nocapture 2>&1 | grep -E "figure|panicked|test result"
