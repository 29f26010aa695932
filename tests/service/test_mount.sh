#!/usr/bin/env bash
# The build tree's mount.lode mounts a cluster (with the build's lode-fuse) and the mount
# unmounts cleanly; a detached lode-fuse keeps its messages in the file -o log= or --log
# names, with dated lines; a second lode-fuse on a directory where Lode is mounted refuses
# with one line and a non-zero exit instead of stacking; lode-fuse runs from a config file.
set -euo pipefail
LODE_TEST_NAME=mount
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root to mount"; exit 77; fi
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
command -v fusermount3 >/dev/null || { echo "SKIP: fusermount3 missing (package fuse3)"; exit 77; }
fuse=${LODE_FUSE:?}
mount_lode=${LODE_MOUNT_HELPER:?}
. "$(dirname "$0")/lib.sh"
mnt=$dir/mnt
umount_all() {
	while findmnt -M "$mnt" >/dev/null; do umount -l "$mnt" || break; done
	"$lodectl" local down "$dir/c" >/dev/null 2>&1
}
extra_cleanup=umount_all
mkdir -p "$mnt"
mds=$("$lodectl" local up "$dir/c" --oss 1)
export LODE_KEY_FILE=$dir/c/cluster.key
dated='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{2}:[0-9]{2} INFO  lode-fuse: '

# wait_unmounted LOG: the mount is gone and lode-fuse said it was unmounting (its last line)
wait_unmounted() {
	for _ in $(seq 200); do
		if grep -q "unmounting $mnt" "$1" 2>/dev/null && ! mountpoint -q "$mnt"; then
			# what a sanitizer build prints at exit lands in the same file
			sleep 0.5
			grep -q "Sanitizer" "$1" && fail "lode-fuse: $(grep -A5 Sanitizer "$1")"
			return 0
		fi
		sleep 0.05
	done
	fail "lode-fuse did not end after the unmount: $(cat "$1")"
}

echo "== the build tree's mount.lode, as mount(8) calls it"
[ -x "$mount_lode" ] || fail "$mount_lode is not an executable"
"$mount_lode" "${mds#tcp://}" "$mnt" -o "timeout=10,log=$dir/fuse.log" ||
	fail "mount.lode failed"
mountpoint -q "$mnt" || fail "mount.lode returned but nothing is mounted"
grep -q " $mnt fuse.lode " /proc/self/mounts || fail "not a Lode mount: $(grep " $mnt " /proc/self/mounts)"
head -c 2000000 /dev/urandom >"$dir/src"
cp "$dir/src" "$mnt/f"
cmp "$dir/src" "$mnt/f" || fail "the file read back through the mount differs"
grep -Eq "${dated}mounted $mds on $mnt" "$dir/fuse.log" ||
	fail "the detached lode-fuse did not log to -o log=: $(cat "$dir/fuse.log")"

echo "== a second lode-fuse on the same directory refuses"
rc=0
"$fuse" --mds "$mds" "$mnt" >"$dir/second.out" 2>&1 || rc=$?
cat "$dir/second.out"
[ $rc -ne 0 ] || fail "a second lode-fuse mounted on top of the first"
[ "$(wc -l <"$dir/second.out")" -eq 1 ] || fail "not one line"
grep -q "$mnt is already a Lode mount (of ${mds#tcp://})" "$dir/second.out" || fail "no reason"
rc=0
"$mount_lode" "${mds#tcp://}" "$mnt/" >"$dir/second.out" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q "already a Lode mount" "$dir/second.out" ||
	fail "mount.lode on a mounted directory (as $mnt/): exit $rc, $(cat "$dir/second.out")"
[ "$(grep -c " $mnt fuse.lode " /proc/self/mounts)" -eq 1 ] || fail "two mounts stacked"
cmp "$dir/src" "$mnt/f" || fail "the first mount stopped working"

echo "== umount ends the mount and lode-fuse"
umount "$mnt"
wait_unmounted "$dir/fuse.log"
grep -Eq "${dated}unmounting $mnt" "$dir/fuse.log" || fail "no dated unmounting line"

echo "== lode-fuse from a config file, detached, logging to --log"
cat >"$dir/fuse.conf" <<CONF
mds = $mds
options = timeout=10,ro
log = $dir/fuse2.log
CONF
"$fuse" --config "$dir/fuse.conf" "$mnt" || fail "lode-fuse --config failed"
cmp "$dir/src" "$mnt/f" || fail "the file read through the config's mount differs"
touch "$mnt/new" 2>/dev/null && fail "options = ro from the config file was not applied"
grep -Eq "${dated}mounted $mds on $mnt read-only" "$dir/fuse2.log" ||
	fail "no line in --log's file: $(cat "$dir/fuse2.log" 2>&1)"
fusermount3 -u "$mnt"
wait_unmounted "$dir/fuse2.log"

echo "== a bad lode-fuse config file names its line"
printf 'mds = %s\noptions = ro,timeout=abc\n' "$mds" >"$dir/badfuse.conf"
rc=0
"$fuse" --config "$dir/badfuse.conf" "$mnt" >"$dir/badfuse.out" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -qF "$dir/badfuse.conf:2: bad value for timeout: 'abc'" "$dir/badfuse.out" ||
	fail "bad config: exit $rc, $(cat "$dir/badfuse.out")"
mountpoint -q "$mnt" && fail "mounted despite a bad config file"

echo "== a bad --log path is said on the terminal, nothing mounted"
rc=0
"$fuse" --mds "$mds" "$mnt" --log "$dir/no/such/dir/log" >"$dir/badlog.out" 2>&1 || rc=$?
[ $rc -ne 0 ] && grep -q -- "--log $dir/no/such/dir/log: No such file or directory" \
	"$dir/badlog.out" || fail "bad --log: exit $rc, $(cat "$dir/badlog.out")"
mountpoint -q "$mnt" && fail "mounted despite a bad --log"
echo "PASS"
