#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A safetensors file written with Python into lode-fuse and read back through mmap (and
# numpy when installed) on the same and on a second mount; then MAP_SHARED writes, seen
# from the second mount after munmap and close.
. "$(dirname "$0")/lib.sh"

need_fuse
"$PYTHON" -c 'import mmap, json' 2>/dev/null || skip "$PYTHON cannot import mmap and json"
start_cluster 3
mount_lode "$WORK/m1"
mount_lode "$WORK/m2"
"$PYTHON" "$LODE_TEST_SRCDIR/safetensors.py" "$WORK/m1" "$WORK/m2"
