#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Data-integrity soak through lode-fuse: fsx's random writes, truncates, reads, mmap reads
# and writes, fsyncs and reopens on 4 files, every read checked against its model.
# At least 100,000 operations with no mismatch, stopping at 600 s (about 120 s on an idle
# 2-core machine: the bound leaves room for a loaded one); 25,000 in a sanitizer build,
# where each costs about 3 times more.
# FSX_SEED picks the seed (default: a fixed one, printed; rerun a failure with it).
. "$(dirname "$0")/lib.sh"

need_fuse
: "${FSX:?FSX is not set (run through meson test)}"
start_cluster 3
mount_lode "$WORK/mnt"
mkdir "$WORK/mnt/fsx"
ops=100000
[ "${LODE_SANITIZED:-0}" = 1 ] && ops=25000
"$FSX" -s "${FSX_SEED:-20261129}" -n "${FSX_OPS:-$ops}" -m "${FSX_MIN_OPS:-$ops}" \
	-t "${FSX_SECONDS:-600}" -f 4 -z $((512 * 1024)) "$WORK/mnt/fsx"
