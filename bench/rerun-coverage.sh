#!/usr/bin/env bash
# Does bench's ratio interval hold on a rerun? Runs `tmpfsctl bench --quick`
# RUNS times back to back (default 20: private tmpfs vs /var/tmp, its default
# pair) and, after each, fio on the same workloads on the same two kinds of
# target (a private tmpfs and a directory in /var/tmp), the way a user would
# check the figures with fio: tmpfsctl, fio, tmpfsctl, fio, ...
# Prints per workload:
#   overlap   how many of the RUNS*(RUNS-1)/2 pairs of runs have intervals that
#             overlap (the issue's bar: all of them, or the run says bimodal);
#   bimodal   how many runs the tool flagged as having changed speed mid-run;
#   or-bi     pairs that overlap or have a run flagged bimodal (the issue's bar);
#   fio-med   the median of fio's per-round tmpfs/disk ratios over all rounds;
#   covers    how many runs' intervals hold fio's median;
#   own-med   how many runs' intervals hold the median of tmpfsctl's own ratios;
#   width     the median of the runs' interval widths, hi/lo.
#
# Usage: bench/rerun-coverage.sh                 (RUNS=20)
#        BIN=/path/to/other/tmpfsctl bench/rerun-coverage.sh   (compare builds)
#        KEEP=DIR bench/rerun-coverage.sh        (keep each run's JSON and fio's figures)
#        REPLAY=DIR bench/rerun-coverage.sh      (summarise a KEEP directory again)
# Needs: fio, jq, python3, root (mounts a private tmpfs for fio).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-20}

summarise() { # DIR
  python3 - "$1" <<'EOF'
import json, os, statistics, sys
d = sys.argv[1]
runs = sorted((f for f in os.listdir(d) if f.startswith("run") and f.endswith(".json")),
              key=lambda f: int(f[3:-5]))
reports = [json.load(open(os.path.join(d, f))) for f in runs]
fio = {}
if os.path.exists(os.path.join(d, "fio.tsv")):
    for line in open(os.path.join(d, "fio.tsv")):
        w, ram, disk = line.split()
        if float(disk) > 0:
            fio.setdefault(w, []).append(float(ram) / float(disk))
print(f"{len(reports)} runs of `bench --quick`, tool {reports[0]['tool_version'] if reports else '?'}")
print(f"{'workload':22} {'overlap':>9} {'bimodal':>7} {'or-bi':>9} {'fio-med':>8} {'covers':>7} {'own-med':>7} {'width':>6}  intervals (lo..hi, * = bimodal)")
for w in [r["workload"] for r in reports[0]["ratios"]]:
    iv = []
    for rep in reports:
        x = next((r for r in rep["ratios"] if r["workload"] == w), None)
        if x is None or x.get("ratio_ci95_low") is None:
            continue
        bi = "ratio_bimodal" in x.get("flags", [])
        iv.append((x["ratio_ci95_low"], x["ratio_ci95_high"], x["ratio"], bi))
    n = len(iv)
    pairs = n * (n - 1) // 2
    ok = sum(1 for i in range(n) for j in range(i + 1, n)
             if iv[i][0] <= iv[j][1] and iv[j][0] <= iv[i][1])
    okb = sum(1 for i in range(n) for j in range(i + 1, n)
              if (iv[i][0] <= iv[j][1] and iv[j][0] <= iv[i][1]) or iv[i][3] or iv[j][3])
    own = statistics.median([v[2] for v in iv]) if iv else float("nan")
    f = fio.get(w)
    fmed = statistics.median(f) if f else None
    cov = f"{sum(1 for v in iv if v[0] <= fmed <= v[1])}/{n}" if fmed else "-"
    ownc = sum(1 for v in iv if v[0] <= own <= v[1])
    width = statistics.median([v[1] / v[0] for v in iv if v[0] > 0]) if iv else float("nan")
    shown = " ".join(f"{v[0]:.3g}..{v[1]:.3g}{'*' if v[3] else ''}" for v in iv)
    print(f"{w:22} {ok:>4}/{pairs:<4} {sum(v[3] for v in iv):>7} {okb:>4}/{pairs:<4} "
          f"{(f'{fmed:.3g}' if fmed else '-'):>8} {cov:>7} {ownc:>3}/{n:<3} {width:>5.2f}x  {shown}")
EOF
}

