#!/usr/bin/env bash
# Round trips to the MDS per operation through lode-fuse, counted from the MDS's own
# metrics (lode_requests_total by opcode), and what users rely on around each cut:
#   - a create costs LOOKUP (the kernel's, of the new name), CREATE and the close that
#     gives the lease back: no GETATTR after CREATE; and another mount finds the file
#   - closes with nothing left to commit give their leases back in batches (CLOSE_MANY),
#     never a CLOSE each, and another mount reads what each file's flush published
#   - creates, renames and unlinks in a row cost no GETATTR of their directories (the
#     replies carry their attributes), and the mtimes this mount shows are the MDS's;
#     every GETATTR of the directory until the mount's next change is answered so, not the
#     first only, and a chmod of it ends that
#   - touch/chmod of an existing file: one SETATTR, no GETATTR after it; the new mtime
#     and mode show on this mount and (after open) on the other
#   - a read-only open and close: one OPEN, no CLOSE; the size and bytes the writer's
#     close published, on a mount that had the file's old attributes cached, read once
#     from the OSS
#   - a small file read cold on a mount that never had it, right after the kernel looked
#     its name up: LOOKUP and OPEN, no GETATTR (the lookup's attributes are the open's),
#     and its bytes come with the open (one OBJ_READ, no READ through lode-fuse)
#   - reading and writing data fetch no capability (CAP_GET): OPEN's and CREATE's replies
#     carry it
#   - ls -l of a directory: READDIRPLUS pages, no LOOKUP, GETATTR or GETXATTR per file; the
#     sizes and modes are the ones written on the other mount
#   - system.* extended attributes are refused without the MDS; user.* still work
#   - with negative_timeout, a missing name costs one LOOKUP however often it is asked
#     for, and a create of it none; this mount's own create shows at once. Without it (the
#     default) another mount's new file shows at once after a failed lookup
#   - 200 small writes to a new file: one GETXATTR of security.capability, not one per
#     write, where the kernel took FUSE_HANDLE_KILLPRIV_V2 at mount; and the features the
#     mount took at INIT (lode_fuse_kernel_feature) are the ones this kernel offers; and
#     each WRITE's time in lode-fuse is counted (lode_fuse_request_seconds_total), adding
#     up to less than the writer's own time
# The counting mount caches names, attributes and missing names for 60 s, so that the
# kernel's own revalidations do not blur the counts; the other mount has the defaults.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_fuse
need_prog curl
own_cluster "-o attr_timeout=60,entry_timeout=60,negative_timeout=60 --metrics 127.0.0.1:0 --metrics-port-file $WORK/fuse-a.metrics" ""
wait_file "$WORK/fuse-a.metrics"
FUSE_URL="http://$(cat "$WORK/fuse-a.metrics")/metrics"
# over io_uring when io_uring.sh runs this test, through /dev/fuse otherwise: the counts
# below hold either way
uring=0
[[ ${LODE_TEST_FUSE_OPTS:-} == *io_uring* ]] && uring=1
stat "$A" >/dev/null # the kernel's INIT exchange is over once a request was answered
curl -sf "$FUSE_URL" | grep -Eq "^lode_fuse_kernel_feature\{feature=\"io_uring\"\} $uring\$" ||
	fail "lode_fuse_kernel_feature{feature=\"io_uring\"} is not $uring on mount A"
obj_reads() { # OBJ_READs both OSS answered so far
	for u in "${OSS_URL[@]}"; do curl -sf "$u"; done |
		sed -n 's/^lode_requests_total{op="obj_read"} \([0-9]*\)$/\1/p' | awk '{ t += $1 } END { print t + 0 }'
}
fuse_reads() { curl -sf "$FUSE_URL" | sed -n 's/^lode_fuse_reads_total \([0-9]*\)$/\1/p'; }

