#!/usr/bin/env bash
# `tmpfsctl collect` vs `du -s` on a /tmp-like tree of 100,000 files, same run.
#
#   bench/collect-vs-du.sh [FILES] [PARENT_DIR]
#
# Builds FILES small files (default 100,000; 1000 directories, sizes 0..16 KiB,
# some hard links and symlinks) in a fresh directory under PARENT_DIR (default
# /var/tmp, i.e. a disk filesystem), warms the cache once, then alternates
# `du -s -x -B1 TREE` and `tmpfsctl collect --path TREE` 7 times each and prints
# the median wall times and their ratio. Both figures are also compared.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
PARENT=${2:-/var/tmp}
BIN=$PWD/target/release/tmpfsctl
cargo build --release --quiet
T=$(mktemp -d "$PARENT/tmpfsctl-bench-tree.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
python3 - "$T" "$N" <<'PY'
import os, sys, random
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(1)
dirs = max(1, n // 100)
for d in range(dirs):
    p = os.path.join(root, f"d{d // 50}", f"job-{d}")
    os.makedirs(p, exist_ok=True)
for i in range(n):
    p = os.path.join(root, f"d{(i % dirs) // 50}", f"job-{i % dirs}", f"f{i}")
    with open(p, "wb") as f:
        f.write(os.urandom(rnd.choice([0, 100, 1000, 4096, 16384])))
    if i % 1000 == 0:
        os.link(p, p + ".hl")
        os.symlink(p, p + ".sym")
PY
echo "tree: $T, $(find "$T" -type f | wc -l) files, $(du -sh "$T" | cut -f1)"
du -s -x -B1 "$T" > /dev/null; "$BIN" collect --path "$T" > /dev/null   # warm the cache

now() { date +%s.%N; }
dus=(); cols=()
for i in 1 2 3 4 5 6 7; do
  a=$(now); du -s -x -B1 "$T" > /tmp/tmpfsctl-du.out; b=$(now)
  "$BIN" collect --path "$T" > /tmp/tmpfsctl-collect.out; c=$(now)
  dus+=("$(echo "$b - $a" | bc)"); cols+=("$(echo "$c - $b" | bc)")
done
med() { printf '%s\n' "$@" | sort -n | sed -n 4p; }
D=$(med "${dus[@]}"); C=$(med "${cols[@]}")
echo "du -s -x -B1:       median ${D}s  (runs: ${dus[*]})"
echo "tmpfsctl collect:   median ${C}s  (runs: ${cols[*]})"
awk -v a="$C" -v b="$D" 'BEGIN { printf "ratio collect/du: %.2f (<= 1.0 means collect is no slower)\n", a / b }'
du_bytes=$(cut -f1 /tmp/tmpfsctl-du.out)
col_bytes=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["paths"][0]["used_bytes"])' /tmp/tmpfsctl-collect.out)
echo "bytes: du $du_bytes, collect $col_bytes $([ "$du_bytes" = "$col_bytes" ] && echo '(equal)' || echo '(DIFFERENT)')"
