#!/usr/bin/env bash
# `make build`: sam build of every function for arm64 (cargo-lambda and zig from PyPI into
# .local/venv), then each artifact's size.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/stack.sh install-build
rustup target add aarch64-unknown-linux-gnu >/dev/null 2>&1 || rustup target list --installed | grep -q aarch64-unknown-linux-gnu
export PATH="$PWD/.local/venv/bin:$PATH" SAM_CLI_TELEMETRY=0
sam build --beta-features --parallel --cached

echo
echo "artifacts (arm64, release):"
for bootstrap in .aws-sam/build/*Function/bootstrap; do
  function=$(basename "$(dirname "$bootstrap")")
  printf '  %-16s %6.1f MiB  %s\n' "$function" "$(echo "scale=1; $(stat -c %s "$bootstrap") / 1048576" | bc)" \
    "$(file -b "$bootstrap" | cut -d, -f1-2)"
done
