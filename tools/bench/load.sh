#!/usr/bin/env bash
# load.sh - seconds from "load the model" to "weights in memory", on this machine.
#
#   sudo LODE_BUILD=build tools/bench/load.sh [--size-gib 4] [--procs-gib 1] [--runs 3]
#        [--moosefs] [--out FILE]
#
# A local cluster (MDS + 3 OSS on loopback, the default layout: 2 copies, 3 stripes) holds
# a safetensors checkpoint of SIZE GiB (fs_io mkmodel: 13 tensors of 1-256 MiB). Loaded
# OSS warm (the objects in the OSS's page cache, the client's dropped) and cold (every
# cache dropped first), each figure the median of RUNS, the contenders taking turns:
#   liblode plain read   lode_io: one lode_pread of the whole file into one buffer
#   loader               lode_io --stream 1: lode_read_stream of the whole file, the path
#                        liblode-loader takes to the host (pieces verified, in place)
#   lodectl load         lodectl load --to host: the same, into memory it allocates
#   python loader        lode.safetensors.load (numpy arrays) over liblode
#   mount read()         fs_io model: pread of every tensor through lode-fuse
#   mount mmap           fs_io model --mmap: every page of every tensor touched
#   python on the mount  lode.safetensors.load_local over lode-fuse (the same loader,
#                        reading the file with readinto)
# The loader, the plain read and read() land in memory the process already holds (faulted
# in before the clock starts), so they differ only in how the bytes arrive; mmap needs
# none. lodectl load and the Python loaders pay for fresh memory: on a VM whose host
# reclaims freed guest memory, first-touching 2 GiB alone took 0.7 to 3.3 s here, which
# swamps every other difference. Cold, a ceiling: the disk read of the model's objects,
# one dd per stripe at once, through the page cache and past it (the faster of the two is
# what any reader of the file can reach).
# Then many servers loading one model: 8 processes at once, cold, load a PROCS GiB model
# (8 lodectl load; 8 fs_io readers over 2 lode-fuse mounts; each process gets its memory
# inside the wall time), with the aggregate rate and the bytes the OSS processes read from
# disk per byte delivered (/proc/PID/io).
# With --moosefs, MooseFS (tools/bench/peers/moosefs.sh, one copy) runs the mount figures
# and the Python loader over its mount, in the same run.
#
# Ratios are against contenders measured in this run (the machine is shared and noisy).
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD
build=$(realpath "${LODE_BUILD:-build}")
size_gib=4 procs_gib=1 runs=3 moosefs=0 out=""
while [[ $# -gt 0 ]]; do
	case $1 in
	--size-gib) size_gib=$2; shift 2 ;;
	--procs-gib) procs_gib=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--moosefs) moosefs=1; shift ;;
	--out) out=$2; shift 2 ;;
	-h|--help) sed -n '2,/^[^#]/p' tools/bench/load.sh | sed '$d'; exit 0 ;;
	*) echo "load.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ $(id -u) == 0 ]] || { echo "load.sh: needs root (mounts, drop_caches)" >&2; exit 2; }
py=/usr/bin/python3
[[ -x $py ]] || py=python3
for f in tools/lodectl client/fuse/lode-fuse tools/bench/fs_io tools/bench/lode_io; do
	[[ -x $build/$f ]] || { echo "load.sh: $build/$f missing: build first" >&2; exit 2; }
done
"$py" -c 'import numpy' || { echo "load.sh: needs python3-numpy" >&2; exit 2; }

