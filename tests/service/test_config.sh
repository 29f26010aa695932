#!/usr/bin/env bash
# lode-mds and lode-oss started from config files alone (as lode-mds.service and
# lode-oss@.service start them) form a working cluster; command-line options override the
# file's; a bad file stops a daemon with exit 2 and one line naming the file and line.
set -euo pipefail
LODE_TEST_NAME=config
. "$(dirname "$0")/lib.sh"

echo "== a cluster from config files"
cat >"$dir/mds.conf" <<CONF
# the metadata server
data = $dir/mds
listen = tcp://127.0.0.1:0
  threads = 2
port-file = $dir/mds.port
key = $key

log-level = info
CONF
start_daemon mds "$mds_bin" --config "$dir/mds.conf"
wait_file "$dir/mds.port"
mds=$(cat "$dir/mds.port")
for i in 0 1; do
	cat >"$dir/oss$i.conf" <<CONF
data = $dir/oss$i
listen = tcp://127.0.0.1:0
mds = $mds
port-file = $dir/oss$i.port
key = $key
threads = 1
CONF
done
start_daemon oss0 "$oss_bin" --config "$dir/oss0.conf"
# the command line overrides the file: another port file, and --listen replacing the file's
start_daemon oss1 "$oss_bin" --config "$dir/oss1.conf" --port-file "$dir/oss1.cmdline.port" \
	--listen tcp://127.0.0.1:0
wait_file "$dir/oss0.port"
wait_file "$dir/oss1.cmdline.port"
[ ! -e "$dir/oss1.port" ] || fail "--port-file on the command line did not override the file"
export LODE_MDS=$mds
for _ in $(seq 100); do
	"$lodectl" status 2>/dev/null | grep -q "2 of 2 targets up" && break
	sleep 0.1
done
"$lodectl" status | grep -q "2 of 2 targets up" || fail "the targets did not register: $("$lodectl" status)"
head -c 3000000 /dev/urandom >"$dir/src"
"$lodectl" put "$dir/src" /from-config || fail "put failed"
"$lodectl" get /from-config "$dir/back" || fail "get failed"
cmp "$dir/src" "$dir/back" || fail "the file read back differs"
echo "wrote and read 3000000 bytes through daemons started from config files"

echo "== bad config files"
# expect_bad NAME 'CONTENT' 'MESSAGE' [PROGRAM ARGS...]: exit 2 and one line with MESSAGE
expect_bad() {
	local name=$1 content=$2 want=$3 rc=0
	shift 3
	printf '%s\n' "$content" >"$dir/$name.conf"
	timeout 20 "$@" --config "$dir/$name.conf" >"$dir/$name.out" 2>&1 || rc=$?
	[ $rc -eq 2 ] || fail "$name: exit status $rc, not 2: $(cat "$dir/$name.out")"
	[ "$(wc -l <"$dir/$name.out")" -eq 1 ] || fail "$name: not one line: $(cat "$dir/$name.out")"
	grep -qF "$want" "$dir/$name.out" || fail "$name: '$(cat "$dir/$name.out")' lacks '$want'"
	echo "$name: $(cat "$dir/$name.out")"
}
expect_bad unknown "data = $dir/x
# a comment
thread = 4" "$dir/unknown.conf:3: unknown key 'thread'" "$mds_bin"
expect_bad badvalue "data = $dir/x
threads = many" "$dir/badvalue.conf:2: --threads wants a number from 1 to 256, not 'many'" \
	"$mds_bin"
expect_bad novalue "data" "$dir/novalue.conf:1: 'data' needs a value" "$oss_bin"
expect_bad badswitch "format = maybe" "$dir/badswitch.conf:1: 'format' is a switch" "$mds_bin"
expect_bad dashes "--data = /x" "$dir/dashes.conf:1: write the key without its dashes" \
	"$oss_bin"
expect_bad nested "config = /etc/other.conf" "$dir/nested.conf:1: a config file cannot name" \
	"$mds_bin"
expect_bad badaddr "data = $dir/x
listen = tcp://127.0.0.1:0
mds = nowhere" "$dir/badaddr.conf:3: --mds: bad address 'nowhere'" "$oss_bin"
rc=0
"$mds_bin" --config "$dir/missing.conf" >"$dir/missing.out" 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -qF "cannot read config file $dir/missing.conf: No such file" \
	"$dir/missing.out" || fail "a missing file: exit $rc, $(cat "$dir/missing.out")"
[ ! -e "$dir/x" ] || fail "a daemon with a bad config file created its data directory"
"$lodectl" stat /from-config >/dev/null || fail "the cluster stopped serving"
stop_all
echo "PASS"
