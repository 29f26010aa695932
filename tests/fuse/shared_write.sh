#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Eight writers on two mounts of one cluster write interleaved records of one file at once
# (N-to-1): every record lands intact, the size is the largest end, both mounts see the
# union after the last close; overlapping writers leave whole chunks (shared_write.py).
. "$(dirname "$0")/lib.sh"

need_fuse
start_cluster 3
mount_lode "$WORK/m1"
mount_lode "$WORK/m2"
"$PYTHON" "$LODE_TEST_SRCDIR/shared_write.py" "$WORK/m1" "$WORK/m2"
