#!/usr/bin/env bash
# With the MDS gone, calls on the mount fail with an error promptly instead of each waiting
# for the timeout (issue 18: every call waited 30 s, df 59 s): a stat and a df return EIO
# within a bound (a hang bound, not a speed figure). liblode rides over a short MDS
# restart, so after `local up` brings the MDS back the same mount works without a remount.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: needs root to mount"; exit 77; fi
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
command -v fusermount3 >/dev/null || { echo "SKIP: fusermount3 missing (package fuse3)"; exit 77; }
fuse=${LODE_FUSE:?}
LODE_TEST_NAME=mdsdown
. "$(dirname "$0")/lib.sh"
mnt=$dir/mnt
fuse_pid=
umount_all() {
	mountpoint -q "$mnt" 2>/dev/null && fusermount3 -u "$mnt" 2>/dev/null || true
	[ -n "$fuse_pid" ] && kill "$fuse_pid" 2>/dev/null || true
	cleanup
}
trap umount_all EXIT

BOUND=10 # seconds: far above the 3 s restart grace, far below the 30 s timeout

mds=$("$lodectl" local up "$dir/c" --oss 2)
mkdir -p "$mnt"
# the default 30 s timeout: what the issue saw
"$fuse" --mds "$mds" "$mnt" -f -o attr_timeout=0,entry_timeout=0 2>"$dir/fuse.log" &
fuse_pid=$!
for _ in $(seq 200); do mountpoint -q "$mnt" && break; sleep 0.05; done
mountpoint -q "$mnt" || { cat "$dir/fuse.log"; fail "the mount did not come up"; }
echo hello >"$mnt/f"

# runs "$@" and checks it fails within BOUND seconds
fails_within_bound() {
	local start end rc=0
	start=$(date +%s%N)
	timeout $((BOUND + 20)) "$@" >/dev/null 2>"$dir/err" || rc=$?
	end=$(date +%s%N)
	local ms=$(((end - start) / 1000000))
	echo "$*: exit $rc after $ms ms ($(head -c 200 "$dir/err"))"
	[ $rc -ne 0 ] || fail "$* succeeded with the MDS down"
	[ $rc -ne 124 ] || fail "$* hung with the MDS down"
	[ $ms -le $((BOUND * 1000)) ] || fail "$* took $ms ms with the MDS down (bound ${BOUND} s)"
}

echo "== kill -9 of the MDS: stat and df fail promptly"
"$lodectl" local kill "$dir/c" mds -9
sleep 0.5
fails_within_bound stat "$mnt/f"
grep -q "Input/output error" "$dir/err" || fail "stat did not say EIO: $(cat "$dir/err")"
fails_within_bound df "$mnt"
fails_within_bound stat "$mnt/f"
fails_within_bound ls "$mnt"

echo "== the MDS is back: the same mount works"
"$lodectl" local up "$dir/c" >/dev/null
ok=
for _ in $(seq 100); do
	if [ "$(cat "$mnt/f" 2>/dev/null)" = hello ]; then ok=1; break; fi
	sleep 0.1
done
[ -n "$ok" ] || fail "the mount did not recover after the MDS restart"
df "$mnt" >/dev/null || fail "df after the MDS restart"
echo "mds down: passed"
