#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Differential test of identities, special files and privilege bits (posix_ids.py): the
# same steps, as root and as nobody with and without supplementary groups, on a fresh tmpfs
# and on a lode-fuse mount (allow_other); the transcripts must be identical.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || skip "needs root (mounts a tmpfs, runs as other users)"
need_fuse

start_cluster 3
mount_lode "$WORK/mnt" allow_other
mount_tmpfs "$WORK/ref"

for fs in ref mnt; do
	mkdir "$WORK/$fs/t"
	timeout 120 "$PYTHON" "$LODE_TEST_SRCDIR/posix_ids.py" "$WORK/$fs/t" "$@" >"$WORK/$fs.txt" 2>&1 ||
		{ cat "$WORK/$fs.txt"; fail "posix_ids.py on $fs exited $?"; }
done
if ! diff -u "$WORK/ref.txt" "$WORK/mnt.txt"; then
	fail "lode-fuse differs from tmpfs (- tmpfs, + lode-fuse)"
fi
echo "$(grep -c '' "$WORK/mnt.txt") lines, identical to tmpfs"
cat "$WORK/mnt.txt"
