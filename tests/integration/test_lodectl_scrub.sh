#!/usr/bin/env bash
# lodectl scrub on a real local cluster with two copies of every file: bit flips planted in
# one OSS's object files are found at rest (exit 4), the copies show degraded and reads stay
# byte-exact from the other copy; --repair rewrites them from it (exit 1); a second scrub is
# clean (exit 0). Also: --rate and --target are honoured and bad values refused, and
# `lodectl status` shows each target's last scrub.
set -euo pipefail
LODE_TEST_NAME=scrub
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3

c="$dir/c"
mds=$("$lodectl" local up "$c" --oss 2)
export LODE_MDS=$mds
for f in a b c; do head -c 2500000 /dev/urandom >"$dir/d_$f"; done
head -c 1000 /dev/urandom >"$dir/d_small"
for f in a b c small; do "$lodectl" put --quiet --mirrors 2 "$dir/d_$f" "/$f"; done

# scrub_expect STATUS [ARGS]: runs scrub --json, which must exit STATUS; its JSON in $dir/out
scrub_expect() {
	local want=$1 rc=0
	shift
	"$lodectl" scrub --json "$@" >"$dir/out" 2>"$dir/err" || rc=$?
	[ "$rc" = "$want" ] || { cat "$dir/out" "$dir/err"; fail "scrub $* exited $rc, expected $want"; }
}
jq_out() { $py -c "import json,sys; d=json.load(open('$dir/out')); print($1)"; }
ino_of() { "$lodectl" stat --json "$1" | $py -c 'import json,sys; print(json.load(sys.stdin)["inode"])'; }
# degraded PATH: the targets of PATH's degraded copies, space separated
degraded() {
	"$lodectl" stat --json "$1" | $py -c 'import json,sys
d = json.load(sys.stdin)
print(" ".join(str(c["target"]) for s in d["layout"]["stripes"] for c in s if c["degraded"]))'
}
same_bytes() {
	for f in a b c small; do
		"$lodectl" get --quiet "/$f" "$dir/back" && cmp -s "$dir/d_$f" "$dir/back" || fail "/$f reads wrong"
	done
}
# flip FILE OFFSET: inverts the bits of one byte of FILE in place
flip() {
	$py -c 'import sys
f = open(sys.argv[1], "r+b"); off = int(sys.argv[2]); f.seek(off); b = f.read(1)
f.seek(off); f.write(bytes([b[0] ^ 0xff])); f.close()' "$1" "$2"
}

echo "usage: --help, bad --rate and --target values"
"$lodectl" scrub --help | grep -q -- "--rate" || fail "scrub --help does not describe --rate"
for bad in abc -5 1.5 2000000; do
	rc=0; "$lodectl" scrub --rate "$bad" >/dev/null 2>"$dir/err" || rc=$?
	[ "$rc" = 2 ] || fail "--rate $bad exited $rc, expected 2 (bad usage)"
	grep -q -- "--rate" "$dir/err" || fail "--rate $bad: the error does not name --rate: $(cat "$dir/err")"
done
rc=0; "$lodectl" scrub --target 999 >/dev/null 2>"$dir/err" || rc=$?
[ "$rc" = 8 ] && grep -q "no target 999" "$dir/err" || fail "--target 999: exit $rc, $(cat "$dir/err")"

echo "a healthy cluster scrubs clean, throttled or not, one target or all"
scrub_expect 0
[ "$(jq_out 'd["bad_copies"]')" = 0 ] || fail "bad copies on a healthy cluster: $(cat "$dir/out")"
[ "$(jq_out 'sum(t["objects_checked"] for t in d["targets"])')" -ge 8 ] ||
	fail "scrub did not check every object: $(cat "$dir/out")"
first=$(jq_out 'd["targets"][0]["id"]')
scrub_expect 0 --rate 4 --target "$first"
[ "$(jq_out 'len(d["targets"])')" = 1 ] && [ "$(jq_out 'd["targets"][0]["rate"]')" = $((4 << 20)) ] ||
	fail "--rate 4 --target $first: $(cat "$dir/out")"
[ "$(jq_out 'd["targets"][0]["bytes_checked"]')" -ge 7500000 ] ||
	fail "the throttled scrub did not read every byte: $(cat "$dir/out")"

