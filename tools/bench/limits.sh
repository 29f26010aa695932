#!/usr/bin/env bash
# limits.sh: where the CPU and the disk go during the figures of tools/bench/run.sh that
# miss their targets, so that docs/benchmarks.md can say what limits each with numbers.
#
#   tools/bench/limits.sh [--size-gib N] [--work DIR] [--peer NAME=MOUNT]... [--perf]
#
# 1. One core's per-byte and per-operation costs: memcpy, xxh3 (lode_chunk_sum) on a
#    cache-resident and on a 16 MiB buffer, 4 KiB write + fdatasync on the work disk.
# 2. Loopback TCP with the costs of a Lode read added one by one: plain (the run's
#    baseline), the receiver checksumming every 64 KiB chunk, the sender splicing from a
#    file in the page cache (as lode-oss sends), both; and the sender pread()ing the file
#    into its buffer instead of splicing it.
# 3. A local cluster (MDS + 3 OSS + lode-fuse, as run.sh starts it) and, for each --peer,
#    its mount: sequential write, cold read, OSS-warm read (liblode; the mount with and
#    without O_DIRECT), creates and small files. For each: the rate, the whole machine's
#    CPU per GiB (or per operation) split into user, system and irq+softirq, each server
#    process's and the client's share (and its busiest thread), and what the disk did
#    (bytes read and written per byte moved, mean request size and read latency, how busy
#    it was and how many requests it had in flight; writes per operation).
# --perf: also samples the liblode OSS-warm read and the 2-copy write with perf (whole
# machine) and prints where the cycles go by process, by shared object and by symbol.
#
# Needs root and a build (LODE_BUILD, default build/). Everything it starts is stopped on
# exit. Figures are single runs: run it on a quiet machine.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${LODE_BUILD:-$root/build}
bench=$build/tools/bench
size_mib=4096
workbase=/var/tmp
peers=()
do_perf=0
while (($#)); do
	case $1 in
	--size-gib) size_mib=$(($2 * 1024)); shift 2 ;;
	--work) workbase=$2; shift 2 ;;
	--peer) [[ ${2:-} == *=* && -d ${2#*=} ]] || { echo "limits.sh: --peer NAME=MOUNT" >&2; exit 2; }; peers+=("$2"); shift 2 ;;
	--perf) do_perf=1; shift ;;
	*) sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
	esac
done
[[ $(id -u) == 0 ]] || { echo "limits.sh: needs root" >&2; exit 2; }
for f in micro tcp_pair fs_io lode_io; do [[ -x $bench/$f ]] || { echo "limits.sh: $bench/$f missing" >&2; exit 2; }; done
size=$((size_mib << 20))
disk=$(basename "$(df -P "$workbase" | awk 'NR == 2 { print $1 }')")
[[ -r /sys/block/$disk/stat ]] || disk=$(lsblk -no pkname "$(df -P "$workbase" | awk 'NR == 2 { print $1 }')" 2>/dev/null | head -1)
[[ -r /sys/block/$disk/stat ]] || { echo "limits.sh: cannot find the block device under $workbase" >&2; exit 2; }
hz=$(getconf CLK_TCK)
work=$(mktemp -d "$workbase/lode-limits.XXXXXX")
mnt=$work/mnt
fuse_pid=""

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n $fuse_pid ]] && findmnt -M "$mnt" >/dev/null; then
		fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" || true
	fi
	mountpoint -q "$work/tmpfs" 2>/dev/null && umount "$work/tmpfs"
	[[ -d $work/cluster ]] && { "$build/tools/lodectl" local down "$work/cluster" >/dev/null 2>&1 || true; }
	for p in "${peers[@]}"; do rm -rf "${p#*=}/lode-limits.$$"; done
	if ! grep -q " $work/" /proc/mounts; then rm -rf "$work"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

