#!/usr/bin/env bash
# Speed of `tmpfsctl status`:
#  1. mount tables of 10 000, 20 000 and 40 000 mounts (a --sysroot fixture,
#     no root needed): linear in mounts, 40 000 well under 0.5 s, and no
#     slower than `findmnt --json` reading the same mountinfo (ratio <= 1.0);
#     `findmnt --json --list` (no tree to build) is shown too;
#  2. with 200 extra real tmpfs mounts: target < 50 ms (root);
#  3. measuring a 100 000-file tree (`status --du`): no slower than `du -s`
#     on the same tree (ratio <= 1.0, same run, hyperfine, warm cache) (root);
#  0. (first) plain `status --json` with 50 000 files in /tmp against
#     `findmnt --json`: target <= 5x, the median of 11 alternated pairs (status
#     does not walk /tmp unless asked with --du). BEFORE=/path/to/old/tmpfsctl
#     adds that binary's ratio in the same run.
# Run by hand: bench/status.sh   (MOUNTS="10000 40000" to choose the sizes;
# as non-root only parts 0 and 1 run; ONLY_FINDMNT=1 runs part 0 alone)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || apt-get install -y -qq hyperfine
cargo build --release --quiet
bin=$PWD/target/release/tmpfsctl
# Not under /tmp or /var/tmp: status walks those anyway, which would count twice.
mkdir -p target
work=$(mktemp -d "$PWD/target/bench-status.XXXXXX")
cleanup() {
  for d in "$work"/m*; do umount "$d" 2>/dev/null || true; done
  rm -rf --one-file-system "$work"
  if [ -n "${farm:-}" ]; then rm -rf --one-file-system "$farm"; fi
}
trap cleanup EXIT INT TERM

echo "== status --json vs findmnt --json, 50 000 files in /tmp"
farm=$(mktemp -d /tmp/tmpfsctl-bench-status.XXXXXX)
python3 - "$farm" <<'PY'
import os,sys
root=sys.argv[1]
for a in range(50):
    d=os.path.join(root,f"d{a}"); os.mkdir(d)
    for c in range(1000):
        with open(os.path.join(d,f"f{c}"),"wb") as f: f.write(b"x"*(c*37 % 5000))
PY
echo "-- $(find /tmp -xdev 2>/dev/null | wc -l) entries under /tmp ($(findmnt -no FSTYPE -T /tmp))"
python3 - "$bin" "${BEFORE:-}" <<'PY'
import subprocess,sys,time,statistics
def t(cmd):
    s=time.perf_counter(); subprocess.run(cmd,stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL,check=False); return time.perf_counter()-s
subjects=[("status --json",[sys.argv[1],"status","--json"])]
if sys.argv[2]: subjects.append(("BEFORE status --json",[sys.argv[2],"status","--json"]))
ref=["findmnt","--json"]
for name,cmd in subjects:
    t(cmd); t(ref)  # warm-up
    pairs=[(t(cmd),t(ref)) for _ in range(11)]
    r=sorted(a/b for a,b in pairs)
    print(f"{name}: median {statistics.median(a for a,_ in pairs)*1e3:.1f} ms, findmnt --json {statistics.median(b for _,b in pairs)*1e3:.1f} ms; "
          f"ratio median {statistics.median(r):.2f} (pairs {r[0]:.2f}..{r[-1]:.2f}, 11 alternated; target <= 5)")
PY
rm -rf --one-file-system "$farm"
[ -n "${ONLY_FINDMNT:-}" ] && exit 0

echo "== mount-table fixtures (--sysroot) vs findmnt -F on the same mountinfo"
for n in ${MOUNTS:-10000 20000 40000}; do
  fx="$work/fx$n"
  python3 - "$fx" "$n" <<'PY'
import os,sys
root,n=sys.argv[1],int(sys.argv[2])
for d in ("proc/self","etc","tmp","var/tmp"):
    os.makedirs(os.path.join(root,d),exist_ok=True)
open(os.path.join(root,"proc/meminfo"),"w").write(
    "MemTotal: 16777216 kB\nMemAvailable: 8388608 kB\nShmem: 1024 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n")
open(os.path.join(root,"etc/fstab"),"w").write("tmpfs /tmp tmpfs size=8G 0 0\n")
with open(os.path.join(root,"proc/self/mountinfo"),"w") as f:
    f.write("1 0 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n")
    f.write("2 1 0:20 / /tmp rw,nosuid,nodev shared:2 - tmpfs tmpfs rw,size=8388608k,nr_inodes=1048576\n")
    # Container shm mounts, as on a busy container host; every 100th stacked twice.
    for i in range(n - 2):
        f.write(f"{i+100} 1 0:{i+100} / /run/containers/c{i}/shm rw,nosuid,nodev,noexec shared:{i+3} "
                f"- tmpfs shm rw,size=65536k,mode=1777,inode64\n")
    for i in range(0, n - 2, 100):
        f.write(f"{n+i+100} 1 0:{n+i+100} / /run/containers/c{i}/shm rw - tmpfs shm2 rw,size=1024k\n")
