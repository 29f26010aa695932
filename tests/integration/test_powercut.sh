#!/usr/bin/env bash
# A power cut loses what was never synced, and nothing fsync() acknowledged: every OSS keeps
# its data on dropfs (a FUSE file system that holds unsynced changes in memory), and the cut
# is SIGKILL of every daemon and of dropfs. Through the mount:
# - a file written and fsynced reads back whole after the cut;
# - a file truncated and fsynced keeps its new size after the cut, and extending it again
#   reads zeros past the cut point, not the old bytes (issue 13: the OSS's truncate changed
#   size and checksums without syncing them, and liblode's ftruncate marked no stripe for
#   the next fsync, so the objects came back at their old size and content);
# - an O_TRUNC open followed by fsync: the same;
# - of two fsyncs of one liblode handle, the second returns only once the first one's
#   object syncs are done: with the disk's fsync held up 1.5 s, the cut comes right after
#   the second returns, and the file reads back whole (before, the second found the
#   stripes taken by the first and returned at once with nothing synced).
# Names on dropfs are durable only with a sync of their directory, so the objects of every
# fsynced file must have had theirs synced by the OSS.
# First it checks that dropfs really drops unsynced writes and names, so that the rest can
# fail.
set -euo pipefail
dropfs=${LODE_DROPFS:?}
LODE_TEST_NAME=powercut
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to mount"; exit 77; }
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }

drops=()
cleanup_drops() {
	local m
	for m in "${drops[@]}"; do
		fusermount3 -uz "${m% *}" 2>/dev/null || true
		kill -9 "${m#* }" 2>/dev/null || true
	done
	drops=()
}
trap 'cleanup_mounts; "$lodectl" local down "$dir/c" >/dev/null 2>&1 || true; cleanup_drops; rm -rf "$dir"' EXIT

# dropfs's fsyncs sleep as many ms as this file says, while it is there
export DROPFS_SLOW_FSYNC=$dir/slow_fsync
mount_drop() { # BACKING MNT
	mkdir -p "$1" "$2"
	"$dropfs" "$1" "$2" -f 2>>"$dir/dropfs.log" &
	drops+=("$2 $!")
	for _ in $(seq 200); do mountpoint -q "$2" && return 0; sleep 0.05; done
	cat "$dir/dropfs.log"
	fail "dropfs did not mount at $2"
}

echo "== dropfs drops what was not synced, and keeps what was"
mount_drop "$dir/probe-back" "$dir/probe"
printf synced >"$dir/probe/a"
python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDWR); os.fsync(fd); os.close(fd)' "$dir/probe/a"
printf lost >"$dir/probe/b"
printf more >>"$dir/probe/a"
[ "$(cat "$dir/probe/a")" = syncedmore ] || fail "dropfs does not read back what was written"
cleanup_drops
[ "$(cat "$dir/probe-back/a")" = synced ] || fail "dropfs lost a synced write or kept an unsynced one"
[ ! -s "$dir/probe-back/b" ] || fail "dropfs kept an unsynced write"
echo "== dropfs drops names whose directory was not synced, and keeps the others"
mount_drop "$dir/probe-back" "$dir/probe"
python3 - "$dir/probe" <<'EOF'
import os, sys
p = sys.argv[1]
def sync(path):
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
def put(path):
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b'data')
    os.fsync(fd)
    os.close(fd)
os.mkdir(f'{p}/unsynced')
os.mkdir(f'{p}/synced')
sync(p)
put(f'{p}/unsynced/f')  # the file is synced, its directory is not
put(f'{p}/synced/f')
sync(f'{p}/synced')
os.mkdir(f'{p}/gone')  # a directory never synced into its parent, with a synced name in it
put(f'{p}/gone/f')
sync(f'{p}/gone')
EOF
cleanup_drops
mount_drop "$dir/probe-back" "$dir/probe"
[ ! -e "$dir/probe/unsynced/f" ] || fail "dropfs kept a name whose directory was never synced"
[ "$(cat "$dir/probe/synced/f")" = data ] || fail "dropfs lost a name whose directory was synced"
[ ! -e "$dir/probe/gone" ] || fail "dropfs kept a directory never synced into its parent"
cleanup_drops

