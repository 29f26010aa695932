#!/usr/bin/env bash
# lodectl drain and target remove on a real local cluster of 3 OSS: while a reader reads
# files being moved (checking every byte) and a writer is writing a file, drain moves every
# copy off one target; afterwards the target holds no object, every file is byte-exact and
# fully mirrored on the other two, new files avoid it, fsck is clean, and target remove
# (refused while anything still needs the target) works. A reader that opened /big before
# the drain and reads it only after the old objects were deleted still gets every byte (its
# copies on the drained target read as empty: it fails over to the other copies).
set -euo pipefail
LODE_TEST_NAME=drain
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3

c="$dir/c"
mds=$("$lodectl" local up "$c" --oss 3 --orphan-grace 1)
export LODE_MDS=$mds
for i in 1 2 3 4 5 6; do head -c $((3000000 + i * 100000)) /dev/urandom >"$dir/d$i"; done
head -c 12000000 /dev/urandom >"$dir/big"
for i in 1 2 3 4 5 6; do "$lodectl" put --quiet "$dir/d$i" "/d$i"; done
"$lodectl" put --quiet "$dir/big" /big

# targets_of PATH: the targets of every copy of PATH, one per line
targets_of() {
	"$lodectl" stat --json "$1" | $py -c '
import json, sys
for s in json.load(sys.stdin)["layout"]["stripes"]:
    for c in s: print(c["target"])'
}
# the victim: the target of the copy a reader of /big reads stripe 0 from (liblode reads a
# file from copy number ino % mirror_count of each stripe)
victim=$("$lodectl" stat --json /big | $py -c '
import json, sys
d = json.load(sys.stdin)
s = d["layout"]["stripes"][0]
print(s[d["inode"] % len(s)]["target"])')

# a reader holding /big open across the whole drain (liblode through the Python package)
PYTHONPATH=$(cd "$(dirname "$0")/../.." && pwd)/python
LODE_BUILD_DIR=${LODE_BUILD_DIR:-$(dirname "$(dirname "$lodectl")")}
export PYTHONPATH LODE_BUILD_DIR
LD_PRELOAD=${LODE_PY_PRELOAD:-} ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 $py - "$dir" <<'PY' &
import os, sys, time
import lode
d = sys.argv[1]
want = open(os.path.join(d, "big"), "rb").read()
with lode.Client() as c, c.open("/big") as f:
    assert f.pread_into(bytearray(4096), 0) == 4096
    open(os.path.join(d, "held"), "w").close()
    while not os.path.exists(os.path.join(d, "go")):
        time.sleep(0.05)
    buf = bytearray(len(want))
    n = f.pread_into(buf, 0)
    open(os.path.join(d, "held.result"), "w").write(
        "ok" if n == len(want) and buf == want else "differ: %d bytes read" % n)
PY
held=$!
for _ in $(seq 100); do [ -e "$dir/held" ] && break; sleep 0.1; done
[ -e "$dir/held" ] || fail "the Python reader did not open /big"

echo "remove is refused for a target that is not drained"
"$lodectl" target remove 1 >"$dir/out" 2>&1 && fail "an active target holding copies was removed"
grep -q "drain" "$dir/out" || fail "the refusal does not say to drain: $(cat "$dir/out")"

echo "drain target $victim with a reader and a writer at work"
# the reader: reads /big again and again, every byte compared, until told to stop
(
	n=0
	while [ ! -e "$dir/stop" ]; do
		"$lodectl" get --quiet /big "$dir/rd" || { echo "get failed" >>"$dir/reader.err"; break; }
		cmp -s "$dir/big" "$dir/rd" || { echo "bytes differ" >>"$dir/reader.err"; break; }
		n=$((n + 1))
	done
	echo "$n" >"$dir/reads"
) &
reader=$!
# the writer: a put that holds its file open (and its write lease) for 4 s
head -c 2000000 /dev/urandom >"$dir/w"
( cat "$dir/w"; sleep 4 ) | "$lodectl" put --quiet - /w &
writer=$!
sleep 1
rc=0
"$lodectl" --json drain $victim --rate 20 >"$dir/drain.json" || rc=$?
touch "$dir/stop"
wait $reader
wait $writer || fail "the writer failed while its file was being drained"
[ "$rc" = 0 ] || { cat "$dir/drain.json"; fail "drain exited $rc"; }
[ ! -e "$dir/reader.err" ] || fail "the reader saw: $(cat "$dir/reader.err")"
echo "reader read /big $(cat "$dir/reads") times during the drain"
$py - "$dir/drain.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["copies_left"] == 0, d
assert d["copies_moved"] > 0, d
EOF

echo "every file intact, fully mirrored, none on target $victim"
check_file() { # check_file PATH LOCAL
	local t
	t=$(targets_of "$1")
	! grep -qx $victim <<<"$t" || fail "$1 still has a copy on target $victim"
	"$lodectl" stat --json "$1" | $py -c '
import json, sys
d = json.load(sys.stdin)
assert d["copies_degraded"] == 0, d
for s in d["layout"]["stripes"]:
    assert len(s) == 2 and s[0]["target"] != s[1]["target"], s'
	"$lodectl" get --quiet "$1" "$dir/back"
	cmp -s "$2" "$dir/back" || fail "$1 changed"
}
for i in 1 2 3 4 5 6; do check_file "/d$i" "$dir/d$i"; done
check_file /big "$dir/big"
check_file /w "$dir/w"

echo "new files are not placed on a draining target"
"$lodectl" put --quiet "$dir/d1" /new
! targets_of /new | grep -qx $victim || fail "a new file was placed on draining target $victim"
"$lodectl" target list | grep -q "^$victim  *draining" || fail "target list: $("$lodectl" target list)"

echo "target remove waits until the old copies are deleted, then works"
remove_target $victim
"$lodectl" --json target list | $py -c '
import json, sys
t = {x["id"]: x for x in json.load(sys.stdin)["targets"]}
assert t['$victim']["state"] == "removed", t'
# its OSS has deleted every object (the MDS lists them for deletion like a deleted file)
wait_target_empty $victim
touch "$dir/go"
wait $held || fail "the reader holding /big open failed"
[ "$(cat "$dir/held.result")" = ok ] || fail "the reader holding /big open: $(cat "$dir/held.result")"
"$lodectl" fsck >"$dir/out" 2>&1 || fail "fsck after the drain: $(cat "$dir/out")"
for i in 1 2 3 4 5 6; do check_file "/d$i" "$dir/d$i"; done

echo "a dead target: drained from the other copies, then removed"
"$lodectl" local add-oss "$c" >/dev/null
dead_oss=oss0
dead=$("$lodectl" --json target list | $py -c '
import json, sys
a = open(sys.argv[1]).read().strip()
print([t["id"] for t in json.load(sys.stdin)["targets"] if t["address"] == a][0])' "$c/$dead_oss/addr")
[ "$dead" != "$victim" ] || { dead_oss=oss1; dead=; }
[ -n "$dead" ] || dead=$("$lodectl" --json target list | $py -c '
import json, sys
a = open(sys.argv[1]).read().strip()
print([t["id"] for t in json.load(sys.stdin)["targets"] if t["address"] == a][0])' "$c/$dead_oss/addr")
"$lodectl" local kill "$c" $dead_oss -9 >/dev/null
for _ in $(seq 60); do
	"$lodectl" target list | grep -q "^$dead  *down" && break
	sleep 0.25
done
"$lodectl" target list | grep -q "^$dead  *down" || fail "target $dead is not down"
"$lodectl" drain $dead >"$dir/out" 2>&1 || fail "drain of a dead target: $(cat "$dir/out")"
"$lodectl" target remove $dead >"$dir/out" 2>&1 || fail "remove of a dead target: $(cat "$dir/out")"
victim=$dead # check_file: no copy on it any more
for i in 1 2 3 4 5 6; do check_file "/d$i" "$dir/d$i"; done
check_file /big "$dir/big"
"$lodectl" fsck >"$dir/out" 2>&1 || fail "fsck after a dead target's removal: $(cat "$dir/out")"
echo "ok"
