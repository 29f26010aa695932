#!/usr/bin/env bash
# A reader that keeps a file open while every copy of it moves (two drains on a cluster of
# 4 OSS: the copies on the first two targets go to the other two) and reads only after the
# old objects were deleted gets every byte, through lode_pread and lode_read_stream: its
# layout names only deleted objects, which answer as empty, and liblode asks the MDS for
# the layout again instead of reading zeros; with the MDS down either fails (EIO) rather
# than read zeros, and reads right once the MDS is back. So does a stream that was already
# running (2 pieces in flight, its first piece's consumer blocked) while the copies moved. An inference server holds its weights
# open for days while admins drain and rebalance.
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
import errno, os, sys, time
import lode
d = sys.argv[1]
want = open(os.path.join(d, "big"), "rb").read()
def wait_for(name):
    while not os.path.exists(os.path.join(d, name)):
        time.sleep(0.05)
def result(what, n, buf):
    return what + ": " + ("ok" if n == len(want) and buf == want else
                          "differ (%d bytes, %d zero)" % (n, buf.count(0)))
def no_mds(what, read):  # "ok" if read fails with EIO
    buf = bytearray(len(want))
    try:
        return result(what, read(buf), buf).replace(": ok", ": read with no MDS")
    except lode.LodeError as e:
        return what + ": " + ("ok" if e.errno == errno.EIO else "errno %d" % e.errno)
with lode.Client() as c, lode.Client(timeout_ms=2000) as quick, \
        lode.Client(max_inflight=2) as narrow, c.open("/big") as a, c.open("/big") as b, \
        quick.open("/big") as q, quick.open("/big") as qs, narrow.open("/big") as s:
    for h in (a, b, q, qs, s):
        assert h.pread_into(bytearray(4096), 0) == 4096
    def on_piece(off, n):  # the first piece's consumer waits out the two drains
        if not os.path.exists(os.path.join(d, "held")):
            open(os.path.join(d, "held"), "w").close()
            wait_for("go")
    buf = bytearray(len(want))
    out = [result("stream running across the drains", s.read_stream(buf, 0, on_piece), buf)]
    buf = bytearray(len(want))
    out.append(result("pread", a.pread_into(buf, 0), buf))
    buf = bytearray(len(want))
    out.append(result("stream", b.read_stream(buf, 0), buf))
    # with the MDS down, the moved copies cannot be found: an error, never zeros
    open(os.path.join(d, "read"), "w").close()
    wait_for("mds-down")
    out.append(no_mds("pread, MDS down", lambda buf: q.pread_into(buf, 0)))
    out.append(no_mds("stream, MDS down", lambda buf: qs.read_stream(buf, 0)))
    open(os.path.join(d, "read-down"), "w").close()
    wait_for("mds-up")
    buf = bytearray(len(want))
    out.append(result("pread, MDS back", q.pread_into(buf, 0), buf))
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
for t in $before; do remove_target "$t"; done
for t in $before; do wait_target_empty "$t"; done

wait_for() { # wait_for FILE: the Python reader's signal
	for _ in $(seq 600); do [ -e "$dir/$1" ] && return 0; kill -0 $held 2>/dev/null || break; sleep 0.1; done
	fail "the Python reader did not get to $1"
}
touch "$dir/go"
wait_for read
echo "stop the MDS: the third reader cannot learn where its copies went"
"$lodectl" local kill "$c" mds -9 >/dev/null
touch "$dir/mds-down"
wait_for read-down
"$lodectl" local up "$c" >/dev/null
touch "$dir/mds-up"
wait $held || fail "the reader holding /big open failed"
cat "$dir/held.result"
[ "$(grep -c ': ok$' "$dir/held.result")" = 6 ] || fail "the reader holding /big open read wrong bytes"
echo "ok"
