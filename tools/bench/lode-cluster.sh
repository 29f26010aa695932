# lode-cluster.sh: sourced by the benchmarks that start their own Lode cluster on loopback
# (storm.sh, after-delete.sh): a work directory, the cleanup that stops everything started
# (also on failure), and the servers and mounts.
#
# The sourcing script sets root, build and workbase, then calls bench_start NAME. It may
# set bench_teardown to a function run after the mounts are gone and before the servers
# are stopped (a peer's cluster, say).

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

bench_cleanup() {
	local rc=$? m p i
	trap - EXIT INT TERM
	set +e
	for m in "${mounts[@]}"; do
		findmnt -M "$m" >/dev/null && { timeout 30 umount "$m" 2>/dev/null || umount -l "$m"; }
	done
	[[ -n ${bench_teardown:-} ]] && "$bench_teardown"
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; done
	for p in "${pids[@]}"; do
		timeout 10 tail --pid="$p" -f /dev/null 2>/dev/null || kill -9 "$p" 2>/dev/null
	done
	grep -q " $work/" /proc/mounts || rm -rf "$work"
	exit "$rc"
}

# bench_start NAME: work=$workbase/lode-NAME.XXXXXX, and the traps that clean up
bench_start() {
	bench_name=${0##*/}
	work=$(mktemp -d "$workbase/lode-$1.XXXXXX")
	pids=() mounts=() oss_pids=()
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

bench_wait_file() {
	for _ in $(seq 200); do [[ -s $1 ]] && return 0; sleep 0.1; done
	echo "$bench_name: $1 not written" >&2
	exit 1
}

# lode_cluster_up [LODE-MDS ARGS...]: a cluster key, lode-mds (with the extra arguments)
# and 3 lode-oss under $work, waited for until all 3 targets are up; exports LODE_MDS and
# LODE_KEY_FILE, and keeps the lode-oss processes in oss_pids. With oss_metrics set, each
# lode-oss serves metrics on loopback, its address in $work/ossN.metrics.
lode_cluster_up() {
	local i
	"$build/tools/lodectl" key generate "$work/key" >/dev/null
	export LODE_KEY_FILE=$work/key
	"$build/mds/lode-mds" --data "$work/mds" --listen tcp://127.0.0.1:0 \
		--port-file "$work/mds.addr" --key "$work/key" "$@" 2>"$work/mds.log" &
	pids+=($!)
	bench_wait_file "$work/mds.addr"
	LODE_MDS=$(cat "$work/mds.addr")
	export LODE_MDS
	for i in 0 1 2; do
		# shellcheck disable=SC2086 # words
		"$build/oss/lode-oss" --data "$work/oss$i" --listen tcp://127.0.0.1:0 --mds "$LODE_MDS" \
			--key "$work/key" --port-file "$work/oss$i.addr" \
			${oss_metrics:+--metrics 127.0.0.1:0 --metrics-port-file $work/oss$i.metrics} \
			2>"$work/oss$i.log" &
		pids+=($!)
		oss_pids+=($!)
	done
	for _ in $(seq 200); do
		[[ $("$build/tools/lodectl" status 2>/dev/null | grep -c ' up ') -ge 3 ]] && break
		sleep 0.1
	done
}

# lode_mount DIR [LODE-FUSE ARGS...]: mounts the cluster at DIR (made if needed)
lode_mount() {
	local m=$1
	shift
	mkdir -p "$m"
	"$build/client/fuse/lode-fuse" -f --mds "$LODE_MDS" "$m" "$@" 2>>"$work/fuse.log" &
	pids+=($!)
	mounts+=("$m")
}

# lode_mounted DIR...: waits until each is mounted; exits with lode-fuse's last words if not
lode_mounted() {
	local m
	for m in "$@"; do
		for _ in $(seq 200); do mountpoint -q "$m" && break; sleep 0.1; done
		mountpoint -q "$m" ||
			{ echo "$bench_name: lode-fuse did not mount $m: $(tail -3 "$work/fuse.log")" >&2; exit 1; }
	done
}
