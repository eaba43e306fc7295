#!/usr/bin/env bash
# Checks that `cargo build --workspace --bins` and `cargo test --workspace` resolve every
# dependency with the same features. Where a dev-dependency turns on a feature the binaries'
# build does not, the test build compiles that crate again, and every crate above it: `make
# test` builds its binaries first, then its tests, and paid minutes for one such difference.
# Prints each crate whose features differ (without dev-dependencies, then with them).
set -euo pipefail
cd "$(dirname "$0")/.."

features() {
  cargo tree --workspace --locked -e "$1" -f '{p} [{f}]' --prefix none |
    sed 's/ (\*)$//; s/ (proc-macro)$//' | awk '{ print $1 "@" $2, $NF }' | sort -u
}
without=$(features no-dev)
with=$(features normal,build,dev)
differences=$(join <(echo "$without") <(echo "$with") | awk '$2 != $3')
if [ -n "$differences" ]; then
  echo "features a test build turns on that the binaries' build does not (crate, without, with):"
  echo "$differences"
  echo "make the dev-dependency that turns them on a normal dependency of a crate that ships to no Lambda (local)"
  exit 1
fi
echo "the binaries' and the tests' builds resolve every dependency with the same features"