# The client requests the MDS answered so far, "op count" per line (servers' own traffic,
# target_* and orphan_*, left out).
snap() {
	curl -sf "$URL" | sed -n 's/^lode_requests_total{op="\([a-z_]*\)"} \([0-9]*\)$/\1 \2/p' |
		grep -Ev '^(target_|orphan_|ping|hello|report_copy)' | sort
}
# counted CMD: runs CMD, then sets DELTA to "op=n ..." of what it cost and TOTAL to the sum.
counted() {
	local before after rc=0
	before=$(snap)
	"$@" || rc=$?
	after=$(snap)
	DELTA=$(join -a2 -e0 -o 0,1.2,2.2 <(echo "$before") <(echo "$after") |
		awk '$3 > $2 { printf "%s=%d ", $1, $3 - $2 }')
	TOTAL=$(join -a2 -e0 -o 0,1.2,2.2 <(echo "$before") <(echo "$after") |
		awk '{ t += $3 - $2 } END { print t + 0 }')
	return $rc
}
# n OP: how many OP requests DELTA holds.
n() {
	local v
	v=$(tr ' ' '\n' <<<"$DELTA" | sed -n "s/^$1=//p")
	echo "${v:-0}"
}

mkdir "$A/d"
stat "$A/d" >/dev/null # the counting mount knows the directory from here on

echo "== a create through the mount: no GETATTR after CREATE"
counted sh -c ": >'$A/d/new'"
echo "   create of an empty file: $DELTA"
[ "$(n create)" -eq 1 ] || fail "a create sent $(n create) CREATEs: $DELTA"
[ "$(n getattr)" -eq 0 ] || fail "a create was followed by GETATTR: $DELTA"
[ "$(n open)" -eq 0 ] || fail "a create also sent OPEN: $DELTA"
[ "$TOTAL" -le 3 ] || fail "a create cost $TOTAL MDS requests (LOOKUP, CREATE, CLOSE at most): $DELTA"
stat "$B/d/new" >/dev/null || fail "the other mount does not find the file just created"
[ "$(stat -c %s "$B/d/new")" = 0 ] || fail "the other mount sees size $(stat -c %s "$B/d/new") of an empty file"

echo "== creates, renames, unlinks in a row: the directory's attributes come with each reply"
counted sh -c 'for i in 1 2 3 4 5 6 7 8 9 10; do : >"$1/row$i"; done' sh "$A/d"
echo "   10 creates: $DELTA"
[ "$(n create)" -eq 10 ] || fail "10 creates sent $(n create) CREATEs: $DELTA"
[ "$(n getattr)" -eq 0 ] || fail "10 creates in one directory cost $(n getattr) GETATTRs (of the parent): $DELTA"
counted sh -c 'for i in 1 2 3 4 5; do mv "$1/row$i" "$1/moved$i"; done' sh "$A/d"
echo "   5 renames: $DELTA"
[ "$(n rename)" -eq 5 ] && [ "$(n getattr)" -eq 0 ] || fail "5 renames in one directory cost $DELTA (no GETATTR expected)"
counted sh -c 'for i in 6 7 8 9 10; do rm "$1/row$i"; done' sh "$A/d"
echo "   5 unlinks: $DELTA"
[ "$(n unlink)" -eq 5 ] && [ "$(n getattr)" -eq 0 ] || fail "5 unlinks in one directory cost $DELTA (no GETATTR expected)"
sleep 1.2 # the other mount's cached attributes of d expire
[ "$(stat -c %.9Y:%a:%h "$A/d")" = "$(stat -c %.9Y:%a:%h "$B/d")" ] ||
	fail "after the changes this mount shows d as $(stat -c %.9Y:%a:%h "$A/d"), the MDS (other mount) as $(stat -c %.9Y:%a:%h "$B/d")"
mkdir "$A/d/sub"
stat "$A/d/sub" >/dev/null
counted mv "$A/d/moved1" "$A/d/sub/moved1"
echo "   a rename into a subdirectory: $DELTA"
[ "$(n getattr)" -eq 0 ] || fail "a rename between two directories cost $DELTA (no GETATTR expected)"
sleep 1.2
[ "$(stat -c %.9Y "$A/d/sub")" = "$(stat -c %.9Y "$B/d/sub")" ] ||
	fail "after the rename this mount shows d/sub's mtime as $(stat -c %.9Y "$A/d/sub"), the MDS as $(stat -c %.9Y "$B/d/sub")"

