#!/usr/bin/env bash
# Mutation testing of the data paths: the functions that decide what is
# durable, copied, verified, restored or deleted. Each mutant (a function's
# body replaced, an operator flipped) is built and the tests that cover the
# file are run against it; a mutant no test fails is a gap.
#
#   cargo install cargo-mutants --locked     # once; not in scripts/setup,
#                                            # the test suite does not need it
#   bench/mutants.sh                         # every data-path file (many hours)
#   bench/mutants.sh src/sys/atomic.rs       # one file or directory
#   LIST=1 bench/mutants.sh src/persist/store   # count the mutants, build nothing
#   ITERATE=1 bench/mutants.sh FILE          # retest only what the last run in
#                                            # $OUT did not catch
#   RE='sync.rs:(120|233):' bench/mutants.sh src/persist/sync.rs  # chosen mutants
#   TESTS='persist::busy::' RE=... bench/mutants.sh FILE  # against chosen tests
#   BASELINE=1 bench/mutants.sh FILE         # those tests, unmutated
#   bench/mutants-sample.sh                  # a seeded sample of every file
#
# Only the targets that cover the data paths are built (the library's unit
# tests and tests/it), and only their tests for the files given run: the
# library's tests of that module and tests/it's tests of its capability.
# cargo-mutants passes `--cargo-arg` to its build and its test phase alike;
# arguments after `--` reach `cargo test` only, so targets and profile go
# through `--cargo-arg` (else the build phase builds every test target in
# another profile and the test phase builds again).
#
# The build profile is `mutants` (Cargo.toml: the test profile without
# debug info; incremental, opt-level 0). The same mutant built in turn in
# both profiles (two mutants, alternated, two rounds, load 18-22): 47, 53,
# 53, 56 s against 57, 71, 55, 73 s in the test profile, a median ratio of
# 0.80. opt-level and incremental are the test profile's, so the tests run
# the same code at the same speed. PROFILE=test uses the test profile.
# Without TARGET_DIR, the copy cargo-mutants builds in gets this tree's
# target/ (--copy-target: 2.4 GB here, and the copy's new path rebuilds the
# crate once a copy); do not build in this tree while a run starts, the
# copy fails on files cargo removes meanwhile. With TARGET_DIR and
# IN_PLACE in a scratch clone (bench/mutants-sample.sh), nothing is copied
# and dependencies are built once for every later run.
# Measured (load 15-20, nice 15): the first build of the crate 9 m 42 s;
# the tests of every data-path file unmutated 414 s (lib 9 s, tests/it
# 405 s); a mutant 4-6 minutes, most of it its build.
#
# JOBS (default 1: the machine is shared) builds that many mutants at once;
# SHUFFLE=1 takes them in random order (a fair sample when a run is cut
# short); EXCLUDE_RE leaves out mutants by name, for example
# 'replace \| with \^' (a flip of `|` to `^` between distinct flag bits,
# OFlags::RDONLY | OFlags::CLOEXEC, yields the same value: equivalent);
# SLOW=1 keeps the slow tests; LIB_ONLY=1 builds and runs the library's
# unit tests alone.
# Results land in ${OUT:-/tmp/tmpfsctl-mutants}/mutants.out (caught.txt,
# missed.txt, timeout.txt, unviable.txt, outcomes.json); a table a file is
# printed last.
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
skips=()
lib=
it=
for f in "${all[@]}"; do
  f=${f%/}
  [ -e "$f" ] || continue
  # A slash in the glob makes cargo-mutants match it against the whole path.
  if [ -d "$f" ]; then files+=("--file=$f/**/*.rs"); else files+=("--file=$f"); fi
  # The library's unit tests of that module (src/a/b.rs -> a::b), built
  # only when the module has some: the library's test build is a second
  # compile of the whole crate.
  if grep -rqs '#\[cfg(test)\]' "$f"; then
    m=${f#src/}; m=${m%.rs}; m=${m%/mod}; filters+=("${m//\//::}::")
    lib=1
  fi
  # ... and the integration tests of the capability it serves.
  it=1
  case $f in
    src/persist/*) filters+=(persist::) ;;
    src/mounts/* | src/sys/copy*) filters+=(mounts::) ;;
    src/sys/atomic.rs | src/sys/fs*) filters+=(persist::lifecycle:: mounts::data::) ;;
  esac
done
[ ${#files[@]} -gt 0 ] || { echo "bench/mutants.sh: none of ${all[*]} exists" >&2; exit 2; }
mapfile -t filters < <(printf '%s\n' "${filters[@]}" | sort -u)
# The slow ones (minutes each: writers racing syncs, kill -9 and stop
# loops, crash replays) are left out unless SLOW is set; the fast ones
# cover the same functions with one pass each.
[ -n "${SLOW:-}" ] || skips=(--skip persist::busy::held_open_writer
  --skip persist::busy::in_place_rewriter --skip persist::stop::
  --skip persist::crash:: --skip mounts::races:: --skip mounts::crash::
  --skip mounts::interrupt::)
# FAST=1 leaves out more (zram devices, the busy writers, the 2,100-level
# trees, the killed prune of 1,500 files, systemd-analyze): a first screen;
# a mutant it misses is run again without FAST (bench/mutants-sample.sh
# does), so a miss is never the screen's.
[ -z "${FAST:-}" ] || skips+=(--skip persist::zram:: --skip persist::busy::
  --skip mounts::deep:: --skip persist::lifecycle::a_sync_killed_during_its_prune
  --skip persist::units:: --skip persist::systemd_units_verify)
# TESTS replaces the filters and the skips: a rerun of chosen mutants
# (RE) against the tests that should catch them.
if [ -n "${TESTS:-}" ]; then
  read -ra filters <<< "$TESTS"
  skips=()
fi
if [ -n "${LIST:-}" ]; then
  exec cargo mutants --list "${files[@]}"
fi
out=${OUT:-/tmp/tmpfsctl-mutants}
mkdir -p "$out"
args=(--output "$out" --cargo-arg=--locked)
# cargo-mutants refuses --jobs with --in-place (one tree, one mutant).
[ -n "${IN_PLACE:-}" ] || args+=(--jobs "${JOBS:-1}")
# PROFILE (default `mutants`: the test profile without debug info, see
# Cargo.toml) and TARGET_DIR: one target directory kept between runs, so
# dependencies are built once, not copied with target/ into every copy
# cargo-mutants makes. IN_PLACE=1 mutates this tree's files themselves:
# only in a scratch clone (bench/mutants-sample.sh makes one), never in a
# tree someone edits or commits from; refused on a tree with changes.
[ "${PROFILE:-mutants}" = test ] || args+=("--profile=${PROFILE:-mutants}")
if [ -n "${TARGET_DIR:-}" ]; then
  export CARGO_TARGET_DIR=$TARGET_DIR
  [ "${JOBS:-1}" = 1 ] || { echo "bench/mutants.sh: TARGET_DIR is one build at a time (JOBS=1)" >&2; exit 2; }
else
  args+=(--copy-target=true)
fi
if [ -n "${IN_PLACE:-}" ]; then
  [ -z "$(git status --porcelain --untracked-files=no)" ] || {
    echo "bench/mutants.sh: IN_PLACE needs a tree without changes (a killed run leaves a mutant: git checkout .)" >&2
    exit 2
  }
  args+=(--in-place)
fi
# LIB_ONLY: the library's unit tests alone (one build a mutant instead of
# three; a first pass over a module whose unit tests are thorough).
[ -n "${LIB_ONLY:-}" ] && { it=; lib=1; }
[ -n "$lib" ] && args+=(--cargo-arg=--lib)
[ -n "$it" ] && args+=(--cargo-arg=--test=it)
args+=("${files[@]}")
[ -n "${EXCLUDE_RE:-}" ] && args+=("--exclude-re=$EXCLUDE_RE")
[ -n "${TIMEOUT:-}" ] && args+=(--baseline=skip "--timeout=$TIMEOUT" "--build-timeout=${BUILD_TIMEOUT:-1800}")
[ -n "${ITERATE:-}" ] && args+=(--iterate)
[ -n "${RE:-}" ] && args+=("--re=$RE")
[ -n "${SHUFFLE:-}" ] && args+=(--shuffle)
# BASELINE=1: the tests these mutants would face, run once unmutated (with
# --baseline=skip, which TIMEOUT sets, a failing suite would call every
# mutant caught).
if [ -n "${BASELINE:-}" ]; then
  t=(--locked "--profile=${PROFILE:-mutants}")
  [ "${PROFILE:-mutants}" = test ] && t=(--locked)
  [ -n "$lib" ] && t+=(--lib)
  [ -n "$it" ] && t+=(--test=it)
  echo "+ nice -n ${NICE:-15} cargo test ${t[*]} -- ${filters[*]} ${skips[*]}"
  exec nice -n "${NICE:-15}" cargo test "${t[@]}" -- "${filters[@]}" "${skips[@]}"
fi
# libtest runs a test that matches any one of the filters.
args+=(-- -- "${filters[@]}" "${skips[@]}")
echo "+ nice -n ${NICE:-15} cargo mutants ${args[*]}"
rc=0
nice -n "${NICE:-15}" cargo mutants "${args[@]}" || rc=$?
d=$out/mutants.out
# One row a file, then the total; "caught of viable" counts a timeout as
# caught (the mutant hung a test). Earlier runs' catches (--iterate) are in
# previously_caught.txt, not here.
[ -f "$d/outcomes.json" ] || exit "$rc"
python3 - "$d/outcomes.json" <<'PY'
import collections, json, sys
rows = collections.defaultdict(collections.Counter)
for o in json.load(open(sys.argv[1]))["outcomes"]:
    m = o["scenario"]
    if not isinstance(m, dict) or "Mutant" not in m:
        continue
    kind = {"CaughtMutant": "caught", "MissedMutant": "missed",
            "Timeout": "timeout", "Unviable": "unviable"}.get(o["summary"], o["summary"])
    rows[m["Mutant"]["file"]][kind] += 1
print("| file | mutants | caught | missed | timeout | unviable | caught of viable |")
print("|---|---|---|---|---|---|---|")
total = collections.Counter()
for f in sorted(rows) + ["total"]:
    c = rows[f] if f != "total" else total
    if f != "total":
        total.update(c)
    viable = c["caught"] + c["missed"] + c["timeout"]
    pct = f"{100 * (c['caught'] + c['timeout']) // viable} %" if viable else "-"
    print(f"| {f} | {viable + c['unviable']} | {c['caught']} | {c['missed']} | {c['timeout']} | {c['unviable']} | {pct} |")
PY
[ ! -s "$d/missed.txt" ] || { echo; echo "missed:"; sed 's/^/  /' "$d/missed.txt"; }
# cargo-mutants exits 2 when a mutant was missed, 3 on a timeout: the table
# says which; 1 and 4 (usage, a failing baseline) are passed on.
case $rc in 0 | 2 | 3) exit 0 ;; *) exit $rc ;; esac
