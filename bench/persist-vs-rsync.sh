#!/usr/bin/env bash
# `tmpfsctl persist sync` against what log2ram / anything-sync-daemon run:
# `rsync -a --delete` of the same change into a plain copy on disk, then
# `sync -f` of that copy (without the flush rsync's copy is only in the page
# cache and a power loss takes it). Target: ratio <= 0.6.
#
#   bench/persist-vs-rsync.sh [ROUNDS] [FILES] [TOTAL_MIB] [CHANGED_PCT]
#                                (defaults 9, 2048, 512, 1)
#
# Root only (mounts a private tmpfs). The hot tree (FILES files of random
# data, TOTAL_MIB in all, in 16 directories) lives on that tmpfs; the store
# and rsync's copy live side by side on the filesystem holding this repo's
# target/ dir (a disk). Both start from a full first sync. Each round
# rewrites CHANGED_PCT % of the files (new random content, same size) and
# then runs both syncs, in alternating order, so each sees exactly the same
# change since its own last sync and a busy spell on the machine hits both.
# Prints each round, the medians and their ratio. persist's time is until the
# command returns (the new generation durable and current); the freeing of
# pruned generations it leaves to a detached child is waited for, untimed,
# before the next command runs.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-9}
FILES=${2:-2048}
TOTAL_MIB=${3:-512}
PCT=${4:-1}
[ "$(id -u)" -eq 0 ] || { echo "persist-vs-rsync.sh: needs root (mounts a tmpfs)" >&2; exit 2; }
command -v rsync >/dev/null || apt-get install -y -qq rsync
if [ -z "${NOBUILD:-}" ]; then cargo build --release --quiet; fi
bin=${BIN:-$PWD/target/release/tmpfsctl}
mkdir -p target
work=$(mktemp -d "$PWD/target/bench-persist.XXXXXX")
cleanup() {
  umount "$work/hot" 2>/dev/null || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$work/hot" "$work/store" "$work/copy"
mount -t tmpfs -o size=$((TOTAL_MIB * 2))M tmpfs "$work/hot"
per_kib=$((TOTAL_MIB * 1024 / FILES))
for i in $(seq 0 $((FILES - 1))); do
  d="$work/hot/d$((i % 16))"
  [ -d "$d" ] || mkdir "$d"
  head -c "$((per_kib * 1024))" /dev/urandom > "$d/f$i"
done
changed=$(( (FILES * PCT + 99) / 100 ))
export TMPFSCTL_PERSIST_REGISTRY="$work/registry.json"
psync() { "$bin" persist sync "$work/hot" --store "$work/store" >/dev/null; }
# persist frees pruned generations in a detached child after it returns; wait
# for that (untimed) so it never overlaps the next command's timing.
settle() { while [ -n "$(ls -A "$work/store/trash" 2>/dev/null)" ]; do sleep 0.01; done; }
rsync_flush() { rsync -a --delete "$work/hot/" "$work/copy/" && sync -f "$work/copy"; }
ns() { date +%s%N; }
psync
rsync_flush
echo "== $FILES files, $(du -sh "$work/hot" | cut -f1) on tmpfs; store and copy on $(findmnt -no FSTYPE -T "$work/store") ($(findmnt -no SOURCE -T "$work/store")); $changed files (${PCT}%) rewritten per round; $(nproc) CPUs"
printf "%-6s %14s %14s %8s\n" round "persist_ms" "rsync+sync_ms" ratio
p_all=() r_all=()
for r in $(seq 1 "$ROUNDS"); do
  for k in $(seq 1 "$changed"); do
    i=$(( (r * 7919 + k * 104729) % FILES ))
    head -c "$((per_kib * 1024))" /dev/urandom > "$work/hot/d$((i % 16))/f$i"
  done
  if (( r % 2 )); then
    t0=$(ns); psync; t1=$(ns); settle; t2=$(ns); rsync_flush; t3=$(ns)
    p=$((t1 - t0)); q=$((t3 - t2))
  else
    t0=$(ns); rsync_flush; t1=$(ns); psync; t2=$(ns); settle
    q=$((t1 - t0)); p=$((t2 - t1))
  fi
  p_all+=("$p"); r_all+=("$q")
  awk -v r="$r" -v p="$p" -v q="$q" 'BEGIN { printf "%-6s %14.1f %14.1f %8.2f\n", r, p / 1e6, q / 1e6, p / q }'
done
median() { printf "%s\n" "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
pm=$(median "${p_all[@]}"); rm_=$(median "${r_all[@]}")
awk -v p="$pm" -v q="$rm_" 'BEGIN { printf "median: persist sync %.1f ms, rsync -a --delete + sync -f %.1f ms, ratio %.2f (target <= 0.6)\n", p / 1e6, q / 1e6, p / q }'
# Same tree on both sides at the end: the store's newest generation,
# restored into a fresh tmpfs, against rsync's copy.
mkdir -p "$work/check"
"$bin" persist restore "$work/check" --store "$work/store" >/dev/null
trap 'umount "$work/check" 2>/dev/null || true; cleanup' EXIT
if ! diff -r "$work/check" "$work/copy" >/dev/null; then
  echo "persist-vs-rsync.sh: the store's newest generation and rsync's copy differ" >&2
  exit 1
fi
echo "check: the store's newest generation, restored, equals rsync's copy"