echo "== a cluster whose OSS keep their data on dropfs"
for i in 0 1; do mount_drop "$dir/back$i" "$dir/c/oss$i"; done
mds=$("$lodectl" local up "$dir/c" --oss 2)
export LODE_MDS=$mds
mount_lode "$dir/m"
python3 - "$dir/m" "$dir" <<'EOF'
import os, sys
m, d = sys.argv[1], sys.argv[2]
data = os.urandom(3 << 20)
open(d + '/orig', 'wb').write(data)
def put(name):
    fd = os.open(f'{m}/{name}', os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, data)
    os.fsync(fd)
    os.close(fd)
for name in ('kept', 'cut', 'otrunc'):
    put(name)
fd = os.open(f'{m}/cut', os.O_WRONLY)
os.ftruncate(fd, 1000)
os.fsync(fd)
os.close(fd)
fd = os.open(f'{m}/otrunc', os.O_WRONLY | os.O_TRUNC)
os.write(fd, b'x' * 100)
os.fsync(fd)
os.close(fd)
EOF

echo "== two fsyncs of one handle (liblode, Python package), the disk's syncs held up"
PYTHONPATH=$(cd "$(dirname "$0")/../.." && pwd)/python
LODE_BUILD_DIR=${LODE_BUILD_DIR:-$(dirname "$(dirname "$lodectl")")}
export PYTHONPATH LODE_BUILD_DIR
printf 1500 >"$dir/slow_fsync"
LD_PRELOAD=${LODE_PY_PRELOAD:-} ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 python3 - "$dir" <<'EOF' &
import os, sys, threading, time
import lode
d = sys.argv[1]
f = lode.Client().open('/twofsync', 'w')
f.write(open(d + '/orig', 'rb').read())
first = threading.Thread(target=f.fsync, daemon=True)
first.start()
time.sleep(0.3)  # the first is waiting on the slow disk
t0 = time.monotonic()
f.fsync()
# the cut follows at once: nothing may wait for the first fsync any more
open(d + '/acked.tmp', 'w').write(f'{time.monotonic() - t0:.2f}')
os.rename(d + '/acked.tmp', d + '/acked')
os._exit(0)
EOF
for _ in $(seq 600); do [ -e "$dir/acked" ] && break; sleep 0.05; done
[ -e "$dir/acked" ] || fail "the second fsync did not return within 30 s"
echo "   the second fsync returned after $(cat "$dir/acked") s"

echo "== power cut: every daemon, the mount and dropfs killed at once"
for p in "$dir"/c/*/pid; do kill -9 "$(cat "$p")" 2>/dev/null || true; done
cleanup_mounts
mounts=()
cleanup_drops
sleep 0.5

echo "== back up"
rm -f "$dir/slow_fsync"
for i in 0 1; do mount_drop "$dir/back$i" "$dir/c/oss$i"; done
"$lodectl" local up "$dir/c" --oss 2 >/dev/null
mount_lode "$dir/m"
python3 - "$dir/m" "$dir" <<'EOF'
import os, sys
m, d = sys.argv[1], sys.argv[2]
orig = open(d + '/orig', 'rb').read()
def fail(why):
    print('FAIL:', why)
    sys.exit(1)
if open(f'{m}/kept', 'rb').read() != orig:
    fail('a file written and fsynced before the cut reads back different')
try:
    got = open(f'{m}/twofsync', 'rb').read()
except OSError as e:
    fail(f'twofsync, acknowledged by its second fsync before the cut: {e}')
if got != orig:
    fail('twofsync, acknowledged by its second fsync before the cut, reads back different')
for name, keep, first in (('cut', 1000, orig[:1000]), ('otrunc', 100, b'x' * 100)):
    st = os.stat(f'{m}/{name}')
    if st.st_size != keep:
        fail(f'{name}: size {st.st_size} after the cut, {keep} was fsynced')
    fd = os.open(f'{m}/{name}', os.O_RDWR)
    os.ftruncate(fd, 1 << 20)
    os.close(fd)
    got = open(f'{m}/{name}', 'rb').read()
    if got[:keep] != first:
        fail(f'{name}: the first {keep} bytes changed across the cut')
    if got[keep:] != bytes((1 << 20) - keep):
        bad = next(i for i in range(keep, 1 << 20) if got[i])
        fail(f'{name}: extended after the cut, byte {bad} is old data, not zero')
print('fsynced writes and truncates survived the cut; extended files read zeros')
EOF
"$lodectl" fsck >"$dir/fsck.out" 2>&1 || { cat "$dir/fsck.out"; fail "fsck after the cut"; }
echo "PASS"
