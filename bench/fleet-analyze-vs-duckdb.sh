#!/usr/bin/env bash
# fleet analyze vs DuckDB on the same fleet as JSON lines, survey TSV and CSV,
# from two generators.
#
#   bench/fleet-analyze-vs-duckdb.sh [HOSTS] [PAIRS] [FORMATS] [GENERATORS]
#   bench/fleet-analyze-vs-duckdb.sh "1000000 10000000" 5 "tsv csv jsonl"   (the full proof)
#   BIN=/path/to/other/tmpfsctl NOBUILD=1 bench/fleet-analyze-vs-duckdb.sh ...  (before/after)
#   NARROW_ONLY=1 bench/fleet-analyze-vs-duckdb.sh 1000000 5 tsv   (the study's question only)
#
# For each of HOSTS (one count or several; default 1,000,000), generates
# that many synthetic hosts in each format
# (default "jsonl tsv csv"; files /tmp/tmpfsctl-bench-fleet-HOSTS.FORMAT are
# reused) with each of GENERATORS (default "gen distinct"):
# * gen: bench/fleet-gen.py, the survey's shape: /tmp mostly whole pages
#   of a few hundred sizes, RAM and swap a dozen values, names in order;
# * distinct: bench/fleet-gen-distinct.py (TSV and CSV only; files
#   /tmp/tmpfsctl-bench-fleet-distinct-HOSTS.FORMAT): /tmp, free memory and
#   free swap mostly distinct values, names in no order;
# then PAIRS times (default 5), alternated so that load from other
# work on the machine falls on both tools alike:
#
# * broad: `tmpfsctl fleet analyze FILE --json` against DuckDB computing the
#   same figures (a temporary table of one row per host, then the max/min/
#   mean/median/mode/p90/p99 of /tmp, inodes, RAM, MemAvailable, swap total/
#   used, the five bucket shares and the three fit models). Goal <= 0.3.
# * narrow (TSV and CSV): tmpfsctl against the fastest way to ask the study's
#   own question in DuckDB: one SELECT over read_csv on 2 threads with exactly
#   max/min/mean/median/mode/p90/p99 of /tmp and of RAM and the study's three
#   fit counts (/tmp <= half the RAM, <= MemFree, <= MemFree + SwapFree).
#   In two forms, each pair timing both: the column types detected
#   (`read_csv(FILE, delim='\t', header=false)`, what a DuckDB user types)
#   and all of them named (`columns={...'UBIGINT'...}`); the peer is the
#   form with the lower median, and its median ratio is the one to quote.
#   tmpfsctl still computes everything it reports. Goal <= 0.5. Checked once
#   per file and form: the query's answers must be tmpfsctl's.
# * floor (TSV): `cat FILE >/dev/null` and bench/fleet-split-floor.rs (map the
#   file, cut every line at its tabs, parse the numbers on 2 threads, store
#   nothing): what reading and splitting the input costs at all.
#
# A round runs tmpfsctl right before each peer: tmpfsctl, narrow DuckDB
# (detected), tmpfsctl, narrow DuckDB (named types), tmpfsctl, broad
# DuckDB, cat, splitter (NARROW_ONLY=1: the first four only). tmpfsctl is timed as a whole
# process; DuckDB inside Python after `import duckdb` and connect (its
# start-up is not counted against it). Peak RSS is /usr/bin/time's. Per
# format it prints the median wall times, the median of the per-pair ratios,
# and the largest peak RSS of each tool.
set -euo pipefail
cd "$(dirname "$0")/.."
COUNTS=${1:-1000000}
PAIRS=${2:-5}
[ "$PAIRS" -ge 5 ] || { echo "PAIRS must be 5 or more: fewer alternated pairs give no stable median" >&2; exit 2; }
FORMATS=${3:-jsonl tsv csv}
GENERATORS=${4:-gen distinct}
NARROW_ONLY=${NARROW_ONLY:-}
BIN=${BIN:-target/release/tmpfsctl}
[ -n "${NOBUILD:-}" ] || cargo build --release --quiet
python3 -c 'import duckdb' 2>/dev/null || python3 -m pip install --quiet duckdb
echo "hosts $COUNTS, $PAIRS alternated pairs; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); duckdb $(python3 -c 'import duckdb; print(duckdb.__version__)'); $("$BIN" --version)"

