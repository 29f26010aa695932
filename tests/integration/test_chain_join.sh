#!/usr/bin/env bash
# A chained write right after a target joins: the head OSS forwards only to targets in its
# copy of the MDS's table, which it refreshes every heartbeat (1 s). A head that refuses a
# hop it does not know fetches the table at once (lode_oss_target_table_refetches_total),
# so the client's resend 5 ms later goes through the chain: a refusal or two
# (lode_oss_chain_hops_refused_total), not one per resend until the head's next
# heartbeat. Every file reads back whole, with no degraded copy.
set -euo pipefail

lodectl=${LODECTL:?LODECTL must name lodectl}
mds_bin=${LODE_MDS_BIN:?LODE_MDS_BIN must name lode-mds}
oss_bin=$(dirname "$mds_bin")/../oss/lode-oss
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
dir=$(mktemp -d /tmp/lode-join.XXXXXX)
pids=()
cleanup() {
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
js() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
wait_file() { for _ in $(seq 100); do [ -s "$1" ] && return 0; sleep 0.1; done; fail "$1 not written"; }
up() { "$lodectl" --json status | js 'sum(t["state"] == "up" for t in d["targets"])'; }
start_oss() { # NAME
	"$oss_bin" --data "$dir/$1" --listen tcp://127.0.0.1:0 --mds "$LODE_MDS" --key "$dir/key" \
		--port-file "$dir/$1.addr" --metrics 127.0.0.1:0 --metrics-port-file "$dir/$1.metrics" \
		2>"$dir/$1.log" &
	pids+=($!)
	wait_file "$dir/$1.addr"
	wait_file "$dir/$1.metrics"
}
metric() { # NAME METRIC
	curl -sf "http://$(cat "$dir/$1.metrics")/metrics" | awk -v m="$2" '$1 == m { print $2 }'
}
refused() { metric "$1" lode_oss_chain_hops_refused_total; }
refetched() { metric "$1" lode_oss_target_table_refetches_total; }

"$lodectl" key generate "$dir/key" >/dev/null
"$mds_bin" --data "$dir/mds" --listen tcp://127.0.0.1:0 --port-file "$dir/mds.addr" \
	--key "$dir/key" 2>"$dir/mds.log" &
pids+=($!)
wait_file "$dir/mds.addr"
export LODE_MDS=$(cat "$dir/mds.addr") LODE_KEY_FILE=$dir/key
start_oss a
for _ in $(seq 100); do [ "$(up)" = 1 ] && break; sleep 0.1; done
[ "$(up)" = 1 ] || fail "target a did not come up"
[ "$(refused a)" = 0 ] || fail "a new OSS reports $(refused a) refused hops"
head -c $((1 << 20)) /dev/urandom >"$dir/src"

echo "== a second target joins; files of two copies are written at once"
start_oss b
for _ in $(seq 500); do [ "$(up)" = 2 ] && break; sleep 0.02; done
[ "$(up)" = 2 ] || fail "target b did not come up"
for i in $(seq 8); do
	"$lodectl" put --quiet --mirrors 2 --stripe-count 1 "$dir/src" "/f$i"
done
ra=$(refused a) rb=$(refused b) fa=$(refetched a)
echo "   chained requests refused: $ra by a (which knew only itself), $rb by b; a fetched the table $fa times at once"
# a refusal makes the head fetch the table at once (unless its heartbeat came first, and
# then there is no refusal); b fetched it when it registered, after a
[ "$ra" = 0 ] || [ "$fa" -ge 1 ] || fail "a refused $ra chained requests but fetched no table for them"
# without that fetch: one per resend (5, 15, 35, 75, 155 ms ...) until a's heartbeat
[ $((ra + rb)) -le 5 ] || fail "$ra and $rb chained requests refused by a and b when b joined"
for i in $(seq 8); do
	"$lodectl" get --quiet "/f$i" "$dir/back" && cmp -s "$dir/src" "$dir/back" ||
		fail "/f$i does not read back as written"
	copies=$("$lodectl" stat "/f$i" | sed -n 's/^copies: \([0-9]*\) of.*/\1/p')
	[ "$copies" = 0 ] || fail "/f$i has $copies degraded copies"
done
echo "PASS"
