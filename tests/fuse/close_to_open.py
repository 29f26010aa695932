#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""close_to_open.py MNT1 MNT2: two mounts of one cluster. Whatever one mount's writer has
closed, the other mount's next open must read: new files, files rewritten in place with
different bytes of the same size (the case a page cache keyed on size alone gets wrong),
truncating rewrites, one-byte changes, growth and shrinking, back and forth, quickly (well
within the attribute and entry timeouts)."""
import os
import random
import sys

checks = 0


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def put(path, data, how):
    if how == "trunc":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    else:  # overwrite in place, no truncation
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    view, off = memoryview(data), 0
    while off < len(data):
        off += os.pwrite(fd, view[off:off + (1 << 20)], off)
    os.close(fd)


def get(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        chunks, off = [], 0
        while True:
            b = os.pread(fd, 1 << 20, off)
            if not b:
                break
            chunks.append(b)
            off += len(b)
        return b"".join(chunks), size
    finally:
        os.close(fd)


def expect(path, want, what):
    global checks
    got, size = get(path)
    checks += 1
    if size != len(want):
        fail(f"{what}: fstat size {size}, expected {len(want)}")
    if got != want:
        i = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                 min(len(got), len(want)))
        fail(f"{what}: read {len(got)} bytes, expected {len(want)}; first difference at {i}")


def main():
    m = [sys.argv[1], sys.argv[2]]
    rnd = random.Random(42)
    name = "c2o.bin"
    p = [os.path.join(x, name) for x in m]

    # a name the reader looked up before it existed must open once the writer closed it
    try:
        os.stat(p[1])
        fail("c2o.bin exists before the test created it")
    except FileNotFoundError:
        pass
    data = rnd.randbytes(3 << 20)
    put(p[0], data, "trunc")
    expect(p[1], data, "new file written on mount 1, opened on mount 2")

    for i in range(40):
        w, r = i % 2, 1 - i % 2
        expect(p[r], data, f"round {i}: reader's view before the rewrite")  # fill its cache
        kind = ["same-size", "trunc", "one-byte", "grow", "shrink"][i % 5]
        if kind == "same-size":
            data = rnd.randbytes(len(data))
            put(p[w], data, "inplace")
        elif kind == "trunc":
            data = rnd.randbytes(len(data))
            put(p[w], data, "trunc")
        elif kind == "one-byte":
            k = rnd.randrange(len(data))
            data = data[:k] + bytes([data[k] ^ 0x5a]) + data[k + 1:]
            fd = os.open(p[w], os.O_WRONLY)
            os.pwrite(fd, data[k:k + 1], k)
            os.close(fd)
        elif kind == "grow":
            extra = rnd.randbytes(rnd.randrange(1, 200000))
            fd = os.open(p[w], os.O_WRONLY | os.O_APPEND)
            os.write(fd, extra)
            os.close(fd)
            data += extra
        else:
            n = rnd.randrange(len(data) // 2, len(data))
            os.truncate(p[w], n)
            data = data[:n]
        expect(p[r], data, f"round {i}: {kind} rewrite on mount {w + 1}, "
                           f"opened on mount {r + 1}")
        expect(p[w], data, f"round {i}: {kind} rewrite on mount {w + 1}, reopened there")

    # many small files, each rewritten with same-size different bytes
    for j in range(30):
        q = [os.path.join(x, f"small-{j}") for x in m]
        a = rnd.randbytes(4096 + j)
        put(q[0], a, "trunc")
        expect(q[1], a, f"small-{j} written on mount 1")
        b = rnd.randbytes(len(a))
        put(q[0], b, "inplace")
        expect(q[1], b, f"small-{j} rewritten same size on mount 1")
    # The atomic save of a checkpoint: write a temporary file, rename it over the old one.
    # Mount 2 has just looked the name up (its kernel keeps the entry for entry_timeout),
    # and the old file lives on unlinked for the orphan grace: its next open must still
    # reach the new file, not the old inode.
    for j in range(5):
        expect(p[1], data, f"rename round {j}: before the rename")
        data = rnd.randbytes(len(data))
        tmp = p[0] + ".tmp"
        put(tmp, data, "trunc")
        os.rename(tmp, p[0])
        expect(p[1], data, f"rename round {j}: renamed over on mount 1, opened on mount 2")
    # Mount 2 is still writing the old file when mount 1 renames a new one over its name;
    # mount 2's next open of the name for writing must reach the new file, not share its
    # writer of the old one (whose bytes nobody can read any more).
    hold = os.open(p[1], os.O_WRONLY)
    data = rnd.randbytes(len(data))
    put(p[0] + ".tmp", data, "trunc")
    os.rename(p[0] + ".tmp", p[0])
    mine = rnd.randbytes(4096)
    fd = os.open(p[1], os.O_WRONLY)
    os.pwrite(fd, mine, 0)
    os.close(fd)
    os.close(hold)
    data = mine + data[4096:]
    expect(p[0], data, "written on mount 2 through a name renamed over on mount 1 "
                       "while mount 2 still wrote the old file")
    # the same for a name deleted on mount 1 while mount 2 still holds its entry
    expect(p[1], data, "before the unlink")
    os.unlink(p[0])
    try:
        get(p[1])
        fail("c2o.bin unlinked on mount 1 still opens on mount 2")
    except FileNotFoundError:
        pass
    # A directory mount 2 made is granted to it: its lookups of names missing there are
    # answered by lode-fuse itself (docs/design.md, "Directory grants"). A name mount 1
    # makes there, while mount 2 keeps looking (each its own new name, so the kernel holds
    # no entry), must open on mount 2 once mount 1 closed it.
    for j in range(6):
        d = [os.path.join(x, f"granted-{j}") for x in m]
        os.mkdir(d[1])
        for k in range(3):
            try:
                os.stat(os.path.join(d[1], f"probe-{k}"))
                fail(f"granted-{j}/probe-{k} exists before anyone made it")
            except FileNotFoundError:
                pass
        a = rnd.randbytes(1000 + j)
        name = f"f-{j}"
        if j % 2:
            put(os.path.join(d[0], name), a, "trunc")
        else:  # the atomic save again, into mount 2's directory
            put(os.path.join(m[0], f"tmp-{j}"), a, "trunc")
            os.rename(os.path.join(m[0], f"tmp-{j}"), os.path.join(d[0], name))
        expect(os.path.join(d[1], name), a, f"granted-{j}/{name} made on mount 1 in a "
                                            "directory mount 2 made, opened on mount 2")
    print(f"close-to-open: {checks} checks, all byte-exact")


main()
