#!/usr/bin/env bash
# A reader that keeps a file open while every copy of it moves (two drains on a cluster of
# 4 OSS: the copies on the first two targets go to the other two) and reads only after the
# old objects were deleted gets every byte, through lode_pread and lode_read_stream: its
# layout names only deleted objects, which answer as empty, and liblode asks the MDS for
# the layout again instead of reading zeros. An inference server holds its weights open for
# days while admins drain and rebalance.
set -euo pipefail
LODE_TEST_NAME=moved
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3

c="$dir/c"
mds=$("$lodectl" local up "$c" --oss 4 --orphan-grace 1)
export LODE_MDS=$mds
head -c 9000000 /dev/urandom >"$dir/big"
"$lodectl" put --quiet --stripe-count 1 --mirrors 2 "$dir/big" /big

# the targets holding /big's copies now, one per line
targets_of() {
	"$lodectl" stat --json /big | $py -c '
import json, sys
print("\n".join(sorted({str(c["target"]) for s in json.load(sys.stdin)["layout"]["stripes"] for c in s})))'
}
before=$(targets_of)
[ "$(wc -l <<<"$before")" = 2 ] || fail "/big should be on 2 of the 4 targets: $before"

PYTHONPATH=$(cd "$(dirname "$0")/../.." && pwd)/python
LODE_BUILD_DIR=${LODE_BUILD_DIR:-$(dirname "$(dirname "$lodectl")")}
export PYTHONPATH LODE_BUILD_DIR
LD_PRELOAD=${LODE_PY_PRELOAD:-} ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 $py - "$dir" <<'PY' &
import os, sys, time
import lode
d = sys.argv[1]
want = open(os.path.join(d, "big"), "rb").read()
with lode.Client() as c, c.open("/big") as a, c.open("/big") as b:
    assert a.pread_into(bytearray(4096), 0) == 4096
    assert b.pread_into(bytearray(4096), 0) == 4096
    open(os.path.join(d, "held"), "w").close()
    while not os.path.exists(os.path.join(d, "go")):
        time.sleep(0.05)
    out = []
    buf = bytearray(len(want))
    n = a.pread_into(buf, 0)
    out.append("pread: " + ("ok" if n == len(want) and buf == want else
                            "differ (%d bytes, %d zero)" % (n, buf.count(0))))
    buf = bytearray(len(want))
    n = b.read_stream(buf, 0)
    out.append("stream: " + ("ok" if n == len(want) and buf == want else
                             "differ (%d bytes, %d zero)" % (n, buf.count(0))))
    open(os.path.join(d, "held.result"), "w").write("\n".join(out) + "\n")
PY
held=$!
for _ in $(seq 100); do [ -e "$dir/held" ] && break; sleep 0.1; done
[ -e "$dir/held" ] || fail "the Python reader did not open /big"

for t in $before; do
	echo "drain target $t"
	"$lodectl" drain "$t" >"$dir/out" 2>&1 || fail "drain $t: $(cat "$dir/out")"
done
after=$(targets_of)
for t in $before; do ! grep -qx "$t" <<<"$after" || fail "/big still has a copy on $t"; done

echo "wait until the drained targets deleted their old objects"
for t in $before; do
	removed=
	for _ in $(seq 60); do
		if "$lodectl" target remove "$t" >"$dir/out" 2>&1; then removed=1; break; fi
		sleep 0.5
	done
	[ -n "$removed" ] || fail "target $t could not be removed: $(cat "$dir/out")"
done
for t in $before; do
	objects=
	for _ in $(seq 40); do
		objects=$("$lodectl" --json target list | $py -c '
import json, sys
print({x["id"]: x for x in json.load(sys.stdin)["targets"]}['"$t"']["objects"])')
		[ "$objects" = 0 ] && break
		sleep 0.25
	done
	[ "$objects" = 0 ] || fail "drained target $t still reports $objects objects"
done

touch "$dir/go"
wait $held || fail "the reader holding /big open failed"
cat "$dir/held.result"
[ "$(grep -c ': ok$' "$dir/held.result")" = 2 ] || fail "the reader holding /big open read wrong bytes"
echo "ok"
