#!/usr/bin/env python3
"""Generate N synthetic hosts as Kirkland TSV (12 columns, KiB) or CSV, shaped
unlike bench/fleet-gen.py: the /tmp, free-memory and swap-free columns are
mostly distinct values (byte-exact /tmp sizes, not whole pages; free memory
and free swap spread over the whole range), RAM takes a dozen sizes, and the
host names are in no order (several data centres interleaved), so nothing
can count a few values or skip deduplication because names rise.

Deterministic (--seed). Usage: fleet-gen-distinct.py N [--format kirkland|csv] [--seed S] > out
"""
import argparse, random, sys

p = argparse.ArgumentParser()
p.add_argument("n", type=int)
p.add_argument("--format", choices=["kirkland", "csv"], default="kirkland")
p.add_argument("--seed", type=int, default=7)
a = p.parse_args()
rnd = random.Random(a.seed)
KiB = 1024
# MemTotal in KiB as kernels report them for common RAM sizes (a little under the installed RAM).
rams = [1012548, 2030412, 4039088, 8152344, 16337372, 32863512, 65845908,
        131916236, 263950720, 527974612, 1056157616, 12247420]
dcs = ["fra", "ams", "iad", "sjc", "sin", "syd", "gru", "nrt"]
out = sys.stdout
if a.format == "csv":
    out.write("host,tmp_used_kb,mem_total_kb,mem_free_kb,buffers_kb,cached_kb,swap_total_kb,swap_free_kb,tmp_inodes\n")
buf = []
for i in range(a.n):
    ram = rams[rnd.randrange(len(rams))]
    # /tmp in KiB, any value: heavy-tailed, from a few KiB to well past RAM on a few hosts.
    r = rnd.random()
    if r < 0.6:
        tmp = rnd.randrange(0, 2_000_000)
    elif r < 0.97:
        tmp = int(rnd.lognormvariate(11, 2.2))
    else:
        tmp = int(ram * rnd.uniform(0.01, 1.3))
    free = rnd.randrange(ram // 50, ram - ram // 20)
    buffers = rnd.randrange(0, max(1, ram // 40))
    cached = rnd.randrange(0, max(1, ram - free - buffers))
    used = ram - free
    shared = rnd.randrange(0, max(1, ram // 30))
    swap = 0 if rnd.random() < 0.1 else rnd.choice([1, 2, 4, 8, 16, 32]) * 1048576
    swap_free = swap - rnd.randrange(0, swap // 3 + 1) if swap else 0
    inodes = tmp // 40 + rnd.randrange(1, 400)
    host = f"{dcs[rnd.randrange(len(dcs))]}{rnd.randrange(100):02d}-{(i * 2654435761) % (1 << 32):08x}.prod"
    if a.format == "kirkland":
        buf.append(f"{host}\t{tmp}\t{ram}\t{used}\t{free}\t{shared}\t{buffers}\t{cached}\t{swap}\t{swap - swap_free}\t{swap_free}\t{inodes}\n")
    else:
        buf.append(f"{host},{tmp},{ram},{free},{buffers},{cached},{swap},{swap_free},{inodes}\n")
    if len(buf) >= 10000:
        out.write("".join(buf)); buf.clear()
out.write("".join(buf))
