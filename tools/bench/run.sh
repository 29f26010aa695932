#!/usr/bin/env bash
# Lode's benchmark: every figure next to a baseline measured in the same run on the same
# machine. See "Benchmark" in README.md for what each figure means.
#
#   tools/bench/run.sh [--quick] [--size-gib N] [--runs N] [--out FILE] [--dir PATH]
#                      [--work DIR] [--meta-files N] [--size-mib N] [--replication]
#                      [--growth-gib N] [--writes-only] [--label NAME]
#
# Defaults: 3 runs of a 4 GiB file, 10,000 files for metadata; --quick: 1 run, 1 GiB,
# 2,000 files. The table shows each figure's median; --out writes them as TSV.
# --replication: only the 2-copy liblode write, with fan-out and with chained replication
# (alternating which goes first), and chain's ratio to fan-out; no mount, no baselines.
# --growth-gib N: only the growth sweep, files of 1, 2, 4, ... N GiB (liblode write with 1
# copy and OSS-warm read; with --dir: write+fsync and read with the client cache dropped).
# --writes-only: only the disk-write baseline and the write figures (e.g. a peer at another
# replication). --label NAME: the name of the mount's figures with --dir (default its type).
# Needs root (mounts, drop_caches) and a build in build/ (LODE_BUILD=dir to use another);
# builds nothing. Without --dir it starts a local cluster (MDS + 3 OSS) under a temporary
# directory in --work (default /var/tmp: it must be on the disk, for the cold figures) and a
# lode-fuse mount; with --dir PATH the POSIX workload runs in PATH instead (any mounted file
# system, e.g. a peer's), and the liblode figures are skipped. Everything it starts is
# stopped and unmounted on exit, also on failure or Ctrl-C.
set -euo pipefail
shopt -s nullglob

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${LODE_BUILD:-$root/build}
size_mib=$((4 * 1024))
runs=3
out=""
dir=""
workbase=/var/tmp
meta_files=10000
small_files=1000
repl_only=0
growth_mib=0
writes_only=0
label_opt=""

usage() {
	sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 2
}
bad() {
	echo "run.sh: $*" >&2
	exit 2
}
num() { [[ $2 =~ ^[0-9]+$ && $2 -ge 1 ]] || bad "$1 needs a positive integer, not '$2'"; }

while (($#)); do
	case $1 in
	--quick) runs=1; size_mib=1024; meta_files=2000; small_files=500; shift ;;
	--size-gib) num "$1" "${2:-}"; size_mib=$(($2 * 1024)); shift 2 ;;
	--size-mib) num "$1" "${2:-}"; size_mib=$2; shift 2 ;; # for development
	--runs) num "$1" "${2:-}"; runs=$2; shift 2 ;;
	--out) [[ -n ${2:-} ]] || bad "--out needs a file"; out=$2; shift 2 ;;
	--dir) [[ -d ${2:-} ]] || bad "--dir needs an existing directory"; dir=$(cd "$2" && pwd); shift 2 ;;
	--work) [[ -d ${2:-} ]] || bad "--work needs an existing directory"; workbase=$2; shift 2 ;;
	--meta-files) num "$1" "${2:-}"; meta_files=$2; shift 2 ;;
	--replication) repl_only=1; shift ;;
	--growth-gib) num "$1" "${2:-}"; growth_mib=$(($2 * 1024)); shift 2 ;;
	--writes-only) writes_only=1; shift ;;
	--label) [[ -n ${2:-} ]] || bad "--label needs a name"; label_opt=$2; shift 2 ;;
	-h | --help) usage ;;
	*) bad "unknown argument '$1' (--help)" ;;
	esac
done
((size_mib >= 64 && size_mib <= 1024 * 1024)) || bad "size must be 64 MiB .. 1 TiB"
((runs <= 50)) || bad "--runs at most 50"
((!repl_only)) || [[ -z $dir ]] || bad "--replication measures liblode: not with --dir"
((repl_only + (growth_mib > 0) + writes_only <= 1)) || bad "--replication, --growth-gib and --writes-only exclude each other"
((repl_only)) || [[ $(id -u) == 0 ]] || bad "needs root (mounts, /proc/sys/vm/drop_caches)"
# the growth sweep and --writes-only need neither the tmpfs copy nor the null FUSE mount
alone=$((repl_only || growth_mib > 0))

