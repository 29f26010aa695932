#!/usr/bin/env bash
# What an admin and the test harness rely on after lode-fuse dies (kill -9, a crash):
#   - the mount point answers ENOTCONN ("Transport endpoint is not connected"), which
#     mountpoint(1) takes for "not a mount point", so cleanup that asked it left such
#     mounts behind; the fixture's unmount (what every fuse test's cleanup runs) removes it
#   - a new lode-fuse mounts at the same place and finds the file written before the kill
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_fuse
start_cluster 2
M=$WORK/m
mount_lode "$M"
echo kept >"$M/f"
sync "$M/f"
pid=${MOUNTS[0]#* }

echo "== kill -9 of lode-fuse leaves a dead mount; the harness's unmount removes it"
kill -9 "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "lode-fuse (pid $pid) survived kill -9"
stat "$M" >/dev/null 2>&1 && fail "the mount still answers after its lode-fuse died"
findmnt -M "$M" >/dev/null || fail "no mount left at $M after the kill: nothing tested"
"$FIXTURE" umount "$M" "$pid" || true # its daemon was killed: not a clean exit
findmnt -M "$M" >/dev/null && fail "the dead mount at $M is still in the mount table"
MOUNTS=()

echo "== a new mount at the same place reads what was written before the kill"
mount_lode "$M"
[ "$(cat "$M/f")" = kept ] || fail "the file written before the kill reads '$(cat "$M/f")'"
echo "done"
