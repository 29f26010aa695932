#!/usr/bin/env bash
# Metrics, as an operator gets them: a local cluster (lode-mds, two lode-oss, a lode-fuse
# mount) each serving --metrics on loopback, scraped every second by a real Prometheus from
# Debian's package. Under load (files written and read through lodectl and the mount), the
# test asks Prometheus's HTTP API whether the counters moved and whether every histogram is
# consistent (buckets never decrease, +Inf equals _count), and `promtool check metrics`
# must accept each endpoint's text.
set -euo pipefail
mds_bin=${LODE_MDS_BIN:?}
oss_bin=${LODE_OSS_BIN:?}
fuse_bin=${LODE_FUSE:-}
LODE_TEST_NAME=metrics
command -v prometheus >/dev/null && command -v promtool >/dev/null || {
	echo "SKIP: prometheus (with promtool) is not installed (tools/install-deps.sh)"
	exit 77
}
command -v curl >/dev/null || {
	echo "SKIP: curl is not installed"
	exit 77
}
. "$(dirname "$0")/lib.sh"

pids=()
mnt=
stop_all() {
	set +e
	if [ -n "$mnt" ] && findmnt -M "$mnt" >/dev/null; then
		fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"
	fi
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill "${pids[i]}" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		timeout 10 tail --pid="$p" -f /dev/null 2>/dev/null || kill -9 "$p" 2>/dev/null
	done
	cleanup
}
trap stop_all EXIT

# wait_file FILE: until a daemon wrote it (its port file), at most 10 s.
wait_file() {
	for _ in $(seq 100); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	fail "$1 was not written; logs: $(tail -n 5 "$dir"/*.log)"
}

echo "== a cluster with --metrics on every daemon"
"$lodectl" key generate "$dir/cluster.key"
export LODE_KEY_FILE=$dir/cluster.key
"$mds_bin" --data "$dir/mds" --listen tcp://127.0.0.1:0 --port-file "$dir/mds.addr" --key "$LODE_KEY_FILE" \
	--metrics 127.0.0.1:0 --metrics-port-file "$dir/mds.metrics" 2>"$dir/mds.log" &
pids+=($!)
daemons=("$!:mds")
wait_file "$dir/mds.addr"
wait_file "$dir/mds.metrics"
mds=$(cat "$dir/mds.addr")
export LODE_MDS=$mds
for i in 0 1; do
	"$oss_bin" --data "$dir/oss$i" --listen tcp://127.0.0.1:0 --mds "$mds" --key "$LODE_KEY_FILE" \
		--port-file "$dir/oss$i.addr" --metrics 127.0.0.1:0 \
		--metrics-port-file "$dir/oss$i.metrics" 2>"$dir/oss$i.log" &
	pids+=($!)
	daemons=("$!:oss$i" "${daemons[@]}")
	wait_file "$dir/oss$i.metrics"
done
for _ in $(seq 100); do
	[ "$("$lodectl" status 2>/dev/null | grep -c ' up ')" -ge 2 ] && break
	sleep 0.1
done
grep -q "metrics on http://127.0.0.1:[0-9]*/metrics" "$dir/mds.log" ||
	fail "lode-mds did not say where its metrics are: $(cat "$dir/mds.log")"

# the mount, when FUSE can be used here
# job:HOST:PORT, the job names docs/metrics.md and the Grafana dashboard expect
targets=("lode-mds:$(cat "$dir/mds.metrics")" "lode-oss:$(cat "$dir/oss0.metrics")"
	"lode-oss:$(cat "$dir/oss1.metrics")")
fuse_why=
if [ -z "$fuse_bin" ]; then
	fuse_why="lode-fuse was not built"