bench=$build/tools/bench
need=("$bench/lode_io" "$build/tools/lodectl")
((repl_only)) || need+=("$bench/fs_io" "$bench/tcp_pair" "$bench/nullfs")
[[ -n $dir || $alone == 1 ]] || need+=("$build/client/fuse/lode-fuse")
for f in "${need[@]}"; do
	[[ -x $f ]] || bad "$f missing: build first (meson setup build && ninja -C build), or set LODE_BUILD"
done
for t in fusermount3 mountpoint awk; do
	command -v $t >/dev/null || bad "$t not found"
done

size=$((size_mib << 20))
# memory: the tmpfs copy and the model loader's buffer each hold the whole file
mem_mib=$(awk '/^MemAvailable/ { print int($2 / 1024) }' /proc/meminfo)
((alone || writes_only || mem_mib > size_mib * 5 / 2 + 1024)) || bad "$size_mib MiB files need $((size_mib * 5 / 2 + 1024)) MiB of free memory, $mem_mib available"
# disk: at most about 4 copies of the file live at once (mirrored files, the disk baseline)
disk_mib=$(df -Pm "$workbase" | awk 'NR == 2 { print $4 }')
if ((growth_mib)); then # one file of 1 copy at a time
	((disk_mib > growth_mib * 2)) || bad "--growth-gib $((growth_mib / 1024)) needs $((growth_mib * 2)) MiB free in $workbase, $disk_mib available"
else
	((disk_mib > size_mib * 6)) || bad "$size_mib MiB files need $((size_mib * 6)) MiB free in $workbase, $disk_mib available"
fi
# the 4-writer figures and the reader sweeps move less: size/4, at least 1 GiB (or size)
sweep_mib=$((size_mib / 4 > 1024 ? size_mib / 4 : (size_mib < 1024 ? size_mib : 1024)))
sweep=$((sweep_mib << 20))
hz=$(getconf CLK_TCK)
work=$(mktemp -d "$workbase/lode-bench.XXXXXX")
mnt=$work/mnt
nullmnt=$work/nullfs
tmpfs=$work/tmpfs
fuse_pid=""
null_pid=""
mds=""
samples=$work/samples.tsv
notes=()
: >"$samples"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

