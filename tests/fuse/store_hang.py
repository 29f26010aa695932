#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""store_hang.py A B SECONDS: opens, reads and stat()s of one small file on mount A (started
with few request threads) while mount B rewrites it in place, for SECONDS. Every process
counts what it did; if none moved for STALL seconds, the mount hung: exit 1.

Mount A's opens of a file that changed hand the kernel its pages with the open
(FUSE_NOTIFY_STORE), which locks each page; a READ of another handle in flight holds one.
Two processes read the file with its cache dropped after each read (READs in flight),
one stat()s it (the kernel learns each new size and mtime, so that the opens' stores are
tried), five open, read and close it."""
import os
import sys
import time
import multiprocessing as mp

SIZE = 40000
STALL = 10.0


def writer(b, stop, prog, k):
    i = 0
    while not stop.is_set():
        i += 1
        with open(os.path.join(b, "f"), "r+b") as f:
            f.write(bytes([i % 251]) * SIZE)
        prog[k] += 1
        time.sleep(0.005)


def statter(a, stop, prog, k):
    while not stop.is_set():
        os.stat(os.path.join(a, "f"))
        prog[k] += 1


def reader(a, stop, prog, k):
    fd = os.open(os.path.join(a, "f"), os.O_RDONLY)
    while not stop.is_set():
        os.pread(fd, SIZE, 0)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        prog[k] += 1


def opener(a, stop, prog, k):
    while not stop.is_set():
        with open(os.path.join(a, "f"), "rb") as f:
            if len(f.read()) != SIZE:
                raise SystemExit("a read of the file came back short")
        prog[k] += 1


def main():
    a, b, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
    with open(os.path.join(b, "f"), "wb") as f:
        f.write(b"x" * SIZE)
    stop, prog = mp.Event(), mp.Array("l", 9)
    roles = [(writer, b), (statter, a), (reader, a), (reader, a)] + [(opener, a)] * 5
    ps = [mp.Process(target=fn, args=(d, stop, prog, k), daemon=True)
          for k, (fn, d) in enumerate(roles)]
    for p in ps:
        p.start()
    start = last_move = time.monotonic()
    last = list(prog)[1:]
    while time.monotonic() - start < secs:
        time.sleep(0.5)
        if any(p.exitcode not in (None, 0) for p in ps):
            print("FAIL: a process failed: exit codes", [p.exitcode for p in ps])
            return 1
        cur = list(prog)[1:]  # mount A's processes: the writer's mount B goes on
        if cur != last:
            last, last_move = cur, time.monotonic()
        elif time.monotonic() - last_move > STALL:
            # the stuck processes cannot be joined: the shell aborts the connection
            print("FAIL: nothing moved for %.0f s: the mount hung (counts %s)" % (STALL, cur),
                  flush=True)
            os._exit(1)
    stop.set()
    for p in ps:
        p.join()
    print("ok: writes, stats, reads, opens:", list(prog))
    return 0


if __name__ == "__main__":
    sys.exit(main())
