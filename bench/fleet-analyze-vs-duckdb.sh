#!/usr/bin/env bash
# fleet analyze vs DuckDB on the same fleet as JSON lines, survey TSV and CSV.
#
#   bench/fleet-analyze-vs-duckdb.sh [HOSTS] [PAIRS] [FORMATS]
#   bench/fleet-analyze-vs-duckdb.sh "1000000 10000000" 5 "tsv csv jsonl"   (the full proof)
#   BIN=/path/to/other/tmpfsctl NOBUILD=1 bench/fleet-analyze-vs-duckdb.sh ...  (before/after)
#
# For each of HOSTS (one count or several; default 1,000,000), generates
# that many synthetic hosts in each format
# (default "jsonl tsv csv"; files /tmp/tmpfsctl-bench-fleet-HOSTS.FORMAT are
# reused), then runs `tmpfsctl fleet analyze FILE --json` and a DuckDB query
# computing the same figures (one row per host, the max/min/mean/median/mode/
# p90/p99 of /tmp, inodes, RAM, MemAvailable, swap total/used, the five bucket shares and
# the three fit models) PAIRS times (default 5), the two tools alternated so
# that load from other work on the machine falls on both alike.
#
# tmpfsctl is timed as a whole process; DuckDB inside Python after `import
# duckdb` and connect (its start-up is not counted against it). Peak RSS of
# both is /usr/bin/time's. Per format it prints the median wall times, the
# median of the per-pair ratios, and the largest peak RSS of each tool.
set -euo pipefail
cd "$(dirname "$0")/.."
COUNTS=${1:-1000000}
PAIRS=${2:-5}
[ "$PAIRS" -ge 5 ] || { echo "PAIRS must be 5 or more: fewer alternated pairs give no stable median" >&2; exit 2; }
FORMATS=${3:-jsonl tsv csv}
BIN=${BIN:-target/release/tmpfsctl}
[ -n "${NOBUILD:-}" ] || cargo build --release --quiet
python3 -c 'import duckdb' 2>/dev/null || python3 -m pip install --quiet duckdb
echo "hosts $COUNTS, $PAIRS alternated pairs; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); duckdb $(python3 -c 'import duckdb; print(duckdb.__version__)'); $("$BIN" --version)"

DUCK=$(mktemp --suffix=.py)
OUT=$(mktemp)
TIMES=$(mktemp)
trap 'rm -f "$DUCK" "$OUT" "$TIMES"' EXIT
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

# timed LABEL CMD...: runs CMD under /usr/bin/time; prints "wall_s rss_kb".
timed() {
  local label=$1; shift
  local rc=0
  /usr/bin/time -f 'WALL %e RSS %M' "$@" > "$OUT" 2> "$TIMES" || rc=$?
  # tmpfsctl exits 1 when the fleet misses --target: a result, not a failure.
  if [ "$rc" -gt 1 ]; then echo "$label failed (exit $rc):" >&2; tail -5 "$TIMES" >&2; exit 1; fi
  local wall rss
  read -r wall rss < <(awk '/^WALL/ { print $2, $4 }' "$TIMES" | tail -1)
  if grep -q '^DUCKDB_WALL' "$OUT"; then wall=$(awk '/^DUCKDB_WALL/ { print $2 }' "$OUT"); fi
  echo "$wall $rss"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for N in $COUNTS; do
for fmt in $FORMATS; do
  F=/tmp/tmpfsctl-bench-fleet-$N.$fmt
  gen=$fmt; [ "$fmt" = tsv ] && gen=kirkland
  # Written aside first: an interrupted run must not leave a short file to be reused.
  [ -s "$F" ] || { python3 bench/fleet-gen.py "$N" --format "$gen" > "$F.part" && mv "$F.part" "$F"; }
  echo "== $N hosts, $fmt: $F ($(du -h "$F" | cut -f1))"
  tws=() dws=() ratios=() trss=0 drss=0
  for i in $(seq "$PAIRS"); do
    read -r tw tr < <(timed tmpfsctl "$BIN" fleet analyze "$F" --json)
    read -r dw dr < <(timed duckdb python3 "$DUCK" "$fmt" "$F")
    r=$(awk -v a="$tw" -v b="$dw" 'BEGIN { printf "%.3f", a / b }')
    echo "  pair $i: tmpfsctl ${tw}s ($((tr / 1024)) MiB)  duckdb ${dw}s ($((dr / 1024)) MiB)  ratio $r"
    tws+=("$tw") dws+=("$dw") ratios+=("$r")
    [ "$tr" -gt "$trss" ] && trss=$tr
    [ "$dr" -gt "$drss" ] && drss=$dr
  done
  tm=$(printf '%s\n' "${tws[@]}" | median)
  dm=$(printf '%s\n' "${dws[@]}" | median)
  rm_=$(printf '%s\n' "${ratios[@]}" | median)
  echo "  $fmt: tmpfsctl median ${tm}s, duckdb median ${dm}s; median ratio tmpfsctl/duckdb $rm_ (goal <= 0.5)"
  echo "  $fmt: peak RSS tmpfsctl $((trss / 1024)) MiB, duckdb $((drss / 1024)) MiB; ratio $(awk -v a="$trss" -v b="$drss" 'BEGIN { printf "%.2f", a / b }')"
done
done
