#!/usr/bin/env bash
# fsync-trace.sh: what an fsync() through the mount waits for, Lode next to MooseFS.
#
#   tools/bench/fsync-trace.sh [--files N] [--work DIR]
#
# One process writes N files (default 100) of 64 KiB through a mount after one more that
# is not counted (connections, perf settling), each: create, write, fsync, close, 50 ms
# of sleep (so what the servers do late for one file is not counted
# in the next one's fsync); then it waits 3 s. perf records, machine-wide, every ext4 file sync that
# ends (the ext4_sync_file_exit tracepoint: fsync and fdatasync, by system call or through
# io_uring) and the writer's fsync calls. Printed per system: the writer's fsync p50 and
# p99, and per file the servers' file syncs that ended while the writer's fsync waited,
# and those that ended at other times (a durable create's, a sync at close, or any in the
# 3 s after the last file). An fsync that makes the file durable has its servers' syncs
# in it.
#
# Lode: lode-mds, 3 lode-oss and a lode-fuse mount (durable namespace and data, 2 copies),
# then a second one with -o namespace=lazy,data=lazy (docs/fuse.md: MooseFS's contract).
# MooseFS: tools/bench/peers/moosefs.sh (goal 1), with its chunkservers' default
# configuration, then with HDD_FSYNC_BEFORE_CLOSE = 1.
# Needs root, perf (Debian's linux-perf), ext4 under --work (default /var/tmp) and a build
# in build/ (LODE_BUILD=dir); builds nothing. Everything started is stopped on exit, also
# on failure.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${LODE_BUILD:-$root/build}
files=100 workbase=/var/tmp
while (($#)); do
	case $1 in
	--files)
		[[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "fsync-trace.sh: --files needs a positive number" >&2; exit 2; }
		files=$2; shift 2 ;;
	--work) workbase=${2:?--work needs a directory}; shift 2 ;;
	-h | --help) sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "fsync-trace.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
[[ $(id -u) == 0 ]] || { echo "fsync-trace.sh: needs root (mounts, perf, namespaces)" >&2; exit 2; }
command -v perf >/dev/null || { echo "fsync-trace.sh: needs perf (apt-get install linux-perf)" >&2; exit 2; }
[[ $(stat -f -c %T "$workbase") == ext2/ext3 ]] ||
	{ echo "fsync-trace.sh: $workbase is not ext4 (its sync tracepoint is what is counted)" >&2; exit 2; }
for f in mds/lode-mds oss/lode-oss tools/lodectl client/fuse/lode-fuse; do
	[[ -x $build/$f ]] || { echo "fsync-trace.sh: $build/$f missing: build first" >&2; exit 2; }
done

. "$root/tools/bench/lode-cluster.sh"
bench_start fsync-trace
mfs_dir=""
moosefs_down() { [[ -z $mfs_dir ]] || "$root/tools/bench/peers/moosefs.sh" down "$mfs_dir" >/dev/null 2>&1; }
bench_teardown=moosefs_down

cat >"$work/writer.py" <<'EOF'
import os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
with open(sys.argv[3], "w") as f:  # whose fsyncs are counted
    f.write("%d\n" % os.getpid())