elif [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
	fuse_why="no /dev/fuse or fusermount3"
else
	mkdir "$dir/mnt"
	# -o metrics=, as fstab and mount -t lode give it
	"$fuse_bin" --mds "$mds" "$dir/mnt" -f -o metrics=127.0.0.1:0 \
		--metrics-port-file "$dir/fuse.metrics" 2>"$dir/fuse.log" &
	pids+=($!)
	fuse_pid=$!
	for _ in $(seq 100); do
		mountpoint -q "$dir/mnt" && break
		kill -0 "${pids[-1]}" 2>/dev/null || break
		sleep 0.1
	done
	if mountpoint -q "$dir/mnt"; then
		mnt=$dir/mnt
		wait_file "$dir/fuse.metrics"
		targets+=("lode-fuse:$(cat "$dir/fuse.metrics")")
	else
		fuse_why="lode-fuse could not mount here: $(tail -n 3 "$dir/fuse.log")"
	fi
fi
[ -z "$fuse_why" ] || echo "NOTE: lode-fuse's metrics are not tested: $fuse_why"

echo "== a Prometheus scraping them every second"
{
	printf 'global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n'
	for job in lode-mds lode-oss lode-fuse; do
		list=
		for t in "${targets[@]}"; do
			[ "${t%%:*}" = "$job" ] && list+="'${t#*:}', "
		done
		[ -n "$list" ] || continue
		printf '  - job_name: %s\n    static_configs:\n      - targets: [%s]\n' \
			"$job" "${list%, }"
	done
} >"$dir/prometheus.yml"
promtool check config "$dir/prometheus.yml" >/dev/null || fail "generated config refused"
prom=
for attempt in 1 2 3; do
	# a free port: Prometheus cannot say which one it took for :0
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
		--web.listen-address="127.0.0.1:$port" --log.level=warn \
		>"$dir/prometheus.log" 2>&1 &
	ppid=$!
	for _ in $(seq 100); do
		if curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1; then
			prom=http://127.0.0.1:$port
			break
		fi
		kill -0 "$ppid" 2>/dev/null || break
		sleep 0.1
	done
	if [ -n "$prom" ]; then
		pids+=("$ppid")
		break
	fi
	kill "$ppid" 2>/dev/null || true
	wait "$ppid" 2>/dev/null || true
done
[ -n "$prom" ] || fail "Prometheus did not start: $(tail -n 5 "$dir/prometheus.log")"

# query EXPR: the instant vector as JSON lines "labels<TAB>value".
query() { # EXPR [TIME]: evaluated now, or at TIME (seconds since the epoch)
	curl -sf --get "$prom/api/v1/query" --data-urlencode "query=$1" \
		${2:+--data-urlencode "time=$2"} | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["status"] == "success", r
for s in r["data"]["result"]:
    print(json.dumps(s["metric"], sort_keys=True) + "\t" + s["value"][1])'
}
# value EXPR: the single value of a scalar-like query, or "none".
value() {
	local v
	v=$(query "$1" | cut -f2)
	echo "${v:-none}"
}
# wait_true EXPR WHAT: until EXPR yields a sample (a comparison that holds), at most 20 s.
wait_true() {
	for _ in $(seq 80); do
		[ -n "$(query "$1")" ] && return 0
		sleep 0.25
	done
	fail "$2 (query: $1 = $(query "${1%%>*}" | tr '\n' ' '))"
}

ntargets=${#targets[@]}
wait_true "count(up == 1) == $ntargets" "Prometheus does not see every endpoint up"
before=$(value 'sum(lode_requests_total{job="lode-mds"})')
[ "$before" != none ] || before=0

echo "== load: files written and read through lodectl and the mount"
head -c $((24 << 20)) /dev/urandom >"$dir/big"
"$lodectl" mkdir /m
"$lodectl" put "$dir/big" /m/big
"$lodectl" get /m/big "$dir/back"
cmp "$dir/big" "$dir/back" || fail "data read back differs"
# the OSS's page cache forgets big's objects: read again, they come from the disk past it
direct=0
if grep -q "direct reads: on" "$dir/oss0.log"; then
	direct=1
	/usr/bin/python3 - "$dir"/oss*/objects/*/* <<-'EOF'
	import os, sys
	for p in sys.argv[1:]:
	    fd = os.open(p, os.O_RDONLY)
	    os.fdatasync(fd)
	    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
	    os.close(fd)
	EOF
	rm "$dir/back"
	"$lodectl" get /m/big "$dir/back"
	cmp "$dir/big" "$dir/back" || fail "data read back past the OSS's page cache differs"
else
	echo "direct reads are off here ($(grep -o 'direct reads: .*' "$dir/oss0.log")): not checked"
fi
for i in $(seq 20); do
	"$lodectl" mkdir "/m/d$i"
done
# small files, one at a time: each copy's write finds its OSS loop idle and is made there
head -c 65536 /dev/urandom >"$dir/tiny"
for i in 1 2 3 4; do
	"$lodectl" put "$dir/tiny" "/m/tiny$i"
done
"$lodectl" stat /m/nothing-here >/dev/null 2>&1 && fail "stat of a missing file succeeded"
if [ -n "$mnt" ]; then
	head -c $((8 << 20)) /dev/urandom >"$dir/small"
	cp "$dir/small" "$mnt/m/via-mount"
	# O_DIRECT, 1 MiB at a time, sequential: past the page cache, and read ahead by liblode
	dd if="$mnt/m/big" of="$dir/back2" bs=1M iflag=direct status=none
	cmp "$dir/big" "$dir/back2" || fail "data read through the mount differs"
	cmp "$dir/small" "$mnt/m/via-mount" || fail "data written through the mount differs"
	cat "$mnt/m/via-mount" >/dev/null
	ls "$mnt/m/not-there" >/dev/null 2>&1 && fail "a missing name was found"
fi

echo "== the counters moved, as Prometheus scraped them"
wait_true "sum(lode_requests_total{job=\"lode-mds\"}) > $before" "MDS requests did not move"
wait_true 'lode_requests_total{job="lode-mds",op="create"} > 0' "no CREATE counted"
wait_true 'sum(lode_request_errors_total{job="lode-mds",op="lookup"}) > 0' \
	"the failed lookup was not counted as an error"
wait_true "sum(lode_oss_written_bytes_total) >= $((24 << 20))" "OSS written bytes"
wait_true "sum(lode_oss_read_bytes_total) >= $((24 << 20))" "OSS read bytes"
wait_true "sum(lode_oss_inline_written_bytes_total) >= 65536" "no small write made on a worker's thread"
wait_true 'sum(lode_oss_inline_write_seconds_total) > 0' "inline writes' time"
if ((direct)); then
	wait_true "sum(lode_oss_read_direct_bytes_total) >= $((16 << 20))" "OSS direct read bytes"
fi
wait_true 'sum(lode_requests_total{job="lode-oss",op="obj_write"}) > 0' "no OBJ_WRITE counted"
wait_true 'sum(lode_network_receive_bytes_total{job="lode-oss",op="obj_write"}) > 0' \
	"OSS received bytes"
wait_true 'lode_mds_targets{state="up"} == 2' "the MDS does not show both targets up"
wait_true 'count(lode_mds_target_capacity_bytes > 0) == 2' "target capacity"
wait_true 'count(lode_mds_target_up == 1) == 2' "target state"
wait_true 'lode_mds_commit_batch_size_count > 0' "no group commit counted"
wait_true 'lode_mds_degraded_copies == 0 and lode_mds_degraded_files == 0' \
	"a healthy cluster shows degraded copies"
wait_true 'count(lode_requests_in_flight >= 0) == 3' "requests in flight"
if [ -n "$mnt" ]; then
	wait_true "lode_fuse_read_bytes_total >= $((24 << 20))" "lode-fuse read bytes"
	wait_true "lode_fuse_written_bytes_total >= $((8 << 20))" "lode-fuse written bytes"
	wait_true 'lode_fuse_readahead_hit_bytes_total > 0' \
		"lode-fuse's sequential O_DIRECT read was never served from read-ahead"
	wait_true 'lode_fuse_read_duration_seconds_count > 0' "lode-fuse read latency"
	wait_true 'sum(lode_fuse_page_cache_opens_total) > 0' "lode-fuse opens"
	wait_true 'lode_fuse_errors_total{errno="ENOENT"} > 0' "lode-fuse ENOENT"
fi

echo "== every histogram is consistent"
for h in lode_request_duration_seconds lode_mds_commit_batch_size \
	lode_fuse_read_duration_seconds; do
	# both at one instant: the same scrape, not a bucket from one and a count from the next
	at=$(date +%s.%N)
	query "${h}_bucket" "$at" >"$dir/buckets"
	query "${h}_count" "$at" >"$dir/counts"
	if [ "$h" = lode_fuse_read_duration_seconds ] && [ -z "$mnt" ]; then
		continue
	fi
	[ -s "$dir/buckets" ] || fail "no $h buckets in Prometheus"
	python3 - "$h" "$dir/buckets" "$dir/counts" <<'EOF' || fail "$h is inconsistent"
import json, sys
name, buckets, counts = sys.argv[1:]
series = {}
for line in open(buckets):
    labels, v = line.rstrip("\n").split("\t")
    m = json.loads(labels)
    le = m.pop("le")
    m.pop("__name__", None)
    series.setdefault(json.dumps(m, sort_keys=True), []).append((float(le), float(v)))
total = {}
for line in open(counts):
    labels, v = line.rstrip("\n").split("\t")
    m = json.loads(labels)
    m.pop("__name__", None)
    total[json.dumps(m, sort_keys=True)] = float(v)
assert series, "no series"
for key, b in series.items():
    b.sort()
    vals = [v for _, v in b]
    assert b[-1][0] == float("inf"), (key, "no +Inf bucket")
    assert all(x <= y for x, y in zip(vals, vals[1:])), (key, "buckets decrease", b)
    assert key in total, (key, "no _count")
    assert vals[-1] == total[key], (key, "+Inf", vals[-1], "!= _count", total[key])
print(f"{name}: {len(series)} series consistent")
EOF
done

echo "== promtool accepts every endpoint"
for t in "${targets[@]}"; do
	curl -sf "http://${t#*:}/metrics" >"$dir/scrape" || fail "GET /metrics of ${t%%:*}"
	promtool check metrics <"$dir/scrape" >"$dir/promtool.out" 2>&1 ||
		fail "promtool refused ${t%%:*}'s metrics: $(cat "$dir/promtool.out")"
	[ ! -s "$dir/promtool.out" ] || fail "promtool: $(cat "$dir/promtool.out")"
done
echo "== the docs name every metric served, the dashboard uses only those, and Prometheus"
echo "   accepts each of the dashboard's queries"
src=$(cd "$(dirname "$0")/../.." && pwd)
for t in "${targets[@]}"; do
	curl -sf "http://${t#*:}/metrics"
done | sed -n 's/^# TYPE \([a-z_]*\) .*/\1/p' | sort -u >"$dir/families"
while read -r fam; do
	grep -q "\`$fam\`" "$src/docs/metrics.md" || fail "$fam is not in docs/metrics.md"
done <"$dir/families"
python3 - "$src/deploy/grafana/lode.json" "$dir/families" "$prom" <<'EOF' ||
import json, re, sys, urllib.parse, urllib.request
dash, fams, prom = sys.argv[1:]
known = set(open(fams).read().split())
exprs = []
def walk(panels):
    for p in panels:
        walk(p.get("panels", []))
        exprs.extend(t["expr"] for t in p.get("targets", []))
walk(json.load(open(dash))["panels"])
assert exprs, "no queries in the dashboard"
for e in exprs:
    for name in re.findall(r"\blode_[a-z_]+", e):
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in known or base in known, f"{name} is served by no endpoint"
    q = (e.replace("$mds_job", "lode-mds").replace("$oss_job", "lode-oss")
          .replace("$fuse_job", "lode-fuse").replace("$__rate_interval", "5s")
          .replace("$__range", "1m"))
    url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    r = json.load(urllib.request.urlopen(url))
    assert r["status"] == "success", (q, r)
print(f"dashboard: {len(exprs)} queries, all accepted")
EOF
	fail "the Grafana dashboard does not match what is served"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://$(cat "$dir/mds.metrics")/other")
[ "$code" = 404 ] || fail "GET /other answered $code, not 404"

echo "== --metrics refuses a bad address with a reason"
if "$mds_bin" --data "$dir/mds2" --listen tcp://127.0.0.1:0 --insecure --metrics nonsense \
	2>"$dir/bad.err"; then
	fail "lode-mds started with --metrics nonsense"
fi
grep -q "HOST:PORT" "$dir/bad.err" || fail "no reason: $(cat "$dir/bad.err")"

echo "== every program stops cleanly (exit 0; under ASan, no leak or error either)"
if [ -n "$mnt" ]; then
	fusermount3 -u "$mnt" || fail "cannot unmount"
	mnt=
	rc=0
	wait "$fuse_pid" || rc=$?
	[ $rc -eq 0 ] || fail "lode-fuse exited $rc: $(tail -n 20 "$dir/fuse.log")"
fi
for d in "${daemons[@]}"; do
	kill -TERM "${d%%:*}"
	rc=0
	wait "${d%%:*}" || rc=$?
	[ $rc -eq 0 ] || fail "${d#*:} exited $rc: $(tail -n 20 "$dir/${d#*:}.log")"
done
echo "PASS"