work=$(mktemp -d /var/tmp/lode-load.XXXXXX)
mnt=$work/mnt mnt2=$work/mnt2
fuse_pids=()
mfs_dir=""
results=$work/results.tsv
: >"$results"
export LODE_BUILD_DIR=$build PYTHONPATH=$src/python PYTHONDONTWRITEBYTECODE=1

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
cleanup() {
	local rc=$?
	trap - EXIT
	for m in "$mnt" "$mnt2"; do
		findmnt -M "$m" >/dev/null && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m"; }
	done
	for p in "${fuse_pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[[ -n $mfs_dir ]] && "$src/tools/bench/peers/moosefs.sh" down "$mfs_dir" >/dev/null 2>&1
	"$build/tools/lodectl" local down "$work/cluster" >/dev/null 2>&1 || true
	grep -q " $work/" /proc/mounts || rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
drop_all() { sync; echo 3 >/proc/sys/vm/drop_caches; }
lodectl() { "$build/tools/lodectl" --mds "$mds" "$@"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Each contender prints the seconds it took to load the whole model (or its data).
t_plain() { "$build/tools/bench/lode_io" --mds "$mds" read --threads 1 --req "$2" "$1" |
	sed -n 's/.*seconds=\([0-9.]*\).*/\1/p'; }
t_loader() { "$build/tools/bench/lode_io" --mds "$mds" read --threads 1 --req "$2" --stream 1 "$1" |
	sed -n 's/.*seconds=\([0-9.]*\).*/\1/p'; }
t_lodectl() { lodectl load "$1" --json | "$py" -c 'import json,sys; print(json.load(sys.stdin)["seconds"])'; }
t_python() { "$py" - "$1" <<-'EOF'
	import sys, time, lode, lode.safetensors as st
	c = lode.Client()
	t = time.monotonic(); st.load(sys.argv[1], client=c, framework="numpy")
	print(time.monotonic() - t)
	EOF
}
t_python_local() { "$py" - "$1" <<-'EOF'
	import os, sys, time, lode.safetensors as st
	fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)
	t = time.monotonic(); st.load_local(sys.argv[1])
	print(time.monotonic() - t)
	EOF
}
# The disk's own rate for this file: one copy of each stripe's object read by dd at once
# (objects/XX/INODE.GENERATION.STRIPE in the OSS directories), seconds for all of them;
# through the page cache, or with "direct" past it (O_DIRECT, as the OSS reads a cold
# model's large ranges).
t_disk() {
	local ino stripes files=() s f t0 t1
	read -r ino stripes < <(lodectl stat /model.safetensors --json | "$py" -c 'import json,sys
s = json.load(sys.stdin); print(s["inode"], s["layout"]["stripe_count"])')
	for ((s = 0; s < stripes; s++)); do
		f=$(find "$work"/cluster/oss*/objects -name "$(printf '%016x.*.%08x' "$ino" "$s")" | head -1)
		[[ -n $f ]] && files+=("$f")
	done
	((${#files[@]} == stripes)) || { echo "load.sh: the model's objects not found" >&2; return 1; }
	t0=$(date +%s.%N)
	for f in "${files[@]}"; do
		dd if="$f" of=/dev/null bs=4M ${1:+iflag=direct} status=none &
	done
	wait
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN{ printf "%.6f\n", b - a }'
}
t_fs() { "$build/tools/bench/fs_io" model --drop "$@" | sed -n 's/.*seconds=\([0-9.]*\).*/\1/p'; }

# measure NAME BYTES CACHE(warm|cold) CMD...: RUNS samples, median seconds and GB/s
declare -A secs
sample() { # NAME BYTES CACHE CMD...
	local name=$1 bytes=$2 cache=$3 s
	shift 3
	[[ $cache == cold ]] && drop_all
	s=$("$@")
	[[ $s =~ ^[0-9.]+$ ]] || { echo "load.sh: $name printed '$s'" >&2; exit 1; }
	secs[$name]+="$s "
	log "$name: $s s"
}
report() { # NAME BYTES
	local m
	m=$(tr ' ' '\n' <<<"${secs[$1]}" | grep . | median)
	printf '%s\t%s\t%s\n' "$1" "$m" "$(awk -v b="$2" -v s="$m" 'BEGIN{ printf "%.3f", b / s / 1e9 }')" >>"$results"
}

log "cluster: MDS + 3 OSS under $work"
mds=$("$build/tools/lodectl" local up "$work/cluster" --oss 3 | tail -1)
export LODE_KEY_FILE=$work/cluster/cluster.key
export LODE_MDS=$mds
mkdir -p "$mnt" "$mnt2"
for m in "$mnt" "$mnt2"; do
	"$build/client/fuse/lode-fuse" -f --mds "$mds" "$m" 2>>"$work/fuse.log" &
	fuse_pids+=($!)
done
for m in "$mnt" "$mnt2"; do
	for _ in $(seq 100); do mountpoint -q "$m" && break; sleep 0.1; done
	mountpoint -q "$m" || { echo "load.sh: lode-fuse did not mount" >&2; exit 1; }
done

log "writing a ${size_gib} GiB and a ${procs_gib} GiB checkpoint"
"$build/tools/bench/fs_io" mkmodel --size $((size_gib << 30)) "$work/model.safetensors" >/dev/null
"$build/tools/bench/fs_io" mkmodel --size $((procs_gib << 30)) "$work/small.safetensors" >/dev/null
lodectl put "$work/model.safetensors" /model.safetensors >/dev/null
lodectl put "$work/small.safetensors" /small.safetensors >/dev/null
bytes=$(stat -c %s "$work/model.safetensors")
small=$(stat -c %s "$work/small.safetensors")
log "model: $bytes bytes"

# warm the OSS page cache once with every object read
t_plain /model.safetensors "$bytes" >/dev/null
for cache in warm cold; do
	for r in $(seq "$runs"); do
		log "round $r, OSS $cache"
		sample "liblode plain read, $cache" "$bytes" "$cache" t_plain /model.safetensors "$bytes"
		sample "loader (lode_read_stream), $cache" "$bytes" "$cache" t_loader /model.safetensors "$bytes"
		sample "lodectl load, fresh memory, $cache" "$bytes" "$cache" t_lodectl /model.safetensors
		sample "python loader over liblode, $cache" "$bytes" "$cache" t_python /model.safetensors
		sample "mount read(), $cache" "$bytes" "$cache" t_fs "$mnt/model.safetensors"
		sample "mount mmap, $cache" "$bytes" "$cache" t_fs --mmap "$mnt/model.safetensors"
		sample "python loader on the mount, $cache" "$bytes" "$cache" t_python_local "$mnt/model.safetensors"
	done
	for n in "liblode plain read" "loader (lode_read_stream)" "lodectl load, fresh memory" \
		"python loader over liblode" \
		"mount read()" "mount mmap" "python loader on the mount"; do
		report "$n, $cache" "$bytes"
	done
done
for r in $(seq "$runs"); do
	sample "disk: the objects, one dd per stripe, cold" "$bytes" cold t_disk
	sample "disk: the same, O_DIRECT, cold" "$bytes" cold t_disk direct
done
report "disk: the objects, one dd per stripe, cold" "$bytes"
report "disk: the same, O_DIRECT, cold" "$bytes"

# many servers loading one model, cold
oss_read() { local t=0; for p in "$work"/cluster/oss*/pid; do
	t=$((t + $(awk '/^read_bytes/{ print $2 }' "/proc/$(cat "$p")/io"))); done; echo "$t"; }
many() { # LABEL CMD-per-process...: 8 processes at once; wall seconds and disk bytes
	local label=$1 r0 r1 t0 t1 pids=() i
	shift
	drop_all
	r0=$(oss_read); t0=$(date +%s.%N)
	for i in $(seq 0 7); do "$@" "$i" >/dev/null & pids+=($!); done
	for p in "${pids[@]}"; do wait "$p" || { echo "load.sh: $label: a process failed" >&2; exit 1; }; done
	t1=$(date +%s.%N); r1=$(oss_read)
	awk -v l="$label" -v b=$((8 * small)) -v t0="$t0" -v t1="$t1" -v d=$((r1 - r0)) \
		'BEGIN{ printf "%s\t%.3f\t%.3f\t%.3f\n", l, t1 - t0, b / (t1 - t0) / 1e9, d / b }' >>"$work/many.tsv"
}
p_loader() { lodectl load /small.safetensors; }
p_mount() { local m=$mnt; (( $1 % 2 )) && m=$mnt2; "$build/tools/bench/fs_io" model "$m/small.safetensors"; }
: >"$work/many.tsv"
log "8 processes loading one ${procs_gib} GiB model, cold"
many "8 loaders over liblode" p_loader
many "8 readers, read() over 2 mounts" p_mount

if ((moosefs)); then
	log "MooseFS (one copy) in the same run"
	mfs_dir=$work/mfs
	mfs_mnt=$("$src/tools/bench/peers/moosefs.sh" up "$mfs_dir")
	cp "$work/model.safetensors" "$mfs_mnt/model.safetensors"
	sync
	cat "$mfs_mnt/model.safetensors" >/dev/null
	for cache in warm cold; do
		for r in $(seq "$runs"); do
			sample "moosefs mount read(), $cache" "$bytes" "$cache" t_fs "$mfs_mnt/model.safetensors"
			sample "moosefs mount mmap, $cache" "$bytes" "$cache" t_fs --mmap "$mfs_mnt/model.safetensors"
			sample "python loader on moosefs, $cache" "$bytes" "$cache" t_python_local "$mfs_mnt/model.safetensors"
		done
		for n in "moosefs mount read()" "moosefs mount mmap" "python loader on moosefs"; do
			report "$n, $cache" "$bytes"
		done
	done
	# stopped here, where a failure shows, not only in the exit trap
	"$src/tools/bench/peers/moosefs.sh" down "$mfs_dir" >&2 || log "moosefs.sh down failed"
	mfs_dir=""
fi

{
	echo "# tools/bench/load.sh, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, model ${size_gib} GiB ($bytes bytes), median of $runs"
	printf '%-46s %9s %8s\n' "figure" "seconds" "GB/s"
	while IFS=$'\t' read -r n s g; do printf '%-46s %9.3f %8.3f\n' "$n" "$s" "$g"; done <"$results"
	echo
	echo "ratios (loader over the contender, same cache state; above 1: the loader is faster)"
	for cache in warm cold; do
		get() { awk -F'\t' -v n="$1, $cache" '$1 == n { print $2 }' "$results"; }
		L=$(get "loader (lode_read_stream)") P=$(get "liblode plain read") R=$(get "mount read()") M=$(get "mount mmap")
		PY=$(get "python loader over liblode") PM=$(get "python loader on the mount")
		best=$(awk -v a="$R" -v b="$M" 'BEGIN{ print (a < b) ? a : b }')
		awk -v c="$cache" -v l="$L" -v p="$P" -v b="$best" -v py="$PY" -v pm="$PM" 'BEGIN{
			printf "  %-5s loader / liblode plain read            %.2fx (target >= 0.9)\n", c, p / l
			printf "  %-5s loader / better of mount read(), mmap  %.2fx (target >= 2)\n", c, b / l
			printf "  %-5s python loader: liblode / the mount     %.2fx\n", c, pm / py }'
		if [[ $cache == cold ]]; then
			D=$(get "disk: the objects, one dd per stripe") DD=$(get "disk: the same, O_DIRECT")
			D=$(awk -v a="$D" -v b="$DD" 'BEGIN{ print (a < b) ? a : b }')
			awk -v l="$L" -v d="$D" -v b="$best" 'BEGIN{
				printf "  cold  loader / the disk ceiling              %.2fx (at most about 1)\n", d / l
				printf "  cold  the disk ceiling / better of the mount %.2fx (the most any reader could gain)\n", b / d }'
		fi
		if ((moosefs)); then
			MF=$(get "python loader on moosefs")
			awk -v c="$cache" -v py="$PY" -v mf="$MF" 'BEGIN{
				printf "  %-5s python loader: Lode (liblode) / MooseFS mount %.2fx\n", c, mf / py }'
		fi
	done
	echo
	echo "8 processes loading one ${procs_gib} GiB model at once, cold"
	printf '  %-36s %8s %8s %s\n' "" "seconds" "GB/s" "OSS disk bytes per byte delivered"
	while IFS=$'\t' read -r n s g d; do printf '  %-36s %8.3f %8.3f %.3f\n' "$n" "$s" "$g" "$d"; done <"$work/many.tsv"
} | tee ${out:+"$out"}
