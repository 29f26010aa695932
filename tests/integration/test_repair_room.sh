#!/usr/bin/env bash
# lodectl repair never puts a copy on a target without room: a file's copy misses a write
# while its OSS is down, and the only other target up is inside its reserve (lode-oss
# --reserve 1024T: it reports no free space). Repair then leaves the copy degraded and
# says so (exit 1), rather than filling the full disk; once the copy's own OSS is back,
# repair refills it there and every byte reads back.
set -euo pipefail
LODE_TEST_NAME=repair-room
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
oss_bin=${LODE_OSS_BIN:?LODE_OSS_BIN must name lode-oss}
js() { $py -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
copies_of() { "$lodectl" stat --json "$1" | js '[c["target"] for c in d["layout"]["stripes"][0]]'; }
degraded() { "$lodectl" stat "$1" | sed -n 's/^copies: \([0-9]*\) of.*/\1/p'; }
state_of() { "$lodectl" status --json | js "[t['state'] for t in d['targets'] if t['id'] == $1][0]"; }

c=$dir/c
mds=$("$lodectl" local up "$c" --oss 2)
export LODE_MDS=$mds
"$oss_bin" --data "$dir/full" --listen tcp://127.0.0.1:0 --mds "$mds" --key "$c/cluster.key" \
	--reserve 1024T --port-file "$dir/full.addr" 2>"$dir/full.log" &
full_pid=$!
trap 'kill $full_pid 2>/dev/null || true; cleanup' EXIT
full_id=
for _ in $(seq 100); do
	[ -s "$dir/full.addr" ] && full_id=$("$lodectl" status --json |
		js "next((t['id'] for t in d['targets'] if t['address'] == '$(cat "$dir/full.addr")' and t['state'] == 'up'), '')")
	[ -n "$full_id" ] && break
	sleep 0.1
done
[ -n "$full_id" ] || fail "the OSS with --reserve 1024T did not come up: $(cat "$dir/full.log")"

head -c $((2 << 20)) /dev/urandom >"$dir/data"
"$lodectl" put --quiet --stripe-count 1 --mirrors 2 "$dir/data" /f
targets=$(copies_of /f)
grep -q -w "$full_id" <<<"$targets" && fail "/f was given a copy on the full target: $targets"
oss1_id=$("$lodectl" status --json |
	js "[t['id'] for t in d['targets'] if t['address'] == '$(cat "$c/oss1/addr")'][0]")

echo "== a write while oss1 is down degrades its copy"
mount_lode "$dir/m"
"$lodectl" local kill "$c" oss1 -9 >/dev/null
for _ in $(seq 200); do [ "$(state_of "$oss1_id")" = down ] && break; sleep 0.05; done
[ "$(state_of "$oss1_id")" = down ] || fail "target $oss1_id is not down after kill -9 of oss1"
head -c 65536 /dev/urandom >"$dir/patch"
dd if="$dir/patch" of="$dir/m/f" bs=64K seek=3 conv=notrunc,fsync status=none
dd if="$dir/patch" of="$dir/data" bs=64K seek=3 conv=notrunc status=none
[ "$(degraded /f)" = 1 ] || fail "/f has $(degraded /f) degraded copies after a write with oss1 down"

echo "== repair with no target that has room: the copy stays degraded, the full one untouched"
if "$lodectl" repair /f >"$dir/repair.out" 2>&1; then
	fail "repair succeeded with only a full target to copy to: $(cat "$dir/repair.out")"
fi
cat "$dir/repair.out"
grep -q "stay degraded" "$dir/repair.out" || fail "repair did not say why: $(cat "$dir/repair.out")"
targets=$(copies_of /f)
grep -q -w "$full_id" <<<"$targets" && fail "repair put a copy on the full target: $targets"
[ "$(degraded /f)" = 1 ] || fail "/f has $(degraded /f) degraded copies after a repair that had no room"

echo "== oss1 back: repair refills the copy in place"
"$lodectl" local up "$c" >/dev/null
for _ in $(seq 200); do [ "$(state_of "$oss1_id")" = up ] && break; sleep 0.05; done
"$lodectl" repair /f >"$dir/repair.out" 2>&1 || fail "repair with oss1 back: $(cat "$dir/repair.out")"
[ "$(degraded /f)" = 0 ] || fail "/f has $(degraded /f) degraded copies after the repair"
[ "$(copies_of /f)" = "$targets" ] || fail "the copy moved: $targets, then $(copies_of /f)"
"$lodectl" get --quiet /f "$dir/back" && cmp -s "$dir/data" "$dir/back" || fail "/f does not read back"
"$lodectl" local kill "$c" oss0 -9 >/dev/null # only the refilled copy is left to read
"$lodectl" get --quiet /f "$dir/back2" && cmp -s "$dir/data" "$dir/back2" ||
	fail "/f does not read back from the refilled copy alone"
echo "PASS"