if [ -n "${REPLAY:-}" ]; then
  summarise "$REPLAY"
  exit 0
fi

for tool in fio jq python3; do
  command -v $tool >/dev/null || { echo "rerun-coverage.sh: needs $tool (scripts/setup installs it)" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] || { echo "rerun-coverage.sh: run as root (fio's RAM side is a private tmpfs)" >&2; exit 2; }
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=./target/release/tmpfsctl
fi

out=$(mktemp -d /tmp/tmpfsctl-rerun-XXXXXX)
disk=$(mktemp -d /var/tmp/tmpfsctl-rerun-fio-XXXXXX)
mkdir "$out/ram"
mounted=0
cleanup() {
  if [ "$mounted" = 1 ]; then umount "$out/ram" || umount -l "$out/ram"; fi
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$out"/run*.json "$out"/fio.tsv "$KEEP"/ 2>/dev/null || true; fi
  rm -rf --one-file-system "$out" "$disk"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mount -t tmpfs -o size=256M,mode=0700 tmpfsctl-rerun "$out/ram"
mounted=1

# fio on one target: the figure in the unit bench reports for the workload
# (bytes/s for streaming, ops/s for random), same sizes as --quick: 8 MiB
# files, 1024 random ops, cold reads after fio's own cache invalidation.
fio_one() { # workload dir -> figure
  local w=$1 dir=$2 j
  local base=(--name=t --filename="$dir/fio.dat" --ioengine=psync --fallocate=none --size=8M --output-format=json)
  case $w in
    seq-write-1m-fsync) rm -f "$dir/fio.dat"
      j=$(fio "${base[@]}" --rw=write --bs=1M --end_fsync=1); jq '.jobs[0].write.bw_bytes' <<<"$j" ;;
    seq-write-1m-dsync) rm -f "$dir/fio.dat"
      j=$(fio "${base[@]}" --rw=write --bs=1M --sync=dsync); jq '.jobs[0].write.bw_bytes' <<<"$j" ;;
    seq-read-1m-cold)
      j=$(fio "${base[@]}" --rw=read --bs=1M --invalidate=1); jq '.jobs[0].read.bw_bytes' <<<"$j" ;;
    rand-read-4k-cold)
      j=$(fio "${base[@]}" --rw=randread --bs=4k --invalidate=1 --number_ios=1024); jq '.jobs[0].read.iops' <<<"$j" ;;
    rand-write-4k-dsync)
      j=$(fio "${base[@]}" --rw=randwrite --bs=4k --sync=dsync --number_ios=1024 --runtime=1); jq '.jobs[0].write.iops' <<<"$j" ;;
  esac
}
FIO_WORKLOADS=(seq-write-1m-fsync seq-write-1m-dsync seq-read-1m-cold rand-read-4k-cold rand-write-4k-dsync)

echo "rerun-coverage: $RUNS rounds of tmpfsctl bench --quick then fio, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$RUNS"); do
  "$BIN" bench --quick --export-json "$out/run$i.json" >/dev/null 2>"$out/err" || { cat "$out/err" >&2; exit 2; }
  # The read files are laid out once per round, untimed, on both targets.
  for dir in "$out/ram" "$disk"; do
    fio --name=lay --filename="$dir/fio.dat" --rw=write --bs=1M --size=8M --end_fsync=1 --output-format=json >/dev/null
  done
  for w in "${FIO_WORKLOADS[@]}"; do
    # Alternate which target goes first, as bench does.
    if [ $((i % 2)) = 1 ]; then
      r=$(fio_one "$w" "$out/ram"); d=$(fio_one "$w" "$disk")
    else
      d=$(fio_one "$w" "$disk"); r=$(fio_one "$w" "$out/ram")
    fi
    printf '%s\t%s\t%s\n' "$w" "$r" "$d" >>"$out/fio.tsv"
  done
  rm -f "$out/ram/fio.dat" "$disk/fio.dat"
  echo "round $i done, load average $(cut -d' ' -f1 /proc/loadavg)"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
summarise "$out"
