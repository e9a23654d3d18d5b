#!/bin/sh
# For each durability call persist, apply and revert rely on, run the
# crash-state suite (tests/crash) with that one call skipped in the guest:
# a call whose removal breaks no crash state is either not needed, masked
# by a later call, or not exercised by the scenario.
#
# One build serves every row: the `crash-knockout` feature (src/sys/knockout.rs)
# compiles in a check of TMPFSCTL_KNOCKOUT at each call; the suite passes
# TMPFSCTL_CRASH_KNOCKOUT on to the guest's tmpfsctl only (the host's checks
# run with every call in place) and fails when no step skipped the call.
# The shipped build has none of it (the feature is never on by default).
# Each row is then one guest boot plus the state checks.
#
# Run by hand, as root, the guest at normal priority (a starved guest falls
# into emergency mode):
#   bench/crash-mutants.sh                        # every row, ext4 and xfs
#   bench/crash-mutants.sh none store-syncfs      # the rows named, in that order
#   TMPFSCTL_CRASH_FS=ext4 bench/crash-mutants.sh # one file system
#   FOCUS=1 bench/crash-mutants.sh fstab-dir-fsync   # only the states after the ACKs it can break
#   TMPFSCTL_CRASH_PREFIXES=8 TMPFSCTL_CRASH_SUBSETS=4 TMPFSCTL_CRASH_SAMPLE=30 \
#     bench/crash-mutants.sh                      # a reduced sample per row
# "none" (nothing skipped) is the baseline row: what the suite finds with
# every call in place; each row is read against it.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
work=${TMPDIR:-/tmp}/tmpfsctl-crash-mutants
target=$work/target

# row|what TMPFSCTL_KNOCKOUT skips (CALL or CALL@WHAT, comma-separated)|the
# ACKs after which the states it can break lie (its step and the next
# ones that check what it wrote; empty: every state). With FOCUS=1 only
# those states are checked (TMPFSCTL_CRASH_ACKS): a row in minutes, not a
# quarter of an hour.
# The calls are named in the source as durable!("CALL", WHAT, ...); an
# atomic write's WHAT is the file it writes.
rows='none||
store-syncfs|store-syncfs|0-3
current-dir-fsync|current-dir-fsync|
last-sync-file-fsync|atomic-file-fsync@the store'"'"'s last-sync record|
last-sync-dir-fsync|atomic-dir-fsync@the store'"'"'s last-sync record|
current+last-sync-fsyncs|current-dir-fsync,atomic-file-fsync@the store'"'"'s last-sync record,atomic-dir-fsync@the store'"'"'s last-sync record|
live-index-file-fsync|atomic-file-fsync@the store'"'"'s live index|0-2,9-11
live-index-dir-fsync|atomic-dir-fsync@the store'"'"'s live index|0-2,9-11
fstab-file-fsync|atomic-file-fsync@--fstab|7-10
fstab-dir-fsync|atomic-dir-fsync@--fstab|7-10
fstab-backup-file-fsync|atomic-file-fsync@the backup of --fstab|7-10
fstab-backup-dir-fsync|atomic-dir-fsync@the backup of --fstab|7-10
fstab-backup-remove-dir-fsync|remove-dir-fsync@the backup of --fstab|7-10
revert-syncfs-copy|revert-syncfs-copy|8-10
revert-syncfs-end|revert-syncfs-end|8-10
disable-syncfs-live|disable-syncfs-live|6-8
disable-syncfs-load|disable-syncfs-load|11-12'

all=$(echo "$rows" | cut -d'|' -f1)
names=${*:-$all}
for name in $names; do
  echo "$all" | grep -qxF "$name" || { echo "no row named $name (have: $(echo $all))" >&2; exit 2; }
done
# Every call a row names is in the source, once: a call that moved or was
# renamed fails here, never as a silent "nothing skipped" row (the suite
# also fails a row in which no step skipped anything).
# (rustfmt may put the name on the line after `durable!(`; knockout.rs
# lists every name once more.)
at() {
  grep -rn --exclude=knockout.rs -e "durable!(\"$1\"" -e "^ *\"$1\",\$" "$here/src"
}
for call in $(echo "$rows" | cut -d'|' -f2 | tr ',' '\n' | cut -d@ -f1 | sort -u); do
  n=$(at "$call" | wc -l)
  [ "$n" = 1 ] || { echo "durable!(\"$call\" ...) is in the source $n times, not once" >&2; exit 2; }
