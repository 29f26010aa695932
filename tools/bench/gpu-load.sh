#!/usr/bin/env bash
# gpu-load.sh - the GPU loader's real check, in one run, on a machine with an NVIDIA GPU
# (the device tool's machine: see ../shared/notes/gpu-machine.md). It builds Lode there,
# starts a local cluster (MDS + 3 OSS), writes a safetensors checkpoint of SIZE GiB (one
# copy), and measures, OSS warm, median of RUNS:
#   ceiling      pinned host-to-device copies (gpu_bench ceiling): the most any loader gets
#   read+copy    read() through lode-fuse into a pinned buffer, then cudaMemcpy, per 64 MiB
#   loader       lodectl load --to cuda:0 (liblode-loader: pinned buffers, async copies)
# then one load with --verify (every byte copied back from the GPU and compared with a
# second read), and the test suite's GPU test (cluster-loader-gpu). Prints every figure
# and the ratios against the targets: loader >= 0.5x ceiling, >= 2x read+copy.
#
#   tools/bench/gpu-load.sh [--size-gib 16] [--runs 3] [--out FILE]
#
# The machine has gcc, nvcc, meson and ninja but no Debian -dev packages: fetch them here
# first (tools/bench/gpu-load.sh --fetch, on a Debian 12 machine: it downloads the .deb
# files into .device/debs), and carry .device with the run; they are unpacked into
# .device/prefix, never into /.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=$PWD
size_gib=16 runs=3 out=""
debs="liburing-dev liburing2 liblmdb-dev liblmdb0 libfuse3-dev libfuse3-3 fuse3 libxxhash-dev
libxxhash0 libcmocka-dev libcmocka0 libjson-c-dev libjson-c5 pkgconf pkgconf-bin libpkgconf3 pkg-config"
while [[ $# -gt 0 ]]; do
	case $1 in
	--size-gib) size_gib=$2; shift 2 ;;
	--runs) runs=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--fetch) mkdir -p .device/debs; (cd .device/debs && apt-get download $debs); exit 0 ;;
	-h|--help) sed -n '2,/^[^#]/p' tools/bench/gpu-load.sh | sed '$d'; exit 0 ;;
	*) echo "gpu-load.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
t_start=$(date +%s)

