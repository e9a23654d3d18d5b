#!/usr/bin/env bash
# Does `fleet analyze` use the cores it is given? One core against two.
#
#   bench/fleet-threads.sh FILE...            (e.g. a 10 M-host survey TSV)
#   BIN=path/to/tmpfsctl PAIRS=5 CORES="0 0,1" bench/fleet-threads.sh FILE...
#
# For each FILE, PAIRS times (default 3), alternated (the order flips every
# pair, so load from other work falls on both alike): `taskset -c A` and
# `taskset -c B` (CORES, default "0 0,1") of `tmpfsctl fleet analyze FILE
# --json`, whole process. tmpfsctl sizes its threads from the CPUs it may
# run on, so this is 1 thread against 2. Prints per run the wall time, the
# CPU time (user + system) and their ratio (how many cores it kept busy),
# peak RSS; per pair the speed-up (wall A / wall B), and checks the two
# reports are byte-identical. Generate inputs with bench/fleet-gen.py or
# bench/fleet-gen-distinct.py (`N --format kirkland`).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/tmpfsctl}
[ -n "${NOBUILD:-}" ] || cargo build --release --quiet
PAIRS=${PAIRS:-3}
read -r A B <<<"${CORES:-0 0,1}"
[ $# -gt 0 ] || { echo "usage: bench/fleet-threads.sh FILE..." >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "$(nproc) cores, $("$BIN" --version)"
for f in "$@"; do
  echo "== $f ($(du -h "$f" | cut -f1)); load $(cut -d' ' -f1-3 /proc/loadavg)"
  rs=()
  for i in $(seq "$PAIRS"); do
    order="$A $B"; [ $((i % 2)) = 0 ] && order="$B $A"
    declare -A wall=()
    for c in $order; do
      t0=$(date +%s%N)
      # Exit 1 is a result (the fleet misses --target), not a failure.
      /usr/bin/time -f "%U %S %M" -o "$work/time" taskset -c "$c" "$BIN" fleet analyze "$f" --json > "$work/out-$c" || [ $? = 1 ]
      t1=$(date +%s%N)
      read -r u s m < <(tail -1 "$work/time")
      w=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
      wall[$c]=$w
      echo "  pair $i, cores $c: wall ${w}s, cpu $(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')s (cpu/wall $(awk -v u="$u" -v s="$s" -v w="$w" 'BEGIN { printf "%.2f", (u + s) / w }')), peak RSS $((m / 1024)) MiB"
    done
    cmp -s "$work/out-$A" "$work/out-$B" || { echo "  the reports differ between cores $A and $B" >&2; exit 1; }
    r=$(awk -v a="${wall[$A]}" -v b="${wall[$B]}" 'BEGIN { printf "%.2f", a / b }')
    rs+=("$r")
    echo "  pair $i: speed-up cores $A -> $B = $r (reports identical)"
    unset wall
  done
  echo "  median speed-up $A -> $B: $(printf '%s\n' "${rs[@]}" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'); load now $(cut -d' ' -f1-3 /proc/loadavg)"
done
