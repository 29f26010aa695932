#!/usr/bin/env bash
# lodectl's command line against a real local cluster, the items issue 18 found: every
# command answers its own --help; unknown flags, extra arguments and bad numbers are
# refused (exit 2) with a reason; relative cluster paths are refused as such; `put DIR`
# leaves nothing behind; `put -` reads stdin; a bad address and an OSS given as the MDS
# are named; status says "never" for a target not heard from; ls -l shows times; df
# counts the files in use.
set -euo pipefail
LODE_TEST_NAME=lodectl-cli
. "$(dirname "$0")/lib.sh"
mds_bin=${LODE_MDS_BIN:?}

# expect STATUS PATTERN CMD...: CMD exits with STATUS and its stderr matches PATTERN
expect() {
	local want=$1 pattern=$2 got=0
	shift 2
	"$@" >"$dir/out" 2>"$dir/err" || got=$?
	[ "$got" -eq "$want" ] || fail "$* exited $got, not $want: $(cat "$dir/err")"
	grep -qE -- "$pattern" "$dir/err" || fail "$*: no '$pattern' in: $(cat "$dir/err")"
}

export LODE_MDS=$("$lodectl" local up "$dir/c" --oss 2)
echo hello >"$dir/small"

echo "== every command answers its own --help"
cmds=$("$lodectl" --help | awk '/^commands:/ {on = 1; next} /^$/ {on = 0} on {
	if ($1 == "local") print $1 " " $2; else print $1 }')
[ "$(echo "$cmds" | wc -l)" -ge 15 ] || fail "lodectl --help lists too few commands: $cmds"
while read -r cmd; do
	# shellcheck disable=SC2086 # "local up" is two words
	"$lodectl" $cmd --help >"$dir/help" || fail "$cmd --help exited non-zero"
	head -1 "$dir/help" | grep -q "^usage: lodectl $cmd" || fail "$cmd --help: $(head -3 "$dir/help")"
done <<<"$cmds"
"$lodectl" ls / | grep -q -- --help && fail "mkdir --help created a file"

echo "== unknown flags, extra arguments and bad numbers are refused"
expect 2 "unknown option '--bogus'" "$lodectl" ls --bogus /
expect 2 "unexpected argument '/b'" "$lodectl" mkdir /a /b
expect 2 "unexpected argument" "$lodectl" status extra
expect 2 "unexpected argument" "$lodectl" get /x "$dir/y" "$dir/z"
expect 2 "missing argument" "$lodectl" put "$dir/small"
expect 2 "'-5' is not a number" "$lodectl" --timeout -5 status
expect 2 "'-5' is not a number" "$lodectl" status --timeout -5
expect 2 "'0' is out of range" "$lodectl" status --timeout 0
expect 2 "'abc' is not a size" "$lodectl" put "$dir/small" /s --stripe-size abc
expect 2 "--mirrors: '-1'" "$lodectl" put "$dir/small" /s --mirrors -1
expect 2 "out of range" "$lodectl" local up "$dir/c" --oss 65
"$lodectl" ls / | grep -qx 'a/' && fail "mkdir with an extra argument still created /a"
expect 2 "--stripe-count times --mirrors is at most 64" "$lodectl" put "$dir/small" /s \
	--stripe-count 64 --mirrors 2
expect 1 "--mirrors 3: the cluster has 2 storage targets" "$lodectl" put "$dir/small" /s --mirrors 3
"$lodectl" stat /s >/dev/null 2>&1 && fail "a refused put created /s"

echo "== relative cluster paths are refused as such"
"$lodectl" mkdir /d
"$lodectl" put "$dir/small" /d/f >/dev/null
for args in "mkdir d" "rmdir d" "rm d/f" "rm -r d" "ls d" "stat d/f" "repair d/f" \
	"mv /d/f g" "mv d/f /g" "ln /d/f g" "put $dir/small d/g" "get d/f $dir/g"; do
	# shellcheck disable=SC2086
	expect 2 "'[^']*': paths in the cluster are absolute" "$lodectl" $args
done
"$lodectl" stat /d/f >/dev/null || fail "a refused relative path changed the cluster"

echo "== put of a local directory without -r leaves nothing behind"
mkdir "$dir/localdir"
expect 1 "is a directory \(put -r" "$lodectl" put "$dir/localdir" /fromdir
if "$lodectl" stat /fromdir >/dev/null 2>&1; then fail "put DIR left /fromdir behind"; fi
[ "$("$lodectl" ls /)" = "d/" ] || fail "put DIR left something: $("$lodectl" ls /)"

echo "== put - reads stdin"
head -c 3000000 /dev/urandom >"$dir/rand"
"$lodectl" put - /d/stdin <"$dir/rand" 2>/dev/null || fail "put - failed"
cat "$dir/rand" | "$lodectl" put - /d/pipe 2>/dev/null || fail "put - from a pipe failed"
for f in stdin pipe; do
	"$lodectl" get /d/$f - 2>/dev/null | cmp - "$dir/rand" || fail "put - /d/$f: bytes differ"
done

echo "== a bad address and an OSS given as the MDS are named"
expect 1 "cannot parse address 'x': expected HOST:PORT" "$lodectl" --mds x status
expect 1 "cannot parse address 'http://h:1': unknown transport" "$lodectl" --mds http://h:1 status
expect 1 "the port '99999' is not a number" "$lodectl" --mds 127.0.0.1:99999 status
oss=$(cat "$dir/c/oss0/addr")
expect 1 "$oss is not a Lode MDS \(it answered as a Lode OSS\)" "$lodectl" --mds "$oss" status

echo "== ls -l shows modification times"
"$lodectl" ls -l /d >"$dir/ls"
grep -E " $(date +%Y-%m-%d) [0-2][0-9]:[0-5][0-9] f$" "$dir/ls" >/dev/null ||
	fail "ls -l shows no time: $(cat "$dir/ls")"

echo "== df counts the files in use"
before=$("$lodectl" df | awk 'NR == 2 {print $5}')
[ "$before" -lt 1000 ] || fail "df says $before files in a cluster of a handful"
"$lodectl" mkdir /more
"$lodectl" put "$dir/small" /more/one >/dev/null 2>&1
"$lodectl" put "$dir/small" /more/two >/dev/null 2>&1
after=$("$lodectl" df | awk 'NR == 2 {print $5}')
[ "$after" -eq $((before + 3)) ] || fail "df files went from $before to $after, not +3"

echo "== status says never for a target not heard from"
"$lodectl" local down "$dir/c"
"$mds_bin" --data "$dir/c/mds" --listen tcp://127.0.0.1:0 --key "$dir/c/cluster.key" --port-file "$dir/mds.addr" \
	2>"$dir/mds.log" &
mds_pid=$!
trap 'kill $mds_pid 2>/dev/null; wait $mds_pid 2>/dev/null; cleanup' EXIT
for _ in $(seq 100); do [ -s "$dir/mds.addr" ] && break; sleep 0.05; done
"$lodectl" --mds "$(cat "$dir/mds.addr")" status >"$dir/status"
cat "$dir/status"
grep -q 18446744073709551615 "$dir/status" && fail "status shows UINT64_MAX"
[ "$(grep -c ' down .* never$' "$dir/status")" -eq 2 ] || fail "status does not say never"
echo PASS