os.makedirs(d, exist_ok=True)
buf = os.urandom(65536)
for i in range(n + 1):  # the first is not counted
    fd = os.open(os.path.join(d, "f%05d" % i), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    os.write(fd, buf)
    os.fsync(fd)
    os.close(fd)
    time.sleep(0.05)  # what a server does late for this file happens before the next
time.sleep(3)
EOF

# analyze PERF-SCRIPT-OUTPUT WRITER-PID SERVER-PIDS...: one line of figures
cat >"$work/analyze.py" <<'EOF'
import re, sys
lines, writer = open(sys.argv[1]), int(sys.argv[2])
servers = set(int(p) for p in sys.argv[3:])
ev = re.compile(r"^\s*(\S.*?)\s+(\d+)/(\d+)\s+([\d.]+):\s+(\S+):")
start, windows, syncs = None, [], []
for line in lines:
    m = ev.match(line)
    if not m:
        continue
    comm, pid, t, name = m.group(1), int(m.group(2)), float(m.group(4)), m.group(5)
    if name == "syscalls:sys_enter_fsync" and pid == writer:
        start = t
    elif name == "syscalls:sys_exit_fsync" and pid == writer and start is not None:
        windows.append((start, t))
        start = None
    elif name == "ext4:ext4_sync_file_exit" and pid in servers:
        syncs.append(t)
windows = windows[1:]  # the first file's: connections opened, perf settling
syncs = [s for s in syncs if windows and s > windows[0][0] - 0.01]  # its create, not before
n = len(windows)
if not n:
    sys.exit("analyze: no fsync of the writer in the trace")
during = sum(1 for s in syncs if any(a <= s <= b for a, b in windows))
after = len(syncs) - during
lat = sorted(b - a for a, b in windows)
pct = lambda p: lat[int(round(p / 100.0 * (n - 1)))] * 1e3  # as storm.py
print("%6d %10.2f %10.2f %14.2f %14.2f" % (n, pct(50), pct(99), during / n, after / n))
EOF

# trace NAME DIR PID...: the writer in DIR under perf; prints NAME and its figures
trace() {
	local name=$1 d=$2
	shift 2
	local f=$work/trace.$RANDOM
	perf record -q -a -o "$f.perf" -e ext4:ext4_sync_file_exit \
		-e syscalls:sys_enter_fsync -e syscalls:sys_exit_fsync -- \
		python3 "$work/writer.py" "$d" "$files" "$f.pid" >/dev/null 2>"$f.log" ||
		{ echo "fsync-trace.sh: perf record failed for $name: $(tail -5 "$f.log")" >&2; exit 1; }
	if grep -qi "lost" "$f.log"; then
		echo "fsync-trace.sh: perf lost events for $name: $(grep -i lost "$f.log")" >&2
		exit 1
	fi
	perf script -i "$f.perf" -F comm,pid,tid,time,event >"$f.txt" 2>>"$f.log" ||
		{ echo "fsync-trace.sh: perf script failed: $(tail -5 "$f.log")" >&2; exit 1; }
	printf '%-44s %s\n' "$name" "$(python3 "$work/analyze.py" "$f.txt" "$(cat "$f.pid")" "$@")"
}

printf '# fsync-trace: %d files of 64 KiB, each created, written, fsynced and closed by one process through the mount\n' "$files"
printf '# %s %s, %d CPUs; Lode %s; MooseFS %s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$(uname -r)" "$(nproc)" \
	"$(git -C "$root" describe --always --dirty 2>/dev/null || echo '?')" \
	"$(dpkg-query -W -f '${Version}' moosefs-master 2>/dev/null || echo '?')"
printf '%-44s %6s %10s %10s %14s %14s\n' system fsyncs 'p50 ms' 'p99 ms' 'syncs in fsync' 'other syncs'

log "Lode: lode-mds, 3 lode-oss, a durable mount and a lazy one under $work"
lode_cluster_up
lode_mount "$work/lode"
lode_mount "$work/lazy" -o namespace=lazy,data=lazy
lode_mounted "$work/lode" "$work/lazy"
trace "Lode (2 copies, durable namespace)" "$work/lode/t" "${pids[@]}"
trace "Lode (2 copies, namespace,data=lazy)" "$work/lazy/tl" "${pids[@]}"

for conf in "" "HDD_FSYNC_BEFORE_CLOSE = 1"; do
	log "MooseFS: goal 1${conf:+, $conf}"
	mfs_dir=$work/mfs
	m=$(MFS_GOAL=1 MFS_CS_CONF=$conf "$root/tools/bench/peers/moosefs.sh" up "$mfs_dir")
	mfs_pids=$(pgrep -f "$mfs_dir/" | tr '\n' ' ' || true)
	[[ -n $mfs_pids ]] || { echo "fsync-trace.sh: no MooseFS server found under $mfs_dir" >&2; exit 1; }
	# shellcheck disable=SC2086
	trace "MooseFS (goal 1${conf:+, ${conf// /}})" "$m/t" $mfs_pids
	moosefs_down
	mfs_dir=""
done
log "done"
