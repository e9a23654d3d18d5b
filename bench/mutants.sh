#!/usr/bin/env bash
# Mutation testing of the data paths: the functions that decide what is
# durable, copied, verified, restored or deleted. Each mutant (a function's
# body replaced, an operator flipped) is built and the tests that cover the
# file are run against it; a mutant no test fails is a gap.
#
#   cargo install cargo-mutants --locked     # once; not in scripts/setup,
#                                            # the test suite does not need it
#   bench/mutants.sh                         # every data-path file (hours)
#   bench/mutants.sh src/sys/atomic.rs       # one file or directory
#
# JOBS (default 1: the machine is shared) builds that many mutants at once.
# Results land in ${OUT:-/tmp/tmpfsctl-mutants}/mutants.out (caught.txt,
# missed.txt, timeout.txt, unviable.txt); the summary table is printed last.
# Run as root: the integration tests mount real tmpfs filesystems.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-mutants >/dev/null || {
  echo "bench/mutants.sh: cargo-mutants is not installed: cargo install cargo-mutants --locked" >&2
  exit 2
}
# Wherever the shared engines live (the copy toolkit moved from mounts/ to sys/).
all=(src/persist/store src/persist/load.rs src/persist/verify.rs
  src/persist/restore.rs src/persist/sync.rs src/sys/atomic.rs src/sys/fs
  src/sys/copy src/mounts/copy src/mounts/apply.rs src/mounts/revert.rs)
[ $# -gt 0 ] && all=("$@")
files=()
filters=()
for f in "${all[@]}"; do
  [ -e "$f" ] || continue
  if [ -d "$f" ]; then files+=(-f "$f/**/*.rs"); else files+=(-f "$f"); fi
  # The library's unit tests of that module (src/a/b.rs -> a::b) ...
  m=${f#src/}; m=${m%.rs}; m=${m%/mod}; filters+=("${m//\//::}")
  # ... and the integration tests of the capability it serves.
  case $f in
    src/persist/*) filters+=(persist::) ;;
    src/mounts/* | src/sys/copy*) filters+=(mounts) ;;
    src/sys/atomic.rs | src/sys/fs*) filters+=(persist::lifecycle mounts::data) ;;
  esac
done
[ ${#files[@]} -gt 0 ] || { echo "bench/mutants.sh: none of ${all[*]} exists" >&2; exit 2; }
mapfile -t filters < <(printf '%s\n' "${filters[@]}" | sort -u)
out=${OUT:-/tmp/tmpfsctl-mutants}
mkdir -p "$out"
echo "+ cargo mutants ${files[*]} -- --release --lib --test it -- ${filters[*]}"
rc=0
cargo mutants --jobs "${JOBS:-1}" --output "$out" "${files[@]}" \
  -- --release --lib --test it -- "${filters[@]}" || rc=$?
d=$out/mutants.out
c() { [ -f "$d/$1" ] && grep -c . "$d/$1" || echo 0; }
caught=$(c caught.txt) missed=$(c missed.txt) timeout=$(c timeout.txt) unviable=$(c unviable.txt)
viable=$((caught + missed + timeout))
echo
echo "| mutants | caught | missed | timeout | unviable | caught of viable |"
echo "|---|---|---|---|---|---|"
echo "| $((viable + unviable)) | $caught | $missed | $timeout | $unviable | $([ $viable -gt 0 ] && echo "$((100 * (caught + timeout) / viable)) %" || echo -) |"
[ "$missed" = 0 ] || { echo; echo "missed:"; sed 's/^/  /' "$d/missed.txt"; }
exit $rc