echo "== after a change, the directory's GETATTRs are answered from its reply, not the first only"
# statx with AT_STATX_FORCE_SYNC sends a GETATTR every time, as processes walking through a
# directory that just changed do at once; prints mode:mtime of each answer, one per line
forced_stats() {
	"$PYTHON" -c 'import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(256)
for _ in range(int(sys.argv[2])):
    if libc.statx(-100, sys.argv[1].encode(), 0x2000, 0x7FF, buf):  # AT_FDCWD, FORCE_SYNC
        sys.exit("statx: " + os.strerror(ctypes.get_errno()))
    mode, = struct.unpack_from("H", buf, 28)
    sec, nsec = struct.unpack_from("qI", buf, 112)  # stx_mtime
    print("%o:%d.%09d" % (mode & 0o7777, sec, nsec))' "$@"
}
: >"$A/d/forced"
counted forced_stats "$A/d" 5 >"$WORK/forced.txt"
echo "   5 forced stats of d after a create in it: $DELTA"
[ "$(n getattr)" -eq 0 ] || fail "5 GETATTRs of a directory just changed cost $DELTA (none expected)"
[ "$(sort -u "$WORK/forced.txt" | wc -l)" -eq 1 ] || fail "5 GETATTRs in a row answered differently: $(cat "$WORK/forced.txt")"
sleep 1.2 # the other mount's cached attributes of d expire
[ "$(cut -d: -f2 "$WORK/forced.txt" | head -n 1)" = "$(stat -c %.9Y "$B/d")" ] ||
	fail "the answers gave d's mtime as $(head -n 1 "$WORK/forced.txt"), the MDS (other mount) $(stat -c %.9Y "$B/d")"
chmod 0750 "$A/d"
counted forced_stats "$A/d" 2 >"$WORK/forced.txt"
echo "   2 forced stats of d after a chmod of it: $DELTA"
[ "$(n getattr)" -ge 1 ] || fail "after a chmod of the directory its GETATTRs still came from an older reply"
[ "$(sort -u "$WORK/forced.txt" | cut -d: -f1)" = 750 ] || fail "after chmod 0750, d's mode read $(cat "$WORK/forced.txt")"
chmod 0755 "$A/d"

echo "== utimes and chmod of an existing file: SETATTR only"
stat "$A/d" >/dev/null # the kernel dropped the directory's attributes at the create
T=$(date -d '2001-02-03 04:05:06' +%s)
counted "$PYTHON" -c 'import os, sys; os.utime(sys.argv[1], (int(sys.argv[2]),) * 2)' "$A/d/new" "$T"
echo "   utimes: $DELTA"
[ "$(n setattr)" -eq 1 ] && [ "$(n getattr)" -eq 0 ] || fail "utimes cost $DELTA (one SETATTR, no GETATTR)"
[ "$(stat -c %Y "$A/d/new")" = "$T" ] ||
	fail "the mtime set is not the one this mount shows: $(stat -c %y "$A/d/new")"
counted chmod 0640 "$A/d/new"
[ "$(n getattr)" -eq 0 ] || fail "chmod cost $DELTA (no GETATTR expected)"
[ "$(stat -c %a "$A/d/new")" = 640 ] || fail "this mount shows mode $(stat -c %a "$A/d/new") after chmod 0640"
cat "$B/d/new" >/dev/null
[ "$(stat -c %a.%Y "$B/d/new")" = "640.$T" ] ||
	fail "the other mount shows $(stat -c %a.%Y "$B/d/new") after an open"

