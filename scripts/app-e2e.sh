#!/usr/bin/env bash
# The app team's kit, tried as its users would (part of `make test`; `make app-screenshots`
# regenerates docs/app/*.png the same way): checks that sdk/'s generated client follows
# openapi.yaml, builds the SDK and the H5 app, starts the local API on a free port of
# 127.0.0.1 serving the app at /app/ (FUNDS=wallet), runs the SDK's tests over HTTP against it
# (node's test runner), then app/e2e/run.mjs, node's test runner driving Debian's Chromium
# through npm's playwright-core in a phone's viewport. Uses the services of the caller's
# environment (scripts/test.sh's) or starts its own, and stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

scripts/stack.sh install-app
# shellcheck source=scripts/local-api.sh
. scripts/local-api.sh
export FUNDS=wallet
local_api_start app
(cd sdk && npm run --silent check-generated && npm run --silent build >/dev/null)
(cd app && npm run --silent build >/dev/null)

export LOCAL_BIN="$root/target/debug/local"
echo "the SDK's tests (sdk/test) against $API_URL"
(cd sdk && node --test --test-timeout=300000 test/*.test.mjs)
echo "the H5 app in Chromium (app/e2e/run.mjs)"
cd app
APP_URL="$API_URL/app/" node --test --test-timeout=300000 e2e/run.mjs
