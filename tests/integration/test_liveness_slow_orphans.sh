#!/usr/bin/env bash
# Issue 15: creates failed with ENOSPC while every OSS was alive, because a long orphan
# cleanup stopped heartbeats and the MDS took targets silent for 5 s for dead ones.
# Each OSS runs over an artificially slow object store (LD_PRELOAD slow_oss.so):
# 1. orphan removal crawls (each unlink delayed) while creates continue through the mount:
#    heartbeats keep flowing, no create fails, every target stays up in `lodectl status`;
# 2. heartbeats themselves come 8 s late (as from a starved OSS) while creates continue:
#    no create fails and every target stays up, and none goes unheard for 7.5 s: the MDS
#    probes a target 5 s late (a PING that proves the cluster key, which the OSS answers
#    on its workers), and the answer counts as hearing from it.
set -euo pipefail

LODE_TEST_NAME=slow-orphans
. "$(dirname "$0")/lib.sh"
shim=${LODE_SLOW_OSS:?}
here=$(dirname "$0")
python=${PYTHON:-python3}
export LODE_SLOW_DIR=$dir/slow
mkdir "$LODE_SLOW_DIR"
# the shim is not built with the sanitizer runtime first in line; let ASan builds load it
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
mds=$(LD_PRELOAD=$shim "$lodectl" local up "$dir/c" --oss 3 --orphan-grace 1)
mount_lode "$dir/mnt"

# watch_status SECONDS MAX_SEEN_MS: samples `lodectl status` twice a second; fails if a
# target is ever down, or silent for longer than MAX_SEEN_MS
watch_status() {
	local end=$((SECONDS + $1)) out worst=0
	while [ $SECONDS -lt $end ]; do
		out=$("$lodectl" --mds "$mds" --json status) || { echo "status failed"; return 1; }
		if ! echo "$out" | "$python" -c 'import json, sys
sys.exit(any(t["state"] != "up" for t in json.load(sys.stdin)["targets"]))'; then
			echo "a target is down:"; echo "$out"; return 1
		fi
		local seen
		seen=$(echo "$out" | "$python" -c 'import json, sys
print(max(1 << 40 if t["last_seen_ms"] is None else t["last_seen_ms"]
          for t in json.load(sys.stdin)["targets"]))')
		[ "$seen" -gt "$worst" ] && worst=$seen
		if [ "$seen" -gt "$2" ]; then
			echo "heartbeats stopped: a target silent for $seen ms:"; echo "$out"; return 1
		fi
		sleep 0.5
	done
	echo "every target up for $1 s; longest silence seen ${worst} ms"
}

echo "== 1. orphan removal crawls while creates continue"
mkdir "$dir/mnt/old" "$dir/mnt/new"
"$python" "$here/create_files.py" "$dir/mnt/old" f 300 65536 >/dev/null
rm -rf "$dir/mnt/old"
echo 15 >"$LODE_SLOW_DIR/unlink_ms" # 200-400 objects per OSS, 2 unlinks each
watch_status 14 5000 &
watcher=$!
pids=()
for i in 0 1 2 3; do
	"$python" "$here/create_files.py" "$dir/mnt/new" "a$i-" 100000 65536 12 >"$dir/create$i.log" &
	pids+=($!)
done
failed=0
for i in 0 1 2 3; do wait "${pids[$i]}" || failed=1; cat "$dir/create$i.log"; done
wait $watcher || fail "a target left the up state, or heartbeats stopped, during slow orphan removal"
[ $failed -eq 0 ] || fail "a create failed during slow orphan removal"

echo "== 2. heartbeats come 8 s late while creates continue"
echo 8000 >"$LODE_SLOW_DIR/statvfs_ms"
watch_status 16 7500 &
watcher=$!
pids=()
for i in 0 1 2 3; do
	"$python" "$here/create_files.py" "$dir/mnt/new" "b$i-" 100000 65536 14 >"$dir/create$i.log" &
	pids+=($!)
done
failed=0
for i in 0 1 2 3; do wait "${pids[$i]}" || failed=1; cat "$dir/create$i.log"; done
wait $watcher || fail "a target left the up state, or went unheard for 7.5 s (unprobed), while its heartbeats were late"
[ $failed -eq 0 ] || fail "a create failed while heartbeats were late"
rm -f "$LODE_SLOW_DIR"/*
# the slow removal did run (and, at 15 ms an unlink, overlapped phase 1's creates)
removed=$(cat "$dir"/c/oss*/log | grep -c "removed .* orphan objects" || true)
echo "orphan removal passes finished: $removed"
[ "$removed" -gt 0 ] || fail "no orphan was removed: the test did not exercise slow removal"
echo "liveness under slow orphans and late heartbeats: passed"
