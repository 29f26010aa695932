#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""ns_random.py DIR SEED OPS: a deterministic random sequence of namespace operations
(mkdir, create, unlink, rmdir, rename, link, symlink, chmod, truncate, write) over a small
name space inside DIR, printing each call's result (return value or errno name) and, every
50 operations and at the end, the whole tree with its metadata (type, mode, nlink, size,
symlink target, content digest; never inode numbers or times). Run on two file systems,
the transcripts must be identical."""
import errno
import hashlib
import os
import random
import stat
import sys

NAMES = ["a", "b", "c"]


def rand_path(rnd):
    depth = rnd.choice([1, 1, 1, 2, 2, 3])
    return "/".join(rnd.choice(NAMES) for _ in range(depth))


def existing():
    """Every path now in the tree, sorted, symlinks not followed."""
    found = []

    def walk(rel):
        try:
            entries = sorted(os.scandir(rel or "."), key=lambda e: e.name)
        except OSError:  # a directory its mode closes to us
            return
        for e in entries:
            p = os.path.join(rel, e.name) if rel else e.name
            found.append(p)
            if e.is_dir(follow_symlinks=False):
                walk(p)

    walk("")
    return found


def pick(rnd):
    """Mostly a path that exists (so that calls mostly succeed), sometimes any path."""
    paths = existing()
    return rnd.choice(paths) if paths and rnd.random() < 0.7 else rand_path(rnd)


def call(label, fn, *args):
    try:
        r = fn(*args)
        print(f"{label} = {r if isinstance(r, int) else 0} OK")
    except OSError as e:
        print(f"{label} = -1 {errno.errorcode.get(e.errno, e.errno)}")


def create(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def write_at(path, data, off):
    fd = os.open(path, os.O_WRONLY)
    try:
        return os.pwrite(fd, data, off)
    finally:
        os.close(fd)


def tree(root):
    out = []

    def walk(rel):
        full = os.path.join(root, rel) if rel else root
        try:
            names = sorted(os.listdir(full))
        except OSError as e:
            out.append(f"  {rel}/ cannot be listed: {errno.errorcode.get(e.errno, e.errno)}")
            return
        for name in names:
            p = os.path.join(rel, name) if rel else name
            try:
                st = os.lstat(os.path.join(root, p))
            except OSError as e:
                out.append(f"  {p} cannot be stat'ed: {errno.errorcode.get(e.errno, e.errno)}")
                continue
            m = stat.S_IMODE(st.st_mode)
            if stat.S_ISDIR(st.st_mode):
                out.append(f"  {p}/ dir {m:04o} n{st.st_nlink}")
                walk(p)
            elif stat.S_ISLNK(st.st_mode):
                out.append(f"  {p} -> {os.readlink(os.path.join(root, p))} s{st.st_size}")
            else:
                try:
                    with open(os.path.join(root, p), "rb") as f:
                        h = hashlib.sha256(f.read()).hexdigest()[:16]
                except OSError as e:
                    h = errno.errorcode.get(e.errno, str(e.errno))
                out.append(f"  {p} reg {m:04o} n{st.st_nlink} s{st.st_size} {h}")

    walk("")
    print(f"tree ({len(out)} entries):")
    print("\n".join(out))


def main():
    root, seed, nops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rnd = random.Random(seed)
    os.chdir(root)
    os.umask(0o022)
    print(f"seed {seed}, {nops} operations")
    for i in range(nops):
        op = rnd.choice(["mkdir", "mkdir", "create", "create", "create", "unlink", "rmdir",
                         "rename", "rename", "rename", "link", "symlink", "chmod",
                         "truncate", "write"])
        a, b = rand_path(rnd), rand_path(rnd)
        if op in ("unlink", "rmdir", "rename", "link", "chmod", "truncate", "write"):
            a = pick(rnd)
        if op == "mkdir":
            call(f"{i} mkdir {a}", os.mkdir, a, rnd.choice([0o755, 0o700, 0o775]))
        elif op == "create":
            call(f"{i} create {a}", create, a, rnd.randbytes(rnd.randrange(0, 3000)))
        elif op == "unlink":
            call(f"{i} unlink {a}", os.unlink, a)
        elif op == "rmdir":
            call(f"{i} rmdir {a}", os.rmdir, a)
        elif op == "rename":
            call(f"{i} rename {a} {b}", os.rename, a, b)
        elif op == "link":
            call(f"{i} link {a} {b}", lambda x, y: os.link(x, y, follow_symlinks=False), a, b)
        elif op == "symlink":
            call(f"{i} symlink {b} {a}", os.symlink, b, a)
        elif op == "chmod":
            call(f"{i} chmod {a}", os.chmod, a, rnd.choice([0o644, 0o600, 0o755, 0o444, 0o2755]))
        elif op == "truncate":
            call(f"{i} truncate {a}", os.truncate, a, rnd.randrange(0, 5000))
        else:
            call(f"{i} write {a}", write_at, a, rnd.randbytes(rnd.randrange(1, 2000)),
                 rnd.randrange(0, 4000))
        if i % 50 == 49:
            tree(".")
    tree(".")


main()
