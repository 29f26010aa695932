#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# io_uring.sh SCRIPT [ARGS...]: a lode-fuse test again with the kernel's requests over
# io_uring (-o io_uring=require, client/fuse/fuse_uring.c): every mount the test makes
# gets the option (lib.sh), and one that cannot use io_uring unmounts at once, so the test
# fails rather than pass through /dev/fuse. Exits 77 where the kernel has no FUSE over
# io_uring, or has it turned off (tools/test.sh turns it on for the suite when root).
param=/sys/module/fuse/parameters/enable_uring
if [ ! -e $param ]; then
	echo "SKIP: this kernel has no FUSE over io_uring (Linux 6.14 and later," \
		"CONFIG_FUSE_IO_URING)" >&2
	exit 77
fi
if [ "$(cat $param)" != Y ]; then
	echo "SKIP: FUSE over io_uring is off here ($param is not Y; as root," \
		"tools/test.sh sets it for the suite)" >&2
	exit 77
fi
export LODE_TEST_FUSE_OPTS=io_uring=require
exec bash "$(dirname "$0")/$1" "${@:2}"
