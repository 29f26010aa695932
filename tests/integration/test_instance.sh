#!/usr/bin/env bash
# One daemon per data directory: a second lode-mds or lode-oss started on a directory in use
# exits non-zero with a one-line reason, and the first keeps serving. And `lodectl local up`
# restarts a daemon killed with -9 a moment before, even while its process is still an
# unreaped zombie.
set -euo pipefail
mds_bin=${LODE_MDS_BIN:?}
oss_bin=${LODE_OSS_BIN:?}
LODE_TEST_NAME=instance
. "$(dirname "$0")/lib.sh"

mds=$("$lodectl" local up "$dir/c" --oss 2)
export LODE_MDS=$mds
"$lodectl" status >/dev/null || fail "the cluster did not come up"

echo "== a second lode-mds on the MDS's data directory"
if timeout 20 "$mds_bin" --data "$dir/c/mds" --listen tcp://127.0.0.1:0 --key "$LODE_KEY_FILE" \
	2>"$dir/mds2.err"; then
	fail "a second lode-mds started on a directory in use"
fi
grep -q "is in use by another lode-mds (pid [0-9]*)" "$dir/mds2.err" ||
	fail "no reason given: $(cat "$dir/mds2.err")"
[ "$(wc -l <"$dir/mds2.err")" -eq 1 ] || fail "more than one line: $(cat "$dir/mds2.err")"

echo "== a second lode-oss on an OSS's data directory"
if timeout 20 "$oss_bin" --data "$dir/c/oss0" --listen tcp://127.0.0.1:0 --mds "$mds" \
	--key "$LODE_KEY_FILE" \
	2>"$dir/oss2.err"; then
	fail "a second lode-oss started on a directory in use"
fi
grep -q "is in use by another lode-oss (pid [0-9]*)" "$dir/oss2.err" ||
	fail "no reason given: $(cat "$dir/oss2.err")"

echo "== the first ones keep serving, at their own addresses"
"$lodectl" mkdir /still-here || fail "the MDS stopped serving"
head -c 3000000 /dev/urandom >"$dir/src"
"$lodectl" put "$dir/src" /still-here/f || fail "the OSS stopped serving"
"$lodectl" get /still-here/f "$dir/back" && cmp "$dir/src" "$dir/back" || fail "data differs"
"$lodectl" status >"$dir/status"
cat "$dir/status"

echo "== local up right after kill -9 of the MDS restarts it"
for round in 1 2 3; do
	# not through lodectl, which would reap it: the process stays a zombie a while
	kill -9 "$(cat "$dir/c/mds/pid")"
	sleep 0.5
	"$lodectl" local up "$dir/c" --oss 2 >/dev/null || fail "local up failed (round $round)"
	"$lodectl" stat /still-here/f >/dev/null || fail "the MDS is not back (round $round)"
done
echo "PASS"
