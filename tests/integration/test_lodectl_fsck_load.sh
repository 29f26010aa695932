#!/usr/bin/env bash
# lodectl fsck on a healthy cluster while 2 writers (create, write, delete) and 2 readers
# (read back, byte-compare) are busy: each of several runs exits 0, with no false positive.
set -euo pipefail
LODE_TEST_NAME=fsck-load
source "$(dirname "$0")/lib.sh"

mds=$("$lodectl" local up "$dir/c" --oss 3 --orphan-grace 1)
export LODE_MDS=$mds
head -c 2500000 /dev/urandom >"$dir/data"
for r in 1 2; do "$lodectl" put --quiet "$dir/data" "/r$r"; done
"$lodectl" mkdir /w1
"$lodectl" mkdir /w2

pids=()
stop_load() { touch "$dir/stop"; for p in "${pids[@]}"; do wait "$p" || echo "load process $p failed" >>"$dir/errors"; done; }
writer() { # new files, some deleted again: orphans and objects come and go
	local n=0
	while [ ! -e "$dir/stop" ]; do
		n=$((n + 1))
		"$lodectl" put --quiet "$dir/data" "/w$1/f$n" || { echo "put /w$1/f$n failed" >>"$dir/errors"; return 1; }
		if [ $((n % 2)) = 0 ]; then "$lodectl" rm "/w$1/f$((n - 1))" >/dev/null || { echo "rm failed" >>"$dir/errors"; return 1; }; fi
	done
}
reader() {
	while [ ! -e "$dir/stop" ]; do
		"$lodectl" get --quiet "/r$1" "$dir/back$1" && cmp -s "$dir/data" "$dir/back$1" ||
			{ echo "read of /r$1 failed or differed" >>"$dir/errors"; return 1; }
	done
}
writer 1 & pids+=($!)
writer 2 & pids+=($!)
reader 1 & pids+=($!)
reader 2 & pids+=($!)

sleep 1
for run in 1 2 3 4 5; do
	rc=0
	"$lodectl" fsck >"$dir/out$run" 2>&1 || rc=$?
	if [ "$rc" != 0 ]; then
		stop_load
		cat "$dir/out$run"
		fail "fsck run $run under load exited $rc"
	fi
	grep -q " 0 errors" "$dir/out$run" || { stop_load; cat "$dir/out$run"; fail "run $run: errors"; }
	tail -1 "$dir/out$run"
	sleep 0.5
done
stop_load
[ ! -s "$dir/errors" ] || fail "the load failed: $(cat "$dir/errors")"
"$lodectl" fsck >/dev/null || fail "fsck after the load exited $?"
echo PASS
