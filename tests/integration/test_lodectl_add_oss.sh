#!/usr/bin/env bash
# lodectl local add-oss and --capacity: a cluster of 3 OSS that declare 64 MiB each gets a
# fourth of 32 MiB; status and df report the declared sizes (not the shared disk's), a put
# shows up as used bytes of the declared size, new files are placed on the new target too,
# and `local down` stops all four.
set -euo pipefail
LODE_TEST_NAME=add-oss
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3

c="$dir/c"
mds=$("$lodectl" local up "$c" --oss 3 --capacity 64M)
export LODE_MDS=$mds
mib=$((1 << 20))
# jq-less JSON: field FIELD of lodectl's JSON on stdin (a python expression on d)
js() { $py -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

"$lodectl" status --json | js 'sorted(t["bytes_total"] for t in d["targets"])' >"$dir/out"
[ "$(cat "$dir/out")" = "[$((64 * mib)), $((64 * mib)), $((64 * mib))]" ] ||
	fail "3 targets of 64 MiB expected, status says $(cat "$dir/out")"

echo "add-oss: a fourth target, 32 MiB"
if "$lodectl" local add-oss "$dir/nothing" 2>"$dir/err"; then fail "add-oss to no cluster worked"; fi
grep -q "not a local cluster" "$dir/err" || fail "unclear error: $(cat "$dir/err")"
out=$("$lodectl" local add-oss "$c" --capacity 32M)
[ "${out%% *}" = oss3 ] || fail "add-oss printed '$out', expected oss3 ADDR"
[ -e "$c/oss3/pid" ] && kill -0 "$(cat "$c/oss3/pid")" || fail "oss3 is not running"
"$lodectl" status --json | js '[t["state"] for t in d["targets"]].count("up")' >"$dir/out"
[ "$(cat "$dir/out")" = 4 ] || fail "status shows $(cat "$dir/out") targets up, expected 4"
"$lodectl" df --json | js 'd["bytes_total"], d["targets_up"]' | tr -d "()," >"$dir/out"
[ "$(cat "$dir/out")" = "$((224 * mib)) 4" ] ||
	fail "df: expected 224 MiB on 4 targets, got $(cat "$dir/out")"
new=$("$lodectl" status --json | js 'max(t["id"] for t in d["targets"])')

echo "new files are placed on the new target, and their bytes count as used"
head -c $((3 * mib)) /dev/urandom >"$dir/data"
on_new=0
for i in $(seq 8); do
	"$lodectl" put --quiet --stripe-count 1 --mirrors 1 "$dir/data" "/f$i"
	t=$("$lodectl" stat --json "/f$i" | js 'd["layout"]["stripes"][0][0]["target"]')
	[ "$t" = "$new" ] && on_new=$((on_new + 1))
done
[ "$on_new" -gt 0 ] || fail "none of 8 new files was placed on the new target $new"
# the reclaim thread measures every 5 s; the heartbeat reports it within a second
for _ in $(seq 80); do
	used=$("$lodectl" status --json | js "[t['bytes_total'] - t['bytes_free'] for t in d['targets'] if t['id'] == $new][0]")
	[ "$used" -ge $((on_new * 3 * mib)) ] && break
	sleep 0.2
done
[ "$used" -ge $((on_new * 3 * mib)) ] ||
	fail "target $new holds $on_new files of 3 MiB but reports $used bytes used"
[ "$used" -lt $((32 * mib)) ] || fail "target $new reports $used bytes used of 32 MiB"
"$lodectl" get --quiet /f1 "$dir/back" && cmp -s "$dir/data" "$dir/back" || fail "/f1 changed"

echo "a bad --capacity is refused by lode-oss"
oss_bin=$(dirname "$LODE_MDS_BIN")/../oss/lode-oss
if "$oss_bin" --data "$dir/x" --listen tcp://127.0.0.1:0 --mds "$mds" --insecure \
	--capacity 12Q 2>"$dir/err"; then fail "lode-oss took --capacity 12Q"; fi
grep -q -- "--capacity" "$dir/err" || fail "unclear error: $(cat "$dir/err")"

echo "local down stops every OSS, the added one too"
pids=$(cat "$c"/oss*/pid "$c/mds/pid")
"$lodectl" local down "$c"
for p in $pids; do
	# exited, or a zombie its parent (init here) has not reaped yet
	state=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -c1)
	[ -z "$state" ] || [ "$state" = Z ] || [ "$state" = X ] ||
		fail "pid $p still runs after local down (state $state)"
done
echo "OK"
