#!/usr/bin/env bash
# fsck.sh BUILD [COUNTS...]: lodectl fsck's speed on namespaces of COUNTS files (default
# 10000 100000) of 4 KiB, on a local cluster of 3 OSS: files/s and objects/s of 3 runs at
# each size. The files are made through liblode (fsck_fill), not through a mount.
set -euo pipefail
build=${1:?usage: fsck.sh BUILD [COUNTS...]}
shift
counts=("${@:-10000}")
[ $# -gt 0 ] || counts=(10000 100000)
lodectl=$build/tools/lodectl
dir=$(mktemp -d /tmp/lode-fsck-bench.XXXXXX)
trap '"$lodectl" local down "$dir/c" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
mds=$("$lodectl" local up "$dir/c" --oss 3)
have=0
for n in "${counts[@]}"; do
	"$build/tools/bench/fsck_fill" "$mds" "/f$n" $((n - have)) 4096 16
	have=$n
	for _ in 1 2 3; do LODE_MDS=$mds "$lodectl" fsck | tail -1; done
done