unmount() { # DIR [PID]
	findmnt -M "$1" >/dev/null || return 0
	fusermount3 -u "$1" 2>/dev/null || umount "$1" 2>/dev/null || umount -l "$1" 2>/dev/null || true
	if [[ -n ${2:-} ]]; then
		for _ in $(seq 50); do kill -0 "$2" 2>/dev/null || break; sleep 0.1; done
		kill "$2" 2>/dev/null || true
	fi
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	[[ -n $fuse_pid ]] && unmount "$mnt" "$fuse_pid"
	[[ -n $null_pid ]] && unmount "$nullmnt" "$null_pid"
	mountpoint -q "$tmpfs" 2>/dev/null && umount "$tmpfs"
	if [[ -d $work/cluster ]]; then
		"$build/tools/lodectl" local down "$work/cluster" >/dev/null 2>&1 || true
	fi
	if [[ $rc != 0 && -d $work ]]; then
		for l in "$work"/cluster/*/log "$work"/*.log; do
			[[ -s $l ]] && { echo "--- $l (tail)" >&2; tail -5 "$l" >&2; }
		done
	fi
	# never remove below a mount that failed to go away
	if ! grep -q " $work/" /proc/mounts; then rm -rf "$work"; else echo "run.sh: left $work (still mounted)" >&2; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

drop_all() { sync; echo 3 >/proc/sys/vm/drop_caches; }

cpu_busy() { # jiffies the whole machine spent not idle
	awk '/^cpu /{ print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat
}

# record NAME UNIT VALUE [CPU_S_PER_GIB]
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:--}" >>"$samples"; }

# rate NAME [--cpu] CMD...: runs CMD (which prints bytes= seconds=), records GB/s
rate() {
	local name=$1 cpu=0 client_cpu=0 c0 c1 line bytes secs
	shift
	[[ $1 == --cpu ]] && { cpu=1; shift; }
	[[ $1 == --client-cpu ]] && { client_cpu=1; shift; }
	c0=$(cpu_busy)
	line=$(timeout --foreground -k 10 1200 "$@" 2>"$work/cmd.log") || {
		echo "run.sh: '$name' failed: $*" >&2
		cat "$work/cmd.log" >&2
		return 1
	}
	c1=$(cpu_busy)
	bytes=$(sed -n 's/.*bytes=\([0-9]*\).*/\1/p' <<<"$line")
	secs=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' <<<"$line")
	local cpg=-
	((cpu)) && cpg=$(awk -v c=$((c1 - c0)) -v hz="$hz" -v b="$bytes" 'BEGIN{ printf "%.2f", c / hz / (b / 2^30) }')
	record "$name" GB/s "$(awk -v b="$bytes" -v s="$secs" 'BEGIN{ printf "%.3f", b / s / 1e9 }')" "$cpg"
	# lode_io also says what the client process alone spent (--client-cpu: record it)
	if ((client_cpu)) && [[ $line == *client_cpu=* ]]; then
		record "$name, client process only" "CPU s/GiB" "$(awk -v c="${line##*client_cpu=}" -v b="$bytes" 'BEGIN{ printf "%.2f", c / (b / 2^30) }')"
	fi
	log "$name: $line"
}

# cold NAME CMD...: a cold read (caches dropped), right after a cold read of as many bytes
# of a plain file on the local disk. The shared virtual disk's rate swings by up to 2x from
# one minute to the next, more than the gap this figure is about, so the ratio to the disk
# is also taken per pair ("NAME, over the disk read just before": its median is the one to
# read).
cold() {
	local name=$1 disk="baseline: local disk read, cold, before $1" d l
	shift
	drop_all
	rate "$disk" "$bench/fs_io" read "$work/disk/big"
	drop_all
	rate "$name" --cpu "$@"
	d=$(awk -F'\t' -v n="$disk" '$1 == n { v = $3 } END { print v }' "$samples")
	l=$(awk -F'\t' -v n="$name" '$1 == n { v = $3 } END { print v }' "$samples")
	record "$name, over the disk read just before" x "$(awk -v a="$l" -v b="$d" 'BEGIN{ printf "%.3f", a / b }')"
}

# keyed NAME_PREFIX UNIT CMD...: records every key=value the command prints as PREFIX KEY
keyed() {
	local prefix=$1 unit=$2 line kv
	shift 2
	line=$(timeout --foreground -k 10 1200 "$@" 2>"$work/cmd.log") || {
		echo "run.sh: '$prefix' failed: $*" >&2
		cat "$work/cmd.log" >&2
		return 1
	}
	for kv in $line; do
		record "$prefix ${kv%%=*}" "$unit" "$(awk -v v="${kv#*=}" 'BEGIN{ printf "%.0f", v }')"
	done
	log "$prefix: $line"
}

# model LABEL FILE MODE(pread|mmap) [--drop]: seconds to load and GB/s
model() {
	local label=$1 file=$2 mode=$3 line bytes secs args=()
	shift 3
	[[ $mode == mmap ]] && args+=(--mmap)
	line=$(timeout --foreground -k 10 1200 "$bench/fs_io" model "${args[@]}" "$@" "$file" 2>"$work/cmd.log") || {
		echo "run.sh: model load '$label' failed" >&2
		cat "$work/cmd.log" >&2
		return 1
	}
	bytes=$(sed -n 's/.*bytes=\([0-9]*\).*/\1/p' <<<"$line")
	secs=$(sed -n 's/.*seconds=\([0-9.]*\).*/\1/p' <<<"$line")
	record "model load (s), $mode, $label" "s to load" "$(awk -v s="$secs" 'BEGIN{ printf "%.3f", s }')"
	record "model load (GB/s), $mode, $label" GB/s "$(awk -v b="$bytes" -v s="$secs" 'BEGIN{ printf "%.3f", b / s / 1e9 }')"
	log "model $mode $label: $line"
}

wait_mount() { # DIR PID
	for _ in $(seq 200); do
		mountpoint -q "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# read_ahead_kb of the mount's bdi (what lode-fuse sets on its own; set for nullfs too)
set_readahead() { # DIR KB
	local dev
	dev=$(mountpoint -d "$1")
	echo "$2" >"/sys/class/bdi/$dev/read_ahead_kb" 2>/dev/null || log "cannot set readahead of $1"
}

lrm() { # removes cluster paths through liblode
	local p
	for p; do "$build/tools/lodectl" rm "$p" >/dev/null; done
}

parts() { # DIR N PREFIX -> N paths
	local i
	for ((i = 0; i < $2; i++)); do echo "$1/$3$i"; done
}

sizes_below() { # the growth sizes: 1, 2, 4, ... GiB below $1 MiB
	local g=1024
	while ((g < $1)); do echo $g; g=$((g * 2)); done
}

# fan-out against chained replication: the 2-copy liblode write, each mode in turn (the
# order alternates by run, so that neither always meets the disk's leftovers of the other)
replication_pair() { # RUN
	local order=(fanout chain) r
	(($1 % 2)) || order=(chain fanout)
	for r in "${order[@]}"; do
		rate "liblode write, mirrors 2, 1 writer, $r" --cpu --client-cpu "$bench/lode_io" write --mirrors 2 --replication $r --size "$size" /m2/$r
		lrm /m2/$r
	done
}

# ---------------------------------------------------------------- setup
if ((growth_mib)); then
	log "work dir $work, growth sweep up to $growth_mib MiB, $runs run(s)"
else
	log "work dir $work, file size $size_mib MiB, $runs run(s)"
fi
if ((repl_only)); then
	mds=$("$build/tools/lodectl" local up "$work/cluster" --oss 3 --orphan-grace 1)
	export LODE_KEY_FILE=$work/cluster/cluster.key
	export LODE_MDS=$mds
	"$build/tools/lodectl" mkdir /m2 >/dev/null
	for ((run = 1; run <= runs; run++)); do
		log "---- run $run/$runs"
		replication_pair $run
	done
	label=lode-fuse ow="OSS warm"
	notes+=("mirrors 2: 1 MiB stripes over the 3 OSS, $size_mib MiB written in 16 MiB lode_pwrite calls, then fsync; the OSS orphan-reclaim the file between runs.")
fi

if ((growth_mib)); then
	if [[ -z $dir ]]; then
		mds=$("$build/tools/lodectl" local up "$work/cluster" --oss 3 --orphan-grace 1)
		export LODE_KEY_FILE=$work/cluster/cluster.key
		export LODE_MDS=$mds
		"$build/tools/lodectl" mkdir /m1 >/dev/null
	else
		posix=$dir/lode-bench.$$
		mkdir "$posix"
		label=${label_opt:-$(findmnt -no FSTYPE -T "$dir" 2>/dev/null || echo dir)}
	fi
	for ((run = 1; run <= runs; run++)); do
		log "---- run $run/$runs"
		for g in $(sizes_below $((growth_mib + 1))); do
			if [[ -z $dir ]]; then
				rate "growth: liblode write, $g MiB file" --cpu "$bench/lode_io" write --mirrors 1 --size $((g << 20)) /m1/g$g
				rate "growth: liblode read, OSS warm, $g MiB file" --cpu "$bench/lode_io" read /m1/g$g
				lrm /m1/g$g
			else
				rate "growth: $label write, $g MiB file" --cpu "$bench/fs_io" write --fsync --size $((g << 20)) "$posix/g$g"
				rate "growth: $label read, cache dropped, $g MiB file" --cpu "$bench/fs_io" read --drop "$posix/g$g"
				rm -f "$posix/g$g"
			fi
		done
	done
	label=lode-fuse ow="OSS warm"
	[[ -z $dir ]] && notes+=("growth: liblode, 1 copy (1 MiB stripes over the 3 OSS), 16 MiB requests; the read follows the write, so the OSS page cache holds what of the file this machine's memory allows ($(awk '/^MemTotal/ { printf "%.1f", $2 / 2^20 }' /proc/meminfo) GiB in all).")
fi

if ((!alone)); then # the whole workload, up to the report
mkdir -p "$mnt" "$nullmnt" "$tmpfs" "$work/disk"
mount -t tmpfs -o size=$((size_mib + 512))m lode-bench-tmpfs "$tmpfs"
"$bench/nullfs" --size "$size" "$nullmnt" 2>"$work/nullfs.log" &
null_pid=$!
wait_mount "$nullmnt" "$null_pid" || bad "nullfs did not mount (see $work/nullfs.log)"
set_readahead "$nullmnt" 16384

if [[ -z $dir ]]; then
	mds=$("$build/tools/lodectl" local up "$work/cluster" --oss 3 --orphan-grace 1)
	export LODE_KEY_FILE=$work/cluster/cluster.key
	export LODE_MDS=$mds
	"$build/client/fuse/lode-fuse" -f --mds "$mds" "$mnt" 2>"$work/lode-fuse.log" &
	fuse_pid=$!
	wait_mount "$mnt" "$fuse_pid" || bad "lode-fuse did not mount (see $work/lode-fuse.log)"
	"$build/tools/lodectl" mkdir /m1 >/dev/null
	"$build/tools/lodectl" mkdir /m2 >/dev/null
	posix=$mnt/m2
	label=lode-fuse
	ow="OSS warm"
	notes+=("lode-fuse writes use the mount's default layout (2 copies, 3 stripes), except \"1 copy\": a directory whose layout xattr (user.lode.layout) says mirror_count=1.")
	notes+=("the 4-writer figures and the reader sweeps move $sweep_mib MiB (the first $sweep_mib MiB of the file; 8 files of 1/8 of it, written with 1 copy, as is the model file: a read reads one copy either way)")
	notes+=("liblode has no client cache: its 'warm' read is the OSS-warm one.")
	notes+=("'OSS warm, page cache' drops only the mount's cached pages of the file (posix_fadvise DONTNEED); the OSS page cache keeps the objects.")
else
	posix=$dir/lode-bench.$$
	mkdir "$posix"
	label=${label_opt:-$(findmnt -no FSTYPE -T "$dir" 2>/dev/null || echo dir)}
	ow="client cache dropped"
fi

for ((run = 1; run <= runs; run++)); do
	log "---- run $run/$runs"
	w=$posix/run$run
	mkdir -p "$w" "$w/meta" "$w/small"
	[[ -z $dir ]] || mkdir -p "$w/files"

	# --- baselines: disk, loopback TCP, tmpfs, null FUSE
	rate "baseline: local disk write + fsync" "$bench/fs_io" write --fsync --size "$size" "$work/disk/big"
	if ((!writes_only)); then
	drop_all
	rate "baseline: local disk read, cold" "$bench/fs_io" read "$work/disk/big"
	rate "baseline: TCP loopback pair" --cpu "$bench/tcp_pair" --size "$size"
	cp "$work/disk/big" "$tmpfs/big"
	rate "baseline: tmpfs read" --cpu "$bench/fs_io" read "$tmpfs/big"
	rate "baseline: null FUSE read, page cache, cache dropped" --cpu "$bench/fs_io" read --drop "$nullmnt/data"
	rate "baseline: null FUSE read, page cache, warm" "$bench/fs_io" read "$nullmnt/data"
	rate "baseline: null FUSE read, O_DIRECT" --cpu "$bench/fs_io" read --direct "$nullmnt/data"
	for n in 2 4 8; do
		rate "baseline: null FUSE read, $n readers, O_DIRECT" "$bench/fs_io" read --direct --threads $n "$nullmnt/data"
	done
	rm -f "$tmpfs/big"
	fi
	((!writes_only)) || rm -f "$work/disk/big" # else kept for the cold reads' pairs

	# --- liblode: writes per mirror count, cold / OSS-warm reads, readers
	if [[ -z $dir ]]; then
		for m in 1 2; do
			rate "liblode write, mirrors $m, 1 writer" --cpu "$bench/lode_io" write --mirrors $m --size "$size" /m$m/big
			# shellcheck disable=SC2046
			rate "liblode write, mirrors $m, 4 writers, $sweep_mib MiB in all" "$bench/lode_io" write --mirrors $m --size $((sweep / 4)) $(parts /m$m 4 w)
			# shellcheck disable=SC2046
			lrm $(parts /m$m 4 w)
		done
		lrm /m1/big
		replication_pair "$run"
		if ((writes_only)); then
			lrm /m2/big
		else
		cold "liblode read, cold" "$bench/lode_io" read /m2/big
		rate "liblode read, OSS warm" --cpu "$bench/lode_io" read /m2/big
		for n in 1 2 4 8; do
			rate "liblode read, $n readers, one file, $sweep_mib MiB" "$bench/lode_io" read --threads $n --len "$sweep" /m2/big
		done
		# shellcheck disable=SC2046
		"$bench/lode_io" write --mirrors 1 --size $((sweep / 8)) $(parts /m2 8 f) >/dev/null
		for n in 1 2 4 8; do
			# shellcheck disable=SC2046
			rate "liblode read, $n readers, distinct files, $sweep_mib MiB" "$bench/lode_io" read --threads $n $(parts /m2 8 f)
		done
		for g in $(sizes_below $size_mib); do
			rate "growth: liblode write, $g MiB file" "$bench/lode_io" write --mirrors 1 --size $((g << 20)) /m1/g$g
			rate "growth: liblode read, OSS warm, $g MiB file" "$bench/lode_io" read /m1/g$g
			lrm /m1/g$g
		done
		record "growth: liblode write, $size_mib MiB file" "=" "liblode write, mirrors 1, 1 writer"
		record "growth: liblode read, OSS warm, $size_mib MiB file" "=" "liblode read, OSS warm"
		lrm /m2/big
		fi
	fi

	# --- POSIX workload on the mount (or --dir)
	rate "$label write, 1 writer" --cpu "$bench/fs_io" write --fsync --size "$size" "$w/big"
	if [[ -z $dir ]]; then # 1 copy: the directory's default layout, set through the mount
		mkdir -p "$w/one"
		python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.lode.layout", b"mirror_count=1")' "$w/one"
		rate "$label write, 1 writer, 1 copy" --cpu "$bench/fs_io" write --fsync --size "$size" "$w/one/big"
		rm -rf "$w/one"
	fi
	# shellcheck disable=SC2046
	rate "$label write, 4 writers, $sweep_mib MiB in all" "$bench/fs_io" write --fsync --size $((sweep / 4)) $(parts "$w" 4 w)
	rm -f "$w"/w?
	if ((writes_only)); then
		rm -rf "$w"
		continue
	fi
	cold "$label read, cold" "$bench/fs_io" read "$w/big"
	rate "$label read, $ow, page cache" --cpu "$bench/fs_io" read --drop "$w/big"
	rate "$label read, warm (client page cache)" --cpu "$bench/fs_io" read "$w/big"
	rate "$label read, $ow, O_DIRECT" --cpu "$bench/fs_io" read --direct "$w/big"
	for n in 1 2 4 8; do
		rate "$label read, $n readers, one file, $sweep_mib MiB, O_DIRECT" "$bench/fs_io" read --direct --threads $n --len "$sweep" "$w/big"
	done
	# distinct files: through the mount, the 8 files liblode wrote above (1 copy each; a read
	# reads one copy either way)
	files=$mnt/m2
	if [[ -n $dir ]]; then
		files=$w/files
		# shellcheck disable=SC2046
		"$bench/fs_io" write --size $((sweep / 8)) $(parts "$files" 8 f) >/dev/null
	fi
	# OSS warm for every file system, as the one-file sweep: liblode wrote Lode's files
	# before drop_all above, which emptied the caches (one untimed read fills them again)
	# shellcheck disable=SC2046
	"$bench/fs_io" read --direct --threads 8 $(parts "$files" 8 f) >/dev/null
	for n in 1 2 4 8; do
		# shellcheck disable=SC2046
		rate "$label read, $n readers, distinct files, $sweep_mib MiB, O_DIRECT" "$bench/fs_io" read --direct --threads $n $(parts "$files" 8 f)
	done
	# shellcheck disable=SC2046
	rm -f "$w/big" $(parts "$files" 8 f)
	if [[ -n $dir ]]; then
		for g in $(sizes_below $size_mib); do
			rate "growth: $label write, $g MiB file" "$bench/fs_io" write --fsync --size $((g << 20)) "$w/g$g"
			rate "growth: $label read, cache dropped, $g MiB file" "$bench/fs_io" read --drop "$w/g$g"
			rm -f "$w/g$g"
		done
	fi

	# --- model loading
	"$bench/fs_io" mkmodel --size "$size" "$tmpfs/model.safetensors" >/dev/null
	if [[ -z $dir ]]; then # liblode writes it faster than the mount (untimed)
		"$build/tools/lodectl" put "$tmpfs/model.safetensors" "/m2/run$run/model.safetensors" --mirrors 1 >/dev/null
	else
		cp "$tmpfs/model.safetensors" "$w/model.safetensors"
	fi
	model "$label, $ow" "$w/model.safetensors" pread --drop
	model "$label, $ow" "$w/model.safetensors" mmap --drop
	model "baseline: tmpfs" "$tmpfs/model.safetensors" pread
	model "baseline: tmpfs" "$tmpfs/model.safetensors" mmap
	rm -f "$w/model.safetensors" "$tmpfs/model.safetensors"

	# --- metadata and small files
	keyed "$label meta, $meta_files files," ops/s "$bench/fs_io" meta --count "$meta_files" "$w/meta"
	mkdir -p "$tmpfs/meta" "$tmpfs/small"
	keyed "baseline: tmpfs meta, $meta_files files," ops/s "$bench/fs_io" meta --count "$meta_files" "$tmpfs/meta"
	keyed "$label 64 KiB files," files/s "$bench/fs_io" small --count "$small_files" --size 64K "$w/small"
	keyed "baseline: tmpfs 64 KiB files," files/s "$bench/fs_io" small --count "$small_files" --size 64K "$tmpfs/small"
	rm -rf "$w" "$tmpfs/meta" "$tmpfs/small"
	rm -f "$work/disk/big"
done
fi # !alone

# peak memory, before anything is stopped (VmHWM: the high-water mark of the resident set)
hwm() { awk '/^VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null || echo "?"; }
rss_fuse="" rss_oss=""
if [[ -z $dir ]] && ((!repl_only)); then
	[[ -n $fuse_pid ]] && rss_fuse=$(hwm "$fuse_pid")
	for p in "$work"/cluster/oss*/pid; do rss_oss+="${rss_oss:+, }$(hwm "$(cat "$p")")"; done
fi
[[ -n $dir ]] && rmdir "$posix" 2>/dev/null || true

# ---------------------------------------------------------------- report
# The baseline each figure is compared with (empty: none)
baseline_of() {
	local f=$1
	case $f in
	"liblode read, cold" | "$label read, cold") echo "baseline: local disk read, cold, before $f" ;;
	"liblode read, OSS warm" | "liblode read, "*" readers, "*) echo "baseline: TCP loopback pair" ;;
	"$label read, $ow, page cache") echo "baseline: null FUSE read, page cache, cache dropped" ;;
	"$label read, warm (client page cache)") echo "baseline: null FUSE read, page cache, warm" ;;
	"$label read, $ow, O_DIRECT" | "$label read, 1 readers, "*) echo "baseline: null FUSE read, O_DIRECT" ;;
	"$label read, "*" readers, "*)
		f=${f#"$label read, "}
		echo "baseline: null FUSE read, ${f%% readers*} readers, O_DIRECT"
		;;
	"baseline: "*) ;;
	"liblode write, mirrors 2, 1 writer, chain") echo "liblode write, mirrors 2, 1 writer, fanout" ;;
	"liblode write, mirrors 2, 1 writer, chain, client process only") echo "liblode write, mirrors 2, 1 writer, fanout, client process only" ;;
	*", client process only") ;;
	*"write, "*) echo "baseline: local disk write + fsync" ;;
	"model load "*", $label"*) echo "${f%%, "$label"*}, baseline: tmpfs" ;;
	"$label meta, "*) echo "baseline: tmpfs meta, ${f#"$label meta, "}" ;;
	"$label 64 KiB files, "*) echo "baseline: tmpfs 64 KiB files, ${f#"$label 64 KiB files, "}" ;;
	esac
}

