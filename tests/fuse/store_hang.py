#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""store_hang.py A B SECONDS MODE: opens, reads and stat()s of one small file on mount A
(started with few request threads) while mount B changes it, for SECONDS. MODE rewrite:
B rewrites it in place; append: B appends 100 bytes each time; appendopen: B appends, and
A's openers open it for appending (O_APPEND) instead of reading it. Every process counts
what it did; if none moved for STALL seconds, the mount hung: exit 1.

Mount A's opens of a file that changed may hand the kernel some of its pages with the open
(FUSE_NOTIFY_STORE: the whole small file when no other handle of it is open, its last
byte when one is and the file grew), which locks each page; a READ of another handle in
flight holds one. Two processes read the file with its cache dropped after each read
(READs in flight), one stat()s it (the kernel learns each new size and mtime, so that the
opens' stores are tried), five open, read and close it. An append open of a file that
changed drops the kernel's pages of it (and fails once with ESTALE, which Linux retries),
and dropping a page waits for a READ of it in flight too."""
import errno
import os
import sys
import time
import multiprocessing as mp

SIZE = 40000
STALL = 10.0


def writer(b, stop, prog, k, mode):
    i = 0
    while not stop.is_set():
        i += 1
        with open(os.path.join(b, "f"), "r+b") as f:
            if mode:
                f.seek(0, 2)
                f.write(bytes([i % 251]) * 100)
            else:
                f.write(bytes([i % 251]) * SIZE)
        prog[k] += 1
        time.sleep(0.005)


def statter(a, stop, prog, k, mode):
    while not stop.is_set():
        os.stat(os.path.join(a, "f"))
        prog[k] += 1


def reader(a, stop, prog, k, mode):
    fd = os.open(os.path.join(a, "f"), os.O_RDONLY)
    while not stop.is_set():
        os.pread(fd, 1 << 20, 0)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        prog[k] += 1


def opener(a, stop, prog, k, mode):
    while not stop.is_set():
        if mode == "appendopen":
            try:
                os.close(os.open(os.path.join(a, "f"), os.O_WRONLY | os.O_APPEND))
            except OSError as e:
                # the file changed again between Linux's two tries (docs/fuse.md)
                if e.errno != errno.ESTALE:
                    raise
            prog[k] += 1
            continue
        with open(os.path.join(a, "f"), "rb") as f:
            n = len(f.read())
            if n < SIZE or (not mode and n != SIZE):
                raise SystemExit("a read of the file came back %d bytes" % n)
        prog[k] += 1


def main():
    a, b, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
    mode = sys.argv[4] if sys.argv[4] != "rewrite" else ""
    with open(os.path.join(b, "f"), "wb") as f:
        f.write(b"x" * SIZE)
    stop, prog = mp.Event(), mp.Array("l", 9)
    roles = [(writer, b), (statter, a), (reader, a), (reader, a)] + [(opener, a)] * 5
    ps = [mp.Process(target=fn, args=(d, stop, prog, k, mode), daemon=True)
          for k, (fn, d) in enumerate(roles)]
    for p in ps:
        p.start()
    start = last_move = time.monotonic()
    last = list(prog)[1:]
    while time.monotonic() - start < secs:
        time.sleep(0.5)
        if any(p.exitcode not in (None, 0) for p in ps):
            # the others may be stuck in the mount: exit without joining them
            print("FAIL: a process failed: exit codes", [p.exitcode for p in ps], flush=True)
            os._exit(1)
        cur = list(prog)[1:]  # mount A's processes: the writer's mount B goes on
        if cur != last:
            last, last_move = cur, time.monotonic()
        elif time.monotonic() - last_move > STALL:
            # the stuck processes cannot be joined: the shell aborts the connection
            print("FAIL: nothing moved for %.0f s: the mount hung (counts %s)" % (STALL, cur),
                  flush=True)
            os._exit(1)
    stop.set()
    end = time.monotonic() + STALL
    for p in ps:
        p.join(max(0.0, end - time.monotonic()))
    if any(p.is_alive() for p in ps):
        print("FAIL: processes still in the mount %.0f s after the end: it hung" % STALL,
              flush=True)
        os._exit(1)
    print("ok (%s): writes, stats, reads, opens:" % sys.argv[4], list(prog))
    return 0


if __name__ == "__main__":
    sys.exit(main())
