#!/usr/bin/env bash
# A mount with -o data=lazy (docs/fuse.md, "Lazy data"): fsync returns once every copy's
# object server holds the data, without a sync on the OSS or the MDS.
#   - fsyncs on the lazy mount send no OBJ_FSYNC and cost the MDS no sync; on the
#     durable mount (the default) every fsync syncs the copies
#   - the lazy mount's writes reach the OSS flagged lazy (their writeback left to the
#     kernel), every byte of them, and the durable mount's are not
#   - the other mount sees every byte and size at once (close-to-open as ever)
#   - -o data= with a value other than durable or lazy is refused, clearly
#   - kill -9 of every server (the MDS and both OSS) right after the lazy fsyncs loses
#     nothing: the servers' page cache kept it; fsck finds the cluster whole
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_fuse
need_prog curl
own_cluster "-o data=lazy" ""
MDS_ADDR=$MDS
metric() { curl -sf "$1" | awk -v m="$2" '$1 == m { s += $2 } END { print s + 0 }'; }
oss_sum() { echo $(($(metric "${OSS_URL[0]}" "$1") + $(metric "${OSS_URL[1]}" "$1"))); }
FSYNC='lode_requests_total{op="obj_fsync"}'
LAZY=lode_oss_lazy_written_bytes_total WRITTEN=lode_oss_written_bytes_total
mds_syncs() { metric "$URL" lode_mds_syncs_total; }
# DIR PREFIX N: write N files of 64 KiB and more (seeded by their number), each fsynced
write_fsync() {
	"$PYTHON" -c 'import os, random, sys
d, p, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n):
    fd = os.open(f"{d}/{p}{i}", os.O_WRONLY)
    os.write(fd, random.Random(i).randbytes(65536 + 37 * i))
    os.fsync(fd)
    os.close(fd)' "$@"
}
# DIR PREFIX N: check what write_fsync wrote
check_files() {
	"$PYTHON" -c 'import random, sys
d, p, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n):
    with open(f"{d}/{p}{i}", "rb") as f:
        got = f.read()
    want = random.Random(i).randbytes(65536 + 37 * i)
    if got != want:
        sys.exit(f"{p}{i}: {len(got)} bytes read, not the {len(want)} written")' "$@"
}
create() { # DIR PREFIX N: empty files, made durable before the fsyncs are counted
	"$PYTHON" -c 'import os, sys
d, p, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n):
    os.close(os.open(f"{d}/{p}{i}", os.O_CREAT | os.O_WRONLY, 0o644))' "$@"
}

# refused OPT MESSAGE: lode-fuse -o OPT fails before anything is mounted, saying MESSAGE
refused() {
	if "$LODE_FUSE" --mds "$MDS" "$WORK/x" -f -o "$1" 2>"$WORK/bad.txt"; then
		fail "lode-fuse took -o $1"
	fi
	grep -q "$2" "$WORK/bad.txt" || fail "unclear error for -o $1: $(cat "$WORK/bad.txt")"
	mountpoint -q "$WORK/x" && fail "lode-fuse mounted with -o $1"
	return 0
}

echo "== a data= value lode-fuse does not know is refused before anything is mounted"
mkdir "$WORK/x"
refused data=fast "data: expected durable or lazy, got 'fast'"
echo "== so is an io_uring= value other than require"
refused io_uring=fast "io_uring: expected no value or require, got 'fast'"

mkdir "$A/d"
create "$A/d" lazy 100
create "$B/d" durable 50

echo "== 100 fsyncs on the lazy mount: no OBJ_FSYNC, no sync at the MDS"
f0=$(oss_sum "$FSYNC") s0=$(mds_syncs) t0=$SECONDS
l0=$(oss_sum $LAZY) w0=$(oss_sum $WRITTEN)
write_fsync "$A/d" lazy 100
f1=$(oss_sum "$FSYNC") s1=$(mds_syncs) took=$((SECONDS - t0))
l1=$(oss_sum $LAZY) w1=$(oss_sum $WRITTEN)
echo "   OBJ_FSYNC requests: $((f1 - f0)); MDS syncs: $((s1 - s0)) in about $took s"
[ "$f1" -gt 0 ] || [ "$(curl -sf "${OSS_URL[0]}" | grep -c lode_requests_total)" -gt 0 ] ||
	fail "the OSS's metrics have no lode_requests_total"
