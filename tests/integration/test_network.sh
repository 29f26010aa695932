#!/usr/bin/env bash
# Slow and lossy network between the client and the servers, in a network namespace of
# its own (so the rules touch nothing else): nftables drops a share of the packets to every
# server, a proxy adds latency to the MDS, then one OSS and finally every OSS is cut off.
# Transfers must complete byte-exact through loss and latency, fail over when one OSS is
# cut off, and fail with an error (not hang) when all are.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root to create a network namespace and nftables rules"; exit 77
fi
for t in unshare nft ip python3; do
	command -v $t >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
done
if [ -z "${LODE_IN_NETNS:-}" ]; then
	exec env LODE_IN_NETNS=1 unshare --net "$0" "$@"
fi

lodectl=${LODECTL:?LODECTL must name lodectl}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/lode-net.XXXXXX)
proxy_pid=
cleanup() {
	[ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null || true
	"$lodectl" local down "$dir" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
ip link set lo up

mds=$("$lodectl" local up "$dir" --oss 3)
export LODE_KEY_FILE=$dir/cluster.key
port() { sed 's/.*://' "$1"; }
oss_ports="$(port "$dir/oss0/addr"), $(port "$dir/oss1/addr"), $(port "$dir/oss2/addr")"
mds_port=$(port "$dir/mds/addr")

head -c $((96 << 20)) /dev/urandom >"$dir/src"
nft add table inet lode
nft add chain inet lode in '{ type filter hook input priority 0; }'

echo "== 10% of packets to every server dropped"
nft add rule inet lode in tcp dport "{ $oss_ports, $mds_port }" numgen random mod 100 '<' 10 drop
timeout 600 "$lodectl" --mds "$mds" put "$dir/src" /lossy
timeout 600 "$lodectl" --mds "$mds" get /lossy "$dir/back"
cmp "$dir/src" "$dir/back"
echo "verified $(stat -c %s "$dir/back") bytes through 10% loss"
nft flush chain inet lode in

echo "== 30 ms each way to the MDS"
python3 "$here/delay_proxy.py" 0 "${mds#tcp://}" 30 >"$dir/proxy.port" &
proxy_pid=$!
for _ in $(seq 100); do [ -s "$dir/proxy.port" ] && break; sleep 0.05; done
slow_mds=tcp://127.0.0.1:$(cat "$dir/proxy.port")
timeout 300 "$lodectl" --mds "$slow_mds" mkdir /slow
timeout 300 "$lodectl" --mds "$slow_mds" put "$dir/src" /slow/file
timeout 300 "$lodectl" --mds "$slow_mds" get /slow/file "$dir/back2"
cmp "$dir/src" "$dir/back2"
echo "verified $(stat -c %s "$dir/back2") bytes with a slow MDS"

echo "== one OSS cut off: reads fail over to the other copy"
nft add rule inet lode in tcp dport "$(port "$dir/oss1/addr")" drop
t0=$(date +%s)
timeout 300 "$lodectl" --mds "$mds" --timeout 2000 get /lossy "$dir/back3"
cmp "$dir/src" "$dir/back3"
echo "verified $(stat -c %s "$dir/back3") bytes with oss1 cut off ($(( $(date +%s) - t0 )) s)"

echo "== every OSS cut off: an error, not a hang"
nft add rule inet lode in tcp dport "{ $oss_ports }" drop
t0=$(date +%s)
set +e
timeout 120 "$lodectl" --mds "$mds" --timeout 2000 get /lossy "$dir/back4"
rc=$?
set -e
if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
	echo "FAIL: get with every OSS cut off returned $rc (0: success?! 124: hung)"; exit 1
fi
echo "get failed with exit $rc after $(( $(date +%s) - t0 )) s, as it must"

echo "== rules gone: the same client command works again"
nft flush chain inet lode in
timeout 300 "$lodectl" --mds "$mds" get /lossy "$dir/back5"
cmp "$dir/src" "$dir/back5"
echo "network tests: 5 passed, 0 failed"