tsv=$work/figures.tsv
# median per figure, in order of first appearance; "=" rows refer to another figure
awk -F'\t' '
	function median(s,   a, n, i, j, t) {
		n = split(s, a, " ")
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	$2 == "=" { alias[$1] = $3; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } next }
	{
		if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 }
		unit[$1] = $2; vals[$1] = vals[$1] " " $3
		if ($4 != "-") cpu[$1] = cpu[$1] " " $4
	}
	END {
		for (i = 1; i <= k; i++) {
			f = order[i]; src = (f in alias) ? alias[f] : f
			if (!(src in unit)) continue
			v = vals[src]; sub(/^ /, "", v); gsub(/ /, ",", v)
			m = median(vals[src])
			m = (unit[src] == "ops/s" || unit[src] == "files/s") ? sprintf("%.0f", m) : sprintf("%.3f", m)
			printf "%s\t%s\t%s\t%s\t%s\n", f, unit[src], m, (src in cpu) ? sprintf("%.2f", median(cpu[src])) : "-", v
		}
	}' "$samples" >"$tsv.tmp"

declare -A med
while IFS=$'\t' read -r f u m c v; do med[$f]=$m; done <"$tsv.tmp"

{
	printf 'figure\tunit\tmedian\tcpu_s_per_gib\truns\tbaseline\tratio\n'
	while IFS=$'\t' read -r f u m c v; do
		b=$(baseline_of "$f")
		r=-
		if [[ -n $b && -n ${med[$b]:-} ]]; then
			if [[ $u == "s to load" || $u == "CPU s/GiB" ]]; then # lower is better
				r=$(awk -v a="${med[$b]}" -v x="$m" 'BEGIN{ printf "%.3g", a / x }')
			else
				r=$(awk -v a="$m" -v x="${med[$b]}" 'BEGIN{ printf "%.3g", a / x }')
			fi
		else
			b=-
		fi
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$f" "$u" "$m" "$c" "$v" "$b" "$r"
	done <"$tsv.tmp"
} >"$tsv"

