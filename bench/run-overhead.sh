#!/usr/bin/env bash
# What `tmpfsctl run --quiet -- true` costs, against the peer it replaces:
# the usual scratch script
#     sh -c 'd=$(mktemp -d); cd "$d"; TMPDIR=$d true; cd /; rm -rf "$d"'
# as root and as an unprivileged user (nobody, through setpriv).
#
# Paired and alternated: each pair times a loop of LOOP runs of tmpfsctl,
# then a loop of LOOP runs of the script (the order flips every pair), in
# the same shell, and takes the ratio; the ratio printed is the median of
# PAIRS pairs, with the lowest and highest. A drifting machine moves both
# halves of a pair alike, so the ratio holds where absolute times do not.
# The loop runs as the user measured (the unprivileged loop is one bash
# started by setpriv), so neither side pays for a setpriv of its own.
#
# Beside them, per run: plain `true` (the command itself) and
# `tmpfsctl --version` (starting this binary and nothing else): together the
# floor any `tmpfsctl run` stands on, printed as the ratio it would reach.
#
# tmpfsctl's figure includes what it does for safety on every run: as root
# the cgroup CMD is born in (made and removed), the guard process beside it
# and PR_SET_PDEATHSIG; unprivileged the PID namespace CMD runs in, its init
# and the /proc mounted for it; both the private tmpfs in a mount namespace.
#
# Then idle wake-ups: `tmpfsctl run -- sleep IDLE_S` and the samples it took
# (the `samples` field of --json), against the 100/s of a fixed 10 ms
# sampler, and against BASELINE (another tmpfsctl build) when given.
#
# Usage: bench/run-overhead.sh [path/to/tmpfsctl]   (default: target/release/tmpfsctl)
# Env:   PAIRS (default 11), LOOP (default 40), IDLE_S (default 5; 0 skips),
#        USERS (default "root nobody"), BASELINE (optional path to another tmpfsctl)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release/tmpfsctl}
[ -x "$bin" ] || cargo build --release --quiet
bin=$(realpath "$bin")
pairs=${PAIRS:-11}
loop=${LOOP:-40}
users=${USERS:-root nobody}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
# A copy nobody can run wherever the build lives.
cp "$bin" "$work/tmpfsctl"
chmod 755 "$work/tmpfsctl"

# Microseconds per run of "$@", over LOOP runs.
cat >"$work/per-run.sh" <<'EOF'
#!/usr/bin/env bash
n=$1; shift
t0=${EPOCHREALTIME/./}
for ((i = 0; i < n; i++)); do "$@" >/dev/null; done
t1=${EPOCHREALTIME/./}
echo $(((t1 - t0) / n))
EOF
chmod 755 "$work/per-run.sh"
script='d=$(mktemp -d); cd "$d"; TMPDIR=$d true; cd /; rm -rf "$d"'

as_user() {
    local user=$1
    shift
    if [ "$user" = root ]; then
        "$@"
    else
        setpriv --reuid="$(id -u "$user")" --regid="$(id -g "$user")" --clear-groups -- "$@"
    fi
}

# median of the numbers on stdin
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "tmpfsctl: $bin"
echo "kernel $(uname -r), $(nproc) CPUs; $pairs pairs of $loop runs each, alternated"
for user in $users; do
    (cd / && as_user "$user" "$work/per-run.sh" 1 "$work/tmpfsctl" run --quiet -- true) >/dev/null || {
        echo "$user: tmpfsctl run failed, skipped"
        continue
    }
    mode=$(cd / && as_user "$user" "$work/tmpfsctl" run --json fd:1 --quiet -- true | jq -r .mode)
    ratios=() ; ts=() ; ss=() ; floors=()
    for ((p = 0; p < pairs; p++)); do
        run_t() { (cd / && as_user "$user" "$work/per-run.sh" "$loop" "$work/tmpfsctl" run --quiet -- true); }
        run_s() { (cd / && as_user "$user" "$work/per-run.sh" "$loop" sh -c "$script"); }
        if ((p % 2)); then s=$(run_s); t=$(run_t); else t=$(run_t); s=$(run_s); fi
        v=$(cd / && as_user "$user" "$work/per-run.sh" "$loop" "$work/tmpfsctl" --version)
        u=$(cd / && as_user "$user" "$work/per-run.sh" "$loop" /usr/bin/true)
        ts+=("$t"); ss+=("$s")
        ratios+=("$(awk -v a="$t" -v b="$s" 'BEGIN {printf "%.3f", a / b}')")
        floors+=("$(awk -v v="$v" -v u="$u" -v b="$s" 'BEGIN {printf "%.3f", (v + u) / b}')")
    done
    r_med=$(printf '%s\n' "${ratios[@]}" | median)
    r_min=$(printf '%s\n' "${ratios[@]}" | sort -g | head -1)
    r_max=$(printf '%s\n' "${ratios[@]}" | sort -g | tail -1)
    echo
    echo "as $user (scratch mode: $mode):"
    echo "  per run, median of $pairs: tmpfsctl run $(printf '%s\n' "${ts[@]}" | median) us, mktemp script $(printf '%s\n' "${ss[@]}" | median) us"
    echo "  pair ratios: ${ratios[*]}"
    echo "  ratio tmpfsctl run / mktemp script = $r_med (min $r_min, max $r_max; target <= 0.5: $(awk -v r="$r_med" 'BEGIN {print (r <= 0.5 ? "OK" : "MISSED")}'))"
    echo "  floor (tmpfsctl --version + true) / mktemp script = $(printf '%s\n' "${floors[@]}" | median)"
done

idle=${IDLE_S:-5}
[ "$idle" = 0 ] && exit 0
idle_rate() { "$1" run --quiet --size 16M --json fd:1 -- sleep "$idle" | jq -r '.samples / (.wall_ns / 1e9)'; }
echo
rate=$(idle_rate "$bin")
echo "idle: tmpfsctl run -- sleep $idle: $(printf '%.1f' "$rate") samples/s (a fixed 10 ms sampler: 100/s; ratio $(jq -n "$rate/100*1000|round/1000"))"
if [ -n "${BASELINE:-}" ]; then
    base=$(idle_rate "$(realpath "$BASELINE")")
    echo "idle: baseline $BASELINE: $(printf '%.1f' "$base") samples/s; ratio tmpfsctl / baseline = $(jq -n "$rate/$base*1000|round/1000")"
fi
