#!/usr/bin/env bash
# A partition between the two OSSes that hold a file's copies, while the client reaches
# both (in a network namespace of its own; each OSS runs as a user of its own, so that
# nftables can cut the connections one OSS opens to the other and no others). Chained
# writes whose head cannot forward must complete, not hang, with the unreachable copy
# marked degraded (never reported good); every file reads back byte-exact meanwhile, both
# targets stay up; once the partition heals, `lodectl fsck --repair` (lode-fsck.timer's
# job) copies the degraded copies back and a second fsck is clean.
set -euo pipefail

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root for a network namespace, nftables rules and other users"; exit 77
fi
for t in unshare nft ip setpriv python3; do
	command -v $t >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
done
if [ -z "${LODE_IN_NETNS:-}" ]; then
	exec env LODE_IN_NETNS=1 unshare --net "$0" "$@"
fi

lodectl=${LODECTL:?LODECTL must name lodectl}
mds_bin=${LODE_MDS_BIN:?LODE_MDS_BIN must name lode-mds}
oss_bin=$(dirname "$mds_bin")/../oss/lode-oss
dir=$(mktemp -d /tmp/lode-part.XXXXXX)
chmod 711 "$dir" # the OSSes run as other users
pids=()
cleanup() {
	nft delete table inet lodepart 2>/dev/null || true
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$dir"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	for f in "$dir"/*.log; do echo "--- $f"; tail -5 "$f"; done
	exit 1
}
ip link set lo up
js() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
wait_file() { for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done; fail "$1 not written"; }

"$lodectl" key generate "$dir/key" >/dev/null
"$mds_bin" --data "$dir/mds" --listen tcp://127.0.0.1:0 --port-file "$dir/mds.addr" \
	--key "$dir/key" 2>"$dir/mds.log" &
pids+=($!)
wait_file "$dir/mds.addr"
export LODE_MDS=$(cat "$dir/mds.addr") LODE_KEY_FILE=$dir/key
# OSS a as uid 65534, OSS b as uid 65533, each with a copy of the key it can read
start_oss() {
	local name=$1 uid=$2
	mkdir "$dir/$name" "$dir/$name.run"
	cp "$dir/key" "$dir/$name.run/key"
	chown "$uid" "$dir/$name" "$dir/$name.run" "$dir/$name.run/key"
	setpriv --reuid="$uid" --regid=65534 --clear-groups "$oss_bin" --data "$dir/$name" \
		--listen tcp://127.0.0.1:0 --mds "$LODE_MDS" --key "$dir/$name.run/key" \
		--port-file "$dir/$name.run/addr" 2>"$dir/$name.log" &
	pids+=($!)
}
start_oss a 65534
start_oss b 65533
wait_file "$dir/a.run/addr"
wait_file "$dir/b.run/addr"
up() { "$lodectl" --json status | js 'sum(t["state"] == "up" for t in d["targets"])'; }
for _ in $(seq 100); do [ "$(up)" = 2 ] && break; sleep 0.1; done
[ "$(up)" = 2 ] || fail "the two targets did not come up"

head -c $((24 << 20)) /dev/urandom >"$dir/src"
"$lodectl" put --quiet --mirrors 2 "$dir/src" /before
degraded() { "$lodectl" stat "$1" | sed -n 's/^copies: \([0-9]*\) of.*/\1/p'; }
[ "$(degraded /before)" = 0 ] || fail "/before has degraded copies before the partition"

echo "== the OSSes cannot reach each other; the client reaches both"
port() { sed 's/.*://' "$dir/$1.run/addr"; }
nft add table inet lodepart
nft add chain inet lodepart out '{ type filter hook output priority 0; }'
nft add rule inet lodepart out meta skuid 65534 tcp dport "$(port b)" counter reject with tcp reset
nft add rule inet lodepart out meta skuid 65533 tcp dport "$(port a)" counter reject with tcp reset
for i in 1 2 3 4; do
	start=$SECONDS
	timeout 120 "$lodectl" put --quiet --mirrors 2 --stripe-count 1 "$dir/src" "/during$i" ||
		fail "put /during$i failed or hung during the partition"
	echo "/during$i written in $((SECONDS - start)) s, $(degraded /during$i) of 2 copies degraded"
	[ "$(degraded /during$i)" = 1 ] ||
		fail "/during$i: $(degraded /during$i) copies degraded, expected the one its head could not reach"
	timeout 120 "$lodectl" get --quiet "/during$i" "$dir/back" && cmp -s "$dir/src" "$dir/back" ||
		fail "/during$i does not read back byte-exact during the partition"
done
timeout 120 "$lodectl" get --quiet /before "$dir/back" && cmp -s "$dir/src" "$dir/back" ||
	fail "/before does not read back during the partition"
[ "$(up)" = 2 ] || fail "a target is down to the MDS during a partition between OSSes"
rejected=$(nft list table inet lodepart | grep -c 'packets [1-9]' || true)
[ "$rejected" -gt 0 ] || fail "no connection between the OSSes was rejected: the test cut nothing"

echo "== healed: fsck --repair copies the degraded copies back"
nft delete table inet lodepart
rc=0
"$lodectl" fsck --repair >"$dir/fsck.out" 2>&1 || rc=$?
cat "$dir/fsck.out"
[ "$rc" = 1 ] || fail "fsck --repair exited $rc, expected 1 (errors found, all fixed)"
for f in /before /during1 /during2 /during3 /during4; do
	[ "$(degraded $f)" = 0 ] || fail "$f still has $(degraded $f) degraded copies after fsck --repair"
	"$lodectl" get --quiet "$f" "$dir/back" && cmp -s "$dir/src" "$dir/back" ||
		fail "$f changed in the repair"
done
"$lodectl" fsck >"$dir/fsck2.out" 2>&1 || fail "fsck after the repair: $(cat "$dir/fsck2.out")"
echo "partition between chain head and tail: writes completed degraded, repaired after"
