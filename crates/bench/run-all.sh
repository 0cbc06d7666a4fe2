#!/usr/bin/env bash
# Every plangate benchmark, one after the other, offline, in about eight
# minutes on a 2-core machine (builds not included). Output: bench-results/.
#
#   bash crates/bench/run-all.sh
#
# CARGO_TARGET_DIR is honoured (default: target). The e2e and startup runs
# use $CARGO_TARGET_DIR/release/plangate, built here first.
#
#   bash crates/bench/run-all.sh --smoke
#
# Every benchmark's `--smoke` instead (each part once at tiny sizes: to show
# it still runs, not to measure), on the debug build that `cargo test`
# leaves, in well under a minute; output on the terminal only. Every binary
# under crates/bench/src/bin is run, so a new one cannot be forgotten.
# `.ci/run` runs this. The replicas smoke wants PostgreSQL as the tests do
# (without it: a loud skip of its PostgreSQL rows, a failure under
# PLANGATE_REQUIRE_ALL).
set -euo pipefail
cd "$(dirname "$0")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"

step() {
    local name=$1
    shift
    echo "== $name: $*"
    local t0=$SECONDS
    if [ -n "${out:-}" ]; then
        "$@" 2>&1 | tee "$out/$name.txt"
    else
        "$@"
    fi
    echo "== $name took $((SECONDS - t0)) s"
}

if [ "${1:-}" = "--smoke" ]; then
    t0=$SECONDS
    cargo build --locked -p plangate-server -p plangate-bench --bins
    step engine cargo test --locked -p plangate-bench --bench engine -- --smoke
    for src in crates/bench/src/bin/*.rs; do
        name=$(basename "$src" .rs)
        step "$name" "$CARGO_TARGET_DIR/debug/$name" --smoke
    done
    echo "== every benchmark's smoke passed in $((SECONDS - t0)) s (builds included)"
    exit 0
fi

out="${OUT:-bench-results}"
mkdir -p "$out"

cargo build --release -p plangate-server -p plangate-bench --bins
bin="$CARGO_TARGET_DIR/release"

step engine cargo bench -p plangate-bench --bench engine -- --warm-up-time 1 --measurement-time 2
step durable "$bin/durable" --secs 2 --rounds 2
step e2e "$bin/e2e" --samples 200
step startup "$bin/startup" --approvals 100000 --web
step audit "$bin/audit" --events 1000000
step audit_chain "$bin/audit_chain" --records 1000000
step policy "$bin/policy" --records 100000
step hook "$bin/hook" --samples 400 --hook-bin "$bin/plangate-hook"
step startup-overdue "$bin/startup" --approvals 100000 --age-mins 120 --watch-secs 40 --no-list
step storm "$bin/storm"
step replicas "$bin/replicas" --secs 5 --wake-samples 200
