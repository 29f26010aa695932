#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Differential test of what posix_diff does not cover (posix_more.py): identities and
# supplementary groups, special files, setuid/setgid clearing, open directories removed,
# fallocate; the same steps on a fresh tmpfs and on a lode-fuse mount (allow_other), as
# root and as nobody; the transcripts must be identical. Then what a transcript cannot
# show: a second mount reads the preallocated and punched file back from the object
# servers (checksums verified) as tmpfs has it, and fallocate reserved space on them.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || skip "needs root (mounts a tmpfs, runs as other users)"
need_fuse

start_cluster 3
mount_lode "$WORK/mnt" allow_other
mount_tmpfs "$WORK/ref"

for fs in ref mnt; do
	mkdir "$WORK/$fs/t"
	timeout 120 "$PYTHON" "$LODE_TEST_SRCDIR/posix_more.py" "$WORK/$fs/t" "$@" >"$WORK/$fs.txt" 2>&1 ||
		{ cat "$WORK/$fs.txt"; fail "posix_more.py on $fs exited $?"; }
done
if ! diff -u "$WORK/ref.txt" "$WORK/mnt.txt"; then
	fail "lode-fuse differs from tmpfs (- tmpfs, + lode-fuse)"
fi
echo "$(grep -c '' "$WORK/mnt.txt") lines, identical to tmpfs"

if [ -f "$WORK/ref/t/fa" ]; then
	mount_lode "$WORK/m2"
	cmp "$WORK/ref/t/fa" "$WORK/m2/t/fa" ||
		fail "another mount reads the fallocated file differently from tmpfs"
	echo "another mount reads the fallocated and punched file as tmpfs has it"
	used() { du -sk "$CLUSTER_DIR" | cut -f1; }
	before=$(used)
	"$PYTHON" - "$WORK/mnt/t/reserved" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
if libc.fallocate(fd, 1, 0, 64 << 20):  # FALLOC_FL_KEEP_SIZE
    sys.exit("fallocate: " + os.strerror(ctypes.get_errno()))
if os.fstat(fd).st_size != 0:
    sys.exit("KEEP_SIZE changed the size")
os.close(fd)
PY
	after=$(used)
	blocks=$(stat -c %b "$WORK/mnt/t/reserved")
	echo "its st_blocks: $blocks"
	[ "$blocks" -ge $((64 << 11)) ] || fail "st_blocks $blocks does not show the 64 MiB reserved"
	echo "fallocate KEEP_SIZE of 64 MiB: the object servers' disk use grew by $((after - before)) KiB"
	[ $((after - before)) -ge 65536 ] || fail "fallocate reserved no space on the object servers"
fi

# st_blocks shows what a file takes: a sparse file (50 KiB written 1.6 MB in) about what
# was written (plus checksums and file system rounding), not its size; a dense one its
# size; a file only truncated up nearly nothing; as the object servers' disks count them.
"$PYTHON" - "$WORK/mnt/t" <<'PY'
import os, sys
d = sys.argv[1]
with open(os.path.join(d, "sparse"), "wb") as f:
    f.seek(1600 * 1000)
    f.write(b"s" * 50 * 1024)
with open(os.path.join(d, "dense"), "wb") as f:
    f.write(b"d" * (4 << 20))
with open(os.path.join(d, "hole"), "wb") as f:
    f.truncate(1 << 30)
for name, lo, hi in (("sparse", 50, 400), ("dense", 4096, 4096 + 512), ("hole", 0, 64)):
    s = os.stat(os.path.join(d, name))
    kib = s.st_blocks // 2
    print(f"{name}: size {s.st_size}, st_blocks {s.st_blocks} ({kib} KiB)")
    if not lo <= kib <= hi:
        sys.exit(f"FAIL: {name} takes {kib} KiB by st_blocks, expected {lo}..{hi}")
PY
echo "du -k: $(du -k "$WORK/mnt/t/sparse" "$WORK/mnt/t/dense" "$WORK/mnt/t/hole" | tr '\n\t' ', ')"
