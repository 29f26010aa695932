#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A mount that asks for the kernel's requests over io_uring where the kernel does not offer
# them (the fuse module's enable_uring turned off for the test, then put back as it was):
#   - -o io_uring mounts anyway and serves through /dev/fuse: a file written through it
#     reads back the same on another mount, lode_fuse_kernel_feature{feature="io_uring"}
#     is 0, and its log says why
#   - -o io_uring=require makes no mount: lode-fuse exits with an error, nothing is left
#     mounted, and its log says why
# The parameter is the whole machine's, so meson runs this test alone (is_parallel false).
# Exits 77 where the kernel has no FUSE over io_uring, or the parameter cannot be written.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_fuse
need_prog curl
param=/sys/module/fuse/parameters/enable_uring
[ -e $param ] || skip "this kernel has no FUSE over io_uring (Linux 6.14 and later)"
[ -w $param ] || skip "$param cannot be written here (not root)"
old=$(cat $param)
own_cluster "" ""
# from here on the parameter is put back however the test ends
at_cleanup "echo $old > $param"
echo N > $param || skip "cannot turn $param off"

echo "== -o io_uring where it is not offered: a mount through /dev/fuse"
C=$WORK/c
mkdir "$C"
"$LODE_FUSE" --mds "$MDS" "$C" -f -o io_uring --metrics 127.0.0.1:0 \
	--metrics-port-file "$WORK/fuse-c.metrics" 2>"$WORK/fuse-c.log" &
pids+=($!)
mnts+=("$C")
for _ in $(seq 100); do
	mountpoint -q "$C" && break
	sleep 0.1
done
mountpoint -q "$C" || fail "lode-fuse -o io_uring did not mount: $(tail -n 3 "$WORK/fuse-c.log")"
head -c 3000000 /dev/urandom > "$WORK/data"
cp "$WORK/data" "$C/f"
cmp "$WORK/data" "$A/f" || fail "a file written through the /dev/fuse fallback reads back differently"
wait_file "$WORK/fuse-c.metrics"
curl -sf "http://$(cat "$WORK/fuse-c.metrics")/metrics" |
	grep -Eq '^lode_fuse_kernel_feature\{feature="io_uring"\} 0$' ||
	fail "lode_fuse_kernel_feature{feature=\"io_uring\"} is not 0 on the fallback mount"
grep -q "io_uring: the kernel does not offer FUSE over io_uring" "$WORK/fuse-c.log" ||
	fail "the fallback mount's log does not say why: $(cat "$WORK/fuse-c.log")"
grep -q "serving the mount through /dev/fuse" "$WORK/fuse-c.log" ||
	fail "the fallback mount's log does not say how it serves: $(cat "$WORK/fuse-c.log")"

echo "== -o io_uring=require where it is not offered: no mount, and an error"
D=$WORK/d
mkdir "$D"
rc=0
timeout 60 "$LODE_FUSE" --mds "$MDS" "$D" -f -o io_uring=require 2>"$WORK/fuse-d.log" || rc=$?
[ $rc -eq 124 ] && fail "lode-fuse -o io_uring=require kept running without io_uring"
[ $rc -ne 0 ] || fail "lode-fuse -o io_uring=require exited 0 without io_uring"
mountpoint -q "$D" && { umount -l "$D"; fail "lode-fuse -o io_uring=require left a mount"; }
grep -q "io_uring: the kernel does not offer FUSE over io_uring" "$WORK/fuse-d.log" ||
	fail "io_uring=require's log does not say why: $(cat "$WORK/fuse-d.log")"
echo "ok: $(grep -c . "$WORK/fuse-d.log") log lines, exit $rc"
