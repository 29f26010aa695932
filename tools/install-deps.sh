#!/usr/bin/env bash
# Installs what Lode needs to build and test, from Debian 12's packages.
set -euo pipefail
pkgs=(build-essential meson ninja-build pkg-config
      clang-format liburing-dev liblmdb-dev lmdb-utils libxxhash-dev libfuse3-dev fuse3 libcmocka-dev libmicrohttpd-dev libsodium-dev curl
      # tests/service/metrics.sh: a real Prometheus scrapes a local cluster (and promtool)
      prometheus
      libibverbs-dev librdmacm-dev python3 nftables iproute2 util-linux rsync attr
      # liblode-loader: safetensors headers and lodectl load --json; the Python package's tests
      libjson-c-dev python3-numpy python3-torch python3-lmdb
      # tests/service: systemd-analyze verify of the units; the Kubernetes manifests' schema
      systemd python3-yaml python3-kubernetes
      # tests/rdma/vm.sh: a soft-RoCE VM (it downloads the kernel package itself)
      qemu-system-x86 busybox-static cpio kmod xz-utils ibverbs-providers)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}" >&2
	sudo_cmd=()
	[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
	"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
	"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		--no-install-recommends "${missing[@]}"
fi
