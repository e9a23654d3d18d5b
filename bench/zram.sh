#!/usr/bin/env bash
# tmpfs, zram and disk side by side on three kinds of data: what each costs
# in RAM and how fast a tree is written there (cp -a + syncfs) and read back
# cold (page cache of each file dropped with posix_fadvise first; tmpfs has
# no cold state, its data is the cache).
#   logs:       text-log-like lines (timestamps, hosts, ids, latencies)
#   compressed: already-compressed files (zstd of log text: near-random)
#   source:     real source files (the cargo registry's .rs/.c/.h, this repo's src)
# RAM cost: tmpfs = Shmem growth (/proc/meminfo); zram = mem_used_total
# (mm_stat) after syncfs; disk = 0 (its page cache can be dropped).
# Each zram device is made here (hot_add: never one that existed before, as
# `zramctl --find` would take and its --reset remove), ext4 without a
# journal, mounted with discard, and removed at the end. Root only. SIZE_MIB=64 per tree (default).
# Run by hand: sudo bench/zram.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench/zram.sh: needs root (mount, zram devices)" >&2; exit 2; }
size=${SIZE_MIB:-64}
work=$(mktemp -d /var/tmp/tmpfsctl-bench-zram.XXXXXX)
devs=()
cleanup() {
  for m in "$work"/mnt-*; do umount "$m" 2>/dev/null || true; done
  for n in "${devs[@]}"; do echo "$n" > /sys/class/zram-control/hot_remove 2>/dev/null || true; done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT INT TERM

python3 - "$work" "$size" "$HOME/.cargo/registry/src" "$PWD/src" <<'PY'
import os, random, subprocess, sys
work, size = sys.argv[1], int(sys.argv[2]) << 20
rnd = random.Random(7)
def logs(root):
    os.makedirs(root)
    hosts = [f"web-{i:02d}" for i in range(12)]
    apps = ["nginx", "sshd", "cron", "app", "postgres", "kernel"]
    paths = ["/api/v1/items", "/login", "/static/app.js", "/health", "/api/v1/orders"]
    total, n = 0, 0
    while total < size:
        with open(f"{root}/app-{n}.log", "w") as f:
            for _ in range(20000):
                line = (f"2026-11-{rnd.randint(1,27):02d}T{rnd.randint(0,23):02d}:{rnd.randint(0,59):02d}:"
                        f"{rnd.randint(0,59):02d}.{rnd.randint(0,999999):06d} {rnd.choice(hosts)} "
                        f"{rnd.choice(apps)}[{rnd.randint(100,65000)}]: {rnd.choice(['GET','POST'])} "
                        f"{rnd.choice(paths)} from 10.{rnd.randint(0,255)}.{rnd.randint(0,255)}.{rnd.randint(0,255)} "
                        f"status={rnd.choice([200,200,200,304,404,500])} in {rnd.randint(1,900)} ms "
                        f"req={rnd.getrandbits(64):016x}\n")
                f.write(line)
            total += f.tell()
        n += 1
def compressed(root, src):
    os.makedirs(root)
    total, n = 0, 0
    names = sorted(os.listdir(src))
    while total < size:
        for name in names:
            data = subprocess.run(["zstd", "-q", "-3", "-c", f"{src}/{name}"], capture_output=True, check=True).stdout
            # Reseed each copy so no two files are alike (dedup cannot help).
            data = bytes(b ^ (n & 0xff) for b in data[:4]) + data[4:]
            with open(f"{root}/{n}-{name}.zst", "wb") as f:
                f.write(data)
            total += len(data); n += 1
            if total >= size: break
def source(root, srcs):
    os.makedirs(root)
    total = 0
    for s in srcs:
        for dp, dns, fns in os.walk(s):
            dns.sort(); fns.sort()
            for fn in fns:
                if not fn.endswith((".rs", ".c", ".h", ".toml", ".md")): continue
                p = os.path.join(dp, fn)
                try: data = open(p, "rb").read()
                except OSError: continue
                rel = os.path.relpath(p, s).replace("/", "_")
                with open(f"{root}/{len(os.listdir(root)) if False else total}-{rel}", "wb") as f: f.write(data)
                total += len(data)
                if total >= size: return
logs(f"{work}/tree-logs")
compressed(f"{work}/tree-compressed", f"{work}/tree-logs")
source(f"{work}/tree-source", sys.argv[3:])
PY

shmem() { awk '/^Shmem:/ {print $2 * 1024}' /proc/meminfo; }
now() { date +%s%N; }
evict() {  # drop each file's page cache (the disk's and zram's cold state)
  python3 - "$1" <<'PY'
import os, sys
for dp, _, fns in os.walk(sys.argv[1]):
    for fn in fns:
        fd = os.open(os.path.join(dp, fn), os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)
PY
}
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
rate() { awk -v b="$1" -v ns="$2" 'BEGIN { printf "%.0f MiB/s", b / 1048576 / (ns / 1e9) }'; }

probe=$(cat /sys/class/zram-control/hot_add); devs+=("$probe")
algs=$(sed 's/[][]//g' "/sys/block/zram$probe/comp_algorithm")
echo "$probe" > /sys/class/zram-control/hot_remove; devs=()
echo "kernel $(uname -r); zram algorithms: $algs; trees of ${size} MiB each"
printf '%-11s %-14s %10s %10s %12s %12s %14s\n' tree target data write "cold read" "RAM cost" "data/RAM"
for tree in logs compressed source; do
  src=$work/tree-$tree
  bytes=$(du -sb "$src" | cut -f1)
  for target in tmpfs $(for a in lz4 lzo-rle zstd; do case " $algs " in *" $a "*) echo "zram:$a";; esac; done) disk; do
    mnt=$work/mnt-$tree-${target//:/-}
    mkdir -p "$mnt"
    dev=
    case $target in
      tmpfs) mount -t tmpfs -o size=$((size * 3))M tmpfs "$mnt" ;;
      zram:*)
        n=$(cat /sys/class/zram-control/hot_add); devs+=("$n"); dev=/dev/zram$n
        echo "${target#zram:}" > "/sys/block/zram$n/comp_algorithm"
        echo $((size * 3))M > "/sys/block/zram$n/disksize"
        mkfs.ext4 -q -F -O ^has_journal -m 0 -E lazy_itable_init=0,lazy_journal_init=0 "$dev"
        mount -o discard "$dev" "$mnt" ;;
      disk) ;;
    esac
    sync
    before=$(shmem)
    t0=$(now); cp -a "$src/." "$mnt/"; sync -f "$mnt"; t1=$(now)
    case $target in
      tmpfs) cost=$(( $(shmem) - before )) ;;
      zram:*) cost=$(awk '{print $3}' "/sys/block/$(basename "$dev")/mm_stat") ;;
      disk) cost=0 ;;
    esac
    [ "$target" = tmpfs ] || evict "$mnt"
    t2=$(now); find "$mnt" -type f -exec cat {} + > /dev/null; t3=$(now)
    ratio=$( [ "$cost" -gt 0 ] && awk -v a="$bytes" -v b="$cost" 'BEGIN { printf "%.2fx", a / b }' || echo "-")
    printf '%-11s %-14s %10s %10s %12s %12s %14s\n' "$tree" "$target" "$(mib "$bytes")" \
      "$(rate "$bytes" $((t1 - t0)))" "$(rate "$bytes" $((t3 - t2)))" "$(mib "$cost")" "$ratio"
    case $target in
      tmpfs) umount "$mnt" ;;
      zram:*) umount "$mnt"; sleep 0.2; echo "$n" > /sys/class/zram-control/hot_remove; devs=() ;;
      disk) rm -rf --one-file-system "${mnt:?}" ;;
    esac
  done
done
echo "write = cp -a of the tree + syncfs; cold read = cat of every file after posix_fadvise(DONTNEED) (tmpfs: its pages are the data);"
echo "RAM cost: tmpfs = Shmem growth, zram = mem_used_total, disk = 0 (its page cache can be dropped). data/RAM = tree bytes / RAM cost."
