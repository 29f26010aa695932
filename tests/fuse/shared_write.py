#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""shared_write.py MNT1 MNT2: eight writers, four on each of two mounts of one cluster,
hold one file open for writing at once and write records of 1000 bytes at offsets i * 1000
(writer w takes the records i with i % 8 == w), the way MPI-IO and IOR's shared-file mode
write an N-to-1 checkpoint. Records share 64 KiB chunks with other writers' records, on
both mounts. After every writer closed, an open on either mount must see the union: every
record intact, and the size the largest end any writer wrote. Then two writers on the two
mounts overwrite the same chunk-aligned ranges: after both closed, each 64 KiB chunk must
hold one writer's bytes, and reading it must not fail (no chunk whose checksum is torn)."""
import os
import sys
import threading

REC = 1000
NREC = 2000
WRITERS = 8
CHUNK = 65536


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def record(i):
    return (b"%07d|" % i) + bytes((i * 7 + k) % 251 for k in range(REC - 9)) + b"\n"


def main():
    mnts = sys.argv[1:3]
    paths = [os.path.join(m, "n1") for m in mnts]
    os.close(os.open(paths[0], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
    # every writer opens before any writes: the MDS must let all eight in at once
    fds = [os.open(paths[w % 2], os.O_WRONLY) for w in range(WRITERS)]
    errors = []

    def writer(w):
        try:
            for i in range(w, NREC, WRITERS):
                if os.pwrite(fds[w], record(i), i * REC) != REC:
                    errors.append(f"writer {w}: short write of record {i}")
            os.close(fds[w])
        except OSError as e:
            errors.append(f"writer {w} on mount {w % 2 + 1}: {e}")

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        fail("; ".join(errors[:4]))
    want = b"".join(record(i) for i in range(NREC))
    for p in paths:
        size = os.stat(p).st_size
        if size != len(want):
            fail(f"{p}: size {size} after every writer closed, want {len(want)}")
        with open(p, "rb") as f:
            got = f.read()
        if got != want:
            i = next(i for i in range(min(len(got), len(want))) if got[i] != want[i])
            fail(f"{p}: record {i // REC} differs at byte {i % REC}")
    print(f"{WRITERS} writers on 2 mounts, {NREC} records of {REC} bytes: all intact")

    # overlapping writers: whole chunks of one byte value each, over the same ranges
    ovl = [os.path.join(m, "ovl") for m in mnts]
    with open(ovl[0], "wb") as f:
        f.write(b"." * (16 * CHUNK))
    ofds = [os.open(ovl[w], os.O_WRONLY) for w in range(2)]

    def overwriter(w):
        try:
            for n in range(40):
                k = (n * 5 + w * 3) % 13
                os.pwrite(ofds[w], bytes([65 + w]) * ((1 + n % 3) * CHUNK), k * CHUNK)
            os.close(ofds[w])
        except OSError as e:
            errors.append(f"overwriter {w}: {e}")

    threads = [threading.Thread(target=overwriter, args=(w,)) for w in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        fail("; ".join(errors[:4]))
    for p in ovl:
        try:
            with open(p, "rb") as f:
                got = f.read()
        except OSError as e:
            fail(f"{p}: reading what two overlapping writers left: {e}")
        if len(got) != 16 * CHUNK:
            fail(f"{p}: size {len(got)}, want {16 * CHUNK}")
        for k in range(16):
            c = got[k * CHUNK:(k + 1) * CHUNK]
            if c.count(c[:1]) != CHUNK:
                fail(f"{p}: chunk {k} mixes the bytes of two writers")
    print("overlapping writers on 2 mounts: each chunk one writer's, every read verified")


main()