echo "== read-only open and close: one OPEN, no CLOSE; close-to-open across mounts"
head -c 65536 /dev/urandom >"$WORK/src"
cp "$WORK/src" "$B/d/f64"
stat "$A/d/f64" >/dev/null # the counting mount caches the attributes for 60 s
head -c 100000 /dev/urandom >"$WORK/src2"
cp "$WORK/src2" "$B/d/f64" # rewritten and closed on the other mount
r0=$(obj_reads) f0=$(fuse_reads)
counted cmp -s "$WORK/src2" "$A/d/f64" ||
	fail "an open on mount A after mount B's close does not read what B wrote"
echo "   cat of a file: $DELTA; OBJ_READs $(($(obj_reads) - r0))"
[ $(($(obj_reads) - r0)) -eq 1 ] || fail "reading a 100000-byte file took $(($(obj_reads) - r0)) OBJ_READs (1 expected)"
[ "$(n open)" -eq 1 ] || fail "a read-only open sent $(n open) OPENs: $DELTA"
[ "$(n close)" -eq 0 ] || fail "a read-only close went to the MDS: $DELTA"
[ "$(n cap_get)" -eq 0 ] || fail "reading asked for a capability besides OPEN's: $DELTA"
[ "$(stat -c %s "$A/d/f64")" = 100000 ] ||
	fail "after the open, mount A shows size $(stat -c %s "$A/d/f64"), not 100000"
counted cat "$A/d/f64" >/dev/null
[ "$(n close)" -eq 0 ] && [ "$TOTAL" -le 2 ] || fail "a second cat cost $DELTA"

echo "== a small file read cold after its lookup: no GETATTR"
head -c 70000 /dev/urandom >"$WORK/src3"
cp "$WORK/src3" "$B/d/cold" # written through the other mount: new to this one
r0=$(obj_reads) f0=$(fuse_reads)
counted cmp -s "$WORK/src3" "$A/d/cold" || fail "mount A does not read what mount B wrote"
echo "   cat of a file this mount never had: $DELTA; OBJ_READs $(($(obj_reads) - r0)), READs through lode-fuse $(($(fuse_reads) - f0))"
[ "$(n lookup)" -eq 1 ] && [ "$(n open)" -eq 1 ] || fail "a cold read cost $DELTA (one LOOKUP, one OPEN expected)"
[ "$(n getattr)" -eq 0 ] || fail "a cold read right after its lookup asked for the attributes again: $DELTA"
[ $(($(obj_reads) - r0)) -eq 1 ] || fail "reading a 70000-byte file took $(($(obj_reads) - r0)) OBJ_READs (1 expected)"
[ $(($(fuse_reads) - f0)) -eq 0 ] || fail "the open of a 70000-byte file did not hand its pages to the kernel: $(($(fuse_reads) - f0)) READs reached lode-fuse"
[ "$(stat -c %s "$A/d/cold")" = 70000 ] || fail "mount A shows size $(stat -c %s "$A/d/cold") of a 70000-byte file"

echo "== a write of a new file: the CREATE reply's capability writes"
counted cp "$WORK/src" "$A/d/w64"
echo "   cp of a 64 KiB file: $DELTA"
[ "$(n cap_get)" -eq 0 ] || fail "writing asked for a capability besides CREATE's: $DELTA"
cmp -s "$WORK/src" "$B/d/w64" || fail "the other mount does not read what cp wrote"

echo "== closes with nothing to commit: in batches, no CLOSE each"
counted sh -c 'for i in $(seq 20); do echo "x$i" >"$1/batch$i"; done; sleep 0.5' sh "$A/d"
echo "   20 small files written and closed: $DELTA"
[ "$(n close)" -eq 0 ] || fail "closes whose flush had committed sent $(n close) CLOSEs: $DELTA"
[ "$(n close_many)" -ge 1 ] && [ "$(n close_many)" -le 20 ] ||
	fail "20 closes gave their leases back in $(n close_many) CLOSE_MANY requests: $DELTA"
for i in 1 20; do
	[ "$(cat "$B/d/batch$i")" = "x$i" ] || fail "the other mount reads '$(cat "$B/d/batch$i")' from batch$i"