done
where() {
  for call in $(echo "$1" | tr ',' '\n' | cut -d@ -f1 | sort -u); do
    at "$call" | cut -d: -f1,2 | sed "s|^$here/||"
  done | tr '\n' ' '
}

mkdir -p "$work"
results=$work/results.txt
: > "$results"
rev=$(git -C "$here" rev-parse --short HEAD)
dirty=$(git -C "$here" status --porcelain --untracked-files=no | wc -l)
if [ ! -d "$target/release" ] && [ -d "$here/target/release" ]; then
  mkdir -p "$target"
  cp -a "$here/target/release" "$target/"
fi
started=$(date +%s)
# One build, under nice 10 (both cores, for minutes); the test binary's
# tmpfsctl is the one built beside it in the script's own target dir.
echo "== building with the crash-knockout feature ($(date +%T))" >&2
exe=$(cd "$here" && CARGO_TARGET_DIR=$target nice -n 10 cargo test --release --locked \
  --features crash-knockout --test crash --no-run --message-format=json |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | grep '/crash-' | tail -1)
[ -x "$exe" ] || { echo "no crash test binary built" >&2; exit 2; }
cp "$exe" "$work/crash"
# The guest's package, made once from that build: each suite run would
# package it again into the same target dir, and two runs at once (two
# rows in parallel) raced there and one guest's `dpkg -i` failed.
deb=$(cd "$here" && CARGO_TARGET_DIR=$target nice -n 10 scripts/package --no-build | tail -1)
cp "$deb" "$work/tmpfsctl.deb"
export TMPFSCTL_BOOT_DEB="$work/tmpfsctl.deb"
# A loaded machine boots the guest slowly: wait longer than the suite's 900 s.
export TMPFSCTL_GUEST_TIMEOUT_S=${TMPFSCTL_GUEST_TIMEOUT_S:-2400}
for name in $names; do
  knock=$(echo "$rows" | grep "^$name|" | head -1 | cut -d'|' -f2)
  acks=""
  [ "${FOCUS:-0}" = 1 ] && acks=$(echo "$rows" | grep "^$name|" | head -1 | cut -d'|' -f3)
  calls=$(where "$knock")
  echo "== $name: ${knock:-(nothing skipped)} ${calls}${acks:+ states after ACKs $acks} ($(date +%T))" >&2
  log=$work/$name.log
  t0=$(date +%s)
  if (cd "$here" && if [ -n "$acks" ]; then export TMPFSCTL_CRASH_ACKS="$acks"; fi &&
    TMPFSCTL_CRASH_KNOCKOUT=$knock "$work/crash") > "$log" 2>&1; then
    verdict="suite passed"
  elif grep -q 'crash states break the rule' "$log"; then
    verdict="suite failed"
  else
    verdict="suite failed otherwise (see $log)"
  fi
  # Per file system: crash states checked / states breaking the rule.
  states=$(awk '/^crash states checked/{t=1} t && /^(ext4|xfs|btrfs) /{s = s $1 " " $(NF-3) "/" $(NF-2) "  "} END{print s}' "$log")
  skips=$(sed -n 's/^[a-z0-9]*: knockout .*: skips per step //p' "$log" | tr '\n' ' ')
  echo "$name|${calls:--}|${states:--}${acks:+ (after ACKs $acks)}|${skips:--}|$verdict, $(($(date +%s) - t0)) s" >> "$results"
  echo "$name: ${states:--} $verdict" >&2
  # What broke: the rule each violation names, counted.
  # (Where the crash point was is left out, so like violations count as one.)
  grep '^VIOLATION' "$log" | sed 's/^VIOLATION [a-z0-9]* .*(after ACK \([0-9]*\)): /after ACK \1: /' |
    cut -c1-120 | sort | uniq -c | sort -rn | head -8 > "$work/$name.why" || true
done
echo
echo "crash-state mutants: tree $rev (+$dirty locally changed files), ${TMPFSCTL_CRASH_FS:-ext4 and xfs}, $((($(date +%s) - started) / 60)) min"
echo "states: per file system, crash states checked / states that break the rule; skips: step:times the call was skipped"
printf '%-30s %-44s %-22s %s\n' row "call skipped (file:line)" "states checked/broken" run
while IFS='|' read -r name calls states skips verdict; do
  printf '%-30s %-44s %-22s %s\n' "$name" "$calls" "$states" "$verdict"
  printf '%-30s skips per step: %s\n' "" "$skips"
  [ -s "$work/$name.why" ] && sed 's/^/      /' "$work/$name.why"
done < "$results"
