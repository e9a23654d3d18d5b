#!/usr/bin/env bash
# tmpfsctl bench engine vs fio (psync), same machine, same run, same tmpfs:
#   1. sequential 1 MiB write (fsync at end), 2. sequential 1 MiB read,
#   3. 4 KiB random read IOPS (QD1, one thread).
# Each tool runs RUNS times alternately; medians are compared and the ratio
# engine/fio printed (>= 1.0 means the engine measured at least fio's speed).
# Also prints the tmpfs sequential read as a fraction of the memcpy ceiling
# measured in the same tmpfsctl run.
#
# Usage: bench/vs-fio.sh            (SIZE=1G RUNS=3 RANDTIME=3 by default)
# Needs: fio (installed with apt-get when missing and root), jq, a release build.
set -euo pipefail
cd "$(dirname "$0")/.."

SIZE=${SIZE:-1G}
RUNS=${RUNS:-3}
RANDTIME=${RANDTIME:-3}

if ! command -v fio >/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fio >/dev/null
  else
    echo "vs-fio.sh: fio is missing; install it (apt-get install fio)" >&2
    exit 2
  fi
fi
command -v jq >/dev/null || { echo "vs-fio.sh: needs jq" >&2; exit 2; }
cargo build --release --quiet
T=./target/release/tmpfsctl

# A private tmpfs when root (nothing else on it), else a directory in /dev/shm.
base=$(mktemp -d /tmp/tmpfsctl-vs-fio-XXXXXX)
mounted=0
cleanup() {
  if [ "$mounted" = 1 ]; then umount "$base/mnt" || umount -l "$base/mnt"; fi
  rm -rf --one-file-system "$base" "${shmdir:-/nonexistent-tmpfsctl}"
}
trap cleanup EXIT INT TERM
if [ "$(id -u)" -eq 0 ]; then
  mkdir "$base/mnt"
  mount -t tmpfs -o size=4G,mode=0700 tmpfsctl-vs-fio "$base/mnt"
  mounted=1
  dir="$base/mnt"
else
  shmdir=$(mktemp -d /dev/shm/tmpfsctl-vs-fio-XXXXXX)
  dir="$shmdir"
fi
echo "target: $dir ($(findmnt -n -o FSTYPE -T "$dir")), file size $SIZE, $RUNS runs each, $(nproc) CPUs, kernel $(uname -r)"

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# fio: a fresh file for writes (--fallocate=none: tmpfsctl does not preallocate
# either, so both include page allocation); the read file is laid out untimed.
fio_run() { # rw bs extra... -> bytes/s or IOPS
  local rw=$1 bs=$2; shift 2
  [ "$rw" = write ] && rm -f "$dir/fio.dat"
  fio --name=t --filename="$dir/fio.dat" --rw="$rw" --bs="$bs" --size="$SIZE" \
      --ioengine=psync --fallocate=none --output-format=json "$@" 2>/dev/null
}

engine_run() { # tmpfsctl args... -> JSON
  "$T" bench --no-latency --min-runs 3 --ceiling-size 1G --json "$@" "$dir" 2>/dev/null
}

declare -A E F
ceil_frac=()
for i in $(seq "$RUNS"); do
  F[w]+="$(fio_run write 1M --end_fsync=1 | jq '.jobs[0].write.bw_bytes') "
  F[r]+="$(fio_run read 1M | jq '.jobs[0].read.bw_bytes') "
  F[rr]+="$(fio_run randread 4k --runtime="$RANDTIME" --time_based | jq '.jobs[0].read.iops') "
  rm -f "$dir/fio.dat"
  E[w]+="$(engine_run --rw seq-write --bs 1M --size "$SIZE" --sync fsync-end | jq '.results[0].median') "
  j=$(engine_run --rw seq-read --bs 1M --size "$SIZE")
  E[r]+="$(jq '.results[0].median' <<<"$j") "
  ceil_frac+=("$(jq '.results[0].ceiling_fraction' <<<"$j")")
  E[rr]+="$(engine_run --rw rand-read --bs 4k --size "$SIZE" --min-time "$RANDTIME" --runtime 500ms | jq '.results[0].median') "
done

printf '\n%-34s %14s %14s %8s\n' "workload (tmpfs, psync QD1)" "tmpfsctl" "fio" "ratio"
for k in w r rr; do
  e=$(tr ' ' '\n' <<<"${E[$k]}" | grep . | median)
  f=$(tr ' ' '\n' <<<"${F[$k]}" | grep . | median)
  case $k in
    w) name="seq write 1 MiB, fsync at end"; unit=MiB/s; div=1048576 ;;
    r) name="seq read 1 MiB"; unit=MiB/s; div=1048576 ;;
    rr) name="rand read 4 KiB IOPS"; unit=IOPS; div=1 ;;
  esac
  awk -v n="$name" -v e="$e" -v f="$f" -v d="$div" -v u="$unit" \
    'BEGIN { printf "%-34s %9.0f %-5s%9.0f %-5s %6.2fx\n", n, e/d, u, f/d, u, e/f }'
done
fr=$(printf '%s\n' "${ceil_frac[@]}" | median)
awk -v f="$fr" 'BEGIN { printf "\ntmpfs seq read / memcpy ceiling (same tmpfsctl run, median of runs): %.0f%%\n", f*100 }'