[ $((f1 - f0)) -eq 0 ] || fail "100 fsyncs on a data=lazy mount sent $((f1 - f0)) OBJ_FSYNC requests"
# the MDS syncs lazy commits by itself once idle for a second: one a second at most
[ $((s1 - s0)) -le $((took + 3)) ] ||
	fail "100 fsyncs on a data=lazy mount cost the MDS $((s1 - s0)) syncs in $took s"
check_files "$B/d" lazy 100 || fail "the durable mount does not read what the lazy mount fsynced"
# two copies of 100 files of 65,536 + 37 i bytes
want=$((2 * (100 * 65536 + 37 * 99 * 100 / 2)))
echo "   bytes stored: $((w1 - w0)), of which flagged lazy: $((l1 - l0)) (written: at least $want)"
# (at least, not exactly: a write resent after its chain hop was refused, as the first
# may be right after the OSS start, is stored twice on the head)
[ $((w1 - w0)) -ge "$want" ] || fail "the OSS stored $((w1 - w0)) bytes for $want written"
[ $((l1 - l0)) -eq $((w1 - w0)) ] ||
	fail "of $((w1 - w0)) bytes from the lazy mount, $((l1 - l0)) were flagged lazy"

echo "== 50 fsyncs on the durable mount: every one syncs the copies"
f0=$(oss_sum "$FSYNC") l0=$(oss_sum $LAZY)
write_fsync "$B/d" durable 50
f1=$(oss_sum "$FSYNC") l1=$(oss_sum $LAZY)
echo "   OBJ_FSYNC requests: $((f1 - f0)); bytes flagged lazy: $((l1 - l0))"
[ $((l1 - l0)) -eq 0 ] || fail "the durable mount's writes reached the OSS flagged lazy"
[ $((f1 - f0)) -ge 50 ] || fail "50 fsyncs on a durable mount sent only $((f1 - f0)) OBJ_FSYNC requests"

echo "== kill -9 of every server right after lazy fsyncs loses nothing"
create "$A/d" killed 50
write_fsync "$A/d" killed 50
for i in 0 1 2; do kill -9 "${pids[i]}"; done
for i in 0 1 2; do wait "${pids[i]}" 2>/dev/null || true; done
"$MDS_BIN" --data "$WORK/mds" --listen "$MDS_ADDR" --key "$WORK/key" \
	--metrics "$(cat "$WORK/mds.metrics")" 2>>"$WORK/mds.log" &
pids[0]=$!
for i in 0 1; do
	"$OSS_BIN" --data "$WORK/oss$i" --listen "$(cat "$WORK/oss$i.addr")" --mds "$MDS_ADDR" \
		--key "$WORK/key" 2>>"$WORK/oss$i.log" &
	pids[i + 1]=$!
done
up=0
for _ in $(seq 200); do
	up=$("$LODECTL" status 2>/dev/null | grep -c ' up ') || true
	[ "$up" -ge 2 ] && break
	sleep 0.1
done
[ "$up" -ge 2 ] || fail "the servers did not come back with both targets up"
# read from the servers, not from a mount's page cache
"$LODECTL" get -r /d "$WORK/back" >"$WORK/get.txt" 2>&1 || fail "lodectl get -r /d: $(tail -n 3 "$WORK/get.txt")"
check_files "$WORK/back" killed 50 || fail "after kill -9 of every server, lazily fsynced files changed"
check_files "$WORK/back" lazy 100 || fail "after kill -9 of every server, the first lazily fsynced files changed"
check_files "$WORK/back" durable 50 || fail "after kill -9 of every server, durably fsynced files changed"
"$LODECTL" fsck >"$WORK/fsck.txt" 2>&1 || fail "fsck after kill -9 of every server: $(tail -n 5 "$WORK/fsck.txt")"
echo "PASS"
