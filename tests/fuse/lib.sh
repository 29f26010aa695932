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

cleanup() {
	local rc=$? m
	set +e
	trap - EXIT INT TERM
	for m in "${MOUNTS[@]}"; do
		"$FIXTURE" umount ${m% *} ${m#* } || echo "cleanup: unmounting ${m% *} failed" >&2
	done
	for m in "${TMPFS[@]}"; do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	if [ -n "$CLUSTER_DIR" ]; then
		if [ $rc -ne 0 ] && [ $rc -ne 77 ] && [ -f "$CLUSTER_DIR/fuse.log" ]; then
			echo "--- tail of lode-fuse's log" >&2
			tail -n 30 "$CLUSTER_DIR/fuse.log" >&2
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

# mount_lode MNT [OPTS]: mounts the cluster at MNT (created) with lode-fuse -f.
mount_lode() {
	local mnt=$1 pid rc=0
	mkdir -p "$mnt"
	pid=$("$FIXTURE" mount "$CLUSTER_DIR" "$MDS" "$mnt" ${2:+"$2"}) || rc=$?
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
