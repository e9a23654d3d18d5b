#!/usr/bin/env bash
# A seeded random sample of the data paths' mutants, spread over every file,
# for when the whole set (about 1,100 mutants at one to two minutes each on
# the shared 2-core machine) does not fit in the time there is.
#
#   bench/mutants-sample.sh                  # SEED=35, until STOP_AT
#   STOP_AT=22:50 bench/mutants-sample.sh    # start no mutant after 22:50
#   ONLY='sync.rs:233:' TESTS=persist::damage:: SRC=/tmp/x bench/mutants-sample.sh
#                          # rerun chosen ones (a regex over the names in
#                          # scope) against chosen tests, in another clone
#                          # (one clone runs one mutant at a time); the
#                          # outcomes go to $OUT/reruns.tsv, not the sample's
#   TABLE=1 bench/mutants-sample.sh          # the table of what has run
#   PART=1/2 SRC=/tmp/y TARGET_DIR=/tmp/t2 bench/mutants-sample.sh
#                          # a second run beside the first (PART=0/2)
#
# The draw: each file's mutants (less `|` -> `^` between distinct flag bits,
# equivalent, see bench/mutants.sh) in an order shuffled with SEED; round r
# tests the r-th of each file, so a run cut short holds the same share of
# every file. The plan is in $OUT/plan.tsv, each outcome in
# $OUT/results.tsv and $OUT/m*/mutants.out.
#
# Each mutant runs alone through bench/mutants.sh against its own file's
# tests, in place in a scratch clone of HEAD ($OUT/src, kept: the same path
# keeps incremental builds) with one target directory ($OUT/target) kept
# between mutants and runs. The tests are run once unmutated first: with
# the baseline skipped per mutant, a failing suite would call every mutant
# caught. Rerunning the script resumes: a mutant with an outcome is skipped.
#
# SCREEN=1 runs each mutant first against the library's unit tests alone
# (one build of the crate, seconds of tests), a mutant they miss against the
# FAST set of bench/mutants.sh, and only one that set misses against the
# whole set: each stage runs a subset of the next, so a catch is final.
#
# The table gives per file the caught share of viable mutants (a timeout
# counts as caught) with a 95 % Wilson interval: it is a sample.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/tmpfsctl-mutants-sample}
seed=${SEED:-35}
files=(src/persist/store src/persist/load.rs src/persist/verify.rs
  src/persist/restore.rs src/persist/sync.rs src/sys/atomic.rs src/sys/fs
  src/sys/copy src/mounts/apply.rs src/mounts/revert.rs)
mkdir -p "$out"

table() {
  python3 - "$out/results.tsv" <<'PY'
import collections, math, sys
rows = collections.defaultdict(collections.Counter)
for line in open(sys.argv[1]):
    i, f, name, kind, secs = line.rstrip("\n").split("\t")
    rows[f][kind] += 1
def wilson(k, n, z=1.96):
    if n == 0:
        return "-"
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return f"{100 * (c - h):.0f}-{100 * (c + h):.0f} %"
print("| file | mutants | caught | missed | timeout | unviable | caught of viable | 95 % interval |")
print("|---|---|---|---|---|---|---|---|")
total = collections.Counter()
for f in sorted(rows) + ["total"]:
    c = rows[f] if f != "total" else total
    if f != "total":
        total.update(c)
    viable = c["caught"] + c["missed"] + c["timeout"]
    k = c["caught"] + c["timeout"]
    pct = f"{100 * k / viable:.0f} %" if viable else "-"
    print(f"| {f} | {viable + c['unviable']} | {c['caught']} | {c['missed']} | "
          f"{c['timeout']} | {c['unviable']} | {pct} | {wilson(k, viable)} |")
PY
}
if [ -n "${TABLE:-}" ]; then
  [ -n "${ONLY:-}" ] || table
  exit 0
fi
command -v cargo-mutants >/dev/null || {
  echo "bench/mutants-sample.sh: cargo-mutants is not installed: cargo install cargo-mutants --locked" >&2
  exit 2
}

# The scratch clone, at this tree's HEAD or COMMIT (commit first: changes
# not committed are not in it).
head=$(git rev-parse "${COMMIT:-HEAD}")
src=${SRC:-$out/src}
if [ ! -d "$src/.git" ]; then
  git clone -q --no-checkout . "$src"
fi
git -C "$src" fetch -q "$PWD" "$head"
git -C "$src" checkout -q --force --detach "$head"
git -C "$src" clean -qfd

# The plan: every mutant in scope, drawn per file (a rerun's apart: a
# sample running meanwhile reads its own; written whole, then renamed).
plan=$out/plan.tsv
[ -z "${ONLY:-}" ] || plan=$out/plan-rerun.tsv
if [ ! -s "$plan" ] || [ "$(head -1 "$plan" | cut -f1)" != "#$head $seed" ]; then
  (cd "$src" && cargo mutants --list --json $(for f in "${files[@]}"; do
    if [ -d "$f" ]; then echo "--file=$f/**/*.rs"; else echo "--file=$f"; fi
  done)) > "$plan.json"
  python3 - "$seed" "$head" "$plan.json" > "$plan.new" <<'PY'
import collections, json, random, sys
seed, head = int(sys.argv[1]), sys.argv[2]
by_file = collections.defaultdict(list)
for m in json.load(open(sys.argv[3])):
    name = m["name"]
    if "replace | with ^" in name:
        continue
    by_file[m["file"]].append(name)