echo "bit flips in two objects on one OSS"
ino_a=$(ino_of /a)
ino_b=$(ino_of /b)
obj_a=$(ls "$c"/oss*/objects/*/"$(printf '%016x' "$ino_a")".*.00000000 | head -1)
oss_dir=${obj_a%%/objects/*}
obj_b=$(ls "$oss_dir"/objects/*/"$(printf '%016x' "$ino_b")".*.00000000)
good_a=$(ls "$c"/oss*/objects/*/"$(basename "$obj_a")" | grep -v "^$oss_dir/")
flip "$obj_a" 70000        # chunk 1
flip "$obj_b" 5            # chunk 0
size_b=$(stat -c %s "$obj_b")
[ "$size_b" -gt 200000 ] || fail "/b's stripe 0 is only $size_b bytes"
flip "$obj_b" $((size_b - 100)) # its last chunk
cmp -s "$obj_a" "$good_a" && fail "the planted flip did not change the object"
scrub_expect 4
[ "$(jq_out 'd["bad_copies"]')" = 2 ] || fail "expected 2 bad copies: $(cat "$dir/out")"
bad_t=$(jq_out '" ".join(sorted(set(str(b["target"]) for b in d["bad"])))')
[ "$(jq_out '" ".join(sorted(b["path"] for b in d["bad"]))')" = "/a /b" ] ||
	fail "the bad copies are not /a and /b: $(cat "$dir/out")"
[ "$(jq_out '[b for b in d["bad"] if b["path"] == "/a"][0]["first_bad_chunk"]')" = 1 ] ||
	fail "/a's bad chunk is not chunk 1: $(cat "$dir/out")"
[ "$(jq_out '[b for b in d["bad"] if b["path"] == "/b"][0]["bad_chunks"]')" = 2 ] ||
	fail "/b should have 2 bad chunks: $(cat "$dir/out")"
[ "$(jq_out 'all(b["degraded"] for b in d["bad"])')" = True ] || fail "not marked degraded: $(cat "$dir/out")"
[ "$(degraded /a)" = "$bad_t" ] && [ "$(degraded /b)" = "$bad_t" ] ||
	fail "stat shows degraded copies '$(degraded /a)' '$(degraded /b)', expected target $bad_t"
[ -z "$(degraded /c)" ] || fail "/c has a degraded copy"
same_bytes
"$lodectl" status >"$dir/status"
grep -q "target $bad_t: done .* 2 bad objects" "$dir/status" || fail "status: $(cat "$dir/status")"
"$lodectl" status --json | $py -c 'import json,sys
d = json.load(sys.stdin)
assert all(t["scrub"]["state"] == "done" for t in d["targets"]), d
assert sum(t["scrub"]["bad_objects"] for t in d["targets"]) == 2, d' || fail "status --json lacks the scrub"

echo "--repair rewrites them from the good copy"
scrub_expect 1 --repair
[ "$(jq_out 'd["repaired"]')" = 2 ] && [ "$(jq_out 'd["left"]')" = 0 ] ||
	fail "repair: $(cat "$dir/out")"
[ -z "$(degraded /a)" ] && [ -z "$(degraded /b)" ] || fail "copies still degraded after --repair"
cmp -s "$obj_a" "$good_a" || fail "/a's copy on $oss_dir was not rewritten"
same_bytes
scrub_expect 0
[ "$(jq_out 'd["bad_copies"]')" = 0 ] || fail "a scrub after --repair found bad copies: $(cat "$dir/out")"

echo "no false positive while a writer and a reader are busy"
touch "$dir/errors"
load() {
	local n=0
	while [ ! -e "$dir/stop" ]; do
		n=$((n + 1))
		"$lodectl" put --quiet --mirrors 2 "$dir/d_a" "/w$n" || { echo "put /w$n failed" >>"$dir/errors"; return 1; }
		[ $n = 1 ] || "$lodectl" rm "/w$((n - 1))" >/dev/null || { echo "rm failed" >>"$dir/errors"; return 1; }
		"$lodectl" get --quiet /c "$dir/back_load" && cmp -s "$dir/d_c" "$dir/back_load" ||
			{ echo "read of /c failed or differed" >>"$dir/errors"; return 1; }
	done
}
load & load_pid=$!
for run in 1 2 3; do
	rc=0
	"$lodectl" scrub --json --rate $((run * 8 - 8)) >"$dir/out" 2>"$dir/err" || rc=$?
	[ "$rc" = 0 ] || { touch "$dir/stop"; wait $load_pid || true; cat "$dir/out" "$dir/err"; fail "scrub run $run under load exited $rc"; }
done
touch "$dir/stop"
wait $load_pid || true
[ ! -s "$dir/errors" ] || fail "the load failed: $(cat "$dir/errors")"

echo "an interrupted scrub cancels the scrubs it started"
"$lodectl" scrub --rate 1 >"$dir/out" 2>&1 & scrub_pid=$!
sleep 1
kill -INT $scrub_pid
rc=0; wait $scrub_pid || rc=$?
[ "$rc" = 8 ] || fail "an interrupted scrub exited $rc, expected 8: $(cat "$dir/out")"
cancelled=no
for _ in $(seq 100); do
	"$lodectl" status --json | $py -c 'import json,sys
d = json.load(sys.stdin)
sys.exit(0 if all(t["scrub"]["state"] == "cancelled" for t in d["targets"]) else 1)' &&
		{ cancelled=yes; break; }
	sleep 0.05
done
[ $cancelled = yes ] || fail "the OSS scrubs were not cancelled: $("$lodectl" status)"

echo "human output"
"$lodectl" scrub >"$dir/out" 2>&1 || fail "scrub exited $?: $(cat "$dir/out")"
grep -q "^scrub: 2 targets: 0 bad copies" "$dir/out" || fail "human output: $(cat "$dir/out")"

echo "a restarted OSS still tells its last scrub"
"$lodectl" local kill "$c" oss0 >/dev/null
"$lodectl" local up "$c" >/dev/null
"$lodectl" status --json | $py -c 'import json,sys
d = json.load(sys.stdin)
assert all(t["scrub"]["state"] == "done" and t["scrub"]["bad_objects"] == 0 for t in d["targets"]), d' ||
	fail "after a restart: $("$lodectl" status)"
echo "PASS"
