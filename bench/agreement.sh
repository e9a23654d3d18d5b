#!/usr/bin/env bash
# Runs the default `tmpfsctl bench` suite N times back to back (default 3) and
# prints, per workload, the tmpfs/disk ratio of each run, how far the runs are
# from their median ratio, and each run's own 95% interval ("?" = the tool
# itself flagged the ratio as uncertain by > 10%); plus each run's wall time
# (target: < 60 s) and the tmpfs sequential read as a fraction of the memcpy
# ceiling of that run.
#
# With FIO=1 (needs fio), fio probes the same disk right before each suite
# run: O_DSYNC 4 KiB writes, O_DIRECT 4 KiB random reads and a 256 MiB 1 MiB
# write with end_fsync, 1 s / one file each. If the disk's own figures move by
# more than 10% between runs, no method can make a tmpfs/disk ratio agree
# within 10%: the disk changed, not the measurement.
#
# With KEEP=DIR, each run's --json is kept as DIR/runN.json.
#
# Usage: bench/agreement.sh [N] [extra tmpfsctl bench args...]
#        FIO=1 bench/agreement.sh 3
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-3}
shift || true
command -v jq >/dev/null || { echo "agreement.sh: needs jq" >&2; exit 2; }
if [ "${FIO:-0}" = 1 ] && ! command -v fio >/dev/null; then
  echo "agreement.sh: FIO=1 needs fio (apt-get install fio)" >&2; exit 2
fi
cargo build --release --quiet
out=$(mktemp -d /tmp/tmpfsctl-agreement-XXXXXX)
trap '[ -n "${KEEP:-}" ] && mkdir -p "$KEEP" && cp "$out"/run*.json "$KEEP"/ 2>/dev/null; rm -rf "$out" "${fiodir:-/nonexistent-tmpfsctl}"' EXIT
# The disk the default suite uses: where /var/tmp lives.
fiodir=$(mktemp -d /var/tmp/tmpfsctl-agreement-fio-XXXXXX)

fio_probe() { # name extra... -> fio JSON
  local name=$1; shift
  fio --name="$name" --directory="$fiodir" --ioengine=psync --output-format=json "$@" 2>/dev/null
  # Free (and, with ext4 `discard`, trim) the file now, not inside the next probe's fsync.
  rm -f "$fiodir"/*
  sync -f "$fiodir"
}

for i in $(seq "$N"); do
  if [ "${FIO:-0}" = 1 ]; then
    d=$(fio_probe dsync --rw=write --bs=4k --size=64m --sync=1 --runtime=1 --time_based | jq '.jobs[0].write.iops')
    r=$(fio_probe rr --rw=randread --bs=4k --size=256m --direct=1 --runtime=1 --time_based | jq '.jobs[0].read.iops')
    w=$(fio_probe sw --rw=write --bs=1m --size=256m --end_fsync=1 | jq '.jobs[0].write.bw_bytes / 1048576')
    echo "$d $r $w" >"$out/fio$i"
  fi
  start=$(date +%s.%N)
  ./target/release/tmpfsctl bench --export-json "$out/run$i.json" "$@" >/dev/null 2>"$out/err$i" || {
    cat "$out/err$i" >&2; exit 2; }
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" -v i="$i" -v l="$(cut -d' ' -f1 /proc/loadavg)" \
    'BEGIN { printf "run %d: %.1f s wall (load average %s at the end)\n", i, e-s, l }'
done

jq -s -r '
  def median: sort | if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
  def name($r; $p): ($r.targets[] | select(.path == $p) | if .private_mount then "private tmpfs" else .path end);
  . as $runs
  | ($runs[0].ratios | map(.workload)) as $ws
  | "\nratio = \(name($runs[0]; $runs[0].ratios[0].numerator_target)) / \(name($runs[0]; $runs[0].ratios[0].denominator_target)) (higher = RAM faster); per run: ratio ±95% interval, ? = flagged ratio_uncertain",
    "workload                " + ([range(0; $runs|length)] | map("run\(.+1)" + " " * 13) | join("")) + "max dev from median",
    ( $ws[] as $w
      | [ $runs[] | .ratios[] | select(.workload == $w) ] as $rs
      | [ $rs[] | .ratio ] as $r
      | ($r | median) as $m
      | ([ $r[] | ((. - $m) / $m | fabs) ] | max) as $dev
      | "\($w | .[0:22] | . + " " * (24 - length))"
        + ($rs | map(
            ((.ratio * 100 | round / 100 | tostring)
             + (if .ratio_uncertainty_percent then " ±\(.ratio_uncertainty_percent | round)%" else "" end)
             + (if ((.flags // []) | index("ratio_uncertain")) then "?" else "" end))
            | . + " " * ([17 - length, 1] | max)) | join(""))
        + "\((($dev * 1000 | round) / 10))%" + (if $dev > 0.10 then "  (> 10%)" else "" end)
    ),
    "",
    ( $runs | to_entries[] | .key as $k | .value
      | (.results[] | select(.workload == "seq-read-1m-cold" and .target == $runs[$k].ratios[0].numerator_target)) as $sr
      | "run \($k+1): tmpfs seq read \(($sr.median / 1048576 | round)) MiB/s = \((($sr.ceiling_fraction * 1000 | round) / 10))% of memcpy ceiling \((.ceiling.memcpy_bytes_per_s / 1048576 | round)) MiB/s (\(if .ceiling.memcpy_end_bytes_per_s then "\((.ceiling.memcpy_end_bytes_per_s / 1048576 | round)) MiB/s at the end" else "not rechecked" end)); suite took \((.elapsed_ns / 1e8 | round) / 10) s"
    )
' "$out"/run*.json

if [ "${FIO:-0}" = 1 ]; then
  echo
  echo "fio on the same disk ($fiodir), right before each suite run:"
  printf '%-34s' "probe"; for i in $(seq "$N"); do printf '%-10s' "run$i"; done; echo "max dev from median"
  for col in 1 2 3; do
    case $col in
      1) label="write 4 KiB O_DSYNC (IOPS)" ;;
      2) label="randread 4 KiB O_DIRECT (IOPS)" ;;
      3) label="write 1 MiB end_fsync (MiB/s)" ;;
    esac
    vals=$(for i in $(seq "$N"); do cut -d' ' -f"$col" "$out/fio$i"; done | tr '\n' ' ')
    awk -v l="$label" -v v="$vals" 'BEGIN {
      n = split(v, a, " "); for (i = 1; i <= n; i++) s[i] = a[i] + 0
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
      m = (n % 2) ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
      printf "%-34s", l; d = 0
      for (i = 1; i <= n; i++) { printf "%-10.0f", a[i]; x = (a[i] - m) / m; if (x < 0) x = -x; if (x > d) d = x }
      printf "%.1f%%%s\n", d * 100, (d > 0.10 ? "  (> 10%)" : "")
    }'
  done
fi