# --- the build's dependencies: Debian's packages, unpacked into a prefix
prefix=$src/.device/prefix
arch=x86_64-linux-gnu
if [[ ${LODE_GPU_USE_DEBS:-0} == 1 ]] || ! pkg-config --exists liburing lmdb fuse3 libxxhash cmocka json-c 2>/dev/null; then
	ls .device/debs/*.deb >/dev/null 2>&1 || { echo "gpu-load.sh: no .device/debs (run --fetch on Debian, carry .device)" >&2; exit 2; }
	if [[ ! -d $prefix ]]; then
		for d in .device/debs/*.deb; do dpkg -x "$d" "$prefix"; done
	fi
	export PATH=$prefix/usr/bin:$PATH
	export LD_LIBRARY_PATH=$prefix/usr/lib/$arch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export PKG_CONFIG_LIBDIR=$prefix/usr/lib/$arch/pkgconfig:$prefix/usr/share/pkgconfig
	export PKG_CONFIG_SYSROOT_DIR=$prefix
	export CPATH=$prefix/usr/include LIBRARY_PATH=$prefix/usr/lib/$arch
fi
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
[[ -n $nvcc ]] || { echo "gpu-load.sh: no CUDA toolkit (nvcc) on this machine" >&2; exit 2; }
cuda=$(dirname "$(dirname "$(realpath "$nvcc")")")
nvidia-smi --query-gpu=name,memory.total,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader >&2 || true

# --- build
b=$src/.device/build
log "building in $b (CUDA at $cuda)"
if [[ ! -f $b/build.ninja ]]; then
	meson setup "$b" --buildtype=release -Dcuda=enabled -Dcudart_dir="$cuda" -Drdma=disabled \
		-Dfuse=enabled -Dtests=enabled >"$src/.device/meson.log" 2>&1 ||
		{ tail -30 "$src/.device/meson.log" >&2; exit 1; }
fi
ninja -C "$b" >"$src/.device/ninja.log" 2>&1 || { tail -30 "$src/.device/ninja.log" >&2; exit 1; }
log "built in $(( $(date +%s) - t_start )) s"

# --- cluster, mount, checkpoint
work=$(mktemp -d /var/tmp/lode-gpu.XXXXXX)
mnt=$work/mnt fuse_pid=""
cleanup() {
	local rc=$?
	trap - EXIT
	findmnt -M "$mnt" >/dev/null && { fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"; }
	[[ -n $fuse_pid ]] && wait "$fuse_pid" 2>/dev/null || true
	"$b/tools/lodectl" local down "$work/cluster" >/dev/null 2>&1 || true
	grep -q " $work/" /proc/mounts || rm -rf "$work"
	rm -f /dev/shm/lode-gpu-model.safetensors
	exit "$rc"
}
trap cleanup EXIT
mds=$("$b/tools/lodectl" local up "$work/cluster" --oss 3 | tail -1)
export LODE_KEY_FILE=$work/cluster/cluster.key
lodectl() { "$b/tools/lodectl" --mds "$mds" "$@"; }
mkdir -p "$mnt"
"$b/client/fuse/lode-fuse" -f --mds "$mds" "$mnt" 2>"$work/fuse.log" &
fuse_pid=$!
for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
mountpoint -q "$mnt" || { echo "gpu-load.sh: lode-fuse did not mount" >&2; cat "$work/fuse.log" >&2; exit 1; }
log "writing a ${size_gib} GiB checkpoint (one copy, 3 stripes)"
"$b/tools/bench/fs_io" mkmodel --size $((size_gib << 30)) /dev/shm/lode-gpu-model.safetensors >/dev/null
lodectl put /dev/shm/lode-gpu-model.safetensors /model.safetensors --mirrors 1 >&2
rm -f /dev/shm/lode-gpu-model.safetensors
bytes=$(stat -c %s "$mnt/model.safetensors")
log "checkpoint: $bytes bytes, written after $(( $(date +%s) - t_start )) s"

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
secs_of() { sed -n 's/.*seconds=\([0-9.]*\).*/\1/p'; }
unpage() { python3 -c 'import os,sys; fd=os.open(sys.argv[1],os.O_RDONLY); os.posix_fadvise(fd,0,0,os.POSIX_FADV_DONTNEED)' "$1"; }
ceil=() rc=() ld=()
lodectl load /model.safetensors --to host >/dev/null # the OSS page cache warm
for r in $(seq "$runs"); do
	ceil+=("$("$b/tools/bench/gpu_bench" ceiling --size $((size_gib << 30)) | secs_of)")
	unpage "$mnt/model.safetensors"
	rc+=("$("$b/tools/bench/gpu_bench" readcopy "$mnt/model.safetensors" | secs_of)")
	ld+=("$(lodectl load /model.safetensors --to cuda:0 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"])')")
	log "round $r: ceiling ${ceil[-1]} s, read+copy ${rc[-1]} s, loader ${ld[-1]} s"
done
log "loading once more with --verify (copied back from the GPU, compared with a second read)"
verify=$(lodectl load /model.safetensors --to cuda:0 --verify 2>&1) && vrc=0 || vrc=$?
log "cluster-loader-gpu (the suite's GPU test)"
gtest=$(cd "$b" && meson test cluster-loader-gpu --print-errorlogs 2>&1 | grep -E '^ *1/1') || true
C=$(printf '%s\n' "${ceil[@]}" | median) R=$(printf '%s\n' "${rc[@]}" | median) L=$(printf '%s\n' "${ld[@]}" | median)
{
	echo "# tools/bench/gpu-load.sh, $(date -u +%Y-%m-%dT%H:%MZ), $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) CPUs"
	echo "# checkpoint ${size_gib} GiB ($bytes bytes, fs_io mkmodel), 3 OSS on loopback, one copy, OSS warm, median of $runs"
	awk -v b="$bytes" -v s=$((size_gib << 30)) -v c="$C" -v r="$R" -v l="$L" 'BEGIN{
		printf "pinned host-to-device ceiling        %8.3f s  %7.2f GB/s\n", c, s / c / 1e9
		printf "read() via mount + cudaMemcpy        %8.3f s  %7.2f GB/s\n", r, b / r / 1e9
		printf "loader (lodectl load --to cuda:0)    %8.3f s  %7.2f GB/s\n", l, b / l / 1e9
		printf "loader / ceiling                     %8.2fx (target >= 0.5)\n", (b / l) / (s / c)
		printf "loader / read+copy                   %8.2fx (target >= 2)\n", r / l }'
	echo "verify (bytes on the device): $([[ $vrc == 0 ]] && echo "ok: $verify" || echo "FAILED ($vrc): $verify")"
	echo "cluster-loader-gpu: ${gtest:-did not run}"
	echo "total $(( $(date +%s) - t_start )) s"
} | tee ${out:+"$out"}
[[ $vrc == 0 ]]
