#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""shared_appends.py MNT1 MNT2 [SECONDS]: two mounts of one cluster take 2000 turns (or as
many as SECONDS allow) without a pause, each turn a complete open-write-close, the way
shell scripts on two nodes append to one log. Close-to-open promises that every open sees what the last close anywhere
published, so no appended byte may be lost or land over another; and once close() has
returned, the other mount's open for writing must succeed (it may even while the file is
open for writing there: a file may have many writers). Turns alternate between O_APPEND appends and
writes at an explicit offset (the file's size as fstat gives it after open)."""
import errno
import os
import sys
import time


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    m = [sys.argv[1], sys.argv[2]]
    budget = float(sys.argv[3]) if len(sys.argv) > 3 else 25.0
    paths = [os.path.join(mnt, "log") for mnt in m]
    os.close(os.open(paths[0], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
    want = bytearray()
    turns = 0
    end = time.monotonic() + budget
    while turns < 2000 and time.monotonic() < end:
        side = turns % 2
        rec = b"%d:%d\n" % (side, turns)
        try:
            if (turns // 2) % 2 == 0:
                fd = os.open(paths[side], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                try:
                    n = os.write(fd, rec)
                finally:
                    os.close(fd)
            else:
                fd = os.open(paths[side], os.O_WRONLY)
                try:
                    size = os.fstat(fd).st_size
                    if size != len(want):
                        fail(f"turn {turns}: mount {side + 1} opened the file with size "
                             f"{size}, the last close published {len(want)}")
                    n = os.pwrite(fd, rec, size)
                finally:
                    os.close(fd)
        except OSError as e:
            fail(f"turn {turns}: mount {side + 1}: {errno.errorcode.get(e.errno)} "
                 f"({e.strerror}) right after the other mount's close")
        if n != len(rec):
            fail(f"turn {turns}: short write {n}")
        want += rec
        turns += 1
    for side in (0, 1):
        with open(paths[side], "rb") as f:
            got = f.read()
        if got != bytes(want):
            i = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                     min(len(got), len(want)))
            fail(f"mount {side + 1} reads {len(got)} bytes, {len(want)} were appended; "
                 f"first difference at byte {i}: {got[max(0, i - 20):i + 20]!r}")
    print(f"{turns} turns, {len(want)} bytes, nothing lost")

    # A file open for writing on one mount may be opened for writing on the other at
    # once (many writers of one file): no EBUSY, and no wait for the first to close.
    held = os.open(paths[0], os.O_WRONLY)
    t0 = time.monotonic()
    try:
        os.close(os.open(paths[1], os.O_WRONLY))
    except OSError as e:
        fail(f"mount 2's open of a file held for writing on mount 1: {e}")
    waited = time.monotonic() - t0
    if waited > 5:
        fail(f"mount 2's open of a file held for writing elsewhere took {waited:.1f} s")
    os.close(held)
    print(f"held for writing elsewhere: opened for writing too, in {waited:.2f} s")

main()