done

echo "== ls -l: READDIRPLUS, no LOOKUP or GETATTR per file"
mkdir "$B/many"
for i in $(seq 50); do head -c "$i" /dev/zero >"$B/many/f$i"; done
chmod 0600 "$B/many/f7"
counted ls -l "$A/many" >"$WORK/ls.txt"
echo "   ls -l of 50 files: $DELTA"
[ "$(n readdir)" -ge 1 ] || fail "ls -l sent no READDIR: $DELTA"
[ $(($(n lookup) + $(n getattr))) -le 4 ] || fail "ls -l of 50 files cost $DELTA (a LOOKUP or GETATTR per file?)"
[ "$(n getxattr)" -eq 0 ] || fail "ls -l of 50 files sent $(n getxattr) GETXATTRs (security.selinux is answered by lode-fuse)"
[ "$(grep -c ' f[0-9]*$' "$WORK/ls.txt")" -eq 50 ] || fail "ls -l listed $(grep -c ' f[0-9]*$' "$WORK/ls.txt") of 50 files"
awk '$NF ~ /^f[0-9]+$/ { if ($5 != substr($NF, 2)) { print "size of " $NF ": " $5; bad = 1 } } END { exit bad }' \
	"$WORK/ls.txt" || fail "ls -l shows wrong sizes (above)"
grep -q '^-rw------- .* f7$' "$WORK/ls.txt" || fail "ls -l does not show f7's mode 0600: $(grep ' f7$' "$WORK/ls.txt")"

echo "== missing names: cached with negative_timeout, never by default"
counted sh -c 'for i in 1 2 3 4 5; do ! stat "$1" 2>/dev/null || exit 1; done' sh "$A/d/absent" ||
	fail "stat found $A/d/absent, which nobody created"
echo "   5 stats of a missing name: $DELTA"
# (one LOOKUP, or none: while this mount's grant of d it made is valid, lode-fuse answers
# the missing name itself; docs/design.md, "Directory grants")
[ "$(n lookup)" -le 1 ] || fail "5 stats of a missing name cost $(n lookup) LOOKUPs with negative_timeout=60: $DELTA"
counted sh -c ": >'$A/d/absent'"
echo "   a create of that name: $DELTA"
[ "$(n lookup)" -eq 0 ] && [ "$(n create)" -eq 1 ] || fail "a create of a name known missing cost $DELTA (CREATE, no LOOKUP expected)"
[ "$(stat -c %s "$A/d/absent")" = 0 ] || fail "this mount does not find the file it just created over its negative entry"
! stat "$B/d/later" 2>/dev/null || fail "$B/d/later exists before anyone created it"
echo x >"$A/d/later"
[ "$(cat "$B/d/later")" = x ] ||
	fail "the other mount (negative_timeout 0) does not find a file created after its failed lookup"

echo "== extended attributes: system.* refused here, user.* at the MDS"
if command -v setfattr >/dev/null && command -v getfattr >/dev/null; then
	counted sh -c "getfattr -n system.posix_acl_access '$A/d/new' 2>/dev/null || true"
	[ "$(n getxattr)" -eq 0 ] || fail "system.posix_acl_access went to the MDS: $DELTA"
	if setfattr -n system.posix_acl_access -v 0x02 "$A/d/new" 2>/dev/null; then
		fail "setting system.posix_acl_access succeeded, though nothing keeps it"
	fi
	setfattr -n user.k -v v1 "$A/d/new"
	[ "$(getfattr --only-values -n user.k "$B/d/new")" = v1 ] || fail "user.k did not reach the other mount"
else
	echo "   (getfattr/setfattr not installed: skipped this part)"
fi

