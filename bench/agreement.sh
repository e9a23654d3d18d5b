#!/usr/bin/env bash
# Runs the default `tmpfsctl bench` suite N times back to back (default 3) and
# prints, per workload, the tmpfs/disk ratio of each run and how far the runs
# are from their median ratio; plus each run's wall time (target: < 60 s) and
# the tmpfs sequential read as a fraction of the memcpy ceiling of that run.
#
# Usage: bench/agreement.sh [N] [extra tmpfsctl bench args...]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-3}
shift || true
command -v jq >/dev/null || { echo "agreement.sh: needs jq" >&2; exit 2; }
cargo build --release --quiet
out=$(mktemp -d /tmp/tmpfsctl-agreement-XXXXXX)
trap 'rm -rf "$out"' EXIT

for i in $(seq "$N"); do
  start=$(date +%s.%N)
  ./target/release/tmpfsctl bench --json "$out/run$i.json" "$@" >/dev/null 2>"$out/err$i" || {
    cat "$out/err$i" >&2; exit 2; }
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" -v i="$i" 'BEGIN { printf "run %d: %.1f s wall\n", i, e-s }'
done

jq -s -r '
  def median: sort | if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
  . as $runs
  | ($runs[0].ratios | map(.workload)) as $ws
  | "\nratio = \($runs[0].ratios[0].numerator_target) / \($runs[0].ratios[0].denominator_target) (higher = RAM faster)",
    "workload                          " + ([range(0; $runs|length)] | map("run\(.+1)    ") | join("")) + "max dev from median",
    ( $ws[] as $w
      | [ $runs[] | .ratios[] | select(.workload == $w) | .ratio ] as $r
      | ($r | median) as $m
      | ([ $r[] | ((. - $m) / $m | fabs) ] | max) as $dev
      | "\($w | .[0:32] | . + " " * (34 - length))"
        + ($r | map((. * 100 | round / 100 | tostring) | . + " " * (9 - length)) | join(""))
        + "\((($dev * 1000 | round) / 10))%" + (if $dev > 0.10 then "  (> 10%)" else "" end)
    ),
    "",
    ( $runs | to_entries[] | .key as $k | .value
      | (.results[] | select(.workload == "seq-read-1m-cold" and .target == $runs[$k].ratios[0].numerator_target)) as $sr
      | "run \($k+1): tmpfs seq read \(($sr.median / 1048576 | round)) MiB/s = \((($sr.ceiling_fraction * 1000 | round) / 10))% of memcpy ceiling \((.ceiling.memcpy_bytes_per_s / 1048576 | round)) MiB/s; suite took \((.elapsed_ns / 1e8 | round) / 10) s"
    )
' "$out"/run*.json
