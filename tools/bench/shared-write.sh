#!/usr/bin/env bash
# N-to-1 against N-to-N writes: WRITERS writers over two lode-fuse mounts of one local
# cluster, each writing SIZE in records of REC. N-to-1: one file, writer i writing records
# i, i + WRITERS, ... (disjoint interleaved ranges, IOR's shared-file mode); N-to-N: a file
# per writer. Prints each figure in GB/s (bytes written by the applications over the time
# from the first write to the last close) and N-to-1's ratio to N-to-N; --runs N alternates
# which goes first and takes each figure's median.
#
#   tools/bench/shared-write.sh [--writers N] [--size-mib N] [--rec-kib N] [--runs N]
#                               [--work DIR]
#
# Defaults: 8 writers, 64 MiB each, 1 MiB records, 1 run, under /var/tmp. The files get the
# mount's default layout (2 copies, 3 stripes). Needs root (FUSE) and a build in build/
# (LODE_BUILD=dir to use another); builds nothing. Everything it starts is stopped and
# unmounted on exit, also on failure or Ctrl-C.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${LODE_BUILD:-$root/build}
writers=8 size_mib=64 rec_kib=1024 runs=1 workbase=/var/tmp

usage() {
	sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}
while [[ $# -gt 0 ]]; do
	case $1 in
	--writers) writers=${2:?}; shift 2 ;;
	--size-mib) size_mib=${2:?}; shift 2 ;;
	--rec-kib) rec_kib=${2:?}; shift 2 ;;
	--runs) runs=${2:?}; shift 2 ;;
	--work) workbase=${2:?}; shift 2 ;;
	-h | --help) usage ;;
	*) echo "shared-write.sh: unknown argument $1" >&2; usage ;;
	esac
done
for v in "$writers" "$size_mib" "$rec_kib" "$runs"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "shared-write.sh: $v is not a positive number" >&2; exit 2; }
done
for b in tools/lodectl client/fuse/lode-fuse tools/bench/shared_io; do
	[[ -x $build/$b ]] || { echo "shared-write.sh: $build/$b is missing (build first)" >&2; exit 1; }
done

work=$(mktemp -d "$workbase/lode-shared-write-XXXXXX")
pids=()
mnts=()
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
cleanup() {
	local rc=$? i
	trap - EXIT INT TERM
	for i in "${!mnts[@]}"; do
		fusermount3 -u "${mnts[$i]}" 2>/dev/null || umount -l "${mnts[$i]}" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "${pids[$i]}" 2>/dev/null || break; sleep 0.1; done
		kill "${pids[$i]}" 2>/dev/null || true
	done
	[[ -d $work/cluster ]] && "$build/tools/lodectl" local down "$work/cluster" >/dev/null 2>&1
	if ! grep -q " $work/" /proc/mounts; then rm -rf "$work"; else echo "left $work (still mounted)" >&2; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mds=$("$build/tools/lodectl" local up "$work/cluster" --oss 3 --orphan-grace 1)
export LODE_KEY_FILE=$work/cluster/cluster.key
for m in 1 2; do
	mkdir -p "$work/m$m"
	"$build/client/fuse/lode-fuse" -f --mds "$mds" "$work/m$m" 2>"$work/fuse$m.log" &
	pids+=($!)
	mnts+=("$work/m$m")
	for _ in $(seq 200); do mountpoint -q "$work/m$m" && break; sleep 0.1; done
	mountpoint -q "$work/m$m" || { echo "lode-fuse did not mount (see $work/fuse$m.log)" >&2; exit 1; }
done

one() { # n1|nn -> GB/s
	local d line bytes secs
	for d in "$work"/m1/*; do rm -f "$d"; done
	line=$("$build/tools/bench/shared_io" "$1" --writers "$writers" --size "$((size_mib))M" \
		--rec "$((rec_kib))K" "$work/m1" "$work/m2")
	bytes=${line#bytes=}; bytes=${bytes%% *}
	secs=${line#*seconds=}
	log "$1: $line"
	awk -v b="$bytes" -v s="$secs" 'BEGIN{ printf "%.3f", b / s / 1e9 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

n1=() nn=()
for r in $(seq "$runs"); do
	if ((r % 2)); then nn+=("$(one nn)"); n1+=("$(one n1)"); else n1+=("$(one n1)"); nn+=("$(one nn)"); fi
done
gn1=$(printf '%s\n' "${n1[@]}" | median)
gnn=$(printf '%s\n' "${nn[@]}" | median)
printf '%-58s %8s\n' "figure ($writers writers over 2 mounts, ${size_mib} MiB each, ${rec_kib} KiB records)" "GB/s"
printf '%-58s %8s\n' "N-to-N: a file per writer" "$gnn"
printf '%-58s %8s\n' "N-to-1: one file, disjoint interleaved records" "$gn1"
printf '%-58s %8s\n' "ratio N-to-1 / N-to-N" "$(awk -v a="$gn1" -v b="$gnn" 'BEGIN{ printf "%.2f", a / b }')"
