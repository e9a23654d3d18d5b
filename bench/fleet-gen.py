#!/usr/bin/env python3
"""Generate N synthetic hosts as `tmpfsctl collect` JSON lines (or Kirkland TSV, or CSV).

Shaped like the fleet of the /tmp survey (Kirkland, 2016): most /tmp tiny (4 KiB .. 1 MiB), a long tail up
to ~100 GiB, RAM from 1 to 256 GiB, some hosts without swap. Deterministic
(--seed). Usage: fleet-gen.py N [--format jsonl|kirkland|csv] [--seed S] > out
The CSV has a header and the TSV's figures (KiB), so the three formats hold one fleet.
"""
import argparse, random, sys, json

p = argparse.ArgumentParser()
p.add_argument("n", type=int)
p.add_argument("--format", choices=["jsonl", "kirkland", "csv"], default="jsonl")
p.add_argument("--seed", type=int, default=1)
a = p.parse_args()
rnd = random.Random(a.seed)
KiB, GiB = 1024, 1 << 30
rams = [1, 2, 4, 4, 4, 8, 8, 16, 16, 32, 64, 128, 256]
out = sys.stdout
buf = []
if a.format == "csv":
    out.write("host,tmp_used_kb,mem_total_kb,mem_free_kb,buffers_kb,cached_kb,swap_total_kb,swap_free_kb,tmp_inodes\n")
t0 = 1_700_000_000
for i in range(a.n):
    ram = rams[rnd.randrange(len(rams))] * GiB - (rnd.randrange(64) << 20)
    r = rnd.random()
    if r < 0.74:
        tmp = 4 * KiB * rnd.randrange(1, 256)
    elif r < 0.99:
        tmp = int(rnd.lognormvariate(17, 2.5)) // 4096 * 4096
    else:
        tmp = int(rnd.uniform(0.05, 1.2) * ram) // 4096 * 4096
    inodes = max(1, tmp // 65536 + rnd.randrange(1, 50))
    free = int(ram * rnd.uniform(0.05, 0.9))
    buffers = int(ram * 0.01)
    cached = int((ram - free - buffers) * rnd.uniform(0.1, 0.8))
    avail = min(ram, free + buffers + cached)
    swap = 0 if rnd.random() < 0.034 else rnd.choice([1, 2, 4, 8]) * GiB
    swap_free = swap - int(swap * rnd.random() * 0.3)
    host = f"host-{i:08d}.example.net"
    if a.format == "kirkland":
        k = lambda b: b // 1024
        buf.append(f"{host}\t{k(tmp)}\t{k(ram)}\t{k(ram-free)}\t{k(free)}\t{k(ram//100)}\t{k(buffers)}\t{k(cached)}\t{k(swap)}\t{k(swap-swap_free)}\t{k(swap_free)}\t{inodes}\n")
    elif a.format == "csv":
        k = lambda b: b // 1024
        buf.append(f"{host},{k(tmp)},{k(ram)},{k(free)},{k(buffers)},{k(cached)},{k(swap)},{k(swap_free)},{inodes}\n")
    else:
        buf.append('{"schema_version":1,"host":"%s","timestamp_unix_s":%d,"kernel":"6.1.0-18-amd64","paths":[{"path":"/tmp","used_bytes":%d,"inodes":%d,"source":"du","oldest_age_s":%d,"unreadable_dirs":0,"fstype":"ext4","mountpoint":"/","own_mount":false,"tmpfs_size_bytes":null}],"mem_total_bytes":%d,"mem_free_bytes":%d,"mem_available_bytes":%d,"buffers_bytes":%d,"cached_bytes":%d,"shmem_bytes":%d,"swap_total_bytes":%d,"swap_free_bytes":%d}\n'
                   % (host, t0 + i % 3600, tmp, inodes, rnd.randrange(10**7), ram, free, avail, buffers, cached, ram // 100, swap, swap_free))
    if len(buf) >= 10000:
        out.write("".join(buf)); buf.clear()
out.write("".join(buf))