print(f"#{head} {seed}\t{sum(map(len, by_file.values()))} mutants in scope")
plan = []
for f in sorted(by_file):
    names = sorted(by_file[f])
    random.Random(f"{seed}:{f}").shuffle(names)
    plan += [(r, f, n) for r, n in enumerate(names)]
plan.sort(key=lambda p: (p[0], p[1]))
for r, f, n in plan:
    print(f"{r}\t{f}\t{n}")
PY
  mv "$plan.new" "$plan"
fi
echo "bench/mutants-sample.sh: $(head -1 "$plan" | cut -f2) at $head, seed $seed"
results=$out/results.tsv
[ -z "${ONLY:-}" ] || results=$out/reruns.tsv
touch "$results"

tdir=${TARGET_DIR:-$out/target}
# Keyed by the code and the tests, not the commit: a commit that changes
# only bench/ or docs/ keeps the baseline.
base=$out/baseline-$(git rev-parse "$head:src" "$head:tests" "$head:Cargo.toml" \
  "$head:Cargo.lock" | sha1sum | cut -c1-12)
if [ -z "${ONLY:-}" ] && [ ! -s "$base.secs" ]; then
  t0=$(date +%s)
  (cd "$src" && BASELINE=1 TARGET_DIR=$tdir bench/mutants.sh "${files[@]}") > "$base.log" 2>&1 || {
    echo "bench/mutants-sample.sh: the tests fail unmutated; see $base.log" >&2
    exit 1
  }
  echo $(($(date +%s) - t0)) > "$base.secs"
fi
# Ample for the tests of one file: a hang (a loop a mutant made endless)
# is cut and counted as caught.
[ -s "$base.secs" ] && timeout=$((3 * $(cat "$base.secs") + 120)) || timeout=900
timeout=${TIMEOUT:-$timeout}

stop=${STOP_AT:+$(date -d "$STOP_AT" +%s)}
n=0
# PART=k/n: this run takes the plan's k-th of every n mutants (n runs side
# by side, each with its own SRC and TARGET_DIR).
part=${PART:-0/1}
tail -n +2 "$plan" | awk -F'\t' -v k="${part%/*}" -v n="${part#*/}" '(NR - 1) % n == k' |
  while IFS=$'\t' read -r round file name; do
  if [ -n "${ONLY:-}" ]; then
    grep -qE -- "$ONLY" <<< "$name" || continue
  elif cut -f3 "$results" | grep -qxF -- "$name"; then
    continue
  fi
  if [ -n "$stop" ] && [ "$(date +%s)" -ge "$stop" ]; then
    echo "bench/mutants-sample.sh: $STOP_AT reached" >&2
    break
  fi
  n=$((n + 1))
  i=$(wc -l < "$results")
  [ -z "${ONLY:-}" ] || i=r$i
  # The name as a regex matching only itself (Rust regex syntax).
  re=^$(sed 's/[][\\.+*?(){}|^$]/\\&/g' <<< "$name")\$
  # cargo-mutants 27.1 also takes a file's "delete field" mutants whatever
  # --re and --exclude-re say (`--list` shows it: four for one name in
  # src/persist/load.rs); they cost time, and only the drawn one's outcome
  # is kept.
  # The tests of the file's whole unit (src/sys/fs's lib tests for a
  # mutant in src/sys/fs/meta.rs); RE keeps the one mutant.
  unit=$file
  for u in "${files[@]}"; do
    case $file in "$u" | "$u"/*) unit=$u ;; esac
  done
  t0=$(date +%s)
  run_one() { # OUT-suffix, extra env
    (cd "$src" && env "$@" OUT="$out/m$i$sfx" IN_PLACE=1 TARGET_DIR="$tdir" TIMEOUT="$timeout" \
      RE="$re" bench/mutants.sh "$unit") > "$out/m$i$sfx.log" 2>&1 || true
    python3 - "$out/m$i$sfx/mutants.out/outcomes.json" "$name" <<'PY' 2>/dev/null || echo error
import json, sys
o = [o for o in json.load(open(sys.argv[1]))["outcomes"]
     if isinstance(o["scenario"], dict) and "Mutant" in o["scenario"]
     and o["scenario"]["Mutant"]["name"] == sys.argv[2]]
print({"CaughtMutant": "caught", "MissedMutant": "missed", "Timeout": "timeout",
       "Unviable": "unviable"}.get(o[0]["summary"], o[0]["summary"]) if len(o) == 1 else "error")
PY
  }
  # SCREEN=1: first against the FAST set of bench/mutants.sh; a miss
  # there is run again against the whole set, whose verdict stands.
  sfx=
  if [ -n "${SCREEN:-}" ]; then
    kind=$(run_one LIB_ONLY=1)
    if [ "$kind" = missed ]; then
      sfx=-fast
      kind=$(run_one FAST=1)
    fi
    if [ "$kind" = missed ]; then
      sfx=-full
      kind=$(run_one FAST=)
    fi
  else
    kind=$(run_one FAST="${FAST:-}")
  fi
  # A killed run can leave the mutant in the clone: put it back.
  git -C "$src" checkout -q --force "$head"
  printf '%s\t%s\t%s\t%s\t%s\n' "$i" "$file" "$name" "$kind" $(($(date +%s) - t0)) >> "$results"
  echo "$(date +%T) $kind $(($(date +%s) - t0))s $name"
done
[ -n "${ONLY:-}" ] || table
