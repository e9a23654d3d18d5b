#!/usr/bin/env bash
# Wall time of `tmpfsctl advise` (issue 7): default under 30 s, --quick under 10 s.
# Three runs each on DIR (default /tmp); prints the median and the worst.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=$PWD/target/release/tmpfsctl
dir=${1:-/tmp}
for mode in --quick "" --thorough; do
  ts=()
  for _ in 1 2 3; do
    s=$(date +%s.%N)
    "$bin" advise $mode --json "$dir" >/dev/null || [ $? -eq 1 ]
    ts+=("$(echo "$(date +%s.%N) - $s" | bc)")
  done
  sorted=$(printf '%s\n' "${ts[@]}" | sort -n)
  echo "advise ${mode:-(default)} on $dir: median $(echo "$sorted" | sed -n 2p) s, worst $(echo "$sorted" | tail -1) s (target: --quick < 10 s, default < 30 s, --thorough = full bench suite)"
done