DUCK=$(mktemp --suffix=.py)
NARROW=$(mktemp --suffix=.py)
OUT=$(mktemp)
TIMES=$(mktemp)
FLOOR=$(mktemp)
TJSON=$(mktemp)
NJSON=$(mktemp)
trap 'rm -f "$DUCK" "$NARROW" "$OUT" "$TIMES" "$FLOOR" "$TJSON" "$NJSON"' EXIT
rustc -O -o "$FLOOR" bench/fleet-split-floor.rs
cat > "$DUCK" <<'PY'
import sys, time, duckdb
fmt, f = sys.argv[1], sys.argv[2]
con = duckdb.connect()
t0 = time.perf_counter()
KIB = "* 1024"
if fmt == "jsonl":
    # Newest snapshot per host, as tmpfsctl keeps.
    src = f"""
    SELECT host, list_filter(paths, lambda p: p.path = '/tmp')[1].used_bytes AS tmp,
           list_filter(paths, lambda p: p.path = '/tmp')[1].inodes AS inodes,
           mem_total_bytes AS mem, mem_available_bytes AS avail,
           swap_total_bytes AS swap_total, swap_free_bytes AS swap_free
    FROM read_json('{f}', format='newline_delimited')
    QUALIFY row_number() OVER (PARTITION BY host ORDER BY timestamp_unix_s DESC) = 1"""
elif fmt == "tsv":
    # No dedup for DuckDB here: the generated files have no duplicate hosts,
    # so the figures are the same and DuckDB is spared work tmpfsctl does
    # (it checks for duplicates): the ratio errs in DuckDB's favour.
    src = f"""
    SELECT host, tmp {KIB} AS tmp, inodes, total {KIB} AS mem,
           (free + buffers + cached) {KIB} AS avail, swap_total {KIB} AS swap_total,
           swap_free {KIB} AS swap_free
    FROM read_csv('{f}', delim='\t', header=false, columns={{
        'host': 'VARCHAR', 'tmp': 'UBIGINT', 'total': 'UBIGINT', 'used': 'UBIGINT',
        'free': 'UBIGINT', 'shared': 'UBIGINT', 'buffers': 'UBIGINT', 'cached': 'UBIGINT',
        'swap_total': 'UBIGINT', 'swap_used': 'UBIGINT', 'swap_free': 'UBIGINT',
        'inodes': 'UBIGINT'}})"""
else:
    src = f"""
    SELECT host, tmp_used_kb {KIB} AS tmp, tmp_inodes AS inodes,
           mem_total_kb {KIB} AS mem, (mem_free_kb + buffers_kb + cached_kb) {KIB} AS avail,
           swap_total_kb {KIB} AS swap_total, swap_free_kb {KIB} AS swap_free
    FROM read_csv('{f}', header=true)"""
con.execute(f"CREATE TEMP TABLE h AS {src}")
out = []
for col in ["tmp", "inodes", "mem", "avail", "swap_total", "swap_total - swap_free"]:
    out.append(con.execute(f"""SELECT max({col}), min({col}), avg({col}), median({col}), mode({col}),
        quantile_disc({col}, 0.9), quantile_disc({col}, 0.99) FROM h""").fetchone())
out.append(con.execute("""SELECT count(*),
    avg((tmp < 1048576)::int), avg((tmp < 10485760)::int), avg((tmp < 104857600)::int),
    avg((tmp < 1073741824)::int), avg((tmp < 5153960755)::int),
    sum((tmp <= mem / 2)::int), sum((tmp <= avail)::int), sum((tmp <= avail + swap_free)::int),
    quantile_disc(tmp / mem, 0.99)
    FROM h""").fetchone())
print(f"DUCKDB_WALL {time.perf_counter() - t0:.4f}")
print(out[0], out[-1])
PY
cat > "$NARROW" <<'PY'
import sys, time, json, duckdb
fmt, f, form = sys.argv[1], sys.argv[2], sys.argv[3]
con = duckdb.connect()
con.execute("SET threads = 2")
t0 = time.perf_counter()
if fmt == "tsv" and form == "detected":
    src = f"read_csv('{f}', delim='\t', header=false)"
    cols = ("column01 * 1024 AS tmp, column02 * 1024 AS mem, "
            "column04 * 1024 AS free, column10 * 1024 AS swap_free")
elif fmt == "tsv":
    src = f"""read_csv('{f}', delim='\t', header=false, columns={{
        'host': 'VARCHAR', 'tmp': 'UBIGINT', 'total': 'UBIGINT', 'used': 'UBIGINT',
        'free': 'UBIGINT', 'shared': 'UBIGINT', 'buffers': 'UBIGINT', 'cached': 'UBIGINT',
        'swap_total': 'UBIGINT', 'swap_used': 'UBIGINT', 'swap_free': 'UBIGINT',
        'inodes': 'UBIGINT'}})"""
    cols = "tmp * 1024 AS tmp, total * 1024 AS mem, free * 1024 AS free, swap_free * 1024 AS swap_free"
