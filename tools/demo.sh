#!/usr/bin/env bash
# Installs the dependencies, builds Lode, starts a local cluster (1 MDS + 3 OSS on
# loopback, data under $LODE_DEMO_DIR, default /tmp/lode-demo), mounts it with lode-fuse at
# $LODE_DEMO_DIR/models, writes a safetensors checkpoint through the mount, loads it back
# through the mount and with Lode's loader (lodectl load), printing the throughput. The cluster and the mount stay up afterwards; the last lines say how to
# stop them.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
meson setup build --buildtype=release >/dev/null 2>&1 || true
ninja -C build >/dev/null

dir=${LODE_DEMO_DIR:-/tmp/lode-demo}
size_mib=${LODE_DEMO_MIB:-4096}
lodectl=build/tools/lodectl
mnt=$dir/models
mds=$($lodectl local up "$dir" --oss 3 2>/dev/null)
export LODE_MDS=$mds
# every client proves the cluster key that `local up` made (lode-fuse and lodectl read it)
export LODE_KEY_FILE=$(realpath "$dir")/cluster.key
echo "cluster up: MDS at $mds, data under $dir"
echo "  export LODE_MDS=$mds LODE_KEY_FILE=$LODE_KEY_FILE"
$lodectl status
mkdir -p "$mnt"
if ! mountpoint -q "$mnt"; then
	build/client/fuse/lode-fuse --mds "$mds" "$mnt" -o allow_other
fi
echo "mounted at $mnt"

ckpt=$mnt/llama-demo/model-00001-of-00001.safetensors
mkdir -p "$(dirname "$ckpt")"
rate() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.2f GB/s", b / s / 1e9 }'; }
now() { date +%s.%N; }
bytes=$((size_mib << 20))

echo "writing a ${size_mib} MiB safetensors checkpoint through the mount..."
t0=$(now)
build/tools/bench/fs_io mkmodel --size "$bytes" "$ckpt" >/dev/null
sync "$ckpt"
t1=$(now)
bytes=$(stat -c %s "$ckpt")
echo "  wrote $bytes bytes in $(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.2f", b-a}') s:" \
	"$(rate $bytes "$(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}')") (includes generating the tensors)"

echo "loading it back (kernel page cache dropped first)..."
sync
echo 1 >/proc/sys/vm/drop_caches 2>/dev/null || true
t0=$(now)
sum_mount=$(dd if="$ckpt" bs=16M status=none | sha256sum | cut -d' ' -f1)
t1=$(now)
echo "  read $bytes bytes in $(awk -v a=$t0 -v b=$t1 'BEGIN{printf "%.2f", b-a}') s:" \
	"$(rate $bytes "$(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}')") (includes sha256)"
sum_lib=$($lodectl get /llama-demo/model-00001-of-00001.safetensors - | sha256sum | cut -d' ' -f1)
[ "$sum_mount" = "$sum_lib" ] && echo "checkpoint is byte-identical through the mount and liblode ($sum_mount)"
echo "loading it into memory with Lode's loader (tensors checked, every byte verified)..."
$lodectl load /llama-demo --verify
$lodectl stat /llama-demo/model-00001-of-00001.safetensors
echo
echo "stop with: fusermount3 -u $mnt && $lodectl local down $dir"
