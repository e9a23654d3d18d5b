#!/bin/sh
# For each durability call persist, apply and revert rely on, build a copy of
# the tree without it and run the crash-state suite (tests/crash): a call
# whose removal breaks no crash state is either not needed or not exercised.
# Run by hand (each mutant is a release build plus the suite: many minutes):
#   sudo bench/crash-mutants.sh                 # every mutant, ext4 and xfs
#   sudo bench/crash-mutants.sh store-syncfs    # the ones named
#   TMPFSCTL_CRASH_FS=ext4 sudo -E bench/crash-mutants.sh ...
# Prints a table: mutant, the call removed, crash states checked, violations.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
work=${TMPDIR:-/tmp}/tmpfsctl-crash-mutants
target=${CARGO_TARGET_DIR:-$here/target}

# name|file|perl substitution (on the whole file) that removes the call
mutants='store-syncfs|src/persist/store/generations.rs|s/rustix::fs::syncfs\(self\.store\.fd\(\)\)\.context\("flushing the store \(syncfs\)"\)\?;//
current-dir-fsync|src/persist/store/generations.rs|s/(\.context\("renaming the new `current` pointer into place"\)\?;\s*)self\.fsync_dir\(\)/$1Ok(())/
atomic-file-fsync|src/sys/atomic.rs|s/f\.sync_all\(\)\s*\.with_context\(\|\| format!\("\{what\} \{\}: fsync", dest\.display\(\)\)\)\?;//
atomic-dir-fsync|src/sys/atomic.rs|s/std::fs::File::open\(&dir\)\s*\.and_then\(\|d\| d\.sync_all\(\)\)/std::fs::File::open(&dir).map(drop)/
revert-syncfs-copy|src/mounts/revert.rs|s/rustix::fs::syncfs\(u\)\.with_context\(\|\| format!\("flushing \{\} on disk \(syncfs\)", dir\.display\(\)\)\)\?;//
revert-syncfs-end|src/mounts/revert.rs|s/rustix::fs::syncfs\(back\.under\.dir\.as_fd\(\)\)\s*\.with_context\(\|\| format!\("flushing \{\} on disk \(syncfs\)", dir\.display\(\)\)\)\?;//
disable-syncfs-live|src/persist/admin.rs|s/rustix::fs::syncfs\(u\)\.context\("flushing DIR on disk"\)\?;//
disable-syncfs-load|src/persist/admin.rs|s/rustix::fs::syncfs\(&dfd\)\.context\("flushing DIR on disk"\)\?;//'

want="$*"
results=$work/results.txt
mkdir -p "$work"
: > "$results"
echo "$mutants" | while IFS='|' read -r name file subst; do
  if [ -n "$want" ] && ! echo " $want " | grep -q " $name "; then continue; fi
  src=$work/$name
  rm -rf "$src"
  mkdir -p "$src"
  # The tree as committed plus local edits, without target/.
  (cd "$here" && git ls-files -z | xargs -0 cp --parents -t "$src")
  before=$(md5sum "$src/$file")
  perl -0pi -e "$subst" "$src/$file"
  if [ "$(md5sum "$src/$file")" = "$before" ]; then
    echo "$name: the substitution matched nothing in $file (the call moved?)" >&2
    echo "$name|$file|-|substitution matched nothing" >> "$results"
    continue
  fi
  echo "== $name: $(cd "$src" && git -C "$here" diff --no-index --stat "$here/$file" "$src/$file" 2>/dev/null | tail -1)" >&2
  log=$work/$name.log
  if (cd "$src" && CARGO_TARGET_DIR=$target cargo test --release --locked --test crash) > "$log" 2>&1; then
    verdict="0 violations (the suite passed)"
  else
    v=$(grep -c '^VIOLATION' "$log" || true)
    total=$(sed -n 's/^\([0-9][0-9]*\) crash states break the rule.*/\1/p' "$log" | tail -1)
    verdict="${total:-$v} violations"
    grep -q 'crash states break the rule' "$log" || verdict="suite failed otherwise (see $log)"
  fi
  states=$(awk '/^(ext4|xfs) /{s = s $1 ":" $(NF-3) " "} END{print s}' "$log")
  echo "$name|$file|$states|$verdict" >> "$results"
  echo "$name: $verdict" >&2
done
printf '\n%-22s %-36s %-22s %s\n' mutant file states result
while IFS='|' read -r name file states verdict; do
  printf '%-22s %-36s %-22s %s\n' "$name" "$file" "$states" "$verdict"
done < "$results"
