#!/usr/bin/env bash
# fuse_ops.sh: where a single process's metadata and small-file calls through lode-fuse
# spend their time, and an A/B of mount options.
#
#   tools/bench/fuse_ops.sh [--opts OPTS]... [--count N] [--rounds N] [--detail] [--work DIR]
#
# One cluster (lode-mds and 3 lode-oss with metrics on loopback); for each round and each
# --opts in turn (default: namespace=lazy,data=lazy; give two to compare, e.g. the same
# plus io_uring), a fresh mount with those options, and one process, in a new directory:
# N creates (O_CREAT | O_EXCL, then close), N stats, N unlinks, N 64 KiB files written
# (create, write, close). Printed per phase: calls/s and microseconds per call; with
# --detail, the kernel's requests per call and the time each took in lode-fuse
# (lode_fuse_request_seconds_total), and the MDS's and each OSS's time per request
# (lode_request_duration_seconds): what is left of a call's time is the kernel's, the
# process's and the wakeups between them. Then, per options and phase, the median over
# the rounds. The machine should be otherwise idle.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${LODE_BUILD:-$root/build}
workbase=/var/tmp
opts=() count=2000 rounds=3 detail=0
num() { [[ $2 =~ ^[1-9][0-9]*$ ]] || { echo "fuse_ops.sh: $1 needs a positive number" >&2; exit 2; }; }
while (($#)); do
	case $1 in
	--opts) opts+=("${2:?--opts needs options}"); shift 2 ;;
	--count) num "$1" "${2:-}"; count=$2; shift 2 ;;
	--rounds) num "$1" "${2:-}"; rounds=$2; shift 2 ;;
	--detail) detail=1; shift ;;
	--work) workbase=${2:?--work needs a directory}; shift 2 ;;
	-h | --help) sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "fuse_ops.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
((${#opts[@]})) || opts=("namespace=lazy,data=lazy")
[[ $(id -u) == 0 ]] || { echo "fuse_ops.sh: needs root (mounts)" >&2; exit 2; }

. "$root/tools/bench/lode-cluster.sh"
bench_start fuse-ops
oss_metrics=1
lode_cluster_up --metrics 127.0.0.1:0 --metrics-port-file "$work/mds.metrics"
urls="M=http://$(cat "$work/mds.metrics")/metrics"
for i in 0 1 2; do
	bench_wait_file "$work/oss$i.metrics"
	urls+=" O$i=http://$(cat "$work/oss$i.metrics")/metrics"
done
log "fuse_ops: $count calls a phase, $rounds rounds of: ${opts[*]}"
results=$work/results
for ((r = 1; r <= rounds; r++)); do
	for k in "${!opts[@]}"; do
		m=$work/m$r.$k
		lode_mount "$m" -o "${opts[k]}" --metrics 127.0.0.1:0 --metrics-port-file "$m.metrics"
		lode_mounted "$m"
		bench_wait_file "$m.metrics"
		mkdir "$m/d$r.$k"
		sync
		# shellcheck disable=SC2086 # the metrics addresses are words
		python3 - "$m/d$r.$k" "$count" "$detail" "${opts[k]}" "$results" \
			"F=http://$(cat "$m.metrics")/metrics" $urls <<'PY'
import json, os, re, sys, time, urllib.request

d, n, detail, opts = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
results = open(sys.argv[5], "a")
urls = dict(a.split("=", 1) for a in sys.argv[6:])
pat = re.compile(r'^(lode_fuse_request(s_total|_seconds_total)'
                 r'|lode_request_duration_seconds_(sum|count))\{op="(\w+)"\} (\S+)$')


def snap():
    out = {}
    for who, url in urls.items():
        for line in urllib.request.urlopen(url).read().decode().splitlines():
            m = pat.match(line)
            if m:
                kind = "s" if m.group(1).endswith(("seconds_total", "_sum")) else "n"
                out[(who, m.group(4), kind)] = out.get((who, m.group(4), kind), 0) + float(m.group(5))
    return out


buf = os.urandom(65536)


def creates():
    for i in range(n):
        os.close(os.open(f"{d}/f{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))


def stats():
    for i in range(n):
        os.stat(f"{d}/f{i}")


def unlinks():
    for i in range(n):
        os.unlink(f"{d}/f{i}")


def writes():
    for i in range(n):
        fd = os.open(f"{d}/s{i}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, buf)
        os.close(fd)


for name, fn in (("creates", creates), ("stats", stats), ("unlinks", unlinks),
                 ("64KiB_writes", writes)):
    a = snap()
    t = time.perf_counter()
    fn()
    t = time.perf_counter() - t
    b = snap()
    print(json.dumps({"opts": opts, "phase": name, "per_s": n / t, "us": 1e6 * t / n}),
          file=results, flush=True)
    if detail:
        print(f"{opts} {name}: {n / t:.0f}/s, {1e6 * t / n:.1f} us a call")
        rows = {}
        for (who, op, kind), v in b.items():
            dv = v - a.get((who, op, kind), 0)
            if dv > 0:
                rows.setdefault((who, op), {})[kind] = dv
        for (who, op), v in sorted(rows.items(), key=lambda x: -x[1].get("s", 0)):
            cnt = v.get("n", 0)
            if cnt / n < 0.01:
                continue
            per = 1e6 * v.get("s", 0) / cnt if cnt else 0
            print(f"    {who:2} {op:14} {cnt / n:5.2f} a call x {per:8.1f} us")
PY
		timeout 30 umount "$m"
	done
done
python3 - "$results" <<'PY'
import json, statistics, sys

rows = [json.loads(l) for l in open(sys.argv[1])]
for r in rows:
    print(f"{r['opts']:40} {r['phase']:13} {r['per_s']:9.0f}/s {r['us']:8.1f} us")
print("\nmedians over the rounds")
seen = []
for r in rows:
    if (r["opts"], r["phase"]) not in seen:
        seen.append((r["opts"], r["phase"]))
for o, p in seen:
    v = [r["per_s"] for r in rows if r["opts"] == o and r["phase"] == p]
    print(f"{o:40} {p:13} {statistics.median(v):9.0f}/s  ({min(v):.0f}-{max(v):.0f}, {len(v)} runs)")
PY
