#!/usr/bin/env bash
# A writer that leaves its file open and idle past its write lease loses the file to a
# move (lodectl drain takes the lease over). Its next write must then fail without reaching
# any copy: its layout still names the copy the move replaced, so a write that landed
# would change the copy left in place and not the new one, and the two copies would differ
# with neither marked degraded (readers would get old or new bytes by which copy they
# read). The MDS runs --lease 2, so write capabilities last 1.5 s, and --orphan-grace 1
# (a copy moved back to a target that still holds its old object waits for the object to
# go). Checked for a writer
# holding the admin's key and for one holding a client key, through liblode (the Python
# package); each copy is then read alone (the other's OSS stopped).
set -euo pipefail
LODE_TEST_NAME=lease
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3

c="$dir/c"
mds=$("$lodectl" local up "$c" --oss 4 --lease 2 --orphan-grace 1)
export LODE_MDS=$mds
"$lodectl" key derive --role client "$c/cluster.key" "$dir/client.key" >/dev/null

PYTHONPATH=$(cd "$(dirname "$0")/../.." && pwd)/python
LODE_BUILD_DIR=${LODE_BUILD_DIR:-$(dirname "$(dirname "$lodectl")")}
export PYTHONPATH LODE_BUILD_DIR

# the targets of /NAME's one stripe, in copy order
copies() {
	"$lodectl" stat --json "/$1" | $py -c '
import json, sys
print(" ".join(str(c["target"]) for c in json.load(sys.stdin)["layout"]["stripes"][0]))'
}
# oss_of ID: the local cluster's daemon name (ossK) of target ID
oss_of() {
	local a d
	a=$("$lodectl" --json target list | $py -c '
import json, sys
print({t["id"]: t["address"] for t in json.load(sys.stdin)["targets"]}[int(sys.argv[1])])' "$1")
	for d in "$c"/oss*; do [ "$(cat "$d/addr")" = "$a" ] && { basename "$d"; return; }; done
	fail "no OSS serves target $1"
}

for who in admin client; do
	key=$c/cluster.key
	[ $who = client ] && key=$dir/client.key
	name=log-$who
	rm -f "$dir/written" "$dir/moved" "$dir/writer.result"
	LODE_KEY_FILE=$key LD_PRELOAD=${LODE_PY_PRELOAD:-} ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
		$py - "$dir" "/$name" <<'PY' &
import os, sys, time
import lode
d, path = sys.argv[1], sys.argv[2]
out = []
with lode.Client() as c:
    f = c.open(path, "w")
    f.write(b"a" * (1 << 20))
    f.fsync()
    open(os.path.join(d, "written"), "w").close()
    while not os.path.exists(os.path.join(d, "moved")):
        time.sleep(0.05)
    f.pos = 0
    try:
        f.write(b"b" * (1 << 20))
        out.append("write: succeeded")
    except lode.LodeError as e:
        out.append("write: failed, errno %d" % e.errno)
    try:
        f.close()
    except lode.LodeError:
        pass
open(os.path.join(d, "writer.result"), "w").write("\n".join(out) + "\n")
PY
	writer=$!
	for _ in $(seq 100); do [ -e "$dir/written" ] && break; sleep 0.1; done
	[ -e "$dir/written" ] || fail "the $who writer did not write /$name"
	before=$(copies $name)
	# idle past the lease, then a move takes it over: drain the second copy's target
	sleep 3
	moved=${before#* }
	"$lodectl" drain "$moved" >"$dir/out" 2>&1 || fail "drain $moved: $(cat "$dir/out")"
	after=$(copies $name)
	[ "$after" != "$before" ] || fail "the drain did not move /$name ($before)"
	touch "$dir/moved"
	wait $writer || fail "the $who writer failed"
	echo "$who writer, /$name on $before, then on $after: $(cat "$dir/writer.result")"
	grep -q "^write: failed, errno 116$" "$dir/writer.result" ||
		fail "the $who writer's write after losing its lease did not fail with ESTALE"

	# each copy alone holds the bytes acknowledged before (no copy degraded)
	"$lodectl" stat --json "/$name" | $py -c '
import json, sys
assert json.load(sys.stdin)["copies_degraded"] == 0'
	for keep in $after; do
		for t in $after; do [ "$t" = "$keep" ] || other=$t; done
		"$lodectl" local kill "$c" "$(oss_of "$other")" -9 >/dev/null
		"$lodectl" get --quiet "/$name" "$dir/back" || fail "/$name with target $other down"
		head -c 1048576 /dev/zero | tr '\0' a | cmp -s - "$dir/back" ||
			fail "the copy of /$name on target $keep differs from what was acknowledged"
		"$lodectl" local up "$c" >/dev/null
	done
	# the drained target takes nothing new: back to active for the next writer
	"$lodectl" target undrain "$moved" >/dev/null
done
echo "ok"
