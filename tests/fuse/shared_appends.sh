#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two mounts of one cluster append to one file and write it right after each other's
# close, without a pause: no byte lost, no EBUSY after close (shared_appends.py).
. "$(dirname "$0")/lib.sh"

need_fuse
start_cluster 3
mount_lode "$WORK/m1"
mount_lode "$WORK/m2"
"$PYTHON" "$LODE_TEST_SRCDIR/shared_appends.py" "$WORK/m1" "$WORK/m2" "${1:-25}"
