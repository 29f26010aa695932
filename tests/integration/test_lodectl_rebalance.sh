#!/usr/bin/env bash
# lodectl rebalance on a real local cluster: 3 OSS of a declared 320 MiB holding about
# 150 MiB of files each (two copies of ~230 MB) get a 4th, empty one. The dry run's plan
# ends every target within 5 points of the mean and moves at most 1.2x the bytes above it.
# A rebalance killed with SIGKILL half way is completed by a second run, while a reader
# streams a file being moved (every byte compared) and a writer writes a new checkpoint;
# then every target reports a use within 5 points of the mean, fsck is clean and every
# file is byte-exact. (Scaled down to stay under ~45 s on 2 cores; for a bigger run, e.g.
# 3 GiB, set REBALANCE_MB=1000 REBALANCE_CAPACITY=4G.)
set -euo pipefail
LODE_TEST_NAME=rebalance
source "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
mb=${REBALANCE_MB:-76}          # per file set: 3 sets of this many MB
capacity=${REBALANCE_CAPACITY:-320M}

c="$dir/c"
mds=$("$lodectl" local up "$c" --oss 3 --orphan-grace 1 --capacity "$capacity")
export LODE_MDS=$mds
# files of several sizes; /big is the one the reader streams
head -c $((mb * 1000000 / 4)) /dev/urandom >"$dir/big"
"$lodectl" put --quiet "$dir/big" /big
n=0
for set in 1 2 3; do
	for sz in 1 2 3 5 7; do
		n=$((n + 1))
		head -c $((mb * 1000000 * sz / 18)) /dev/urandom >"$dir/f$n"
		"$lodectl" put --quiet "$dir/f$n" "/f$n"
	done
done

# use_spread: the reported used percent of every target, and whether each is within 5
# points of the mean; exits 1 when one is not
use_spread() {
	"$lodectl" --json target list | $py -c '
import json, sys
t = [x for x in json.load(sys.stdin)["targets"] if x["state"] == "up"]
used = sum(x["bytes_used"] for x in t); total = sum(x["bytes_total"] for x in t)
mean = 100.0 * used / total
pcts = [round(x["used_percent"], 1) for x in t]
print("mean %.1f%%, targets %s" % (mean, pcts))
sys.exit(0 if all(abs(p - mean) <= 5 for p in pcts) else 1)'
}

echo "add a 4th, empty OSS"
"$lodectl" local add-oss "$c" --capacity "$capacity" >/dev/null
sleep 6 # the targets report their use every 5 s
use_spread && fail "the cluster is balanced before the rebalance: the test proves nothing"

echo "the dry run's plan"
"$lodectl" --json rebalance --dry-run >"$dir/plan.json"
$py - "$dir/plan.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["dry_run"] and d["moves_planned"] == len(d["plan"]) > 0, d
assert d["bytes_planned"] <= 1.2 * d["bytes_above_mean"], (d["bytes_planned"], d["bytes_above_mean"])
mean = d["mean_used_percent"]
for t in d["targets_planned"]:
    assert abs(t["used_percent"] - mean) <= 5, (t, mean)
print("plan: %d moves, %d of %d bytes above the mean" % (d["moves_planned"], d["bytes_planned"], d["bytes_above_mean"]))
EOF
use_spread >/dev/null && fail "the dry run moved something"

echo "a rebalance killed half way"
"$lodectl" --quiet rebalance >/dev/null 2>&1 &
killed=$!
sleep 0.3
kill -9 $killed 2>/dev/null || true
wait $killed 2>/dev/null || true

echo "run again, with a reader and a writer at work"
(
	n=0
	while [ ! -e "$dir/stop" ]; do
		"$lodectl" get --quiet /big "$dir/rd" || { echo "get failed" >>"$dir/reader.err"; break; }
		cmp -s "$dir/big" "$dir/rd" || { echo "bytes differ" >>"$dir/reader.err"; break; }
		n=$((n + 1))
		sleep 0.1 # leave the two cores some room
	done
	echo "$n" >"$dir/reads"
) &
reader=$!
head -c 20000000 /dev/urandom >"$dir/ckpt"
( head -c 10000000 "$dir/ckpt"; sleep 2; tail -c +10000001 "$dir/ckpt" ) |
	"$lodectl" put --quiet - /ckpt &
writer=$!
rc=0
"$lodectl" --json rebalance --rate 40 >"$dir/run.json" || rc=$?
touch "$dir/stop"
wait $reader
wait $writer || fail "the writer failed during the rebalance"
[ "$rc" = 0 ] || { cat "$dir/run.json"; fail "the second rebalance exited $rc"; }
[ ! -e "$dir/reader.err" ] || fail "the reader saw: $(cat "$dir/reader.err")"
echo "reader read /big $(cat "$dir/reads") times during the rebalance"
$py - "$dir/run.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
print("second run: %d copies, %d bytes moved; %d above the mean; %d moves of the killed run cleaned up"
      % (d["copies_moved"], d["bytes_moved"], d["bytes_above_mean"], d["moves_cleaned_up"]))
assert d["bytes_moved"] <= 1.2 * d["bytes_above_mean"], d
EOF

echo "every target within 5 points of the mean, as the targets report it"
ok=
for _ in $(seq 80); do
	if use_spread >"$dir/spread"; then ok=1; break; fi
	sleep 0.5
done
cat "$dir/spread"
[ -n "$ok" ] || fail "not balanced: $(cat "$dir/spread")"

echo "fsck clean, every file byte-exact"
"$lodectl" fsck >"$dir/out" 2>&1 || fail "fsck: $(cat "$dir/out")"
same() {
	"$lodectl" get --quiet "$1" "$dir/back" && cmp -s "$2" "$dir/back" && return
	cmp "$2" "$dir/back" || true
	"$lodectl" stat "$1" || true
	fail "$1 changed"
}
same /big "$dir/big"
same /ckpt "$dir/ckpt"
for i in $(seq "$n"); do same "/f$i" "$dir/f$i"; done
echo "a balanced cluster needs no move"
"$lodectl" --json rebalance --dry-run | $py -c '
import json, sys
d = json.load(sys.stdin)
assert d["moves_planned"] == 0, d'
echo "ok"
