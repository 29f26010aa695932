#!/usr/bin/env bash
# One daemon per data directory: a second lode-mds or lode-oss started on a directory in use
# exits non-zero with a one-line reason, and the first keeps serving; a copy of an OSS's
# directory started elsewhere cannot take the target's address until the holder is gone
# (the MDS refuses its registration meanwhile). And `lodectl local up`
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

echo "== a copy of an OSS's data directory cannot take the target's address while it lives"
target_addr() { # ID: state and address of a target, as the MDS says
	"$lodectl" --json status | python3 -c '
import json, sys
t = [t for t in json.load(sys.stdin)["targets"] if t["id"] == int(sys.argv[1])][0]
print(t["state"], t["address"])' "$1"
}
id0=$("$lodectl" --json status | python3 -c '
import json, sys
addr = open(sys.argv[1]).read().strip()
print([t["id"] for t in json.load(sys.stdin)["targets"] if t["address"] == addr][0])' "$dir/c/oss0/addr")
before=$(target_addr "$id0")
mkdir "$dir/copy"
cp -a "$dir/c/oss0/." "$dir/copy/"
rm -f "$dir/copy/lode.lock" "$dir/copy/pid"
"$oss_bin" --data "$dir/copy" --listen tcp://127.0.0.1:0 --mds "$mds" \
	--key "$dir/c/cluster.key" --port-file "$dir/copy.port" >"$dir/copy.log" 2>&1 &
copy_pid=$!
trap 'kill -9 "$copy_pid" 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 100); do [ -s "$dir/copy.port" ] && break; sleep 0.1; done
copy_addr=$(cat "$dir/copy.port")
case $copy_addr in *://*) ;; *) copy_addr=tcp://$copy_addr ;; esac
sleep 3 # a few registration attempts
[ "$(target_addr "$id0")" = "$before" ] ||
	fail "target $id0 moved while its holder lives: $(target_addr "$id0") (was $before)"
"$lodectl" put "$dir/src" /still-here/g && "$lodectl" get /still-here/g "$dir/back" &&
	cmp "$dir/src" "$dir/back" || fail "writes failed while the copy tried to register"
echo "== once the holder is gone, the copy takes over"
"$lodectl" local kill "$dir/c" oss0 -9
for _ in $(seq 200); do
	[ "$(target_addr "$id0")" = "up $copy_addr" ] && break
	sleep 0.1
done
[ "$(target_addr "$id0")" = "up $copy_addr" ] ||
	fail "the copy never took over target $id0: $(target_addr "$id0")"
kill "$copy_pid"
wait "$copy_pid" || true
"$lodectl" local up "$dir/c" --oss 2 >/dev/null || fail "oss0 did not come back"

echo "== local up right after kill -9 of the MDS restarts it"
for round in 1 2 3; do
	# not through lodectl, which would reap it: the process stays a zombie a while
	kill -9 "$(cat "$dir/c/mds/pid")"
	sleep 0.5
	"$lodectl" local up "$dir/c" --oss 2 >/dev/null || fail "local up failed (round $round)"
	"$lodectl" stat /still-here/f >/dev/null || fail "the MDS is not back (round $round)"
done

echo "== local up waits for an OSS's old port to come free, and names why it gave up"
port=$(sed 's/.*://' "$dir/c/oss1/addr")
hold() { # SECONDS: holds oss1's port, listening, that long
	# the killed OSS lets go of the port when it has exited, which takes a moment
	python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
for _ in range(100):
    try:
        s.bind(("127.0.0.1", int(sys.argv[1])))
        break
    except OSError:
        time.sleep(0.05)
else:
    sys.exit(1)
s.listen(); open(sys.argv[3], "w").close()
time.sleep(float(sys.argv[2]))' "$port" "$1" "$dir/held" &
	for _ in $(seq 200); do [ -e "$dir/held" ] && break; sleep 0.05; done
	[ -e "$dir/held" ] || fail "could not take oss1's old port $port to hold it"
	rm -f "$dir/held"
}
"$lodectl" local kill "$dir/c" oss1 -9
hold 1.5
"$lodectl" local up "$dir/c" --oss 2 >/dev/null || fail "oss1 did not come back once its port was free"
"$lodectl" stat /still-here/f >/dev/null || fail "the cluster is not back"
"$lodectl" local kill "$dir/c" oss1 -9
hold 8
"$lodectl" local up "$dir/c" --oss 2 >/dev/null 2>"$dir/up.err" && fail "local up started oss1 on a port in use"
grep -q "did not start (it exited):.*Address already in use" "$dir/up.err" ||
	fail "local up did not say why: $(cat "$dir/up.err")"
wait
"$lodectl" local up "$dir/c" --oss 2 >/dev/null || fail "oss1 did not come back after all"
echo "PASS"
