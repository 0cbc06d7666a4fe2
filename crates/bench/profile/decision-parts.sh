#!/usr/bin/env bash
# Instructions per propose → approve → enter loop through HTTP, by part
# (docs/PERFORMANCE.md §26): the `plangate` at $1 runs under callgrind
# twice, for SHORT and LONG loops over SESSIONS sessions (`replicas
# --profile-loops`), and the difference of the two profiles, divided by
# the difference of the loops, is a loop's cost without the start and the
# stop. Each function's own instructions are summed by part; those of the
# allocator, memcpy and generic std code are charged to the part that
# called them.
#
#   crates/bench/profile/decision-parts.sh PLANGATE REPLICAS [SESSIONS] [SHORT] [LONG]
#
# Needs valgrind and python3. `--fair-sched=yes`: with valgrind's default
# scheduler a thread that spins waiting for another keeps the one virtual
# CPU, and sled's thread pool showed up as 58 % of all instructions, which
# perf on the native binary does not show.
set -euo pipefail
plangate=$(realpath "$1") replicas=$(realpath "$2")
sessions=${3:-16} short=${4:-96} long=${5:-384}
here=$(dirname "$(realpath "$0")")
out=$(mktemp -d)
cat > "$out/wrap.sh" <<WRAP
#!/bin/sh
exec valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file=\$CG_OUT $plangate "\$@"
WRAP
chmod +x "$out/wrap.sh"
for n in "$short" "$long"; do
  CG_OUT="$out/$n.out" PLANGATE_BIN="$out/wrap.sh" "$replicas" --profile-loops "$n" --count-sessions "$sessions" | grep RESULT
  callgrind_annotate --inclusive=no --threshold=100 "$out/$n.out" > "$out/$n.self.txt" 2>/dev/null
  callgrind_annotate --tree=caller --inclusive=yes --threshold=100 "$out/$n.out" > "$out/$n.callers.txt" 2>/dev/null
done
python3 "$here/parts.py" "$out/$short" "$out/$long" "$((long - short))"
echo "profiles kept in $out"
