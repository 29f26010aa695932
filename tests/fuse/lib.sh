# SPDX-License-Identifier: MIT
# Shared by the shell tests of lode-fuse: a cluster from the fixture (lode-test-fixture),
# mounts of it, and a trap that unmounts and stops everything however the test ends.
# meson sets LODE_TEST_FIXTURE, LODE_FUSE and LODECTL; a test sources this file first.
set -euo pipefail

FIXTURE=${LODE_TEST_FIXTURE:?LODE_TEST_FIXTURE is not set (run through meson test)}
: "${LODE_FUSE:?LODE_FUSE is not set (run through meson test)}"
PYTHON=${PYTHON:-python3}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/lode-fuse-test-XXXXXX")
chmod 0755 "$WORK"
CLUSTER_DIR=
MDS=
MOUNTS=()	# "MNT PID" pairs
TMPFS=()
AT_CLEANUP=()	# commands run first when the test ends (at_cleanup)

# at_cleanup CMD: runs CMD (eval) first when the test ends, however it ends, before its
# mounts and servers go: to put back what the test changed outside its own directory, or
# to let processes it stopped go on.
at_cleanup() {
	AT_CLEANUP+=("$1")
}

run_at_cleanup() {
	local c
	for c in "${AT_CLEANUP[@]}"; do
		eval "$c"
	done
}

