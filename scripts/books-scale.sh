#!/usr/bin/env bash
# make books-scale ITEMS=10000000 PASSES=1: generates a consistent ledger of ITEMS items as an
# export file (target/books-<ITEMS>.jsonl, reused when present) and reconciles it through the
# export-file adapter, printing the time and the peak resident memory of the reconciling process.
set -euo pipefail
cd "$(dirname "$0")/.."
items=${1:-10000000}
passes=${2:-1}
cargo build --release --locked -p bench --bin books_scale
file=target/books-$items.jsonl
if [[ ! -s $file ]]; then
  target/release/books_scale generate "$file" "$items"
fi
target/release/books_scale reconcile "$file" "$passes"
