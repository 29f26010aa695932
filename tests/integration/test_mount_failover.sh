#!/usr/bin/env bash
# kill -9 of an OSS while a 2 GiB file is read through the lode-fuse mount: the read must
# complete byte-exact with no error. Then kill -9 of another OSS while a file is written
# through the mount: the writer either sees an error or every byte reads back; after the
# OSS returns, lodectl repair restores full redundancy.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root to mount and drop caches"; exit 77; fi
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
command -v fusermount3 >/dev/null || { echo "SKIP: fusermount3 missing (package fuse3)"; exit 77; }
lodectl=${LODECTL:?}
fuse=${LODE_FUSE:?}
dir=$(mktemp -d /tmp/lode-mountkill.XXXXXX)
mnt=$dir/mnt
fuse_pid=
cleanup() {
	findmnt -M "$mnt" >/dev/null && { fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"; } || true
	[ -n "$fuse_pid" ] && kill "$fuse_pid" 2>/dev/null || true
	"$lodectl" local down "$dir/c" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT

mds=$("$lodectl" local up "$dir/c" --oss 3)
export LODE_KEY_FILE=$dir/c/cluster.key # lode-fuse and lodectl prove the cluster's key
mkdir -p "$mnt"
"$fuse" --mds "$mds" "$mnt" -f -o timeout=10 2>"$dir/fuse.log" &
fuse_pid=$!
for _ in $(seq 200); do mountpoint -q "$mnt" && break; sleep 0.05; done
mountpoint -q "$mnt" || { echo "FAIL: the mount did not come up"; cat "$dir/fuse.log"; exit 1; }

head -c $((2048 << 20)) /dev/urandom >"$dir/src"
dd if="$dir/src" of="$mnt/ckpt" bs=16M conv=fsync status=none

echo "== kill -9 oss1 during a 2 GiB read through the mount"
sync; echo 3 >/proc/sys/vm/drop_caches
cmp "$dir/src" "$mnt/ckpt" &
reader=$!
sleep 1
"$lodectl" local kill "$dir/c" oss1 -9
if ! wait $reader; then echo "FAIL: the read through the mount failed or differed"; exit 1; fi
echo "verified 2147483648 bytes read through the mount across the kill of oss1"
"$lodectl" local up "$dir/c" >/dev/null

echo "== kill -9 oss2 during a 1 GiB write through the mount"
sleep 2
set +e
dd if="$dir/src" of="$mnt/during" bs=16M count=64 conv=fsync status=none &
writer=$!
sleep 1
"$lodectl" local kill "$dir/c" oss2 -9
wait $writer
wrc=$?
set -e
if [ $wrc -ne 0 ]; then
	echo "writer got an error (dd exit $wrc): allowed"
else
	cmp -n $((1024 << 20)) "$dir/src" "$mnt/during"
	echo "verified 1073741824 bytes written across the kill of oss2"
	"$lodectl" --mds "$mds" local up "$dir/c" >/dev/null
	sleep 2
	"$lodectl" --mds "$mds" repair /during
	"$lodectl" --mds "$mds" stat /during | grep -q "copies: 0 of"
	echo "repair restored every copy"
fi
echo "mount failover: 2 passed, 0 failed"
