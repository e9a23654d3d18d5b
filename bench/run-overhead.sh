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
# And two floors, static C programs built from bench/floor/ when a C compiler
# is installed: the bare spawner (vfork, execvp CMD, wait: no tool that runs
# CMD as its child costs less), and, as root, the safe spawner (the system
# calls run makes for its safety: a cgroup for CMD, a guard process, a
# private tmpfs in a mount namespace, CMD cloned into the cgroup with
# PR_SET_PDEATHSIG; and nothing else). The safe spawner's ratio is the lowest
# a `tmpfsctl run` that keeps those promises could reach on this machine.
#
# And the fastest peer a user would pick for the same job, bubblewrap with
# a private, size-capped tmpfs and no cgroup:
#     bwrap --dev-bind / / --size 67108864 --tmpfs /tmp true
# timed in every pair beside tmpfsctl (its loop right after tmpfsctl's, the
# order flipping every pair). Printed: tmpfsctl run / bwrap (goal <= 1.0)
# and, as root, tmpfsctl run / safe spawner (goal <= 1.5), each the median
# of the per-pair ratios.
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
# The floors (bench/floor/*.c), built static when a C compiler is here.
floor_spawn= ; floor_safe=
if command -v cc >/dev/null; then
    for f in spawn safe-spawn; do
        cc -O2 -static -o "$work/$f" "bench/floor/$f.c" 2>/dev/null ||
            cc -O2 -o "$work/$f" "bench/floor/$f.c" || continue
        chmod 755 "$work/$f"
    done
    [ -x "$work/spawn" ] && floor_spawn="$work/spawn"
    [ -x "$work/safe-spawn" ] && floor_safe="$work/safe-spawn"
fi
bwrap=$(command -v bwrap || true)
[ -n "$bwrap" ] || echo "bwrap: not installed (scripts/setup installs bubblewrap); its ratios are skipped"
cg2=$(findmnt -n -t cgroup2 -o TARGET 2>/dev/null | head -n1 || true)
mkdir "$work/mnt"

