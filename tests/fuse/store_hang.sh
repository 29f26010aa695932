#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Opens that hand the kernel a file's pages never hang the mount: mount A runs with two
# request threads (-o max_threads=2), where a store into the kernel's pages that waits,
# under the file's open lock, for a READ no thread is left to answer hung it within
# seconds (store_hang.py), once with the file rewritten in place (the whole small file
# stored), once with it growing (its last byte stored), and once with it growing and
# opened for appending (its pages dropped). On a hang the FUSE connection is aborted, so
# that the stuck processes end and the cleanup can unmount.
. "$(dirname "$0")/lib.sh"

need_fuse
start_cluster 2
mount_lode "$WORK/a" max_threads=2
mount_lode "$WORK/b"
# the connection's number in /sys/fs/fuse/connections: the mount's minor device number
conn=$(awk -v m="$WORK/a" '$5 == m { split($3, d, ":"); print d[2] }' /proc/self/mountinfo)
for mode in rewrite append appendopen; do
	if ! "$PYTHON" "$LODE_TEST_SRCDIR/store_hang.py" "$WORK/a" "$WORK/b" "${1:-10}" $mode; then
		mountpoint -q /sys/fs/fuse/connections ||
			mount -t fusectl none /sys/fs/fuse/connections
		[ -n "$conn" ] && [ -e "/sys/fs/fuse/connections/$conn/abort" ] &&
			echo 1 >"/sys/fs/fuse/connections/$conn/abort"
		fail "mount A hung or failed under opens, reads and stats of a file ($mode)"
	fi
done
