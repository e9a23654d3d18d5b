#!/usr/bin/env bash
# fleet analyze vs DuckDB on the same JSON-lines file, same run.
#
#   bench/fleet-analyze-vs-duckdb.sh [HOSTS] [FILE]
#   BIN=/path/to/other/tmpfsctl NOBUILD=1 bench/fleet-analyze-vs-duckdb.sh ...  (before/after)
#
# Generates HOSTS synthetic `tmpfsctl collect` lines (default 1,000,000) unless
# FILE exists, then times `tmpfsctl fleet analyze FILE --json` and a DuckDB
# query computing the same figures (dedup by host keeping the newest, the
# max/min/mean/median/mode/p90/p99 of /tmp, inodes, RAM, swap total/used,
# the five bucket shares and the three fit models), each 3 times, and prints
# the median wall time, peak RSS (/usr/bin/time -v) and the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
F=${2:-/tmp/tmpfsctl-bench-fleet-$N.jsonl}
BIN=${BIN:-target/release/tmpfsctl}
[ -n "${NOBUILD:-}" ] || cargo build --release --quiet
python3 -c 'import duckdb' 2>/dev/null || python3 -m pip install --quiet duckdb
[ -s "$F" ] || { echo "generating $N hosts into $F"; python3 bench/fleet-gen.py "$N" > "$F"; }
echo "input: $F ($(du -h "$F" | cut -f1), $(wc -l < "$F") lines); $(nproc) cores; duckdb $(python3 -c 'import duckdb; print(duckdb.__version__)')"

DUCK=$(mktemp --suffix=.py)
trap 'rm -f "$DUCK"' EXIT
cat > "$DUCK" <<'PY'
import sys, duckdb
f = sys.argv[1]
con = duckdb.connect()
con.execute(f"""
CREATE TEMP TABLE h AS
SELECT host, timestamp_unix_s AS ts,
       list_filter(paths, lambda p: p.path = '/tmp')[1].used_bytes AS tmp,
       list_filter(paths, lambda p: p.path = '/tmp')[1].inodes AS inodes,
       mem_total_bytes AS mem, mem_available_bytes AS avail,
       swap_total_bytes AS swap_total, swap_free_bytes AS swap_free
FROM read_json('{f}', format='newline_delimited')
QUALIFY row_number() OVER (PARTITION BY host ORDER BY ts DESC) = 1
""")
out = []
for col in ["tmp", "inodes", "mem", "swap_total", "swap_total - swap_free"]:
    out.append(con.execute(f"""SELECT max({col}), min({col}), avg({col}), median({col}), mode({col}),
        quantile_disc({col}, 0.9), quantile_disc({col}, 0.99) FROM h""").fetchone())
out.append(con.execute("""SELECT count(*),
    avg((tmp < 1048576)::int), avg((tmp < 10485760)::int), avg((tmp < 104857600)::int),
    avg((tmp < 1073741824)::int), avg((tmp < 5153960755)::int),
    sum((tmp <= mem / 2)::int), sum((tmp <= avail)::int), sum((tmp <= avail + swap_free)::int),
    quantile_disc(tmp / mem, 0.99)
    FROM h""").fetchone())
print(out[0], out[-1])
PY

run() { # label, command...; prints "wall_s rss_kb" of the median of 3 runs
  local label=$1; shift
  local res=()
  for i in 1 2 3; do
    local rc=0
    /usr/bin/time -v "$@" > /tmp/tmpfsctl-bench.out 2> /tmp/tmpfsctl-bench.time || rc=$?
    # tmpfsctl exits 1 when the fleet misses --target: a result, not a failure.
    if [ "$rc" -gt 1 ]; then echo "$label failed (exit $rc):" >&2; tail -5 /tmp/tmpfsctl-bench.time >&2; exit 1; fi
    local wall rss
    wall=$(grep 'Elapsed (wall clock)' /tmp/tmpfsctl-bench.time | awk '{print $NF}' | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
    rss=$(grep 'Maximum resident' /tmp/tmpfsctl-bench.time | awk '{print $NF}')
    res+=("$wall $rss")
    echo "  $label run $i: ${wall}s, peak RSS $((rss / 1024)) MiB" >&2
  done
  printf '%s\n' "${res[@]}" | sort -n | sed -n 2p
}

T=$(run "tmpfsctl fleet analyze" "$BIN" fleet analyze "$F" --json)
D=$(run "duckdb" python3 "$DUCK" "$F")
read -r tw tr <<< "$T"
read -r dw dr <<< "$D"
echo "tmpfsctl fleet analyze: median ${tw}s, peak RSS $((tr / 1024)) MiB"
echo "duckdb (same figures):  median ${dw}s, peak RSS $((dr / 1024)) MiB"
awk -v a="$tw" -v b="$dw" 'BEGIN { printf "ratio tmpfsctl/duckdb wall time: %.2f (<= 1.0 means tmpfsctl is no slower)\n", a / b }'
awk -v a="$tr" -v b="$dr" 'BEGIN { printf "ratio tmpfsctl/duckdb peak RSS:  %.2f\n", a / b }'
