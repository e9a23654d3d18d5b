#!/usr/bin/env bash
# Cost of one `tmpfsctl top` snapshot against `du -s` of the same tree, side
# by side: a private tmpfs holding FILES files while PROCS processes run (each
# holding one of those files open, one in ten of them deleted), warm cache.
#
#   bench/top-vs-du.sh [FILES] [PROCS] [ROUNDS]     (defaults 100000, 1000, 5)
#
# `tmpfsctl top --json MOUNT` walks the mount (by owner and directory) and,
# at the same time, reads /proc/PID/fd of every process on the machine, plus
# cgroups (and the files their processes hold) and SysV shm; `du -s -x -B1
# MOUNT` only walks. The aim is a ratio top/du <= 1.0. The commands run
# paired and alternated: each iteration runs every command once, in an order
# that rotates, so a busy spell on the shared machine hits all sides of one
# ratio; a round's ratio is the median of its iterations' ratios. Needs root
# (a private tmpfs mount).
#
#   BIN=path       the tmpfsctl to measure (default: build target/release)
#   BASELINE=path  another tmpfsctl measured in the same iterations (before/after)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
PROCS=${2:-1000}
ROUNDS=${3:-5}
[ "$(id -u)" = 0 ] || { echo "needs root: it mounts a private tmpfs" >&2; exit 2; }
if [ -n "${BIN:-}" ]; then
  bin=$(realpath "$BIN")
else
  cargo build --release --quiet
  bin=$PWD/target/release/tmpfsctl
fi
base=${BASELINE:+$(realpath "$BASELINE")}
mkdir -p target
work=$(mktemp -d "$PWD/target/bench-top.XXXXXX")
pids=()
cleanup() {
  [ ${#pids[@]} -gt 0 ] && kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  # Another tool walking every tmpfs at that moment holds it busy: retry.
  for _ in $(seq 50); do umount "$work/mnt" 2>/dev/null && break; sleep 0.1; done
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
python3 - "$ROUNDS" "$tree" "$bin" "$base" <<'PY2'
import os, statistics, sys, time
rounds, tree, binary, base = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
cmds = {"du": ["du", "-s", "-x", "-B1", tree], "top": [binary, "top", "--json", tree]}
if base:
    cmds["before"] = [base, "top", "--json", tree]
names = list(cmds)
devnull = os.open(os.devnull, os.O_WRONLY)

def run(argv):
    """Wall and CPU (user+sys) seconds of one run, output discarded."""
    t0 = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        sys.exit(f"{argv} failed: {status}")
    return wall, ru.ru_utime + ru.ru_stime

for _ in range(2):
    for n in names:
        run(cmds[n])
RUNS = 10
per_round = []
for r in range(rounds):
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    for i in range(RUNS):
        k = (r * RUNS + i) % len(names)
        for n in names[k:] + names[:k]:
            w, c = run(cmds[n])
            wall[n].append(w)
            cpu[n].append(c)
    ratio = lambda n: statistics.median(a / b for a, b in zip(wall[n], wall["du"]))
    cratio = lambda n: statistics.median(a / b for a, b in zip(cpu[n], cpu["du"]))
    row = {n: (statistics.median(wall[n]), ratio(n), cratio(n)) for n in names}
    per_round.append(row)
    print(f"  round {r + 1}: " + ", ".join(
        f"{n} {row[n][0] * 1e3:6.1f} ms" + ("" if n == "du" else f" (x{row[n][1]:.2f} of du, cpu x{row[n][2]:.2f})")
        for n in names))
for n in names[1:]:
    rs = sorted(x[n][1] for x in per_round)
    cs = sorted(x[n][2] for x in per_round)
    label = "tmpfsctl top" if n == "top" else "baseline top"
    print(f"ratio {label}/du (wall, paired), median of {len(rs)} rounds = {statistics.median(rs):.2f} "
          f"(range {rs[0]:.2f}-{rs[-1]:.2f}; aim <= 1.0); cpu ratio median {statistics.median(cs):.2f} "
          f"(range {cs[0]:.2f}-{cs[-1]:.2f})")
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
