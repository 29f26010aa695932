#!/usr/bin/env bash
# Lode over soft-RoCE next to Lode over TCP, in the same QEMU VM (tests/rdma/vm.sh), for the
# RDMA transport's record. Soft-RoCE under QEMU's emulation is a correctness vehicle, not a
# speed claim: what this shows is the ratio between the two transports on the same emulated
# CPUs, and that a large sequential write and read complete over both.
#
#   tools/bench/rdma-vm.sh [BUILD_DIR] [SIZE_MIB]     (defaults: build, 256)
#
# For each transport it starts a local cluster (MDS + 2 OSS) listening on the VM's rxe
# address, writes one file of SIZE_MIB with one copy, reads it back, and prints MB/s.
# Needs root and what tests/rdma/vm.sh needs.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
size_mib=${2:-256}

[ -x "$build/tools/bench/lode_io" ] || { echo "rdma-vm.sh: build $build first" >&2; exit 1; }

# The part that runs inside the VM.
guest=$(cat <<'GUEST'
set -eu
b=$LODE_BUILD_DIR
for t in tcp rdma; do
	d=$(mktemp -d /tmp/bench-$t.XXXXXX)
	mds=$(LODE_LOCAL_LISTEN=$t://$LODE_RDMA_IP "$b/tools/lodectl" local up "$d" --oss 2)
	export LODE_KEY_FILE=$d/cluster.key
	w=$("$b/tools/bench/lode_io" --mds "$mds" write --mirrors 1 --req 4194304 \
		--size $((SIZE_MIB << 20)) /f)
	r=$("$b/tools/bench/lode_io" --mds "$mds" read --req 4194304 /f)
	"$b/tools/lodectl" local down "$d" >/dev/null
	rm -rf "$d"
	for kv in "write $w" "read $r"; do
		set -- $kv
		echo "$1 $2 $3" | awk -v t=$t '{
			split($2, b, "="); split($3, s, "=");
			printf "rdma-vm: %-4s %-5s %6.1f MB/s (%d MiB in %.2f s)\n", t, $1,
				b[2] / s[2] / 1e6, b[2] / 1048576, s[2] }'
	done
done
GUEST
)
exec "$root/tests/rdma/vm.sh" "$build" -e SIZE_MIB="$size_mib" -- sh -c "$guest"
