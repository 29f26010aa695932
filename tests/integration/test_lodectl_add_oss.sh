#!/usr/bin/env bash
# lodectl local add-oss and --capacity: a cluster of 3 OSS that declare 64 MiB each gets a
# fourth of 32 MiB; status and df report the declared sizes (not the shared disk's), a put
# shows up as used bytes of the declared size, new files are placed on the new target too,
# and `local down` stops all four. lode-oss --reserve: a target whose disk has less free
# than its reserve reports no free space, says so, and gets no new file and no copy a
# drain moves; the default reserve is 1% of the disk, at most 1 GiB.
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

echo "an OSS whose disk has less free than its reserve takes no new file"
if "$oss_bin" --data "$dir/x" --listen tcp://127.0.0.1:0 --mds "$mds" --insecure \
	--reserve 1X 2>"$dir/err"; then fail "lode-oss took --reserve 1X"; fi
grep -q -- "--reserve" "$dir/err" || fail "unclear error: $(cat "$dir/err")"
# 1 PiB: more than this disk has free (and than it holds: its size still reports)
"$oss_bin" --data "$dir/full" --listen tcp://127.0.0.1:0 --mds "$mds" --key "$c/cluster.key" \
	--reserve 1024T --port-file "$dir/full.addr" 2>"$dir/full.log" &
full_pid=$!
# and one with the default reserve and no declared capacity: its start names the reserve
"$oss_bin" --data "$dir/dflt" --listen tcp://127.0.0.1:0 --mds "$mds" --key "$c/cluster.key" \
	--port-file "$dir/dflt.addr" 2>"$dir/dflt.log" &
dflt_pid=$!
for _ in $(seq 100); do [ -s "$dir/full.addr" ] && [ -s "$dir/dflt.addr" ] && break; sleep 0.1; done
[ -s "$dir/full.addr" ] || fail "the OSS with --reserve 1024T did not start: $(cat "$dir/full.log")"
[ -s "$dir/dflt.addr" ] || fail "the OSS with the default reserve did not start: $(cat "$dir/dflt.log")"
grep -q "within the reserve" "$dir/full.log" ||
	fail "the OSS inside its reserve did not say so: $(cat "$dir/full.log")"
full_id="" full_addr=$(cat "$dir/full.addr")
for _ in $(seq 100); do
	full_id=$("$lodectl" status --json |
		js "next((t['id'] for t in d['targets'] if t['address'] == '$full_addr' and t['state'] == 'up'), '')")
	[ -n "$full_id" ] && break
	sleep 0.1
done
[ -n "$full_id" ] || fail "the OSS with --reserve 1024T did not come up: $(cat "$dir/full.log")"
"$lodectl" status --json | js "[(t['bytes_total'] > 0, t['bytes_free']) for t in d['targets'] if t['id'] == $full_id][0]" >"$dir/out"
[ "$(cat "$dir/out")" = "(True, 0)" ] ||
	fail "target $full_id (reserve 1024T) reports (size > 0, free) = $(cat "$dir/out")"
# placement takes targets with room in turn: the full one would get copies too if its free
# bytes counted
for i in $(seq 6); do
	"$lodectl" put --quiet --stripe-count 1 --mirrors 2 "$dir/data" "/r$i"
	"$lodectl" stat --json "/r$i" | js '[c["target"] for c in d["layout"]["stripes"][0]]' >"$dir/out"
	grep -q -w "$full_id" "$dir/out" && fail "/r$i has a copy on full target $full_id: $(cat "$dir/out")"
done
"$lodectl" get --quiet /r6 "$dir/back" && cmp -s "$dir/data" "$dir/back" || fail "/r6 changed"
# a drain moves copies to targets with room: the full one holds none of them (it has the
# lowest use of all, so it would be first otherwise)
"$lodectl" drain "$new" --wait 60 >"$dir/drain.out" 2>&1 || fail "drain of $new: $(cat "$dir/drain.out")"
for f in $(seq -f "/f%g" 8) $(seq -f "/r%g" 6); do
	"$lodectl" stat --json "$f" | js '[c["target"] for c in d["layout"]["stripes"][0]]' >"$dir/out"
	grep -q -w "$full_id" "$dir/out" && fail "$f has a copy on full target $full_id after a drain"
	grep -q -w "$new" "$dir/out" && fail "$f still has a copy on drained target $new"
done
"$lodectl" get --quiet /f1 "$dir/back" && cmp -s "$dir/data" "$dir/back" || fail "/f1 changed in the drain"
line=$(grep -o "keeping [0-9]* MiB of the file system's [0-9]* MiB free" "$dir/dflt.log") ||
	fail "the OSS with the default reserve did not name it: $(cat "$dir/dflt.log")"
set -- $line
[ "$2" = $(($8 / 100 < 1024 ? $8 / 100 : 1024)) ] ||
	fail "the default reserve is 1% of the disk, at most 1 GiB: '$line'"
kill "$full_pid" "$dflt_pid" 2>/dev/null || true
wait "$full_pid" "$dflt_pid" || true

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
