#!/usr/bin/env bash
# Cost of one `tmpfsctl top` snapshot against `du -s` of the same tree, side
# by side: a private tmpfs holding FILES files while PROCS processes run (each
# holding one of those files open, one in ten of them deleted), warm cache.
#
#   bench/top-vs-du.sh [FILES] [PROCS] [ROUNDS]     (defaults 100000, 1000, 5)
#
# `tmpfsctl top --json MOUNT` walks the mount (by owner and directory) and,
# at the same time, reads /proc/PID/fd of every process on the machine, plus
# cgroups and SysV shm; `du -s -x -B1 MOUNT` only walks. The aim is a ratio
# top/du <= 1.0. Each round runs both commands back to back under hyperfine, so
# a busy spell on the shared machine hits both sides of one ratio. Needs root
# (a private tmpfs mount).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
PROCS=${2:-1000}
ROUNDS=${3:-5}
[ "$(id -u)" = 0 ] || { echo "needs root: it mounts a private tmpfs" >&2; exit 2; }
command -v hyperfine >/dev/null || apt-get install -y -qq hyperfine
cargo build --release --quiet
bin=$PWD/target/release/tmpfsctl
mkdir -p target
work=$(mktemp -d "$PWD/target/bench-top.XXXXXX")
pids=()
cleanup() {
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  umount "$work/mnt" 2>/dev/null || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir "$work/mnt"
mount -t tmpfs -o size=2G,mode=0700 tmpfsctl-bench-top "$work/mnt"
python3 - "$work/mnt" "$N" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
dirs = max(1, n // 100)
for d in range(dirs):
    os.makedirs(os.path.join(root, f"d{d // 50}", f"job-{d}"), exist_ok=True)
for i in range(n):
    d = i % dirs
    with open(os.path.join(root, f"d{d // 50}", f"job-{d}", f"f{i}"), "wb") as f:
        f.write(b"x" * (100 + (i * 37) % 8000))
PY
# PROCS sleepers, each holding a file of the tree open on stdin; every tenth
# file is then deleted, so top has deleted-but-open files to find.
for i in $(seq 0 $((PROCS - 1))); do
  d=$((i % (N / 100)))
  f="$work/mnt/d$((d / 50))/job-$d/f$i"
  # Opened here, not in the background job: the rm below must come after.
  exec {fd}<"$f"
  sleep 3600 <&"$fd" &
  pids+=($!)
  exec {fd}<&-
  if [ $((i % 10)) = 0 ]; then rm -f "$f"; fi
done
tree=$work/mnt
du -s -x -B1 "$tree" >/dev/null
"$bin" top --json "$tree" >/dev/null
echo "== tmpfs: $(find "$tree" -type f | wc -l) files, $(find "$tree" -type d | wc -l) dirs;" \
  "$(ls -d /proc/[0-9]* | wc -l) processes ($PROCS of them holding files there); $(nproc) CPUs"
for r in $(seq 1 "$ROUNDS"); do
  hyperfine -N --warmup 2 --runs 10 --export-json "$work/h-$r.json" \
    "du -s -x -B1 $tree" "$bin top --json $tree" >/dev/null 2>&1
done
python3 - "$work"/h-*.json <<'PY2'
import json, sys, statistics
rows = []
for f in sys.argv[1:]:
    r = {x["command"].split()[0].split("/")[-1]: x for x in json.load(open(f))["results"]}
    cpu = lambda x: x["user"] + x["system"]
    rows.append((r["du"]["median"], r["tmpfsctl"]["median"], r["du"]["min"], r["tmpfsctl"]["min"],
                 cpu(r["du"]), cpu(r["tmpfsctl"])))
for i, (d, t, _, _, dc, tc) in enumerate(rows, 1):
    print(f"  round {i}: du -s median {d*1e3:6.1f} ms, tmpfsctl top median {t*1e3:6.1f} ms, ratio {t/d:.2f}; "
          f"cpu (user+sys, mean) du {dc*1e3:5.1f} ms, top {tc*1e3:5.1f} ms")
ratios = sorted(r[1] / r[0] for r in rows)
cpu_ratios = sorted(r[5] / r[4] for r in rows)
dmin, tmin = min(r[2] for r in rows), min(r[3] for r in rows)
print(f"ratio top/du (wall), median of {len(rows)} rounds = {statistics.median(ratios):.2f} "
      f"(rounds {' '.join(f'{x:.2f}' for x in ratios)}; aim <= 1.0); "
      f"fastest runs {tmin*1e3:.1f} / {dmin*1e3:.1f} ms = {tmin/dmin:.2f}; "
      f"cpu ratio median {statistics.median(cpu_ratios):.2f}")
PY2
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
# The same answer as du for what is visible, and the deleted bytes du misses.
"$bin" top --json "$tree" | python3 -c '
import json, subprocess, sys
m = json.load(sys.stdin)["mounts"][0]
du = int(subprocess.check_output(["du", "-s", "-x", "-B1", sys.argv[1]]).split()[0])
vis, n, dele = m["visible_bytes"], len(m["deleted_open"]), m["deleted_open_bytes"]
same = "(equal)" if du == vis else "(DIFFERENT)"
print(f"bytes: du {du}, top visible {vis} {same}; deleted but open: {n} fds, {dele} bytes that du cannot see")
' "$tree"
