#!/usr/bin/env bash
# `tmpfsctl apply` on a tree that holds a big sparse file (GIB GiB long, 8 MiB
# of data in 4 extents, plus 300 small files), against `cp -a` of the same
# tree into a fresh tmpfs (coreutils keeps holes with SEEK_HOLE; it does not
# verify, apply compares both trees after copying), and against an older
# tmpfsctl build when OLD=path is given (one that copied holes as zeros).
# All in the same run, same tmpfs size, warm cache.
#
#   sudo bench/apply-copy.sh [GIB] [ROUNDS]               (defaults 2, 3)
#   sudo OLD=/path/to/old/tmpfsctl bench/apply-copy.sh
#
# Each measured command mounts, copies and unmounts (apply + revert without
# --keep-data, which is one umount). Prints each command's median, the ratio
# of medians per round and their median, and how much RAM the tmpfs holds
# after each tool's copy.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench/apply-copy.sh: needs root (it mounts tmpfs)" >&2; exit 2; }
GIB=${1:-2}
ROUNDS=${2:-3}
OLD=${OLD:-}
command -v hyperfine >/dev/null || apt-get install -y -qq hyperfine
cargo build --release --quiet
bin=$PWD/target/release/tmpfsctl
mkdir -p target
work=$(mktemp -d "$PWD/target/bench-apply.XXXXXX")
d=$work/tree
m=$work/cp
cleanup() {
  for p in "$d" "$m"; do
    while findmnt -n --mountpoint "$p" >/dev/null 2>&1; do umount -l "$p" || break; done
  done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Large enough for an expanded copy, so an old build can finish at all.
size="$((GIB + 1))G"
mkdir "$d" "$m"
: >"$work/fstab"
truncate -s "${GIB}G" "$d/disk.img"
for i in 0 1 2 3; do
  dd if=/dev/urandom of="$d/disk.img" bs=1M count=2 conv=notrunc status=none \
    seek=$((i * GIB * 1024 / 4 + 100))
done
for i in $(seq 0 299); do
  mkdir -p "$d/src/m$((i % 10))"
  head -c $((i * 97 % 20000)) /dev/urandom >"$d/src/m$((i % 10))/f$i"
done
sync

apply_cmd() { # $1 = binary
  echo "$1 apply $d --fstab $work/fstab --boot none --size $size --yes >/dev/null 2>&1 && $1 revert $d --fstab $work/fstab --yes >/dev/null 2>&1"
}
cmds=("$(apply_cmd "$bin")"
  "mount -t tmpfs -o size=$size,nosuid,nodev tmpfs $m && cp -a $d/. $m/ && umount $m")
names=(tmpfsctl cp-a)
if [ -n "$OLD" ]; then
  avail_kib=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
  if [ "$avail_kib" -gt $(((GIB + 2) << 20)) ]; then
    cmds+=("$(apply_cmd "$OLD")")
    names+=(old)
  else
    echo "OLD skipped: it needs ${GIB} GiB of RAM for the expanded copy; MemAvailable is $((avail_kib >> 10)) MiB"
  fi
fi

echo "== tree: $(du -sh --apparent-size "$d" | cut -f1) apparent, $(du -sh "$d" | cut -f1) allocated, on $(findmnt -no FSTYPE -T "$d"); $(nproc) CPUs; tmpfs size=$size"
for r in $(seq 1 "$ROUNDS"); do
  hyperfine --warmup 1 --runs 3 --export-json "$work/h-$r.json" "${cmds[@]}" >/dev/null 2>&1
done

# RAM the tmpfs holds after each tool's copy.
held() { df -B1 --output=used "$1" | tail -n1; }
"$bin" apply "$d" --fstab "$work/fstab" --boot none --size "$size" --yes >/dev/null 2>&1
echo "tmpfs used after apply (this build): $(($(held "$d") >> 10)) KiB"
"$bin" revert "$d" --fstab "$work/fstab" --yes >/dev/null 2>&1
mount -t tmpfs -o "size=$size" tmpfs "$m" && cp -a "$d/." "$m/"
echo "tmpfs used after cp -a:              $(($(held "$m") >> 10)) KiB"
umount "$m"
if [ "${names[2]:-}" = old ]; then
  "$OLD" apply "$d" --fstab "$work/fstab" --boot none --size "$size" --yes >/dev/null 2>&1
  echo "tmpfs used after apply (OLD):        $(($(held "$d") >> 10)) KiB"
  "$OLD" revert "$d" --fstab "$work/fstab" --yes >/dev/null 2>&1
fi

python3 - "${names[*]}" "$work"/h-*.json <<'PY'
import json, sys, statistics
names = sys.argv[1].split()
rows = []
for f in sys.argv[2:]:
    res = json.load(open(f))["results"]
    rows.append({n: r["median"] for n, r in zip(names, res)})
for i, row in enumerate(rows, 1):
    cells = ", ".join(f"{n} {row[n]*1e3:7.1f} ms" for n in names)
    print(f"  round {i}: {cells}")
for peer in names[1:]:
    ratios = sorted(row["tmpfsctl"] / row[peer] for row in rows)
    print(f"ratio tmpfsctl/{peer}: median of {len(rows)} rounds = {statistics.median(ratios):.2f} "
          f"(rounds {' '.join(f'{x:.2f}' for x in ratios)})")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
