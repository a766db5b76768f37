#!/usr/bin/env bash
# Runs the SIGKILL crash test with 1,000 kills per store backend (raw JSONL, zstd JSONL, SQLite,
# PostgreSQL) instead of CI's 100, comparing every acknowledged event byte for byte after every
# kill, and ends with the report: per backend, kills, acknowledged events, byte comparisons and
# mismatches. PostgreSQL is required (set STRATA_REQUIRE_POSTGRES=0 to let it skip without a
# server; see crates/strata-store/tests/integration/pg.rs for how the server is found).
# Usage: scripts/crash-1000.sh [kills]
set -euo pipefail
cd "$(dirname "$0")/.."
export STRATA_CRASH_KILLS="${1:-1000}"
export STRATA_REQUIRE_POSTGRES="${STRATA_REQUIRE_POSTGRES:-1}"
log="$(mktemp -t strata-crash.XXXXXX)"
trap 'rm -f "$log"' EXIT
status=0
cargo test --release -p strata-store --test integration crash::sigkill -- --nocapture 2>&1 \
    | tee "$log" || status=$?
echo
echo "== crash report ($STRATA_CRASH_KILLS kills per backend) =="
grep -o 'crash report: .*' "$log" | sed 's/^crash report: //' || echo "no backend finished"
exit "$status"
