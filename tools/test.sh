#!/usr/bin/env bash
# Builds Lode and runs the whole test suite twice: a normal build, then one under
# AddressSanitizer and UndefinedBehaviorSanitizer (set LODE_SKIP_SANITIZERS=1 to skip it).
# Two tests at a time: those marked is_parallel (own cluster, own mount, nothing timed);
# the rest (kills, busy machines, timing, the RDMA VM) run alone.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/check-format.sh

# The fuse-io-uring-* tests need the kernel's FUSE over io_uring turned on (a module
# parameter, off by default): on for the suite where this may set it, as it was after.
uring=/sys/module/fuse/parameters/enable_uring
if [ -w "$uring" ] && [ "$(cat "$uring")" != Y ]; then
	trap 'echo N >"$uring"' EXIT
	echo Y >"$uring"
fi

meson setup build --buildtype=debugoptimized >/dev/null 2>&1 || meson setup build --reconfigure
ninja -C build
meson test -C build --print-errorlogs --num-processes 2

if [ "${LODE_SKIP_SANITIZERS:-0}" != 1 ]; then
	[ -d build-asan ] || meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false
	ninja -C build-asan
	ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C build-asan --print-errorlogs --num-processes 2 --timeout-multiplier 3
fi