echo "== small writes: one GETXATTR of security.capability per file, not one per write"
# kernel_at_least MAJOR MINOR: this kernel is that version or later
kernel_at_least() {
	local v
	v=$(uname -r | sed -n 's/^\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
	[ "${v% *}" -gt "$1" ] || { [ "${v% *}" -eq "$1" ] && [ "${v#* }" -ge "$2" ]; }
}
fuse_reqs() { # OP: the kernel's requests of that FUSE opcode to mount A so far
	curl -sf "$FUSE_URL" | sed -n "s/^lode_fuse_requests_total{op=\"$1\"} \([0-9]*\)$/\1/p" |
		awk '{ t += $1 } END { print t + 0 }'
}
feature() { curl -sf "$FUSE_URL" | sed -n "s/^lode_fuse_kernel_feature{feature=\"$1\"} //p"; }
# what the mount took at INIT, as the kernel offers it (parallel_dirops since Linux 4.7,
# killpriv_v2 since 5.11, direct_io_mmap since 6.6): libfuse 3.14 passes none of them on,
# and answers INIT with its own older protocol version, which must not keep any from
# being taken
for f in "parallel_dirops 4 7" "killpriv_v2 5 11" "direct_io_mmap 6 6"; do
	# shellcheck disable=SC2086 # a feature and a version, as words
	set -- $f
	want=0
	kernel_at_least "$2" "$3" && want=1
	[ "$(feature "$1")" = "$want" ] ||
		fail "lode_fuse_kernel_feature{feature=\"$1\"} is '$(feature "$1")' on Linux $(uname -r), expected $want"
done
fuse_timed() { # OP: of those, the requests timed from their read to their reply
	curl -sf "$FUSE_URL" | sed -n "s/^lode_fuse_requests_timed_total{op=\"$1\"} \([0-9]*\)$/\1/p" |
		awk '{ t += $1 } END { print t + 0 }'
}
fuse_secs() { # OP: the seconds those spent in lode-fuse
	curl -sf "$FUSE_URL" | sed -n "s/^lode_fuse_request_seconds_total{op=\"$1\"} //p" |
		awk '{ t += $1 } END { printf "%.9f", t }'
}
w0=$(fuse_reqs WRITE) x0=$(fuse_reqs GETXATTR) t0=$(fuse_timed WRITE) s0=$(fuse_secs WRITE)
start=$(date +%s%N)
dd if=/dev/zero of="$A/d/small-writes" bs=4k count=200 status=none
elapsed=$(($(date +%s%N) - start))
w=$(($(fuse_reqs WRITE) - w0)) x=$(($(fuse_reqs GETXATTR) - x0)) t=$(($(fuse_timed WRITE) - t0))
secs=$(awk -v a="$s0" -v b="$(fuse_secs WRITE)" 'BEGIN { printf "%.6f", b - a }')
echo "   200 writes of 4 KiB to a new file: $w WRITE, $x GETXATTR"
[ "$w" -ge 200 ] || fail "200 writes through the mount reached lode-fuse as $w WRITEs (none cached here)"
# each WRITE is answered by the thread that read it, so each is timed; dd writes one at a
# time, so their time in lode-fuse adds up to less than dd's own
echo "   of them $t timed, $secs s in lode-fuse (dd took $((elapsed / 1000000)) ms)"
[ "$t" = "$w" ] || fail "$t of $w WRITEs were timed (lode_fuse_requests_timed_total)"
awk -v s="$secs" -v e="$elapsed" 'BEGIN { exit !(s > 0 && s * 1e9 < e) }' ||
	fail "200 WRITEs spent $secs s in lode-fuse (lode_fuse_request_seconds_total), dd took $elapsed ns"
if [ "$(feature killpriv_v2)" = 1 ]; then
	[ "$x" -le 1 ] || fail "200 writes to one file cost $x GETXATTRs of security.capability (one at most)"
else
	echo "   (Linux $(uname -r) predates FUSE_HANDLE_KILLPRIV_V2: a GETXATTR per write is expected)"
fi
[ "$(stat -c %s "$B/d/small-writes")" = 819200 ] || fail "the other mount sees $(stat -c %s "$B/d/small-writes") bytes of 819200"
echo "PASS"
