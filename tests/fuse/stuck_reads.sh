#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Reads stuck on unresponsive object servers hold no other call of the mount back: with
# every OSS stopped (SIGSTOP: connected, silent, until the mount's timeout), 12 readers of
# files the mount never had, all on one CPU (the io_uring path keeps a request queue per
# CPU), block in lode-fuse; meanwhile a listing of a directory the mount never saw, from
# that same CPU, is answered (it needs only the MDS) before any reader returns. Once the
# servers go on, every reader gets the bytes written on the other mount.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_fuse
need_prog taskset
own_cluster "" ""
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
cont
for i in $(seq $n); do
	wait "${readers[i - 1]}" || fail "reader $i failed once the servers went on"
	cmp "$WORK/src$i" "$WORK/out$i" || fail "reader $i read other bytes"
done
echo "ok"
