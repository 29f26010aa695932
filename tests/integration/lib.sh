# Sourced by the integration tests written in shell: a temporary directory for a local
# cluster ($dir, cluster in $dir/c), removed with the cluster on exit, also on failure, and
# fail() for a one-line reason. Needs LODECTL.
lodectl=${LODECTL:?}
dir=$(mktemp -d "/tmp/lode-${LODE_TEST_NAME:-test}.XXXXXX")
# background jobs a test started (readers, writers, holders) go too, also when it fails
# half way: one left holding the test's stdout would keep meson waiting to its timeout
kill_jobs() {
	local j
	for j in $(jobs -p); do kill "$j" 2>/dev/null || true; done
}
cleanup() {
	kill_jobs
	"$lodectl" local down "$dir/c" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
# clients prove the cluster's key, made by `lodectl local up` in the cluster's directory
export LODE_KEY_FILE=$dir/c/cluster.key
fail() {
	echo "FAIL: $*"
	exit 1
}
# remove_target ID: lodectl target remove, again while the target still holds old copies
# (its OSS deletes them after the orphan grace); fails on any other refusal, or after 30 s
remove_target() {
	local _
	for _ in $(seq 60); do
		"$lodectl" target remove "$1" >"$dir/remove.out" 2>&1 && return 0
		grep -q "still holds" "$dir/remove.out" || fail "remove of target $1: $(cat "$dir/remove.out")"
		sleep 0.5
	done
	fail "target $1 could not be removed: $(cat "$dir/remove.out")"
}
# wait_target_empty ID: until target ID's OSS reports no object (the count comes with its
# heartbeats; a moved copy's old object goes LODE_NS_MOVED_GRACE_MIN_NS, 3 s, after the
# move at the soonest, at the OSS's next orphan pass, every 5 s); fails after 20 s
wait_target_empty() {
	local objects= _
	for _ in $(seq 80); do
		objects=$("$lodectl" --json target list | /usr/bin/python3 -c '
import json, sys
print({x["id"]: x for x in json.load(sys.stdin)["targets"]}[int(sys.argv[1])]["objects"])' "$1")
		[ "$objects" = 0 ] && return 0
		sleep 0.25
	done
	fail "target $1 still reports $objects objects"
}
# mount_lode MNT [OPTS]: mounts the cluster ($mds) at MNT with $LODE_FUSE -f (options OPTS),
# its log in MNT.log; unmounted by cleanup. Exits 77 where FUSE cannot be used.
mounts=()
mount_lode() {
	local mnt=$1 pid
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to mount"; exit 77; }
	[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
	command -v fusermount3 >/dev/null || { echo "SKIP: fusermount3 missing (package fuse3)"; exit 77; }
	mkdir -p "$mnt"
	"${LODE_FUSE:?}" --mds "${mds:?}" "$mnt" -f ${2:+-o "$2"} 2>"$mnt.log" &
	pid=$!
	mounts+=("$mnt $pid")
	for _ in $(seq 200); do mountpoint -q "$mnt" && return 0; sleep 0.05; done
	cat "$mnt.log"
	fail "the mount at $mnt did not come up"
}
cleanup_mounts() {
	local m
	for m in "${mounts[@]}"; do
		if findmnt -M "${m% *}" >/dev/null; then
			fusermount3 -u "${m% *}" 2>/dev/null || fusermount3 -uz "${m% *}" || true
		fi
		kill "${m#* }" 2>/dev/null || true
	done
}
cleanup() {
	kill_jobs
	cleanup_mounts
	"$lodectl" local down "$dir/c" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
