#!/usr/bin/env python3
"""kill -9 of `apply` or `revert --keep-data` at random moments while a writer
writes, then the same command again: counts how the system ends up.

usage: [SEED_REPEAT=N] bench/mounts-kill.py BIN apply|revert [SECONDS] [FILES]

Each round: a fresh directory with FILES seed files (4 KiB each), its own
fstab, a writer creating a file every 10 ms (a file counts once the writer
printed its number: written, fsynced, closed). The command is killed with
SIGKILL after a random delay within its usual run time, then run again to
the end (retried while it refuses because the writer holds a file open).
A round is consistent when: the rerun succeeded; DIR is a tmpfs (apply) or
not (revert) and the fstab agrees; every seed and every acknowledged file is
in DIR with its content; no `.tmpfsctl-*` entry is left in DIR, underneath
it, or beside the fstab; no mount is left under the round's directory or in
/run/tmpfsctl-journal for it. Run as root. Prints one line of counts.
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

BIN, OP = sys.argv[1], sys.argv[2]
SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 60
TOOK = []
SAID = {}
# Seed file size, in repeats of a short line (512: a few KiB).
SEED_REPEAT = int(os.environ.get("SEED_REPEAT", "512"))
FILES = int(sys.argv[4]) if len(sys.argv) > 4 else 2000

WRITER = r"""
import os, sys, time
d, stop = sys.argv[1], sys.argv[2]
i = 0
while not os.path.exists(stop):
    p = os.path.join(d, 'w-%d' % i)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, b'payload %d' % i)
        os.fsync(fd)
        os.close(fd)
    except OSError:
        time.sleep(0.01)
        continue
    print(i, flush=True)
    i += 1
    time.sleep(0.01)
"""


def mounts():
    with open("/proc/self/mountinfo") as f:
        return [l.split()[4] for l in f]


def fstype(p):
    t = None
    with open("/proc/self/mountinfo") as f:
        for l in f:
            parts = l.split()
            if parts[4] == p:
                t = parts[parts.index("-") + 1]
    return t


def run(args, retry=True):
    for _ in range(50):
        r = subprocess.run([BIN] + args, capture_output=True, text=True)
        if r.returncode == 0 or not retry:
            return r
        if "open for writing" not in r.stderr and "is busy" not in r.stderr:
            return r
        time.sleep(0.02)
    return r


def cmd(d, fstab):
    if OP == "apply":
        return ["apply", d, "--fstab", fstab, "--boot", "fstab", "--size", "64M", "--yes"]
    return ["revert", d, "--fstab", fstab, "--keep-data", "--yes"]


def leftovers(root):
    out = []
    for dp, dns, fns in os.walk(root):
        for n in dns + fns:
            if n.startswith(".tmpfsctl-"):
                out.append(os.path.join(dp, n))
    return out


def stage_of(d):
    """Where revert stages the tmpfs of `d`: its note's name (FNV-1a of the path)."""
    h = 0xcbf29ce484222325
    for b in d.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "/run/tmpfsctl-journal/%016x.stage" % h


def cleanup(d):
    while fstype(d):
        subprocess.run(["umount", "-l", d])
    while fstype(stage_of(d)):
        subprocess.run(["umount", "-l", stage_of(d)])


def round_(delay):
    top = tempfile.mkdtemp(prefix="tmpfsctl-kill-")
    d = os.path.join(top, "live")
    os.mkdir(d)
    fstab = os.path.join(top, "fstab")
    open(fstab, "w").close()
    for i in range(FILES):
        with open(os.path.join(d, "seed-%d" % i), "wb") as f:
            f.write(b"s%d" % i * SEED_REPEAT)
    problems = []
    try:
        if OP == "revert":
            r = run(["apply", d, "--fstab", fstab, "--boot", "fstab", "--size", "64M", "--yes"])
            if r.returncode != 0:
                return "setup-failed", 0, [r.stderr.strip()[-200:]]
        stop = os.path.join(top, "stop")
        w = subprocess.Popen([sys.executable, "-c", WRITER, d, stop], stdout=subprocess.PIPE, text=True, cwd="/")
        time.sleep(0.05)
        p = subprocess.Popen([BIN] + cmd(d, fstab), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t = time.time()
        if delay is None:
            p.wait()
            TOOK.append(time.time() - t)
        else:
            time.sleep(delay)
        killed = p.poll() is None
        if killed:
            p.kill()
        p.wait()
        r = run(cmd(d, fstab))
        for what in ["finished it", "finished copying back", "put the directory on disk back",
                     "removed the scratch directories", "needed nothing"]:
            if what in r.stderr:
                SAID[what] = SAID.get(what, 0) + 1
        time.sleep(0.05)
        open(stop, "w").close()
        acked = [int(x) for x in w.communicate()[0].split()]
        if r.returncode != 0:
            problems.append("rerun exit %d: %s" % (r.returncode, r.stderr.strip()[-300:]))
        mounted = fstype(d) == "tmpfs"
        line = any(l.split()[1:2] == [d] for l in open(fstab) if l.strip() and not l.startswith("#"))
        if mounted != (OP == "apply") or line != mounted:
            problems.append("mounted %s, fstab line %s" % (mounted, line))
        lost = 0
        for i in acked:
            try:
                ok = open(os.path.join(d, "w-%d" % i), "rb").read() == b"payload %d" % i
            except OSError:
                ok = False
            lost += not ok
        for i in range(FILES):
            try:
                ok = open(os.path.join(d, "seed-%d" % i), "rb").read() == b"s%d" % i * SEED_REPEAT
            except OSError:
                ok = False
            lost += not ok
        if lost:
            problems.append("%d files lost" % lost)
        left = leftovers(d) + [os.path.join(top, n) for n in os.listdir(top) if n.startswith(".tmpfsctl-")]
        if mounted:
            # What the tmpfs hides, through a private clone of the mount below.
            under = subprocess.run(
                ["unshare", "-m", "sh", "-c", "umount -l %s && find %s -name '.tmpfsctl-*'" % (d, d)],
                capture_output=True, text=True).stdout.split()
            left += ["(underneath) " + x for x in under]
        if not line and os.path.exists(fstab + ".tmpfsctl.bak"):
            left.append(fstab + ".tmpfsctl.bak")
        if left:
            problems.append("left behind: %s" % left[:3])
        stray = [m for m in mounts() if m == stage_of(d) or (m.startswith(top) and m != d)]
        if stray:
            problems.append("mounts left: %s" % stray)
        return ("killed" if killed else "finished"), lost, problems
    finally:
        cleanup(d)
        shutil.rmtree(top, ignore_errors=True)


def main():
    if os.geteuid() != 0:
        sys.exit("run as root")
    # The command's usual run time, to spread the kills over it.
    round_(None)
    span = TOOK[0] * 1.2
    end = time.time() + SECONDS
    n = killed = bad = lost = 0
    kinds = {}
    while time.time() < end:
        kind, l, problems = round_(random.uniform(0, span))
        n += 1
        killed += kind == "killed"
        lost += l
        if problems:
            bad += 1
            k = problems[0].split(":")[0].lstrip("0123456789 ")
            kinds[k] = kinds.get(k, 0) + 1
            print("round %d (%s): %s" % (n, kind, "; ".join(problems)), file=sys.stderr)
    print("%s %s: kills spread over %.2f s; %d rounds (%d killed mid-run), %d inconsistent, %d files lost; problems by kind: %s; the reruns said: %s"
          % (os.path.basename(BIN), OP, span, n, killed, bad, lost, kinds, SAID))


main()