cleanup() {
	local rc=$? m
	set +e
	trap - EXIT INT TERM
	run_at_cleanup
	for m in "${MOUNTS[@]}"; do
		"$FIXTURE" umount ${m% *} ${m#* } || echo "cleanup: unmounting ${m% *} failed" >&2
	done
	for m in "${TMPFS[@]}"; do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	if [ -n "$CLUSTER_DIR" ]; then
		if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
			for m in "$CLUSTER_DIR/fuse.log" "$CLUSTER_DIR"/mds/log "$CLUSTER_DIR"/oss*/log; do
				[ -f "$m" ] || continue
				echo "--- tail of $(basename "$(dirname "$m")")/$(basename "$m")" >&2
				tail -n 30 "$m" >&2
			done
		fi
		"$FIXTURE" down "$CLUSTER_DIR"
	fi
	rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT
trap 'echo "interrupted (timeout?)" >&2; exit 124' INT TERM

# Exits 77 when FUSE cannot be used here, or a program the test needs is missing.
need_fuse() {
	local why
	why=$("$FIXTURE" usable) || skip "$why"
}

need_prog() {
	local p
	for p in "$@"; do
		command -v "$p" >/dev/null 2>&1 || skip "$p is not installed (tools/install-deps.sh)"
	done
}

# start_cluster [NOSS]: sets CLUSTER_DIR and MDS.
start_cluster() {
	local out
	out=$("$FIXTURE" up "${1:-3}") || fail "the cluster did not start"
	CLUSTER_DIR=${out% *}
	MDS=${out#* }
	export LODE_KEY_FILE=$CLUSTER_DIR/cluster.key # lode-fuse, lodectl and the tools prove it
}

# mount_lode MNT [OPTS]: mounts the cluster at MNT (created) with lode-fuse -f, with
# OPTS and $LODE_TEST_FUSE_OPTS (io_uring.sh runs tests with io_uring=require).
mount_lode() {
	local mnt=$1 pid rc=0 opts=${2:-}
	[ -n "${LODE_TEST_FUSE_OPTS:-}" ] && opts=${opts:+$opts,}$LODE_TEST_FUSE_OPTS
	mkdir -p "$mnt"
	pid=$("$FIXTURE" mount "$CLUSTER_DIR" "$MDS" "$mnt" ${opts:+"$opts"}) || rc=$?
	[ $rc -eq 77 ] && exit 77
	[ $rc -eq 0 ] || fail "mounting at $mnt failed"
	MOUNTS+=("$mnt $pid")
}

# umount_lode MNT: unmounts one mount early; fails if the daemon did not exit cleanly.
umount_lode() {
	local i keep=()
	for i in "${MOUNTS[@]}"; do
		if [ "${i% *}" = "$1" ]; then
			"$FIXTURE" umount "$1" "${i#* }" || fail "lode-fuse did not exit cleanly on unmount"
		else
			keep+=("$i")
		fi
	done
	MOUNTS=("${keep[@]}")
}

# mount_tmpfs DIR: a fresh tmpfs, the local reference the differential tests compare with.
mount_tmpfs() {
	mkdir -p "$1"
	mount -t tmpfs -o size=8g,mode=0777 lode-test "$1" 2>/dev/null ||
		skip "cannot mount a tmpfs here (not root?)"
	TMPFS+=("$1")
}

# own_cluster "A_OPTS" "B_OPTS": for a test that needs the MDS's metrics or its own daemons
# (the fixture's cluster has neither): an MDS with --metrics and two OSS started here, a key
# (LODE_KEY_FILE), and lode-fuse mounted at $A with A_OPTS and at $B with B_OPTS (words
# for lode-fuse, e.g. "-o namespace=lazy"). Sets MDS (exported as LODE_MDS), URL (the
# MDS's metrics), OSS_URL (the OSS's metrics, an array), pids (the MDS's first, then the
# OSS's and the mounts') and mnts, and replaces the trap: everything is unmounted and
# stopped however the test ends.
own_cluster() {
	MDS_BIN=${LODE_MDS_BIN:?LODE_MDS_BIN is not set (run through meson test)}
	OSS_BIN=${LODE_OSS_BIN:?LODE_OSS_BIN is not set (run through meson test)}
	pids=()
	mnts=()
	trap own_cluster_cleanup EXIT
	"$LODECTL" key generate "$WORK/key" >/dev/null
	export LODE_KEY_FILE=$WORK/key
	"$MDS_BIN" --data "$WORK/mds" --listen tcp://127.0.0.1:0 --port-file "$WORK/mds.addr" \
		--key "$WORK/key" --metrics 127.0.0.1:0 --metrics-port-file "$WORK/mds.metrics" \
		2>"$WORK/mds.log" &
	pids+=($!)
	wait_file "$WORK/mds.addr"
	wait_file "$WORK/mds.metrics"
	MDS=$(cat "$WORK/mds.addr")
	export LODE_MDS=$MDS
	for i in 0 1; do
		"$OSS_BIN" --data "$WORK/oss$i" --listen tcp://127.0.0.1:0 --mds "$MDS" \
			--key "$WORK/key" --port-file "$WORK/oss$i.addr" --metrics 127.0.0.1:0 \
			--metrics-port-file "$WORK/oss$i.metrics" 2>"$WORK/oss$i.log" &
		pids+=($!)
	done
	OSS_URL=()
	for i in 0 1; do
		wait_file "$WORK/oss$i.metrics"
		OSS_URL+=("http://$(cat "$WORK/oss$i.metrics")/metrics")
	done
	for _ in $(seq 100); do
		[ "$("$LODECTL" status 2>/dev/null | grep -c ' up ')" -ge 2 ] && break
		sleep 0.1
	done
	A=$WORK/a B=$WORK/b
	mkdir "$A" "$B"
	local extra=${LODE_TEST_FUSE_OPTS:+"-o $LODE_TEST_FUSE_OPTS"}
	# shellcheck disable=SC2086 # the options are words
	"$LODE_FUSE" --mds "$MDS" "$A" -f $1 $extra 2>"$WORK/fuse-a.log" &
	pids+=($!)
	mnts+=("$A")
	# shellcheck disable=SC2086
	"$LODE_FUSE" --mds "$MDS" "$B" -f $2 $extra 2>"$WORK/fuse-b.log" &
	pids+=($!)
	mnts+=("$B")
	for m in "$A" "$B"; do
		for _ in $(seq 100); do
			mountpoint -q "$m" && break
			sleep 0.1
		done
		mountpoint -q "$m" || skip "lode-fuse could not mount here: $(tail -n 3 "$WORK"/fuse-*.log)"
	done
	URL=http://$(cat "$WORK/mds.metrics")/metrics
}

own_cluster_cleanup() {
	local rc=$? m p
	set +e
	trap - EXIT INT TERM
	run_at_cleanup
	for m in "${mnts[@]}"; do
		findmnt -M "$m" >/dev/null && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m"; }
	done
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; done
	for p in "${pids[@]}"; do
		timeout 10 tail --pid="$p" -f /dev/null 2>/dev/null || kill -9 "$p" 2>/dev/null
	done
	if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
		tail -n 20 "$WORK"/*.log >&2 2>/dev/null
	fi
	rm -rf "$WORK"
	exit $rc
}

# wait_file FILE: until FILE is written (10 s at most).
wait_file() {
	for _ in $(seq 100); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	fail "$1 was not written"
}
