#!/usr/bin/env bash
# With the MDS gone, calls on the mount fail with an error promptly instead of each waiting
# for the timeout (issue 18: every call waited 30 s, df 59 s): a stat and a df return EIO
# within a bound (a hang bound, not a speed figure). liblode rides over a short MDS
# restart, so after `local up` brings the MDS back the same mount works without a remount.
set -euo pipefail

LODE_TEST_NAME=mdsdown
. "$(dirname "$0")/lib.sh"
mnt=$dir/mnt

BOUND=10 # seconds: far above the 3 s restart grace, far below the 30 s timeout

mds=$("$lodectl" local up "$dir/c" --oss 2)
# the default 30 s timeout: what the issue saw
mount_lode "$mnt" attr_timeout=0,entry_timeout=0
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