echo
what=${dir:-local cluster, 3 OSS on loopback + lode-fuse}
((repl_only)) && what="replication only: local cluster, 3 OSS on loopback"
((growth_mib)) && what="growth sweep up to $((growth_mib / 1024)) GiB: ${dir:-local cluster, 3 OSS on loopback, liblode}"
((writes_only)) && what="writes only: $what"
[[ -n $dir ]] && what="$what ($label)"
printf 'Lode benchmark: %s, %d MiB file, %d run(s) (median shown), %s, %d cores, kernel %s\n' \
	"$what" "$((growth_mib ? growth_mib : size_mib))" "$runs" \
	"$(date -u +%Y-%m-%dT%H:%MZ)" "$(nproc)" "$(uname -r)"
printf '%-62s %10s %-9s %7s  %s\n' figure median unit "CPU s/GiB" "ratio to baseline"
tail -n +2 "$tsv" | while IFS=$'\t' read -r f u m c v b r; do
	if [[ $m == "not measured" ]]; then
		printf '%-62s %s\n' "$f" "not measured"
		continue
	fi
	if [[ $b == - ]]; then rb=""; else rb="$r x  ($b)"; fi
	printf '%-62s %10s %-9s %7s  %s\n' "$f" "$m" "$u" "$c" "$rb"
done
if [[ -n $rss_oss ]]; then
	printf '\npeak RSS (VmHWM): %slode-oss %s MiB\n' "${rss_fuse:+lode-fuse $rss_fuse MiB; }" "$rss_oss"
fi
((repl_only)) || [[ -n $dir ]] || echo "MooseFS, GlusterFS: measured by running this with --dir on their mounts (tools/bench/peers/); tools/bench/compare.sh puts the --out tables side by side"
for n in "${notes[@]}"; do echo "note: $n"; done
echo "CPU s/GiB: whole-machine busy CPU time (/proc/stat) during the figure, per GiB moved."
echo "Ratios: x of the baseline's speed (above 1: faster than the baseline); CPU s/GiB rows: the baseline's cost over this one (above 1: cheaper)."
[[ -n $out ]] && cp "$tsv" "$out" && echo "figures written to $out"
exit 0
