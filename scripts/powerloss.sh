#!/usr/bin/env bash
# Runs the power-loss model of the JSONL stores (crates/strata-store/src/powerloss/tests.rs)
# with up to N images per crash point (default 4096; CI runs 64), long writes torn at about N/2
# evenly spread bytes besides their ends and line ends, and reports per scenario and in total
# the crash points replayed and the distinct images opened and checked.
# Usage: scripts/powerloss.sh [images per crash point]
set -euo pipefail
cd "$(dirname "$0")/.."
export STRATA_POWERLOSS_STATES="${1:-4096}"
log="$(mktemp -t strata-powerloss.XXXXXX)"
trap 'rm -f "$log"' EXIT
status=0
cargo test --release -p strata-store --lib powerloss -- --nocapture --test-threads 1 2>&1 \
    | tee "$log" || status=$?
echo
echo "== power-loss report (up to $STRATA_POWERLOSS_STATES images per crash point) =="
grep -o 'power-loss model: .*' "$log" | sed 's/^power-loss model: //' || echo "no scenario finished"
grep -o '[0-9]* crash points, [0-9]* distinct' "$log" \
    | awk '{ points += $1; images += $4 } END { print "total: " points " crash points, " images " distinct images opened" }'
exit "$status"
