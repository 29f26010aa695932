#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Reads stuck on unresponsive object servers hold no other call of the mount back: with
# every OSS stopped (SIGSTOP: connected, silent, until the mount's timeout), 12 readers of
# files the mount never had, all on one CPU (the io_uring path keeps a request queue per
# CPU), block in lode-fuse; meanwhile a listing of a directory the mount never saw, from
# that same CPU, is answered (it needs only the MDS) before any reader returns. Once the
# servers go on, every reader gets the bytes written on the other mount. Over io_uring,
# the stuck reads made CPU 0's queue start threads past the ones it began with
# (lode_fuse_uring_threads), and kicked it (lode_fuse_uring_kicks_total: requests the
# kernel queued while it had no entry waiting are handed out; without the kick the listing
# waited for the mount's timeout in 3 of 15 runs beside two busy CPUs).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_fuse
need_prog taskset curl
own_cluster "--metrics 127.0.0.1:0 --metrics-port-file $WORK/fuse-a.metrics" ""
wait_file "$WORK/fuse-a.metrics"
metric() {
	curl -sf "http://$(cat "$WORK/fuse-a.metrics")/metrics" | sed -n "s/^$1 \([0-9]*\)$/\1/p"
}
n=12
mkdir "$B/d" "$B/listed"
for i in $(seq $n); do
	head -c 4000000 /dev/urandom > "$WORK/src$i"
	cp "$WORK/src$i" "$B/d/f$i"
	: > "$B/listed/name$i"
done
cont() { kill -CONT "${pids[1]}" "${pids[2]}" 2>/dev/null || true; }
at_cleanup cont
kill -STOP "${pids[1]}" "${pids[2]}"
readers=()
for i in $(seq $n); do
	taskset -c 0 cat "$A/d/f$i" > "$WORK/out$i" &
	readers+=($!)
done
sleep 2
for p in "${readers[@]}"; do
	kill -0 "$p" 2>/dev/null || fail "a reader returned while every OSS was stopped"
done
echo "== $n readers blocked on stopped servers; a listing from the same CPU"
start=$(date +%s.%N)
names=$(taskset -c 0 timeout 25 ls -l "$A/listed" | grep -c name) ||
	fail "ls of a new directory did not finish while $n reads were stuck"
end=$(date +%s.%N)
[ "$names" -eq $n ] || fail "ls listed $names names, not $n"
for p in "${readers[@]}"; do
	kill -0 "$p" 2>/dev/null || fail "the listing waited for a stuck reader to return"
done
echo "listed in $(echo "$end - $start" | bc) s while the readers were still stuck"
if [[ ${LODE_TEST_FUSE_OPTS:-} == *io_uring* ]]; then
	# the threads a mount starts with: 4 a possible CPU, 2-4 when there are over 16
	ncpu=$(($(sed 's/.*[-,]//' /sys/devices/system/cpu/possible) + 1))
	per=$((64 / ncpu))
	((per > 4)) && per=4
	((per < 2)) && per=2
	threads=$(metric lode_fuse_uring_threads)
	echo "ring threads: $threads ($((ncpu * per)) at the start)," \
		"requests handed off: $(metric lode_fuse_uring_handoffs_total)," \
		"kicks: $(metric lode_fuse_uring_kicks_total)"
	((threads > ncpu * per)) || fail "CPU 0's queue started no thread for the stuck reads"
	# a queue that grew is kicked, so that what the kernel queued meanwhile is handed out
	(($(metric lode_fuse_uring_kicks_total) > 0)) || fail "the queues grew but none was kicked"
fi
cont
for i in $(seq $n); do
	wait "${readers[i - 1]}" || fail "reader $i failed once the servers went on"
	cmp "$WORK/src$i" "$WORK/out$i" || fail "reader $i read other bytes"
done
echo "ok"
