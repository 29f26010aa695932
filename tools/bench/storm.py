#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""storm.py: one point of the checkpoint-storm benchmark (tools/bench/storm.sh drives it).

    storm.py --procs N --files F --size BYTES --dir DIR [--dir DIR2 ...] [--rank-dirs]
             [--creates-only]

N processes, spread round-robin over the given directories (one per mount), each write F
shard files of BYTES into the same checkpoint directory, as ranks of a training job do at
a checkpoint: create NAME.tmp, write it (1 MiB writes), fsync, close, rename it to NAME.
With --rank-dirs each rank writes in a directory of its own inside the checkpoint's
(rank-NNNNN, made before the storm starts through the rank's own mount), as Megatron lays
out its checkpoints; without
it every rank writes in the one directory, as PyTorch's distributed checkpoints do. With
--setup-only it makes those directories and exits (storm.sh counts the MDS's work of the
storm alone).
They start together (a barrier). Prints one JSON document: files/s over the whole storm
(files / (last rename - start)) and p50/p99 in milliseconds of each step and of a whole
file. Nothing is removed: storm.sh removes the directory between points.
With --creates-only each file is only created and closed (O_CREAT | O_EXCL, empty, its
final name): concurrent creators in one directory, the MDS's and the mounts' create path
alone.
"""
import argparse
import json
import multiprocessing as mp
import os
import sys
import time

STEPS = ("create", "write", "fsync", "close", "rename", "file")


def rank(i, args, barrier, out):
    d = os.path.join(args.dir[i % len(args.dir)], args.tag)
    if args.rank_dirs:
        d = os.path.join(d, "rank-%05d" % i)
    buf = os.urandom(min(args.size, 1 << 20)) if args.size else b""
    lat = {s: [] for s in STEPS}
    try:
        barrier.wait()
        t_start = time.monotonic()
        for k in range(args.files):
            name = os.path.join(d, "shard-%05d-%04d" % (i, k))
            t0 = time.monotonic()
            if args.creates_only:
                fd = os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
                t1 = time.monotonic()
                os.close(fd)
                t2 = time.monotonic()
                lat["create"].append(t1 - t0)
                lat["close"].append(t2 - t1)
                lat["file"].append(t2 - t0)
                continue
            fd = os.open(name + ".tmp", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            t1 = time.monotonic()
            left = args.size
            while left:
                n = os.write(fd, buf[: min(left, len(buf))])
                left -= n
            t2 = time.monotonic()
            os.fsync(fd)
            t3 = time.monotonic()
            os.close(fd)
            t4 = time.monotonic()
            os.rename(name + ".tmp", name)
            t5 = time.monotonic()
            for s, a, b in zip(STEPS, (t0, t1, t2, t3, t4, t0), (t1, t2, t3, t4, t5, t5)):
                lat[s].append(b - a)
        out.put((i, t_start, time.monotonic(), lat, None))
    except Exception as e:  # reported by the parent, which fails the point
        out.put((i, 0.0, 0.0, lat, "%s: %s" % (type(e).__name__, e)))


def pct(v, p):
    v = sorted(v)
    if not v:
        return 0.0
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--procs", type=int, required=True)
    ap.add_argument("--files", type=int, required=True)
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--dir", action="append", required=True)
    ap.add_argument("--tag", default="ckpt")
    ap.add_argument("--rank-dirs", action="store_true")
    ap.add_argument("--setup-only", action="store_true")
    ap.add_argument("--creates-only", action="store_true")
    args = ap.parse_args()
    if args.procs < 1 or args.files < 1 or args.size < 0:
        ap.error("--procs and --files must be at least 1, --size at least 0")
    # the checkpoint directory exists on every mount before the storm (it is one directory)
    os.makedirs(os.path.join(args.dir[0], args.tag), exist_ok=True)
    # each rank's directory is made through the mount the rank writes through, as each of
    # Megatron's ranks makes its own (os.makedirs) before it saves
    if args.rank_dirs:
        for i in range(args.procs):
            os.makedirs(os.path.join(args.dir[i % len(args.dir)], args.tag, "rank-%05d" % i),
                        exist_ok=True)
    for d in args.dir:
        p = os.path.join(d, args.tag)
        if args.rank_dirs:
            p = os.path.join(p, "rank-%05d" % (args.procs - 1))
        for _ in range(100):  # another mount sees the new directory within its timeouts
            if os.path.isdir(p):
                break
            time.sleep(0.05)
    if args.setup_only:
        return 0
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(args.procs)
    out = ctx.Queue()
    ps = [ctx.Process(target=rank, args=(i, args, barrier, out)) for i in range(args.procs)]
    for p in ps:
        p.start()
    res = [out.get() for _ in ps]
    for p in ps:
        p.join()
    errs = [r[4] for r in res if r[4]]
    if errs:
        print("storm.py: %d of %d ranks failed: %s" % (len(errs), args.procs, errs[0]), file=sys.stderr)
        return 1
    start = min(r[1] for r in res)
    end = max(r[2] for r in res)
    lat = {s: [x for r in res for x in r[3][s]] for s in STEPS}
    files = args.procs * args.files
    doc = {"procs": args.procs, "files": files, "size": args.size, "mounts": len(args.dir),
           "seconds": round(end - start, 4), "files_per_s": round(files / (end - start), 1)}
    for s in STEPS:
        doc[s + "_p50_ms"] = round(pct(lat[s], 50) * 1e3, 3)
        doc[s + "_p99_ms"] = round(pct(lat[s], 99) * 1e3, 3)
    print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