drop_all() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# user+nice, system, irq+softirq, busy (all but idle and iowait, as run.sh counts), steal
cpu_split() { awk '/^cpu /{ print $2 + $3, $4, $7 + $8, $2 + $3 + $4 + $7 + $8 + $9, $9; exit }' /proc/stat; }
# sectors read, reads, sectors written, writes, flushes, ms reading, ms busy, ms x requests
disk_stat() { awk '{ print $3, $1, $7, $5, ($15 == "" ? 0 : $15), $4, $10, $11 }' "/sys/block/$disk/stat"; }
pcpu() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# "task-stat-path jiffies" for every thread of PID
threads() { awk '{ f = FILENAME; sub(/.*\) /, ""); print f, $12 + $13 }' /proc/"$1"/task/*/stat 2>/dev/null || true; }
# the busiest thread between two threads() listings: "comm:jiffies"
busiest() {
	awk 'NR == FNR { a[$1] = $2; next } { d = $2 - a[$1]; if (d > m) { m = d; t = $1 } }
		END { if (t == "") { print "-:0"; exit } sub(/stat$/, "comm", t); getline c < t; gsub(/[ :]/, "_", c); print c ":" m }' "$1" "$2"
}

procs=() # "name=pid" of the servers and clients whose CPU is split out
set_procs() { procs=("$@"); }

# measure LABEL UNIT CMD...: UNIT is "bytes" (the command prints bytes=) or "ops:N"
measure() {
	local label=$1 unit=$2 c0 c1 d0 d1 p0=() p1=() out t i per pr
	shift 2
	for ((i = 0; i < ${#procs[@]}; i++)); do
		p0+=("$(pcpu "${procs[i]#*=}")")
		threads "${procs[i]#*=}" >"$work/th.$i"
	done
	c0=$(cpu_split) d0=$(disk_stat)
	t=$({ TIMEFORMAT='%R %U %S'; time "$@" >"$work/out" 2>"$work/err"; } 2>&1) || {
		echo "limits.sh: $label failed:" >&2; cat "$work/err" >&2; return 1; }
	c1=$(cpu_split) d1=$(disk_stat)
	for i in "${procs[@]}"; do p1+=("$(pcpu "${i#*=}")"); done
	out=$(cat "$work/out")
	pr=""
	for ((i = 0; i < ${#procs[@]}; i++)); do
		threads "${procs[i]#*=}" >"$work/th1.$i"
		pr+=" ${procs[i]%%=*}=$((${p1[i]} - ${p0[i]}))=$(busiest "$work/th.$i" "$work/th1.$i")"
	done
	awk -v label="$label" -v unit="$unit" -v out="$out" -v t="$t" -v c0="$c0" -v c1="$c1" \
		-v d0="$d0" -v d1="$d1" -v hz="$hz" -v pr="$pr" '
	BEGIN {
		split(t, T, " "); split(c0, A, " "); split(c1, B, " "); split(d0, D, " "); split(d1, E, " ")
		if (unit == "bytes") {
			match(out, /bytes=[0-9]+/); n = substr(out, RSTART + 6, RLENGTH - 6) + 0
			match(out, /seconds=[0-9.]+/); s = substr(out, RSTART + 8, RLENGTH - 8) + 0
			per = n / 2^30; pu = "CPU s/GiB"; k = 1
			printf "%s: %.3f GB/s (%.2f s)\n", label, n / s / 1e9, s
		} else {
			n = substr(unit, 5) + 0; per = n; pu = "CPU ms/op"; k = 1000
			printf "%s: %s\n", label, out
		}
		printf "  %s: whole machine %.3g (user %.3g, system %.3g, irq+softirq %.3g, steal %.3g); the command %.3g (user %.3g, system %.3g)",
			pu, k * (B[4] - A[4]) / hz / per, k * (B[1] - A[1]) / hz / per, k * (B[2] - A[2]) / hz / per,
			k * (B[3] - A[3]) / hz / per, k * (B[5] - A[5]) / hz / per, k * (T[2] + T[3]) / per, k * T[2] / per, k * T[3] / per
		if (match(out, /busiest_thread=[^ ]+/)) {
			split(substr(out, RSTART + 15, RLENGTH - 15), W, ":")
			printf " [busiest thread %s: %.0f%% of the wall time]", W[1], 100 * W[2] / T[1]
		}
		np = split(pr, P, " ")
		for (i = 1; i <= np; i++) {
			split(P[i], Q, "="); split(Q[3], W, ":")
			printf "; %s %.3g", Q[1], k * Q[2] / hz / per
			if (W[2] / hz / T[1] >= 0.2) printf " [busiest thread %s: %.0f%%]", W[1], 100 * W[2] / hz / T[1]
		}
		printf "\n"
		rs = (E[1] - D[1]) * 512; ws = (E[3] - D[3]) * 512
		if (unit == "bytes")
			printf "  disk: read %.2f B and wrote %.2f B per B moved; mean read %.0f KiB (%.1f ms), mean write %.0f KiB; busy %.0f%% of the time, %.1f requests in flight on average\n",
				rs / n, ws / n, (E[2] > D[2]) ? rs / (E[2] - D[2]) / 1024 : 0,
				(E[2] > D[2]) ? (E[6] - D[6]) / (E[2] - D[2]) : 0,
				(E[4] > D[4]) ? ws / (E[4] - D[4]) / 1024 : 0, (E[7] - D[7]) / (T[1] * 10), (E[8] - D[8]) / (T[1] * 1000)
		else
			printf "  disk per op: %.2f writes, %.1f KiB written, %.2f flushes\n",
				(E[4] - D[4]) / n, ws / n / 1024, (E[5] - D[5]) / n
	}'
}

# perf_of LABEL CMD...: where the cycles of both cores go while CMD runs (--perf only)
perf_of() {
	local label=$1
	shift
	((do_perf)) && command -v perf >/dev/null || return 0
	perf record -q -a -F 999 -o "$work/perf.data" -- "$@" >/dev/null 2>&1 || return 0
	echo "  perf, $label: share of all samples (both cores) by process"
	perf report -i "$work/perf.data" --sort comm --stdio 2>/dev/null | grep '%' | sed -n '1,8s/^/    /p' || true
	echo "  by shared object (kernel, libxxhash, libc, ...), over all processes"
	perf report -i "$work/perf.data" --sort dso --stdio 2>/dev/null | grep '%' | sed -n '1,6s/^/    /p' || true
	echo "  by process and symbol (top 20)"
	perf report -i "$work/perf.data" --sort comm,dso,sym --stdio 2>/dev/null | grep '%' | sed -n '1,20s/^/    /p' || true
	rm -f "$work/perf.data"
}

echo "limits.sh: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, kernel $(uname -r), disk $disk, $size_mib MiB"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# ---------------------------------------------------------------- 1. one core
echo "== one core"
measure "memcpy, 16 MiB buffers" bytes "$bench/micro" memcpy --size 8G
measure "xxh3 (lode_chunk_sum), 16 MiB buffer" bytes "$bench/micro" xxh3 --size 8G
measure "4 KiB write + fdatasync on $workbase" ops:2000 "$bench/micro" fsync --count 2000 "$work"
# writing into fresh page-cache pages (what an OSS's buffered write does), without a disk
mkdir -p "$work/tmpfs"
mount -t tmpfs -o size=$((size_mib + 256))m lode-limits-tmpfs "$work/tmpfs"
measure "write() into tmpfs (page-cache copy, no disk)" bytes "$bench/fs_io" write --size "$size" "$work/tmpfs/f"
umount "$work/tmpfs"

# ---------------------------------------------------------------- 2. loopback
echo "== loopback TCP, $size_mib MiB, 1 MiB blocks"
"$bench/fs_io" write --size "$size" "$work/spliced" >/dev/null
"$bench/fs_io" read "$work/spliced" >/dev/null # in the page cache, as an OSS-warm object
measure "tcp_pair (write -> read)" bytes "$bench/tcp_pair" --size "$size"
measure "tcp_pair, receiver checksums" bytes "$bench/tcp_pair" --size "$size" --verify
measure "tcp_pair, sender splices a cached file" bytes "$bench/tcp_pair" --size "$size" --splice "$work/spliced"
measure "tcp_pair, splice + checksums" bytes "$bench/tcp_pair" --size "$size" --splice "$work/spliced" --verify
measure "tcp_pair, sender preads a cached file and writes it" bytes "$bench/tcp_pair" --size "$size" --pread "$work/spliced"
measure "tcp_pair, pread + write + checksums" bytes "$bench/tcp_pair" --size "$size" --pread "$work/spliced" --verify
rm -f "$work/spliced"

# ---------------------------------------------------------------- 3. the disk alone
echo "== the disk alone, cold"
"$bench/fs_io" write --fsync --size "$size" "$work/big" >/dev/null
parts=()
for i in 0 1 2; do parts+=("$work/part$i"); done
"$bench/fs_io" write --fsync --size $((size / 3)) "${parts[@]}" >/dev/null
drop_all
measure "disk read, 1 file, 1 reader" bytes "$bench/fs_io" read "$work/big"
drop_all
measure "disk read, 3 files of 1/3, 3 readers at once (3 OSS)" bytes "$bench/fs_io" read --threads 3 "${parts[@]}"
rm -f "$work/big" "${parts[@]}"
measure "disk write + fsync, 1 writer" bytes "$bench/fs_io" write --fsync --size "$size" "$work/big"
rm -f "$work/big"

# ---------------------------------------------------------------- 4. Lode
echo "== Lode: MDS + 3 OSS on loopback, lode-fuse"
mds=$("$build/tools/lodectl" local up "$work/cluster" --oss 3 --orphan-grace 1)
export LODE_KEY_FILE=$work/cluster/cluster.key
export LODE_MDS=$mds
mkdir -p "$mnt"
"$build/client/fuse/lode-fuse" -f --mds "$mds" "$mnt" 2>"$work/lode-fuse.log" &
fuse_pid=$!
for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
mountpoint -q "$mnt" || { echo "limits.sh: lode-fuse did not mount" >&2; exit 1; }
"$build/tools/lodectl" mkdir /m1 >/dev/null
"$build/tools/lodectl" mkdir /m2 >/dev/null
set_procs mds="$(cat "$work/cluster/mds/pid")" oss0="$(cat "$work/cluster/oss0/pid")" \
	oss1="$(cat "$work/cluster/oss1/pid")" oss2="$(cat "$work/cluster/oss2/pid")" lode-fuse=$fuse_pid
measure "liblode write, 1 copy" bytes "$bench/lode_io" write --mirrors 1 --size "$size" /m1/big
measure "liblode write, 2 copies" bytes "$bench/lode_io" write --mirrors 2 --size "$size" /m2/big
perf_of "liblode write, 2 copies" "$bench/lode_io" write --mirrors 2 --size "$size" /m2/perf
"$build/tools/lodectl" rm /m2/perf >/dev/null 2>&1 || true
# a 2-copy file is read from copy (row % 2) of each 1 MiB x 3 row: each object every other MiB
drop_all
measure "liblode read, cold, 1 copy (each object read whole, in order)" bytes "$bench/lode_io" read /m1/big
"$build/tools/lodectl" rm /m1/big >/dev/null
drop_all
measure "liblode read, cold, 2 copies (each object: every other MiB)" bytes "$bench/lode_io" read /m2/big
measure "liblode read, OSS warm" bytes "$bench/lode_io" read /m2/big
# each lode_pread waits for its last piece before the next call starts: larger calls drain
# the pipeline less often
measure "liblode read, OSS warm, 64 MiB lode_pread calls" bytes "$bench/lode_io" read --req 64M /m2/big
measure "liblode read, OSS warm, 256 MiB lode_pread calls" bytes "$bench/lode_io" read --req 256M /m2/big
perf_of "liblode read, OSS warm" "$bench/lode_io" read /m2/big
"$build/tools/lodectl" rm /m2/big >/dev/null
measure "lode-fuse write, 1 writer (2 copies)" bytes "$bench/fs_io" write --fsync --size "$size" "$mnt/m2/big"
drop_all
measure "lode-fuse read, cold" bytes "$bench/fs_io" read "$mnt/m2/big"
measure "lode-fuse read, OSS warm, page cache" bytes "$bench/fs_io" read --drop "$mnt/m2/big"
measure "lode-fuse read, OSS warm, O_DIRECT" bytes "$bench/fs_io" read --direct "$mnt/m2/big"
# the kernel splits a 16 MiB O_DIRECT read into 1 MiB FUSE requests sent together
measure "lode-fuse read, OSS warm, O_DIRECT, 16 MiB reads" bytes "$bench/fs_io" read --direct --bs 16M "$mnt/m2/big"
rm -f "$mnt/m2/big"
mkdir -p "$mnt/m2/meta" "$mnt/m2/small"
measure "lode-fuse creates, stats, readdir, unlinks, 2000 files (per op: 1 of each)" ops:2000 "$bench/fs_io" meta --count 2000 "$mnt/m2/meta"
measure "lode-fuse 64 KiB files, 500 written and read (per op: 1 file)" ops:500 "$bench/fs_io" small --count 500 --size 64K "$mnt/m2/small"
rm -rf "$mnt/m2/meta" "$mnt/m2/small"
printf '  peak RSS (VmHWM): lode-fuse %s MiB; lode-oss %s MiB\n' "$(awk '/^VmHWM/ { printf "%.0f", $2 / 1024 }' /proc/$fuse_pid/status)" \
	"$(for p in "$work"/cluster/oss*/pid; do awk '/^VmHWM/ { printf "%.0f ", $2 / 1024 }' /proc/"$(cat "$p")"/status; done)"
