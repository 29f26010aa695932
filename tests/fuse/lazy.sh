#!/usr/bin/env bash
# A mount with -o namespace=lazy (docs/fuse.md): namespace changes are answered before
# they are durable and made durable by fsync, fsyncdir, or the MDS within a second.
#   - lazy creates (and truncates) cost the MDS no sync each (lode_mds_syncs_total),
#     durable ones (the other mount, the default) one each; both mounts see every file at
#     once
#   - fsync of a directory reaches the MDS (SYNC) and makes them durable
#   - a close publishes a file's size at once but costs no sync, on a durable mount too;
#     fsync, even of a read-only handle, makes it durable
#   - kill -9 of the MDS loses no lazily answered change (its page cache keeps them)
#   - a restart of the machine (simulated: the MDS comes back with another boot id) keeps
#     everything the fsyncdir covered, and the store it opens is whole (lodectl fsck)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_fuse
need_prog curl
own_cluster "-o namespace=lazy" ""
MDS_ADDR=$MDS
restart_mds() { # ENV...: kill -9 the MDS, start it again on its address with ENV set
	kill -9 "${pids[0]}"
	wait "${pids[0]}" 2>/dev/null || true
	env "$@" "$MDS_BIN" --data "$WORK/mds" --listen "$MDS_ADDR" --key "$WORK/key" \
		--metrics "$(cat "$WORK/mds.metrics")" 2>>"$WORK/mds.log" &
	pids[0]=$!
	for _ in $(seq 200); do
		[ "$("$LODECTL" status 2>/dev/null | grep -c ' up ')" -ge 2 ] && return 0
		sleep 0.1
	done
	fail "the MDS did not come back with both targets up: $(tail -n 5 "$WORK/mds.log")"
}
metric() { curl -sf "$URL" | awk -v m="$1" '$1 == m { print $2 }'; }
syncs() { metric lode_mds_syncs_total; }
sync_requests() { metric 'lode_requests_total{op="sync"}'; }
mkfiles() { # DIR PREFIX N
	"$PYTHON" -c 'import os, sys
d, p, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n):
    os.close(os.open(f"{d}/{p}{i}", os.O_CREAT | os.O_WRONLY, 0o644))' "$@"
}
fsyncdir() { "$PYTHON" -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd); os.close(fd)' "$1"; }
count() { find "$1" -maxdepth 1 -name "$2*" | wc -l; }

mkdir "$A/d"
fsyncdir "$A/d"

echo "== 200 lazy creates: no sync each; 50 durable ones: a sync each"
s0=$(syncs)
mkfiles "$A/d" lazy 200
s1=$(syncs)
echo "   syncs during 200 lazy creates: $((s1 - s0))"
[ $((s1 - s0)) -le 20 ] || fail "200 lazy creates cost $((s1 - s0)) syncs (one per batch at most every second)"
[ "$(count "$B/d" lazy)" -eq 200 ] || fail "the durable mount sees $(count "$B/d" lazy) of 200 lazy creates"
s0=$(syncs)
mkfiles "$B/d" durable 50
s1=$(syncs)
echo "   syncs during 50 durable creates: $((s1 - s0))"
[ $((s1 - s0)) -ge 50 ] || fail "50 durable creates cost only $((s1 - s0)) syncs"
[ "$(count "$A/d" durable)" -eq 50 ] || fail "the lazy mount sees $(count "$A/d" durable) of 50 creates"

echo "== lazy truncates: no sync each"
s0=$(syncs)
"$PYTHON" -c 'import os, sys
for i in range(50):
    os.truncate(f"{sys.argv[1]}/lazy{i}", 4096 + i)' "$A/d"
s1=$(syncs)
echo "   syncs during 50 lazy truncates: $((s1 - s0))"
[ $((s1 - s0)) -le 5 ] || fail "50 truncates on the lazy mount cost $((s1 - s0)) syncs"
size=$("$PYTHON" -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); print(os.fstat(fd).st_size)' "$B/d/lazy49")
[ "$size" -eq 4145 ] || fail "an open on the durable mount sees size $size after a lazy truncate to 4145"

echo "== fsync of a directory sends SYNC"
q0=$(sync_requests)
fsyncdir "$A/d"
q1=$(sync_requests)
[ $((q1 - q0)) -eq 1 ] || fail "fsyncdir on the lazy mount sent $((q1 - q0)) SYNC requests"

echo "== a close publishes the size at once without a sync, on a durable mount too"
s0=$(syncs)
"$PYTHON" -c 'import os, sys
for i in range(50):
    fd = os.open(f"{sys.argv[1]}/small{i}", os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, bytes([i]) * 65536)
    os.close(fd)' "$B/d"
s1=$(syncs)
echo "   syncs during 50 durable creates of 64 KiB files, each closed: $((s1 - s0))"
[ $((s1 - s0)) -lt 75 ] || fail "50 written and closed files cost $((s1 - s0)) syncs: a close should cost none"
sizes=$(stat -c %s "$A"/d/small* | sort -u)
[ "$sizes" = 65536 ] || fail "the other mount sees sizes '$sizes' after the closes, not 65536"
q0=$(sync_requests)
"$PYTHON" -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd); os.close(fd)' "$B/d/small7"
q1=$(sync_requests)
[ $((q1 - q0)) -eq 1 ] || fail "fsync of a read-only file on the durable mount sent $((q1 - q0)) SYNC requests, not 1"

echo "== kill -9 of the MDS right after lazy creates loses none"
mkfiles "$A/d" killed 100
restart_mds
[ "$(count "$A/d" killed)" -eq 100 ] || fail "after kill -9 of the MDS, $(count "$A/d" killed) of 100 lazy creates are left"
[ "$(count "$B/d" lazy)" -eq 200 ] || fail "after kill -9 of the MDS, $(count "$B/d" lazy) of 200 lazy creates are left"

echo "== a restart of the machine keeps what fsyncdir covered"
mkfiles "$A/d" synced 100
fsyncdir "$A/d"
mkfiles "$A/d" unsynced 100
restart_mds LODE_MDS_BOOT_ID="another boot of $(hostname)"
[ "$(count "$B/d" synced)" -eq 100 ] || fail "after a simulated reboot, $(count "$B/d" synced) of 100 fsyncdir'ed creates are left"
[ "$(count "$B/d" killed)" -eq 100 ] || fail "after a simulated reboot, $(count "$B/d" killed) of 100 earlier creates are left"
echo "   unsynced lazy creates left: $(count "$B/d" unsynced) of 100 (the MDS: $(grep -c 'restarted before' "$WORK/mds.log") rollback)"
"$PYTHON" -c 'import sys
for i in range(50):
    with open(f"{sys.argv[1]}/small{i}", "rb") as f:
        assert f.read() == bytes([i]) * 65536, f"small{i} changed across the simulated reboot"' "$B/d" ||
	fail "the fsynced 64 KiB files did not survive the simulated reboot whole"
"$LODECTL" fsck >"$WORK/fsck.txt" 2>&1 || fail "fsck after the simulated reboot: $(tail -n 5 "$WORK/fsck.txt")"
echo "PASS"
