#!/usr/bin/env bash
# What `tmpfsctl run -- CMD` costs on top of CMD, against the peer it replaces:
# the usual scratch script (mktemp -d, cd, run the command with TMPDIR set, rm -rf).
# CMD is /usr/bin/true (an external program in all three, so nothing is a
# shell builtin). Same hyperfine run, ratios printed at the end.
#
# Targets: tmpfsctl adds < 5 ms median over plain `true`, and
# tmpfsctl / mktemp script <= 1.0. tmpfsctl's figure includes what it does for
# safety on every run: as root the cgroup CMD runs in (made and removed), the
# guard process forked beside it, and PR_SET_PDEATHSIG; unprivileged (run it
# as another user, e.g. `setpriv --reuid=65534 --regid=65534 --clear-groups`)
# the PID namespace CMD runs in, its init and the /proc mounted for it.
#
# Then idle wake-ups: `tmpfsctl run -- sleep IDLE_S` and the samples it took
# (the `samples` field of --json: one wake-up and one fstatfs each), against
# the 100/s of a fixed 10 ms sampler, and against BASELINE (another tmpfsctl
# build, e.g. one from before adaptive sampling) when given.
#
# Usage: bench/run-overhead.sh [path/to/tmpfsctl]   (default: target/release/tmpfsctl)
# Env:   RUNS (default 300), WARMUP (default 30), IDLE_S (default 5),
#        BASELINE (optional path to another tmpfsctl)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/tmpfsctl}
[ -x "$bin" ] || cargo build --release --quiet
bin=$(realpath "$bin")
true_bin=$(command -v true | grep / || echo /usr/bin/true)
[ -x /usr/bin/true ] && true_bin=/usr/bin/true
runs=${RUNS:-300}
warmup=${WARMUP:-30}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The mktemp script, with the interactive shell replaced by the command to run.
cat >"$work/mktemp-scratch.sh" <<'EOF'
#!/usr/bin/bash
prev_dir=$PWD
dir=$(mktemp -d)
cd "$dir"
PREV=$prev_dir TMPDIR=$dir "$@"
rm -rf "$dir"
EOF
chmod +x "$work/mktemp-scratch.sh"

mode=$("$bin" run --json fd:1 --quiet -- "$true_bin" | jq -r .mode)
echo "tmpfsctl: $bin (scratch mode: $mode, uid $(id -u))"
echo "kernel $(uname -r), $(nproc) CPUs, hyperfine $(hyperfine --version | cut -d' ' -f2)"
echo

hyperfine -N --warmup "$warmup" --runs "$runs" --export-json "$work/r.json" \
    -n "true" "$true_bin" \
    -n "tmpfsctl run -- true" "$bin run --quiet -- $true_bin" \
    -n "mktemp script" "$work/mktemp-scratch.sh $true_bin"

echo
jq -r '
  (.results | map({(.command): .}) | add) as $r
  | ($r["true"].median * 1000) as $t
  | ($r["tmpfsctl run -- true"].median * 1000) as $x
  | ($r["mktemp script"].median * 1000) as $s
  | "median: true \($t*1000|round/1000) ms, tmpfsctl run \($x*1000|round/1000) ms, mktemp script \($s*1000|round/1000) ms",
    "tmpfsctl run adds \(($x-$t)*1000|round/1000) ms over plain true (target < 5 ms): \(if ($x-$t) < 5 then "OK" else "MISSED" end)",
    "ratio tmpfsctl run / mktemp script = \(($x/$s)*1000|round/1000) (target <= 1.0): \(if $x <= $s then "OK" else "MISSED" end)"
' "$work/r.json"

idle=${IDLE_S:-5}
idle_rate() { "$1" run --quiet --size 16M --json fd:1 -- sleep "$idle" | jq -r '.samples / (.wall_ns / 1e9)'; }
echo
rate=$(idle_rate "$bin")
echo "idle: tmpfsctl run -- sleep $idle: $(printf '%.1f' "$rate") samples/s (a fixed 10 ms sampler: 100/s; ratio $(jq -n "$rate/100*1000|round/1000"))"
if [ -n "${BASELINE:-}" ]; then
    base=$(idle_rate "$(realpath "$BASELINE")")
    echo "idle: baseline $BASELINE: $(printf '%.1f' "$base") samples/s; ratio tmpfsctl / baseline = $(jq -n "$rate/$base*1000|round/1000")"
fi