else:
    src = f"read_csv('{f}', header=true)"
    if form == "named":
        src = f"""read_csv('{f}', header=true, columns={{
        'host': 'VARCHAR', 'tmp_used_kb': 'UBIGINT', 'mem_total_kb': 'UBIGINT',
        'mem_free_kb': 'UBIGINT', 'buffers_kb': 'UBIGINT', 'cached_kb': 'UBIGINT',
        'swap_total_kb': 'UBIGINT', 'swap_free_kb': 'UBIGINT', 'tmp_inodes': 'UBIGINT'}})"""
    cols = ("tmp_used_kb * 1024 AS tmp, mem_total_kb * 1024 AS mem, "
            "mem_free_kb * 1024 AS free, swap_free_kb * 1024 AS swap_free")
stats = lambda c: (f"max({c}), min({c}), avg({c}), median({c}), mode({c}), "
                   f"quantile_disc({c}, 0.9), quantile_disc({c}, 0.99)")
row = con.execute(f"""SELECT {stats('tmp')}, {stats('mem')},
    count(*) FILTER (tmp <= mem // 2), count(*) FILTER (tmp <= free),
    count(*) FILTER (tmp <= free + swap_free)
    FROM (SELECT {cols} FROM {src})""").fetchone()
print(f"DUCKDB_WALL {time.perf_counter() - t0:.4f}")
print("ANSWER " + json.dumps([float(x) for x in row]))
PY

# timed LABEL CMD...: runs CMD under /usr/bin/time; prints "wall_s rss_kb".
timed() {
  local label=$1; shift
  local rc=0 t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f 'WALL %e RSS %M' "$@" > "$OUT" 2> "$TIMES" || rc=$?
  t1=$(date +%s%N)
  # tmpfsctl exits 1 when the fleet misses --target: a result, not a failure.
  if [ "$rc" -gt 1 ]; then echo "$label failed (exit $rc):" >&2; tail -5 "$TIMES" >&2; exit 1; fi
  local wall rss
  read -r wall rss < <(awk '/^WALL/ { print $2, $4 }' "$TIMES" | tail -1)
  # Nanoseconds around the process: /usr/bin/time's wall clock has 10 ms steps.
  wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", (b - a) / 1e9 }')
  if grep -q '^DUCKDB_WALL' "$OUT"; then wall=$(awk '/^DUCKDB_WALL/ { print $2 }' "$OUT"); fi
  case $label in
    tmpfsctl) cp "$OUT" "$TJSON" ;;
    narrow) grep '^ANSWER' "$OUT" | cut -d' ' -f2- > "$NJSON" ;;
  esac
  echo "$wall $rss"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
