#!/usr/bin/env bash
# What NOTIFY inside a writing transaction costs PostgreSQL itself, without
# plangate (docs/PERFORMANCE.md §16): pgbench, 64 clients, three scripts
# side by side in one run —
#   insert         one INSERT per transaction (a commit's write)
#   insert+notify  the INSERT and a pg_notify in the same transaction
#                  (plangate's commits before §16)
#   insert, notify the INSERT's transaction, then pg_notify in one of its
#                  own with synchronous_commit off (one per commit: the
#                  worst case of the notifier, which batches)
# Usage: crates/bench/pg-notify-lock.sh [clients] [seconds]
# Needs pgbench and a PostgreSQL that `psql -h 127.0.0.1 -U postgres` reaches;
# creates (and drops at the end) the database plangate_notify_bench.
# Measures PostgreSQL, not plangate: a figure for the design, not a gate.
set -euo pipefail
clients=${1:-64}
secs=${2:-5}
db=plangate_notify_bench
pg=(-h 127.0.0.1 -U postgres)
export PGOPTIONS="-c client_min_messages=warning"
dir=$(mktemp -d)
trap 'rm -rf "$dir"; psql "${pg[@]}" -qc "DROP DATABASE IF EXISTS $db" postgres >/dev/null' EXIT
psql "${pg[@]}" -qc "DROP DATABASE IF EXISTS $db" postgres >/dev/null
psql "${pg[@]}" -qc "CREATE DATABASE $db" postgres >/dev/null
psql "${pg[@]}" -qc "CREATE TABLE t (id bigserial PRIMARY KEY, body bytea)" "$db" >/dev/null
echo "INSERT INTO t (body) VALUES (decode(repeat('ab', 300), 'hex'));" >"$dir/insert.sql"
printf '%s\n' 'BEGIN;' "INSERT INTO t (body) VALUES (decode(repeat('ab', 300), 'hex'));" \
  "SELECT pg_notify('bench', '[\"agent\",\"session\",\"replica\"]');" 'END;' >"$dir/insert_notify.sql"
printf '%s\n' "INSERT INTO t (body) VALUES (decode(repeat('ab', 300), 'hex'));" 'BEGIN;' 'SET LOCAL synchronous_commit = off;' \
  "SELECT pg_notify('bench', '[\"agent\",\"session\",\"replica\"]');" 'END;' >"$dir/insert_then_notify.sql"
echo "| script ($clients clients, ${secs} s each) | inserts/s |"
echo "|---|---|"
for script in insert insert_notify insert_then_notify; do
  tps=$(pgbench "${pg[@]}" -n -c "$clients" -j 2 -T "$secs" -f "$dir/$script.sql" "$db" 2>/dev/null |
    sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  # insert_then_notify runs two transactions per script: tps counts scripts.
  echo "| $script | ${tps%.*} |"
done
