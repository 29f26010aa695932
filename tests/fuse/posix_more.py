#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""posix_more.py DIR [STEP...]: what posix_diff does not cover, run as root in DIR (a fresh
directory), printing one line per step: what it did and what came of it. The shell test
runs it on a tmpfs and on a lode-fuse mount and requires the same transcript.

Steps run as other users in a forked child that drops to (uid, gid, groups) as setpriv
would: supplementary groups granting access (and chgrp to one of them), special files
(FIFOs, device nodes, UNIX sockets: stored type and rdev, and the kernel's behaviour), and
setuid/setgid bits cleared by an unprivileged write, truncate and chown, fstat of open
directories removed, and fallocate's modes."""
import errno
import os
import socket
import stat
import sys
import zlib
import ctypes

NOBODY = 65534
TEAM = 65531  # a group nobody is given as a supplementary group
OTHER = 65530  # a group nobody is not in

root = sys.argv[1]


def p(path):
    return os.path.join(root, path)


def out(what, result):
    print(f"{what}: {result}")


def as_user(uid, gid, groups, fn):
    """Runs fn() in a child with those ids; returns what it returned, or the errno name."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setgroups(groups)
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            res = str(fn())
        except OSError as e:
            res = errno.errorcode.get(e.errno, str(e.errno))
        except Exception as e:  # a bug in the step: show it, do not hide it
            res = "exception " + repr(e)
        os.write(w, res.encode())
        os._exit(0)
    os.close(w)
    data = b""
    while True:
        b = os.read(r, 4096)
        if not b:
            break
        data += b
    os.close(r)
    os.waitpid(pid, 0)
    return data.decode()


def try_(fn):
    try:
        return str(fn())
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def st(path):
    try:
        s = os.lstat(p(path))
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
    return (f"type={stat.S_IFMT(s.st_mode):o} mode={stat.S_IMODE(s.st_mode):o} "
            f"uid={s.st_uid} gid={s.st_gid} size={s.st_size} "
            f"rdev={os.major(s.st_rdev)},{os.minor(s.st_rdev)}")


def write_file(path, data, flags=os.O_WRONLY):
    fd = os.open(p(path), flags)
    try:
        return os.write(fd, data)
    finally:
        os.close(fd)


def read_file(path):
    with open(p(path), "rb") as f:
        return f.read()


def touch(path):
    os.close(os.open(p(path), os.O_WRONLY | os.O_CREAT, 0o644))
    return "ok"


# ---- supplementary groups ----
def groups():
    nobody_team = (NOBODY, NOBODY, [TEAM])
    nobody_alone = (NOBODY, NOBODY, [])
    os.mkdir(p("gd"))
    os.chown(p("gd"), 0, TEAM)
    os.chmod(p("gd"), 0o770)
    write_file("gd/f", b"team", os.O_WRONLY | os.O_CREAT)
    os.chown(p("gd/f"), 0, TEAM)
    os.chmod(p("gd/f"), 0o660)
    out("group member creates in a group directory", as_user(*nobody_team, lambda: touch("gd/new")))
    out("  its new file", st("gd/new"))
    out("group member reads a group file", as_user(*nobody_team, lambda: read_file("gd/f")))
    out("group member appends to a group file",
        as_user(*nobody_team, lambda: write_file("gd/f", b"+", os.O_WRONLY | os.O_APPEND)))
    out("  the group file", st("gd/f"))
    out("group member lists the group directory",
        as_user(*nobody_team, lambda: sorted(os.listdir(p("gd")))))
    out("owner chgrps to a group it is in",
        as_user(*nobody_team, lambda: os.chown(p("gd/new"), -1, TEAM)))
    out("  the file", st("gd/new"))
    out("owner chgrps to a group it is not in",
        as_user(*nobody_team, lambda: os.chown(p("gd/new"), -1, OTHER)))
    out("owner sets setgid, its file's group being a supplementary one",
        as_user(*nobody_team, lambda: os.chmod(p("gd/new"), 0o2755)))
    out("  the file", st("gd/new"))
    out("non-member creates in the group directory",
        as_user(*nobody_alone, lambda: touch("gd/new2")))
    out("non-member reads the group file", as_user(*nobody_alone, lambda: read_file("gd/f")))


# ---- special files ----
def special():
    os.mkdir(p("sp"))
    os.chmod(p("sp"), 0o777)
    out("mkfifo", try_(lambda: os.mkfifo(p("sp/fifo"), 0o640)))
    out("  the FIFO", st("sp/fifo"))
    rfd = os.open(p("sp/fifo"), os.O_RDONLY | os.O_NONBLOCK)
    wfd = os.open(p("sp/fifo"), os.O_WRONLY)
    os.write(wfd, b"through the pipe")
    out("  read back through it", os.read(rfd, 100))
    os.close(wfd)
    os.close(rfd)
    out("mknod a character device",
        try_(lambda: os.mknod(p("sp/cdev"), stat.S_IFCHR | 0o600, os.makedev(1, 3))))
    out("  the device", st("sp/cdev"))
    out("mknod a block device with large numbers",
        try_(lambda: os.mknod(p("sp/bdev"), stat.S_IFBLK | 0o660, os.makedev(259, 1048575))))
    out("  the device", st("sp/bdev"))
    out("mknod a regular file", try_(lambda: os.mknod(p("sp/reg"), stat.S_IFREG | 0o600)))
    out("  the file", st("sp/reg"))
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    out("bind a UNIX socket", try_(lambda: srv.bind(p("sp/sock"))))
    out("  the socket", st("sp/sock"))
    srv.listen(1)
    cli = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    out("  connect to it by its path", try_(lambda: cli.connect(p("sp/sock"))))
    conn, _ = srv.accept()
    cli.sendall(b"hello")
    out("  what the server reads", conn.recv(100))
    for x in (conn, cli, srv):
        x.close()
    out("nobody makes a FIFO", as_user(NOBODY, NOBODY, [], lambda: os.mkfifo(p("sp/nf"), 0o600)))
    out("  the FIFO", st("sp/nf"))
    out("nobody makes a character device",
        as_user(NOBODY, NOBODY, [], lambda: os.mknod(p("sp/ndev"), stat.S_IFCHR | 0o600,
                                                      os.makedev(1, 3))))
    out("rename a FIFO", try_(lambda: os.rename(p("sp/fifo"), p("sp/fifo2"))))
    out("  the FIFO", st("sp/fifo2"))
    out("hard link to a device", try_(lambda: os.link(p("sp/cdev"), p("sp/cdev2"))))
    out("  the device", st("sp/cdev2"))
    out("chmod a FIFO", try_(lambda: os.chmod(p("sp/fifo2"), 0o600)))
    out("  the FIFO", st("sp/fifo2"))
    out("truncate a FIFO", try_(lambda: os.truncate(p("sp/fifo2"), 0)))
    out("mkfifo over an existing name", try_(lambda: os.mkfifo(p("sp/cdev"))))
    for n in ("fifo2", "cdev", "cdev2", "bdev", "sock", "nf", "reg"):
        out(f"unlink {n}", try_(lambda: os.unlink(p("sp/" + n))))
    out("the directory at the end", sorted(os.listdir(p("sp"))))


# ---- setuid and setgid ----
def privs():
    os.mkdir(p("pv"))
    os.chmod(p("pv"), 0o777)
    nobody = (NOBODY, NOBODY, [])

    def fresh(mode, owner=0):
        write_file("pv/s", b"", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.chown(p("pv/s"), owner, owner)
        os.chmod(p("pv/s"), mode)

    for mode in (0o4777, 0o6777, 0o2767, 0o6757):
        fresh(mode)
        out(f"nobody writes to a {mode:o} file", as_user(*nobody, lambda: write_file("pv/s", b"x")))
        out("  the file", st("pv/s"))
    fresh(0o6777)
    out("root writes to a 6777 file", write_file("pv/s", b"x"))
    out("  the file", st("pv/s"))
    fresh(0o6777)
    out("nobody truncates a 6777 file", as_user(*nobody, lambda: os.truncate(p("pv/s"), 3)))
    out("  the file", st("pv/s"))
    fresh(0o6777)
    out("nobody opens a 6777 file with O_TRUNC",
        as_user(*nobody, lambda: os.close(os.open(p("pv/s"), os.O_WRONLY | os.O_TRUNC))))
    out("  the file", st("pv/s"))
    fresh(0o6777)
    out("nobody writes nothing to a 6777 file", as_user(*nobody, lambda: write_file("pv/s", b"")))
    out("  the file", st("pv/s"))
    fresh(0o6755, NOBODY)
    out("its owner writes to a 6755 file", as_user(*nobody, lambda: write_file("pv/s", b"x")))
    out("  the file", st("pv/s"))
    fresh(0o6755)
    out("root chowns a 6755 file", try_(lambda: os.chown(p("pv/s"), NOBODY, -1)))
    out("  the file", st("pv/s"))
    fresh(0o4755, NOBODY)
    out("root chowns a 4755 file to its owner", try_(lambda: os.chown(p("pv/s"), NOBODY, -1)))
    out("  the file", st("pv/s"))
    fresh(0o2745)
    out("root chowns a 2745 file", try_(lambda: os.chown(p("pv/s"), NOBODY, -1)))
    out("  the file", st("pv/s"))
    fresh(0o6755, NOBODY)
    out("its owner chgrps a 6755 file to its own group",
        as_user(*nobody, lambda: os.chown(p("pv/s"), -1, NOBODY)))
    out("  the file", st("pv/s"))
    fresh(0o4755)
    out("nobody writes to a 4755 file it may not write",
        as_user(*nobody, lambda: write_file("pv/s", b"x")))
    out("  the file", st("pv/s"))
    fresh(0o4777)
    out("nobody chmods a 4777 file it does not own",
        as_user(*nobody, lambda: os.chmod(p("pv/s"), 0o777)))
    out("  the file", st("pv/s"))


# ---- open directories removed ----
def fstat_line(fd):
    s = os.fstat(fd)
    return f"type={stat.S_IFMT(s.st_mode):o} mode={stat.S_IMODE(s.st_mode):o} nlink={s.st_nlink}"


def removed_dirs():
    os.mkdir(p("rd"))
    os.mkdir(p("rd/a"))
    os.mkdir(p("rd/b"), 0o750)
    os.chmod(p("rd/b"), 0o750)
    fd = os.open(p("rd/b"), os.O_RDONLY | os.O_DIRECTORY)
    out("open directory b", fstat_line(fd))
    out("rename a over b", try_(lambda: os.rename(p("rd/a"), p("rd/b"))))
    out("  fstat of the open b", try_(lambda: fstat_line(fd)))
    out("  listing the open b", try_(lambda: os.listdir(fd)))
    out("  creating in the open b", try_(lambda: os.open("x", os.O_CREAT | os.O_WRONLY,
                                                          dir_fd=fd)))
    os.close(fd)
    os.mkdir(p("rd/c"))
    fd = os.open(p("rd/c"), os.O_RDONLY | os.O_DIRECTORY)
    out("rmdir c while open", try_(lambda: os.rmdir(p("rd/c"))))
    out("  fstat of the open c", try_(lambda: fstat_line(fd)))
    os.close(fd)
    write_file("rd/f", b"data", os.O_WRONLY | os.O_CREAT)
    fd = os.open(p("rd/f"), os.O_RDONLY)
    out("unlink f while open", try_(lambda: os.unlink(p("rd/f"))))
    out("  fstat of the open f", try_(lambda: fstat_line(fd)))
    os.close(fd)


# ---- fallocate ----
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE = 1, 2, 0x10
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]


def fallocate(fd, mode, off, length):
    if libc.fallocate(fd, mode, off, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def pattern(n, seed):
    return bytes((i * 7 + seed) % 251 for i in range(n))


def falloc():
    MiB = 1 << 20
    fd = os.open(p("fa"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)

    def show(what, call):
        out(what, try_(call))
        s = os.fstat(fd)
        data = os.pread(fd, s.st_size + 10, 0)
        out("  size, and what reads back", f"{s.st_size} {zlib.crc32(data):08x}")

    os.pwrite(fd, pattern(3 * MiB + 123, 1), 0)
    show("fallocate mode 0 past the end", lambda: os.posix_fallocate(fd, 2 * MiB, 4 * MiB))
    show("fallocate mode 0 inside", lambda: fallocate(fd, 0, 100, 5000))
    show("fallocate KEEP_SIZE past the end",
         lambda: fallocate(fd, FALLOC_FL_KEEP_SIZE, 5 * MiB, 8 * MiB))
    show("punch a hole across chunks and stripes",
         lambda: fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                              65536 - 100, 2 * MiB + 777))
    show("punch a hole across the end",
         lambda: fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                              6 * MiB - 10, 100))
    show("punch a hole without KEEP_SIZE",
         lambda: fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 10))
    show("zero a range (tmpfs has no ZERO_RANGE)",
         lambda: fallocate(fd, FALLOC_FL_ZERO_RANGE, 6 * MiB - 5, 20))
    show("write after the preallocation", lambda: os.pwrite(fd, pattern(MiB, 9), 5 * MiB + 5))
    show("fallocate of length 0", lambda: fallocate(fd, 0, 0, 0))
    os.close(fd)
    fd = os.open(p("fa"), os.O_RDONLY)
    out("fallocate on a read-only descriptor", try_(lambda: fallocate(fd, 0, 0, 10)))
    os.close(fd)


# ---- O_DIRECT, with mmap ----
def direct():
    import mmap
    size = 3 * 4096
    buf = mmap.mmap(-1, size)  # page aligned, as O_DIRECT wants
    buf[:] = pattern(size, 5)
    fd = os.open(p("od"), os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o644)
    out("O_DIRECT write", try_(lambda: os.pwrite(fd, buf, 4096)))
    m = None
    try:
        m = mmap.mmap(fd, 4 * 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        out("mmap MAP_SHARED of the O_DIRECT descriptor", "ok")
    except OSError as e:
        out("mmap MAP_SHARED of the O_DIRECT descriptor", errno.errorcode.get(e.errno))
    if m is not None:
        out("  reads what O_DIRECT wrote", zlib.crc32(m[4096:4 * 4096]) == zlib.crc32(buf[:]))
        m[100:110] = b"0123456789"
        m.flush()
        m.close()
        rb = mmap.mmap(-1, 4096)
        out("  O_DIRECT reads what the mapping wrote", try_(lambda: os.preadv(fd, [rb], 0)))
        out("  the bytes", bytes(rb[98:112]))
    ro = os.open(p("od"), os.O_RDONLY)
    before = os.pread(ro, 16, 8192)
    buf[:] = b"x" * size
    out("O_DIRECT write over what a buffered reader cached", try_(lambda: os.pwrite(fd, buf, 4096)))
    out("  the buffered reader sees it", (before, os.pread(ro, 16, 8192)))
    os.close(ro)
    os.close(fd)
    out("  the file", st("od"))


STEPS = {"direct": direct, "groups": groups, "special": special, "privs": privs, "removed-dirs": removed_dirs,
         "fallocate": falloc}

for name in sys.argv[2:] or STEPS:
    print(f"== {name}")
    STEPS[name]()
