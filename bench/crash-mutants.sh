#!/bin/sh
# For each durability call persist, apply and revert rely on, build a copy of
# the tree without it and run the crash-state suite (tests/crash): a call
# whose removal breaks no crash state is either not needed or not exercised.
# Run by hand, as root (each mutant is a release build plus a guest boot and
# the state checks: 5-8 minutes on one file system):
#   bench/crash-mutants.sh                      # every mutant, ext4 and xfs
#   bench/crash-mutants.sh none store-syncfs    # the ones named, in that order ("none": unmutated)
#   TMPFSCTL_CRASH_FS=xfs bench/crash-mutants.sh   # one file system
# The tree is copied once at the start (committed files plus local edits),
# so editing the checkout while it runs changes nothing. Each mutant is that
# copy with its substitutions, built in one source directory and one target
# directory of the script's own (seeded from target/release).
# "none" (the copy unmutated) is the baseline row: what the suite finds
# with every call in place; each mutant's row is read against it. Prints a table: mutant, the calls removed, per file system the
# crash states checked and the states that break the rule.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
work=${TMPDIR:-/tmp}/tmpfsctl-crash-mutants
target=$work/target

# name|file|perl substitution (on the whole file) that removes one call. A
# name on several lines removes each of them ("all-but-store": every call
# but the store's syncfs at once, one build for a first look; each
# violation names the rule it breaks).
mutants='store-syncfs|src/persist/store/generations.rs|s/rustix::fs::syncfs\(self\.store\.fd\(\)\)\.context\("flushing the store \(syncfs\)"\)\?;//
current-dir-fsync|src/persist/store/generations.rs|s/(\.context\("renaming the new `current` pointer into place"\)\?;\s*)self\.fsync_dir\(\)/$1Ok(())/
record-file-fsync|src/persist/record.rs|s/rustix::fs::fsync\(&f\)\?;//
record-dir-fsync|src/persist/record.rs|s/(renameat\(store, TMP, store, NAME\)\?;\s*)rustix::fs::fsync\(store\)/$1Ok(())/
current+record-fsyncs|src/persist/store/generations.rs|s/(\.context\("renaming the new `current` pointer into place"\)\?;\s*)self\.fsync_dir\(\)/$1Ok(())/
current+record-fsyncs|src/persist/record.rs|s/rustix::fs::fsync\(&f\)\?;//
current+record-fsyncs|src/persist/record.rs|s/(renameat\(store, TMP, store, NAME\)\?;\s*)rustix::fs::fsync\(store\)/$1Ok(())/
atomic-file-fsync|src/sys/atomic.rs|s/f\.sync_all\(\)\s*\.with_context\(\|\| format!\("\{what\} \{\}: fsync", safe_path\(dest\)\)\)\?;//
atomic-dir-fsync|src/sys/atomic.rs|s/(tmp\.keep\(\);\s*)rustix::fs::fsync\(&dir\.fd\)/$1Ok::<(), rustix::io::Errno>(())/
remove-dir-fsync|src/sys/atomic.rs|s/(cannot remove", safe_path\(dest\)\)\);\s*\}\s*\}\s*)rustix::fs::fsync\(&dir\.fd\)/$1Ok::<(), rustix::io::Errno>(())/
revert-syncfs-copy|src/mounts/revert.rs|s/rustix::fs::syncfs\(u\)\s*\.with_context\(\|\| format!\("flushing \{\} on disk \(syncfs\)", dir\.display\(\)\)\)\?;//
revert-syncfs-end|src/mounts/revert.rs|s/rustix::fs::syncfs\(back\.under\.dir\.as_fd\(\)\)\s*\.with_context\(\|\| format!\("flushing \{\} on disk \(syncfs\)", dir\.display\(\)\)\)\?;//
disable-syncfs-live|src/persist/admin.rs|s/rustix::fs::syncfs\(u\)\.context\("flushing DIR on disk"\)\?;//
disable-syncfs-load|src/persist/admin.rs|s/rustix::fs::syncfs\(&dfd\)\.context\("flushing DIR on disk"\)\?;//
all-but-store|src/persist/store/generations.rs|s/(\.context\("renaming the new `current` pointer into place"\)\?;\s*)self\.fsync_dir\(\)/$1Ok(())/
all-but-store|src/persist/record.rs|s/rustix::fs::fsync\(&f\)\?;//
all-but-store|src/persist/record.rs|s/(renameat\(store, TMP, store, NAME\)\?;\s*)rustix::fs::fsync\(store\)/$1Ok(())/
all-but-store|src/sys/atomic.rs|s/f\.sync_all\(\)\s*\.with_context\(\|\| format!\("\{what\} \{\}: fsync", safe_path\(dest\)\)\)\?;//
all-but-store|src/sys/atomic.rs|s/(tmp\.keep\(\);\s*)rustix::fs::fsync\(&dir\.fd\)/$1Ok::<(), rustix::io::Errno>(())/
all-but-store|src/sys/atomic.rs|s/(cannot remove", safe_path\(dest\)\)\);\s*\}\s*\}\s*)rustix::fs::fsync\(&dir\.fd\)/$1Ok::<(), rustix::io::Errno>(())/
all-but-store|src/mounts/revert.rs|s/rustix::fs::syncfs\(u\)\s*\.with_context\(\|\| format!\("flushing \{\} on disk \(syncfs\)", dir\.display\(\)\)\)\?;//
all-but-store|src/mounts/revert.rs|s/rustix::fs::syncfs\(back\.under\.dir\.as_fd\(\)\)\s*\.with_context\(\|\| format!\("flushing \{\} on disk \(syncfs\)", dir\.display\(\)\)\)\?;//
all-but-store|src/persist/admin.rs|s/rustix::fs::syncfs\(u\)\.context\("flushing DIR on disk"\)\?;//
all-but-store|src/persist/admin.rs|s/rustix::fs::syncfs\(&dfd\)\.context\("flushing DIR on disk"\)\?;//
none|-|-'

want="$*"
mkdir -p "$work"
results=$work/results.txt
: > "$results"
base=$work/base
rm -rf "$base"
mkdir -p "$base"
(cd "$here" && git ls-files -z | xargs -0 cp --parents -t "$base")
rev=$(git -C "$here" rev-parse --short HEAD)
dirty=$(git -C "$here" status --porcelain --untracked-files=no | wc -l)
if [ ! -d "$target/release" ] && [ -d "$here/target/release" ]; then
  mkdir -p "$target"
  cp -a "$here/target/release" "$target/"
fi
started=$(date +%s)
# Not incremental: release builds with it failed to link (an undefined
# hidden symbol) after a few mutants.
export CARGO_INCREMENTAL=0
# A loaded machine boots the guest slowly: wait longer than the suite's 900 s.
export TMPFSCTL_GUEST_TIMEOUT_S=${TMPFSCTL_GUEST_TIMEOUT_S:-2400}
src=$work/src
all=$(echo "$mutants" | cut -d'|' -f1 | awk '!seen[$0]++')
# The order given on the command line (the most wanted first), else "none"
# then the table's order.
names=${want:-none $(echo "$all" | grep -vx none)}
for name in $names; do
  echo "$all" | grep -qx "$name" || { echo "no mutant named $name (have: $(echo $all))" >&2; exit 2; }
done
for name in $names; do
  # Same path every time (incremental builds are keyed by it). Only files
  # whose content differs are copied, and they get a new time (no -t), so
  # cargo rebuilds after the last mutant's file is put back.
  mkdir -p "$src"
  rsync -rlpgoD --checksum --delete "$base/" "$src/"
  calls=""
  bad=""
  echo "$mutants" | grep "^$name|" > "$work/$name.subst"
  while IFS='|' read -r _ file subst; do
    [ "$file" = - ] && continue
    cp "$src/$file" "$work/before"
    perl -0pi -e "$subst" "$src/$file"
    if cmp -s "$src/$file" "$work/before"; then
      bad="$bad $file"
      continue
    fi
    # Where the call was: the first line this substitution changed.
    line=$(diff "$work/before" "$src/$file" | sed -n 's/^\([0-9]*\)[,acd].*/\1/p' | head -1)
    calls="$calls $file:$line"
  done < "$work/$name.subst"
  if [ -n "$bad" ]; then
    echo "$name: the substitution matched nothing in$bad (the call moved?)" >&2
    echo "$name|$bad|-|substitution matched nothing" >> "$results"
    continue
  fi
  [ -z "$calls" ] && calls=" (nothing removed)"
  echo "== $name:$calls ($(date +%T))" >&2
  diff -u "$base" "$src" -r > "$work/$name.diff" || true
  log=$work/$name.log
  t0=$(date +%s)
  # The build under nice 10 (both cores, for minutes), the guest and the
  # checks at the caller's priority: a TCG guest starved by other builds
  # missed its own device timeouts and never finished booting.
  if (cd "$src" && CARGO_TARGET_DIR=$target nice -n 10 cargo test --release --locked --test crash --no-run &&
    CARGO_TARGET_DIR=$target cargo test --release --locked --test crash) > "$log" 2>&1; then
    verdict="suite passed"
  elif grep -q 'crash states break the rule' "$log"; then
    verdict="suite failed"
  else
    verdict="suite failed otherwise (see $log)"
  fi
  # The final table: per file system, states checked and states breaking the rule.
  states=$(awk '/^crash states checked/{t=1} t && /^(ext4|xfs|btrfs) /{s = s $1 " " $(NF-3) "/" $(NF-2) "  "} END{print s}' "$log")
  echo "$name|${calls# }|${states:--}|$verdict, $(( $(date +%s) - t0 )) s" >> "$results"
  echo "$name: ${states:--} $verdict" >&2
  if [ "$name" = none ] && [ "$verdict" != "suite passed" ]; then
    # Not a stop: a mutant's row is then read against this one.
    echo "the suite fails on the unmutated tree too (see $log): read each row against it" >&2
  fi
done
echo
echo "crash-state mutants: tree $rev (+$dirty locally changed files), ${TMPFSCTL_CRASH_FS:-ext4 and xfs}, $(( ($(date +%s) - started) / 60 )) min"
echo "states: per file system, crash states checked / states that break the rule"
printf '%-26s %-50s %-28s %s\n' mutant "call removed (file:line)" "states checked/broken" run
while IFS='|' read -r name calls states verdict; do
  printf '%-26s %-50s %-28s %s\n' "$name" "$calls" "$states" "$verdict"
done < "$results"
