#!/usr/bin/env bash
# after-delete.sh: a checkpoint saved right after the previous one was deleted, the everyday
# pattern of a training job (issue 15), on Lode.
#
#   tools/bench/after-delete.sh [--procs N] [--files N] [--size BYTES] [--rounds N]
#                               [--work DIR]
#
# Starts lode-mds (objects of deleted files handed to their targets after 1 s, not 60),
# 3 lode-oss and 2 lode-fuse mounts, then for each round: N processes over the two mounts
# write a checkpoint of shard files (tools/bench/storm.py: create, write, fsync, close,
# rename; default 64 processes, 2048 files of 64 KiB), the checkpoint is deleted, and the
# benchmark waits until every target has removed its objects. Printed per round: files/s
# and the CPU the three lode-oss processes used per 1000 files (user + system, from
# /proc), for the first checkpoint (on fresh targets) and each one after a delete.
#
# Why: ext4 without a journal skips inodes freed in the last minute at every create, one
# by one; where an OSS creates its objects decides what that costs (oss/objstore.c,
# spread_directories). Compare builds with LODE_BUILD=dir (a build, or a directory of
# links mixing two). Needs root and a build in build/; builds nothing. Everything started
# is stopped on exit, also on failure.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${LODE_BUILD:-$root/build}
procs=64 files=2048 size=65536 rounds=2 workbase=/var/tmp
num() { [[ $2 =~ ^[1-9][0-9]*$ ]] || { echo "after-delete.sh: $1 needs a positive number" >&2; exit 2; }; }
while (($#)); do
	case $1 in
	--procs) num "$1" "${2:-}"; procs=$2; shift 2 ;;
	--files) num "$1" "${2:-}"; files=$2; shift 2 ;;
	--size) num "$1" "${2:-}"; size=$2; shift 2 ;;
	--rounds) num "$1" "${2:-}"; rounds=$2; shift 2 ;;
	--work) workbase=${2:?--work needs a directory}; shift 2 ;;
	-h | --help) sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "after-delete.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ $(id -u) == 0 ]] || { echo "after-delete.sh: needs root (mounts)" >&2; exit 2; }
for f in mds/lode-mds oss/lode-oss tools/lodectl client/fuse/lode-fuse; do
	[[ -x $build/$f ]] || { echo "after-delete.sh: $build/$f missing: build first" >&2; exit 2; }
done

. "$root/tools/bench/lode-cluster.sh"
bench_start after-delete

log "lode-mds, 3 lode-oss, 2 lode-fuse mounts under $work"
lode_cluster_up --orphan-grace 1
mnt=("$work/a" "$work/b")
for m in "${mnt[@]}"; do lode_mount "$m"; done
lode_mounted "${mnt[@]}"

oss_ticks() { # user + system clock ticks of the lode-oss processes
	local p t=0
	for p in "${oss_pids[@]}"; do t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat"))); done
	echo "$t"
}
objects() { # objects on every target, as lodectl status counts them
	"$build/tools/lodectl" status | awk '$2 == "up" || $2 == "down" { n += $6 } END { print n + 0 }'
}
jget() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d[sys.argv[2]])' "$1" "$2"; }

hz=$(getconf CLK_TCK)
per=$(((files + procs - 1) / procs))
printf '# %s files of %s bytes from %s processes over 2 mounts, 3 OSS, 2 copies; %s %s, %s CPUs; Lode %s\n' \
	"$((per * procs))" "$size" "$procs" "$(date -u +%Y-%m-%dT%H:%MZ)" "$(uname -r)" "$(nproc)" \
	"$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
printf '%-28s %10s %10s %22s\n' checkpoint 'files/s' 'p50 ms' 'OSS CPU s/1000 files'
for r in $(seq 0 "$rounds"); do
	t0=$(oss_ticks)
	j=$(python3 "$root/tools/bench/storm.py" --procs "$procs" --files "$per" --size "$size" \
		--dir "${mnt[0]}" --dir "${mnt[1]}" --tag "ckpt$r")
	t1=$(oss_ticks)
	printf '%-28s %10s %10s %22s\n' "$( ((r)) && echo "after a delete ($r)" || echo "first, fresh targets")" \
		"$(jget "$j" files_per_s)" "$(jget "$j" file_p50_ms)" \
		"$(awk -v t=$((t1 - t0)) -v hz="$hz" -v f="$(jget "$j" files)" 'BEGIN { printf "%.2f", t / hz / f * 1000 }')"
	((r == rounds)) && break
	rm -rf "${mnt[0]:?}/ckpt$r"
	# every target removes its objects of the checkpoint (the orphan grace, then its
	# next pass): wait until none is left, up to 120 s
	for _ in $(seq 240); do
		[[ $(objects) -eq 0 ]] && break
		sleep 0.5
	done
	[[ $(objects) -eq 0 ]] || { echo "after-delete.sh: the targets still hold $(objects) objects 120 s after the delete" >&2; exit 1; }
done
log "done"
