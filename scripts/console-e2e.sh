#!/usr/bin/env bash
# The operators' console in a real browser (part of `make test`; `make console-screenshots`
# regenerates docs/console/*.png the same way): checks that the generated schema console/
# compiles against (sdk/src/schema.d.ts) follows openapi.yaml, runs its unit tests
# (console/test/, node's test runner), builds the console (tsc, vite), starts the local API on a
# free port of 127.0.0.1 serving it at /console/ (FUNDS=wallet, RISK_CHAIN_LINKS=2,
# BUSINESS_TIME_ZONE=Asia/Shanghai), and runs console/e2e/run.mjs, node's test
# runner driving Debian's Chromium through npm's playwright-core. Uses the services of the caller's
# environment (scripts/test.sh's) or starts its own, and stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

# shellcheck source=scripts/local-api.sh
. scripts/local-api.sh
# 接龙 chains of two handoffs are flagged (e2e test 3 plays one); the business day is the one the
# console's config.json names (its day pickers' today), for the server and `local trial-balance`.
export FUNDS=wallet RISK_CHAIN_LINKS=2 BUSINESS_TIME_ZONE=Asia/Shanghai
local_api_start console
(cd console && npm run --silent check-generated && npm run --silent test && npm run --silent build >/dev/null)

cd console
# node's runner counts the whole file as a test too, under the same timeout: 300 s bounds the
# file (its ten tests took 114 s in a fresh-clone make test, and timed out once at 120 s beside a
# slow SAM stage) and each test in it.
CONSOLE_URL="$API_URL/console/" LOCAL_BIN="$root/target/debug/local" \
  node --test --test-timeout=300000 e2e/run.mjs