fusermount3 -u "$mnt"
fuse_pid=""
"$build/tools/lodectl" local down "$work/cluster" >/dev/null

# ---------------------------------------------------------------- 5. peers
for p in "${peers[@]}"; do
	name=${p%%=*} d=${p#*=}/lode-limits.$$
	echo "== $name: $d"
	mkdir -p "$d/meta" "$d/small"
	pp=()
	for pid in $(pgrep -x 'mfsmaster|mfschunkserver|mfsmount|glusterd|glusterfsd|glusterfs'); do
		pp+=("$(cat "/proc/$pid/comm")$pid=$pid")
	done
	set_procs "${pp[@]}"
	measure "$name write, 1 writer" bytes "$bench/fs_io" write --fsync --size "$size" "$d/big"
	drop_all
	measure "$name read, cold" bytes "$bench/fs_io" read "$d/big"
	measure "$name read, client cache dropped, page cache" bytes "$bench/fs_io" read --drop "$d/big"
	measure "$name read, client cache dropped, O_DIRECT" bytes "$bench/fs_io" read --direct "$d/big"
	measure "$name read, client cache dropped, O_DIRECT, 16 MiB reads" bytes "$bench/fs_io" read --direct --bs 16M "$d/big"
	rm -f "$d/big"
	measure "$name creates, stats, readdir, unlinks, 2000 files (per op: 1 of each)" ops:2000 "$bench/fs_io" meta --count 2000 "$d/meta"
	measure "$name 64 KiB files, 500 written and read (per op: 1 file)" ops:500 "$bench/fs_io" small --count 500 --size 64K "$d/small"
	rm -rf "$d"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