# Microseconds per run of "$@", over LOOP runs: wall, then CPU (user + system
# of the command and everything it started, from the shell's `times`; the
# loop's shell does nothing else). CPU time is what a busy machine inflates
# least: wall time also counts waiting for a CPU, which a chain of processes
# (the script's sh, mktemp, rm) pays at each hand-over.
cat >"$work/per-run.sh" <<'EOF'
#!/usr/bin/env bash
n=$1; shift
f=$(mktemp)
trap 'rm -f "$f"' EXIT
# The second line of `times` (run in this very shell: in a pipeline or $(...)
# it would report a subshell's children): the children's user and system
# time so far, "XmY.ZZZs", in microseconds.
children_us() {
    sed -n 2p "$f" | awk 'function sec(t, a) { split(t, a, /[ms]/); return a[1] * 60 + a[2] }
        { printf "%d", (sec($1) + sec($2)) * 1e6 }'
}
times >"$f"
c0=$(children_us)
t0=${EPOCHREALTIME/./}
for ((i = 0; i < n; i++)); do "$@" >/dev/null; done
t1=${EPOCHREALTIME/./}
times >"$f"
c1=$(children_us)
cpu=$((c1 - c0))
echo $(((t1 - t0) / n)) $((cpu / n))
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
    ratios=() ; cratios=() ; ts=() ; ss=() ; floors=() ; cfloors=() ; bares=() ; cbares=() ; safes=() ; csafes=() ; bws=() ; bwr=() ; cbwr=() ; safer=() ; csafer=()
    for ((p = 0; p < pairs; p++)); do
        run_t() { (cd / && as_user "$user" "$work/per-run.sh" "$loop" "$work/tmpfsctl" run --quiet -- true); }
        run_s() { (cd / && as_user "$user" "$work/per-run.sh" "$loop" sh -c "$script"); }
        run_b() { (cd / && as_user "$user" "$work/per-run.sh" "$loop" "$bwrap" --dev-bind / / --size 67108864 --tmpfs /tmp true); }
        if ((p % 2)); then read -r s sc < <(run_s); read -r t tc < <(run_t); else read -r t tc < <(run_t); read -r s sc < <(run_s); fi
        if [ -n "$bwrap" ]; then
            # Right beside a tmpfsctl loop of its own, the order flipping every pair.
            if ((p % 2)); then read -r b bc < <(run_b); read -r t2 tc2 < <(run_t); else read -r t2 tc2 < <(run_t); read -r b bc < <(run_b); fi
            bws+=("$b/$bc")
            bwr+=("$(awk -v a="$t2" -v b="$b" 'BEGIN {printf "%.3f", a / b}')")
            cbwr+=("$(awk -v a="$tc2" -v b="$bc" 'BEGIN {printf "%.3f", a / b}')")
        fi
        read -r v vc < <(cd / && as_user "$user" "$work/per-run.sh" "$loop" "$work/tmpfsctl" --version)
        read -r u uc < <(cd / && as_user "$user" "$work/per-run.sh" "$loop" /usr/bin/true)
        ts+=("$t/$tc"); ss+=("$s/$sc")
        ratios+=("$(awk -v a="$t" -v b="$s" 'BEGIN {printf "%.3f", a / b}')")
        cratios+=("$(awk -v a="$tc" -v b="$sc" 'BEGIN {printf "%.3f", a / b}')")
        floors+=("$(awk -v v="$v" -v u="$u" -v b="$s" 'BEGIN {printf "%.3f", (v + u) / b}')")
        cfloors+=("$(awk -v v="$vc" -v u="$uc" -v b="$sc" 'BEGIN {printf "%.3f", (v + u) / b}')")
        if [ -n "$floor_spawn" ]; then
            read -r w wc < <(cd / && as_user "$user" "$work/per-run.sh" "$loop" "$floor_spawn" true)
            bares+=("$(awk -v a="$w" -v b="$s" 'BEGIN {printf "%.3f", a / b}')")
            cbares+=("$(awk -v a="$wc" -v b="$sc" 'BEGIN {printf "%.3f", a / b}')")
        fi
        if [ -n "$floor_safe" ] && [ "$user" = root ] && [ -n "$cg2" ]; then
            read -r w wc < <(cd / && "$work/per-run.sh" "$loop" "$floor_safe" "$cg2" "$work/mnt" true)
            safes+=("$(awk -v a="$w" -v b="$s" 'BEGIN {printf "%.3f", a / b}')")
            csafes+=("$(awk -v a="$wc" -v b="$sc" 'BEGIN {printf "%.3f", a / b}')")
            safer+=("$(awk -v a="$t" -v b="$w" 'BEGIN {printf "%.3f", a / b}')")
            csafer+=("$(awk -v a="$tc" -v b="$wc" 'BEGIN {printf "%.3f", a / b}')")
        fi
    done
    med_of() { printf '%s\n' "$@" | median; }
    range_of() { printf '%s\n' "$@" | sort -g | sed -n '1p;$p' | paste -sd' ' | awk '{print "min " $1 ", max " $2}'; }
    verdict() { awk -v r="$1" -v g="${2:-0.5}" 'BEGIN {print (r <= g ? "OK" : "MISSED")}'; }
    r_med=$(med_of "${ratios[@]}")
    c_med=$(med_of "${cratios[@]}")
    echo
    echo "as $user (scratch mode: $mode):"
    echo "  per run, wall/cpu us: tmpfsctl run ${ts[*]}"
    echo "  per run, wall/cpu us: mktemp script ${ss[*]}"
    echo "  wall ratio tmpfsctl run / mktemp script = $r_med ($(range_of "${ratios[@]}"); target <= 0.5: $(verdict "$r_med"))"
    echo "  cpu  ratio tmpfsctl run / mktemp script = $c_med ($(range_of "${cratios[@]}"); target <= 0.5: $(verdict "$c_med"))"
    echo "  floor (tmpfsctl --version + /usr/bin/true) / mktemp script: wall $(med_of "${floors[@]}"), cpu $(med_of "${cfloors[@]}")"
    if [ -n "$floor_spawn" ]; then
        echo "  bare spawner (bench/floor/spawn.c: vfork, execvp, wait) / mktemp script: wall $(med_of "${bares[@]}"), cpu $(med_of "${cbares[@]}")"
    else
        echo "  bare spawner: skipped (no C compiler: install gcc to see the lowest ratio any spawner reaches here)"
    fi
    if [ ${#safes[@]} -gt 0 ]; then
        echo "  safe spawner (bench/floor/safe-spawn.c: run's cgroup, guard and private tmpfs, nothing else) / mktemp script: wall $(med_of "${safes[@]}"), cpu $(med_of "${csafes[@]}")"
        echo "  tmpfsctl run / safe spawner: wall $(med_of "${safer[@]}") ($(range_of "${safer[@]}"); goal <= 1.5: $(verdict "$(med_of "${safer[@]}")" 1.5)), cpu $(med_of "${csafer[@]}")"
    elif [ "$user" = root ]; then
        echo "  safe spawner: skipped (needs a C compiler and a cgroup2 mount)"
    fi
    if [ ${#bwr[@]} -gt 0 ]; then
        echo "  per run, wall/cpu us: bwrap --size 64M --tmpfs /tmp ${bws[*]}"
        echo "  tmpfsctl run / bwrap: wall $(med_of "${bwr[@]}") ($(range_of "${bwr[@]}"); goal <= 1.0: $(verdict "$(med_of "${bwr[@]}")" 1.0)), cpu $(med_of "${cbwr[@]}") ($(range_of "${cbwr[@]}"))"
    fi
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
