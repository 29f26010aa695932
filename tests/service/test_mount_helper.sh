#!/usr/bin/env bash
# `mount -t lode HOST:PORT DIR` with the build tree: mount(8) looks for its helper only in
# /sbin, /sbin/fs.d and /sbin/fs (no PATH, no option to add a directory), so an operator
# links build/tools/mount.lode there. The test does the same in a private mount namespace,
# where a directory holding only that link covers /sbin, and leaves the host's /sbin alone.
# The helper follows its link to find the build's lode-fuse; umount ends the mount cleanly.
set -euo pipefail
LODE_TEST_NAME=mounthelper
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root to mount"; exit 77; fi
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: unshare missing (package util-linux)"; exit 77; }
mount_lode=${LODE_MOUNT_HELPER:?}
. "$(dirname "$0")/lib.sh"
down() { "$lodectl" local down "$dir/c" >/dev/null 2>&1; }
extra_cleanup=down
mds=$("$lodectl" local up "$dir/c" --oss 1)
# the key as fstab gives it (-o key=FILE): mount(8) need not pass the environment on
export LODE_KEY_FILE=$dir/c/cluster.key
mkdir -p "$dir/sbin" "$dir/mnt"
ln -s "$mount_lode" "$dir/sbin/mount.lode"
unshare -m --propagation private true 2>/dev/null ||
	{ echo "SKIP: cannot make a mount namespace here"; exit 77; }
head -c 1000000 /dev/urandom >"$dir/src"

export dir mds
unshare -m --propagation private bash -euc '
	mount --bind "$dir/sbin" "$(readlink -f /sbin)"
	mount -t lode "${mds#tcp://}" "$dir/mnt" -o "timeout=10,log=$dir/fuse.log,key=$LODE_KEY_FILE"
	grep " $dir/mnt fuse.lode " /proc/self/mounts
	cp "$dir/src" "$dir/mnt/f"
	cmp "$dir/src" "$dir/mnt/f"
	umount "$dir/mnt"
	for _ in $(seq 200); do
		grep -q "unmounting $dir/mnt" "$dir/fuse.log" && exit 0
		sleep 0.05
	done
	echo "lode-fuse did not end after umount"
	exit 1
' || fail "mount -t lode through the build tree's helper: $(cat "$dir/fuse.log" 2>&1)"
grep -q "mounted $mds on $dir/mnt" "$dir/fuse.log" || fail "no mount line in the log"
# the file is in the cluster, not in a directory
"$lodectl" --mds "$mds" get /f "$dir/back" && cmp "$dir/src" "$dir/back" ||
	fail "the file written through mount -t lode is not in the cluster"
echo "PASS"
