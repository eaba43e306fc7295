#!/usr/bin/env bash
# `make build`: sam build of every function for arm64 (cargo-lambda and zig from PyPI into
# .local/venv), then each artifact's size.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/stack.sh install-build
rustup target add aarch64-unknown-linux-gnu >/dev/null 2>&1 || rustup target list --installed | grep -q aarch64-unknown-linux-gnu
export PATH="$PWD/.local/venv/bin:$PATH" SAM_CLI_TELEMETRY=0
# Not --cached: SAM's cache hashes each function's CodeUri, the whole repository here (target/ and
# .local/ included), once a function, and in a checkout after `make test` it had hashed for ten
# minutes of a core and a half without starting cargo; cargo's own build is incremental anyway.
sam build --beta-features --parallel --no-cached

# Every function of the built template with its artifact (scripts/built_artifacts.py --all, which
# fails naming any function whose bootstrap is missing). Functions of one build share an artifact:
# GrabFunction and GrabManagedFunction, in .aws-sam/build/GrabFunction-Shared (or, after a cached
# rebuild, the .aws-sam/cache directory the built template names).
artifacts=$(.local/venv/bin/python scripts/built_artifacts.py --all)
echo
echo "artifacts (arm64, release), from .aws-sam/build/template.yaml:"
while read -r function binary bootstrap; do
  printf '  %-20s %-7s %6.1f MiB  %-30s %s\n' "$function" "$binary" \
    "$(echo "scale=1; $(stat -L -c %s "$bootstrap") / 1048576" | bc)" "$(file -b "$bootstrap" | cut -d, -f1-2)" \
    "${bootstrap#"$PWD"/}"
done <<<"$artifacts"
