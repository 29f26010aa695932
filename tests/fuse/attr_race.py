#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""attr_race.py READER_MNT WRITER_MNT SECONDS: close-to-open while the reader's kernel keeps
asking for the file's attributes. The writer's mount appends to a file and closes it, over
and over; on the reader's mount (short attr and entry timeouts) threads stat() the path
(LOOKUPs) and fstat() an open handle (GETATTRs) without pause, so that attribute replies
for the file overlap while it changes, and another thread opens and reads it whole each
time: every open must read at least what the writer had closed before it, byte for byte.
The kernel keeps whichever of two overlapping attribute replies it applies first; an open
that trusted lode-fuse's guess of which kept an older size and stopped short.

A second round (SECONDS / 2) adds threads that only open and close the file on the
reader's mount, so that opens finding different versions of it run at once: an older
one's attributes offered over a newer one's, a READ on a handle older than the size the
kernel was told (which the kernel answers by shrinking the file to that handle's end), an
open keeping the kernel's attributes while the open before it had yet to drop them, or a
reader's GETATTR refused because another open dropped the attributes while it was in
flight (the kernel then reads up to the size it had), made the reader stop short. That round checks the length only: with opens dropping the
kernel's pages while the reader copies from them, Linux's FUSE client can keep the last
page of an earlier end of file, zeros past that end, and show them (docs/design.md,
"Known limits").

Bytes closed after the open are not checked either: a READ answered at the open's end of
file fills the rest of its page with zeros, and an attribute reply with a larger size that
lands meanwhile (a stat racing the read) lets the reader copy that page up to the new
size."""
import os
import sys
import threading
import time

reader_mnt, writer_mnt, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
CHUNK = 100
full = (bytes(range(251)) * ((4 << 20) // 251 + 1))[:4 << 20]  # period prime to CHUNK


def race(name, openers, check_bytes, secs):
    rpath, wpath = os.path.join(reader_mnt, name), os.path.join(writer_mnt, name)
    closed = [1000]  # bytes the writer had closed, read before each open
    stop = threading.Event()
    errors = []
    opens = [0]

    with open(wpath, "wb") as f:
        f.write(full[:closed[0]])

    def guard(fn):
        def run():
            try:
                fn()
            except Exception as e:  # a failed thread fails the test
                errors.append(f"{fn.__name__}: {e!r}")
                stop.set()
        return run

    @guard
    def writer():
        while not stop.is_set() and closed[0] + CHUNK <= len(full):
            fd = os.open(wpath, os.O_WRONLY | os.O_APPEND)
            os.write(fd, full[closed[0]:closed[0] + CHUNK])
            os.close(fd)
            closed[0] += CHUNK
            time.sleep(0.0005)

    @guard
    def lookups():
        while not stop.is_set():
            os.stat(rpath)

    @guard
    def getattrs():
        fd = os.open(rpath, os.O_RDONLY)
        try:
            while not stop.is_set():
                os.fstat(fd)
        finally:
            os.close(fd)

    @guard
    def opener():
        while not stop.is_set():
            os.close(os.open(rpath, os.O_RDONLY))

    @guard
    def reader():
        while not stop.is_set():
            want = closed[0]
            fd = os.open(rpath, os.O_RDONLY)
            try:
                got = os.pread(fd, len(full), 0)
            finally:
                os.close(fd)
            opens[0] += 1
            if len(got) < want:
                errors.append(f"open {opens[0]} read {len(got)} bytes; the writer had "
                              f"closed {want} before it")
                stop.set()
            elif check_bytes and got[:want] != full[:want]:
                i = next(i for i in range(want) if got[i] != full[i])
                errors.append(f"open {opens[0]} read {len(got)} bytes (the writer had "
                              f"closed {want} before it), different from what was written "
                              f"from byte {i}: {got[i:i + 8].hex()} instead of "
                              f"{full[i:i + 8].hex()}")
                stop.set()

    threads = [threading.Thread(target=t) for t in
               [writer, lookups, lookups, getattrs, getattrs, reader] + [opener] * openers]
    for t in threads:
        t.start()
    stop.wait(secs)
    stop.set()
    for t in threads:
        t.join()
    if errors:
        print(f"FAIL: {name}:", "; ".join(errors[:5]))
        sys.exit(1)
    if opens[0] < 100 or closed[0] < 10000:
        print(f"FAIL: {name}: too little happened to tell: {opens[0]} opens, {closed[0]} "
              "bytes written")
        sys.exit(1)
    print(f"{name}: {opens[0]} opens while {closed[0]} bytes were appended, each read "
          f"{'everything' if check_bytes else 'as many bytes as'} closed before it")


race("attributes racing", 0, True, seconds)
race("opens racing", 2, False, seconds / 2)