med() { printf '%s\n' "$@" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

# The narrow query's answers against tmpfsctl's --json: the same figures, or the times mean nothing.
check_narrow() {
  python3 - "$TJSON" "$NJSON" "$fmt" "$F" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
d = json.load(open(sys.argv[2]))
fmt, f = sys.argv[3], sys.argv[4]
want = []
for k in ("tmp_used_bytes", "mem_total_bytes"):
    s = t[k]
    want += [s["max"], s["min"], s["mean"], s["median"], s["mode"], s["p90"], s["p99"]]
want += [t["fit"][m]["count"] for m in ("half_ram", "mem_free", "mem_free_plus_swap")]
bad = [(i, a, b) for i, (a, b) in enumerate(zip(want, d)) if abs(a - b) > 1e-9 * max(1, abs(a))]
# A mode on a tie: tmpfsctl names the smallest of the equally frequent
# values, DuckDB's mode() any of them. Counted here (not timed): the same
# count, and tmpfsctl's the smaller, is the same answer.
ties = []
for i, a, b in [x for x in bad if x[0] in (4, 11)]:
    import duckdb
    kib = {"tsv": ["column01", "column02"], "csv": ["tmp_used_kb", "mem_total_kb"]}[fmt][i // 7]
    src = (f"read_csv('{f}', delim='\t', header=false)" if fmt == "tsv" else f"read_csv('{f}', header=true)")
    ca, cb = duckdb.connect().execute(f"SELECT count(*) FILTER ({kib} * 1024 = {int(a)}), "
                        f"count(*) FILTER ({kib} * 1024 = {int(b)}) FROM {src}").fetchone()
    if ca == cb and a < b:
        ties.append((i, a, b, ca))
bad = [x for x in bad if x[0] not in [y[0] for y in ties]]
if bad:
    sys.exit(f"narrow query answers differ from tmpfsctl's (index, tmpfsctl, duckdb): {bad}")
for i, a, b, c in ties:
    print(f"  narrow query: mode tie at index {i}: {int(a)} and {int(b)} both {c} hosts; tmpfsctl names the smaller")
print("  narrow query: same 17 answers as tmpfsctl")
PY
}

for N in $COUNTS; do
for g in $GENERATORS; do
for fmt in $FORMATS; do
  if [ "$g" = distinct ]; then
    [ "$fmt" = jsonl ] && continue
    F=/tmp/tmpfsctl-bench-fleet-distinct-$N.$fmt
    gen=$fmt; [ "$fmt" = tsv ] && gen=kirkland
    [ -s "$F" ] || { python3 bench/fleet-gen-distinct.py "$N" --format "$gen" > "$F.part" && mv "$F.part" "$F"; }
  else
    F=/tmp/tmpfsctl-bench-fleet-$N.$fmt
    gen=$fmt; [ "$fmt" = tsv ] && gen=kirkland
    # Written aside first: an interrupted run must not leave a short file to be reused.
    [ -s "$F" ] || { python3 bench/fleet-gen.py "$N" --format "$gen" > "$F.part" && mv "$F.part" "$F"; }
  fi
  echo "== $N hosts, $g, $fmt: $F ($(du -h "$F" | cut -f1)); load $(cut -d' ' -f1-3 /proc/loadavg)"
  narrow=0
  if [ "$fmt" = tsv ] || [ "$fmt" = csv ]; then narrow=1; fi
  broad=1
  if [ -n "$NARROW_ONLY" ] && [ "$narrow" = 1 ]; then broad=0; fi
  tws=() dws=() ratios=() cws=() fws=() fratios=() trss=0 drss=0
  declare -A nws=() nratios=() nrss=([detected]=0 [named]=0)
  for i in $(seq "$PAIRS"); do
    line="  pair $i:"
    if [ "$narrow" = 1 ]; then
      for form in detected named; do
        read -r tw tr < <(timed tmpfsctl "$BIN" fleet analyze "$F" --json)
        read -r nw nr < <(timed narrow python3 "$NARROW" "$fmt" "$F" "$form")
        [ "$i" = 1 ] && check_narrow
        r=$(ratio "$tw" "$nw")
        tws+=("$tw") nws[$form]+="$nw " nratios[$form]+="$r "
        [ "$tr" -gt "$trss" ] && trss=$tr
        [ "$nr" -gt "${nrss[$form]}" ] && nrss[$form]=$nr
        line="$line tmpfsctl ${tw}s duckdb-$form ${nw}s ratio $r;"
      done
    fi
    if [ "$broad" = 1 ]; then
      read -r tw tr < <(timed tmpfsctl "$BIN" fleet analyze "$F" --json)
      read -r dw dr < <(timed duckdb python3 "$DUCK" "$fmt" "$F")
      r=$(ratio "$tw" "$dw")
      tws+=("$tw") dws+=("$dw") ratios+=("$r")
      [ "$tr" -gt "$trss" ] && trss=$tr
      [ "$dr" -gt "$drss" ] && drss=$dr
      line="$line broad tmpfsctl ${tw}s duckdb ${dw}s ratio $r"
      if [ "$fmt" = tsv ]; then
        read -r cw _ < <(timed cat sh -c 'cat "$1" > /dev/null' sh "$F")
        read -r fw _ < <(timed floor "$FLOOR" "$F")
        cws+=("$cw") fws+=("$fw") fratios+=("$(ratio "$tw" "$fw")")
        line="$line; cat ${cw}s splitter ${fw}s"
      fi
    fi
    echo "$line"
  done
  echo "  $fmt: tmpfsctl median $(med "${tws[@]}")s, peak RSS $((trss / 1024)) MiB"
  if [ "$narrow" = 1 ]; then
    best=
    for form in detected named; do
      # shellcheck disable=SC2086
      m=$(med ${nws[$form]})
      # shellcheck disable=SC2086
      echo "  $fmt narrow, duckdb $form types (one SELECT, 2 threads): median $m s, peak RSS $((nrss[$form] / 1024)) MiB; median ratio tmpfsctl/duckdb $(med ${nratios[$form]}); peak RSS ratio $(ratio "$trss" "${nrss[$form]}")"
      if [ -z "$best" ] || awk -v a="$m" -v b="$bm" 'BEGIN { exit !(a < b) }'; then best=$form bm=$m; fi
    done
    # shellcheck disable=SC2086
    echo "  $fmt narrow, against DuckDB's faster form ($best types): median ratio tmpfsctl/duckdb $(med ${nratios[$best]}) (goal <= 0.5); peak RSS ratio $(ratio "$trss" "${nrss[$best]}")"
  fi
  if [ "$broad" = 1 ]; then
    echo "  $fmt broad: duckdb median $(med "${dws[@]}")s, peak RSS $((drss / 1024)) MiB; median ratio tmpfsctl/duckdb $(med "${ratios[@]}") (goal <= 0.3); peak RSS ratio $(ratio "$trss" "$drss")"
    if [ "$fmt" = tsv ]; then
      echo "  $fmt floor: cat median $(med "${cws[@]}")s, 2-thread splitter median $(med "${fws[@]}")s; median ratio tmpfsctl/splitter $(med "${fratios[@]}")"
    fi
  fi
  unset nws nratios nrss
done
done
done
