#!/usr/bin/env bash
# all.sh: the whole comparison in one command: Lode's benchmark, its growth sweep, and the
# same POSIX workload on MooseFS (goal 1; and goal 2 for the writes, Lode's mount writing 2
# copies) and GlusterFS (distributed, 1 copy) brought up on this machine one after the
# other, then Lode's figures next to theirs.
#
#   tools/bench/all.sh [--runs N] [--size-gib N] [--growth-gib N] [--out DIR] [--work DIR]
#
# Defaults: 3 runs of 4 GiB files (run.sh's), growth up to 16 GiB (1 run), outputs in DIR
# (default ./bench-out): lode.txt, growth.txt, moosefs-goal1.txt, moosefs-goal2.txt,
# glusterfs.txt (each run.sh's printed table), .log (its progress: every run's raw line),
# .tsv (its --out table), and compare.txt (tools/bench/compare.sh). Peers live under --work (default /var/tmp, on the
# disk, as run.sh's cluster) and are stopped and deleted on exit, also on failure.
# Needs root, Debian 12 (the peers' packages), and a build (LODE_BUILD, default build/).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
runs=3 size_gib=4 growth_gib=16 out=$PWD/bench-out workbase=/var/tmp
while (($#)); do
	case $1 in
	--runs) runs=$2; shift 2 ;;
	--size-gib) size_gib=$2; shift 2 ;;
	--growth-gib) growth_gib=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--work) workbase=$2; shift 2 ;;
	*) sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
	esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
mfs=$workbase/lode-bench-mfs
gl=$workbase/lode-bench-glfs

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	"$here/peers/moosefs.sh" down "$mfs" >&2 || rc=1
	"$here/peers/glusterfs.sh" down "$gl" >&2 || rc=1
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log() { printf '[%s] all.sh: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
bench() { # NAME ARGS...: run.sh with the output kept
	local name=$1
	shift
	log "$name"
	"$here/run.sh" "$@" --work "$workbase" --out "$out/$name.tsv" >"$out/$name.txt" \
		2> >(tee "$out/$name.log" >&2)
}

log "start: $runs runs, $size_gib GiB, growth to $growth_gib GiB, into $out"
bench lode --runs "$runs" --size-gib "$size_gib"
bench growth --runs 1 --growth-gib "$growth_gib"

m=$(MFS_GOAL=1 "$here/peers/moosefs.sh" up "$mfs")
bench moosefs-goal1 --runs "$runs" --size-gib "$size_gib" --dir "$m" --label MooseFS-goal1
m=$(MFS_GOAL=2 "$here/peers/moosefs.sh" up "$mfs")
bench moosefs-goal2 --runs "$runs" --size-gib "$size_gib" --dir "$m" --label MooseFS-goal2 --writes-only
"$here/peers/moosefs.sh" down "$mfs"

g=$(GLUSTER_REPLICA=1 "$here/peers/glusterfs.sh" up "$gl")
bench glusterfs --runs "$runs" --size-gib "$size_gib" --dir "$g" --label GlusterFS
"$here/peers/glusterfs.sh" down "$gl"

"$here/compare.sh" "$out/lode.tsv" "MooseFS goal 1=$out/moosefs-goal1.tsv" \
	"MooseFS goal 2=$out/moosefs-goal2.tsv" "GlusterFS=$out/glusterfs.tsv" >"$out/compare.txt"
log "done: $out"
cat "$out/compare.txt"
