#!/usr/bin/env bash
# Every plangate benchmark, one after the other, offline, in about eight
# minutes on a 2-core machine (builds not included). Output: bench-results/.
#
#   bash crates/bench/run-all.sh
#
# CARGO_TARGET_DIR is honoured (default: target). The e2e and startup runs
# use $CARGO_TARGET_DIR/release/plangate, built here first.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
out="${OUT:-bench-results}"
mkdir -p "$out"

cargo build --release -p plangate-server -p plangate-bench --bins
bin="$CARGO_TARGET_DIR/release"

step() {
    local name=$1
    shift
    echo "== $name: $*"
    local t0=$SECONDS
    "$@" 2>&1 | tee "$out/$name.txt"
    echo "== $name took $((SECONDS - t0)) s"
}

step engine cargo bench -p plangate-bench --bench engine -- --warm-up-time 1 --measurement-time 2
step durable "$bin/durable" --secs 2 --rounds 2
step e2e "$bin/e2e" --samples 200
step startup "$bin/startup" --approvals 100000 --web
step audit "$bin/audit" --events 1000000
step startup-overdue "$bin/startup" --approvals 100000 --age-mins 120 --watch-secs 40 --no-list
step storm "$bin/storm"
step replicas "$bin/replicas" --secs 5 --wake-samples 200
