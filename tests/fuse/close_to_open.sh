#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Close-to-open consistency between two lode-fuse mounts of one cluster: a writer on one
# and a reader on the other see each other's data after close, same-size rewrites included.
. "$(dirname "$0")/lib.sh"

need_fuse
start_cluster 3
mount_lode "$WORK/m1"
mount_lode "$WORK/m2"
"$PYTHON" "$LODE_TEST_SRCDIR/close_to_open.py" "$WORK/m1" "$WORK/m2"
# the same while the reader's kernel asks for the file's attributes all the time
mount_lode "$WORK/m3" "attr_timeout=0.01,entry_timeout=0.01"
"$PYTHON" "$LODE_TEST_SRCDIR/attr_race.py" "$WORK/m3" "$WORK/m2" 15
