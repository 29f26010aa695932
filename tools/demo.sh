#!/usr/bin/env bash
# Installs the dependencies, builds Lode, starts a local cluster (1 MDS + 3 OSS on
# loopback, data under $LODE_DEMO_DIR, default /tmp/lode-demo) and writes then loads a
# checkpoint through it, printing the throughput. The cluster keeps running afterwards:
#   export LODE_MDS=<printed address>; build/tools/lodectl status
#   build/tools/lodectl local down /tmp/lode-demo
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
meson setup build --buildtype=release >/dev/null 2>&1 || true
ninja -C build >/dev/null

dir=${LODE_DEMO_DIR:-/tmp/lode-demo}
size_mib=${LODE_DEMO_MIB:-2048}
lodectl=build/tools/lodectl
mds=$($lodectl local up "$dir" --oss 3)
export LODE_MDS=$mds
echo "cluster up: MDS at $mds, data under $dir"
$lodectl status

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "making a ${size_mib} MiB checkpoint of random bytes..."
head -c $((size_mib << 20)) /dev/urandom >"$work/model.safetensors"
$lodectl mkdir /models 2>/dev/null || true
echo "writing it to /models/model.safetensors:"
$lodectl put "$work/model.safetensors" /models/model.safetensors
echo "loading it back:"
$lodectl get /models/model.safetensors "$work/loaded"
cmp "$work/model.safetensors" "$work/loaded" && echo "loaded checkpoint is byte-exact"
$lodectl stat /models/model.safetensors
echo "stop the cluster with: $lodectl local down $dir"