PY
  mi="$fx/proc/self/mountinfo"
  echo "-- $(wc -l <"$mi") lines of mountinfo"
  # findmnt --json builds the mount tree: seconds at these sizes, so fewer runs.
  hyperfine -N --warmup 1 --runs 10 --export-json "$work/fxm$n.json" \
    "$bin --sysroot $fx status --json" "findmnt --json --list -F $mi" >/dev/null
  hyperfine -N --warmup 0 --runs 2 --export-json "$work/fxt$n.json" "findmnt --json -F $mi" >/dev/null
  python3 - "$work/fxm$n.json" "$work/fxt$n.json" "$n" <<'PY'
import json,sys
a=json.load(open(sys.argv[1]))["results"]; t=json.load(open(sys.argv[2]))["results"][0]["median"]
st,fl=a[0]["median"],a[1]["median"]
cpu=lambda r: (r["user"]+r["system"])*1e3
print(f"{sys.argv[3]:>6} mounts: tmpfsctl status --json {st*1e3:8.1f} ms (cpu {cpu(a[0]):6.1f} ms) | findmnt --json {t*1e3:8.1f} ms "
      f"(ratio {st/t:.3f}, target <= 1.0) | findmnt --json --list {fl*1e3:7.1f} ms (cpu {cpu(a[1]):6.1f} ms, ratio {st/fl:.2f})")
PY
  # Wall time on a shared machine follows its load; cpu (user+sys) less so.
  # status writes ~3.4x the bytes of findmnt --list (all options, limits,
  # usage, device per mount), which is most of the difference to it.
  "$bin" --sysroot "$fx" status --json | python3 -c 'import json,sys; print("   status lists", len(json.load(sys.stdin)["mounts"]), "visible tmpfs mounts")'
  echo "   bytes of JSON: status $("$bin" --sysroot "$fx" status --json | wc -c), findmnt --list $(findmnt --json --list -F "$mi" | wc -c)"
done
if [ "$(id -u)" != 0 ]; then echo "(not root: the real-mount parts are skipped)"; exit 0; fi

echo "== 200 extra tmpfs mounts"
for i in $(seq 1 200); do mkdir "$work/m$i"; mount -t tmpfs -o size=1M "tmpfs$i" "$work/m$i"; done
echo "mounts in mountinfo: $(wc -l </proc/self/mountinfo)"
hyperfine -N --warmup 3 --runs 30 --export-json "$work/h1.json" "$bin status --json" | sed -n '1,4p'
python3 - "$work/h1.json" <<'PY'
import json,sys
r=json.load(open(sys.argv[1]))["results"][0]
print(f"status with 200 mounts: median {r['median']*1e3:.1f} ms (target < 50 ms)")
PY
for d in "$work"/m*; do umount "$d"; done

echo "== 100 000-file tree on $(findmnt -no FSTYPE -T "$work")"
tree="$work/tree"
python3 - "$tree" <<'PY'
import os,sys
root=sys.argv[1]
n=0
for a in range(100):
    for b in range(10):
        d=os.path.join(root,f"d{a}",f"e{b}")
        os.makedirs(d)
        for c in range(99):
            with open(os.path.join(d,f"f{c}"),"wb") as f: f.write(b"x"*(c*37 % 5000))
            n+=1
print(f"created {n} files")
PY
# Both read the same warm tree; status also reports mounts, /tmp and /var/tmp.
hyperfine -N --warmup 2 --runs 10 --export-json "$work/h2.json" \
  "du -s -x -B1 $tree" "$bin status --du --json $tree" | sed -n '1,20p'
python3 - "$work/h2.json" <<'PY'
import json,sys
r={x["command"].split()[0].split("/")[-1]:x["median"] for x in json.load(open(sys.argv[1]))["results"]}
print(f"du -s: {r['du']*1e3:.1f} ms, tmpfsctl status: {r['tmpfsctl']*1e3:.1f} ms, ratio tmpfsctl/du = {r['tmpfsctl']/r['du']:.2f} (target <= 1.0)")
PY
echo "check: du says $(du -s -x -B1 "$tree" | cut -f1), tmpfsctl says $("$bin" status --du --json "$tree" | python3 -c 'import json,sys; print([p["used_bytes"] for p in json.load(sys.stdin)["paths"] if p["path"]==sys.argv[1]][0])' "$tree")"
