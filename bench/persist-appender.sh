#!/usr/bin/env bash
# `tmpfsctl persist sync` of a directory whose 100 MiB log is being appended
# to every 5 ms (a normal syslog rate, the descriptor held open like a
# logger) against the same sync without the writer. Target: with the writer
# under 2x the time without it (the log is stored as the prefix copied, read
# a second time to prove its first bytes held still; no retry loop).
#
#   bench/persist-appender.sh [ROUNDS] [LOG_MIB]   (defaults 9, 100)
#
# Root only (mounts a private tmpfs). Each round appends 1 MiB to the log
# first, so both syncs copy the whole log (it changed); the "with writer"
# rounds run an appender (one 100-byte line every 5 ms) throughout. Rounds
# alternate without/with; medians and their ratio are printed, and each
# sync with the writer must report the log as stored prefix, exit 0.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-9}
LOG_MIB=${2:-100}
[ "$(id -u)" -eq 0 ] || { echo "persist-appender.sh: needs root (mounts a tmpfs)" >&2; exit 2; }
if [ -z "${NOBUILD:-}" ]; then cargo build --release --quiet; fi
bin=${BIN:-$PWD/target/release/tmpfsctl}
mkdir -p target
work=$(mktemp -d "$PWD/target/bench-appender.XXXXXX")
wpid=
cleanup() {
  [ -n "$wpid" ] && kill "$wpid" 2>/dev/null || true
  umount "$work/hot" 2>/dev/null || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$work/hot" "$work/store"
mount -t tmpfs -o size=$((LOG_MIB * 3))M tmpfs "$work/hot"
head -c "$((LOG_MIB * 3 << 18))" /dev/urandom | base64 -w 99 > "$work/hot/syslog"
truncate -s "${LOG_MIB}M" "$work/hot/syslog"
echo "a small file" > "$work/hot/other"
export TMPFSCTL_PERSIST_REGISTRY="$work/registry.json"
psync() { "$bin" persist sync "$work/hot" --store "$work/store" --json > "$work/out.json"; }
settle() { while [ -n "$(ls -A "$work/store/trash" 2>/dev/null)" ]; do sleep 0.01; done; }
ns() { date +%s%N; }
# One process holding the log open (a shell loop would fork `sleep` 200
# times a second and measure that instead).
appender() {
  exec python3 -c 'import sys, time
f = open(sys.argv[1], "ab", buffering=0)
while True:
    f.write(b"x" * 99 + b"\n")
    time.sleep(0.005)' "$work/hot/syslog"
}
psync; settle
echo "== ${LOG_MIB} MiB log on tmpfs; store on $(findmnt -no FSTYPE -T "$work/store"); $(nproc) CPUs"
printf "%-6s %14s %14s %8s\n" round "quiet_ms" "appender_ms" ratio
q_all=() a_all=()
for r in $(seq 1 "$ROUNDS"); do
  head -c $((1 << 20)) /dev/zero | tr '\0' 'q' >> "$work/hot/syslog"
  t0=$(ns); psync; t1=$(ns); settle
  q=$((t1 - t0))
  head -c $((1 << 20)) /dev/zero | tr '\0' 'a' >> "$work/hot/syslog"
  appender & wpid=$!
  sleep 0.3
  t0=$(ns); psync; t1=$(ns)
  kill "$wpid"; wait "$wpid" 2>/dev/null || true; wpid=
  settle
  a=$((t1 - t0))
  grep -q '"path": "syslog"' "$work/out.json" && kind=prefix || kind=whole
  q_all+=("$q"); a_all+=("$a")
  awk -v r="$r" -v q="$q" -v a="$a" -v k="$kind" 'BEGIN { printf "%-6s %14.1f %14.1f %8.2f  (log stored %s)\n", r, q / 1e6, a / 1e6, a / q, k }'
done
median() { printf "%s\n" "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
qm=$(median "${q_all[@]}"); am=$(median "${a_all[@]}")
awk -v q="$qm" -v a="$am" 'BEGIN { printf "median: sync %.1f ms quiet, %.1f ms with a 5 ms appender, ratio %.2f (target < 2)\n", q / 1e6, a / 1e6, a / q }'
