#!/usr/bin/env bash
# Runs the SIGKILL crash test with 1,000 kills per store backend (raw JSONL, zstd JSONL,
# SQLite) instead of CI's 100. Usage: scripts/crash-1000.sh [kills]
set -euo pipefail
cd "$(dirname "$0")/.."
export STRATA_CRASH_KILLS="${1:-1000}"
exec cargo test --release -p strata-store --test integration crash -- --nocapture
