# SPDX-License-Identifier: MIT
# Sourced by the service tests: daemons started by hand (not lodectl local up), the way
# systemd would start them. Needs LODECTL, LODE_MDS_BIN, LODE_OSS_BIN. Gives $dir (a
# temporary directory, removed on exit), fail(), start_daemon NAME CMD... (stderr to
# $dir/NAME.log, pid remembered and the process stopped on exit) and wait_file FILE.
lodectl=${LODECTL:?}
mds_bin=${LODE_MDS_BIN:?}
oss_bin=${LODE_OSS_BIN:?}
dir=$(mktemp -d "/tmp/lode-${LODE_TEST_NAME:-service}.XXXXXX")
pids=()
extra_cleanup=:
cleanup() {
	local rc=$? p
	set +e
	$extra_cleanup
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	if [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
		for p in "$dir"/*.log; do
			[ -f "$p" ] && { echo "--- $p"; tail -n 20 "$p"; }
		done
	fi
	rm -rf "$dir"
	exit $rc
}
trap cleanup EXIT
# the cluster key every daemon is given (--key "$key" or key = $key) and clients prove
key=$dir/cluster.key
"$lodectl" key generate "$key"
export LODE_KEY_FILE=$key
fail() {
	echo "FAIL: $*"
	exit 1
}
start_daemon() {
	local name=$1
	shift
	"$@" 2>"$dir/$name.log" &
	pids+=($!)
}
# stop_all: SIGTERM to every daemon started, each must exit 0 (a clean stop; under ASan, no
# leak or error either)
stop_all() {
	local p rc
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do
		rc=0
		wait "$p" || rc=$?
		[ $rc -eq 0 ] || fail "a daemon (pid $p) exited with status $rc when stopped"
	done
	pids=()
}
# wait_file FILE: up to 20 s for FILE to exist (a port file: written atomically)
wait_file() {
	for _ in $(seq 400); do
		[ -s "$1" ] && return 0
		sleep 0.05
	done
	fail "$1 did not appear"
}
