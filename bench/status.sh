#!/usr/bin/env bash
# Speed of `tmpfsctl status` (issue 2):
#  1. with 200 extra tmpfs mounts: target < 50 ms;
#  2. measuring a 100 000-file tree: no slower than `du -s` on the same tree
#     (ratio <= 1.0, same run, hyperfine, warm cache for both).
# Needs root (mounts). Run by hand: bench/status.sh [--keep]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || apt-get install -y -qq hyperfine
cargo build --release --quiet
bin=$PWD/target/release/tmpfsctl
# Not under /tmp or /var/tmp: status walks those anyway, which would count twice.
mkdir -p target
work=$(mktemp -d "$PWD/target/bench-status.XXXXXX")
cleanup() {
  for d in "$work"/m*; do umount "$d" 2>/dev/null || true; done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT INT TERM

echo "== 200 extra tmpfs mounts"
for i in $(seq 1 200); do mkdir "$work/m$i"; mount -t tmpfs -o size=1M "tmpfs$i" "$work/m$i"; done
echo "mounts in mountinfo: $(wc -l </proc/self/mountinfo)"
hyperfine -N --warmup 3 --runs 30 --export-json "$work/h1.json" "$bin status --json" | sed -n '1,4p'
python3 - "$work/h1.json" <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))["results"][0]
print(f"status with 200 mounts: median {r['median']*1e3:.1f} ms (target < 50 ms)")
PY
for d in "$work"/m*; do umount "$d"; done

echo "== 100 000-file tree on $(findmnt -no FSTYPE -T "$work")"
tree="$work/tree"
python3 - "$tree" <<'PY'
import os,sys
root=sys.argv[1]
n=0
for a in range(100):
    for b in range(10):
        d=os.path.join(root,f"d{a}",f"e{b}")
        os.makedirs(d)
        for c in range(99):
            with open(os.path.join(d,f"f{c}"),"wb") as f: f.write(b"x"*(c*37 % 5000))
            n+=1
print(f"created {n} files")
PY
# Both read the same warm tree; status also reports mounts, /tmp and /var/tmp.
hyperfine -N --warmup 2 --runs 10 --export-json "$work/h2.json" \
  "du -s -x -B1 $tree" "$bin status --json $tree" | sed -n '1,20p'
python3 - "$work/h2.json" <<'PY'
import json,sys
r={x["command"].split()[0].split("/")[-1]:x["median"] for x in json.load(open(sys.argv[1]))["results"]}
print(f"du -s: {r['du']*1e3:.1f} ms, tmpfsctl status: {r['tmpfsctl']*1e3:.1f} ms, ratio tmpfsctl/du = {r['tmpfsctl']/r['du']:.2f} (target <= 1.0)")
PY
echo "check: du says $(du -s -x -B1 "$tree" | cut -f1), tmpfsctl says $("$bin" status --json "$tree" | python3 -c 'import json,sys; print([p["used_bytes"] for p in json.load(sys.stdin)["paths"] if p["path"]==sys.argv[1]][0])' "$tree")"
