#!/usr/bin/env bash
# storm.sh: the checkpoint storm (metadata and small files), Lode next to MooseFS in the
# same run on the same machine.
#
#   tools/bench/storm.sh [--procs "1 8 64"] [--sizes "create 65536 1048576"] [--files N]
#                        [--create-files N] [--single N] [--copies N] [--rank-dirs]
#                        [--no-moosefs] [--no-lazy] [--fuse-opts OPTS] [--rounds N]
#                        [--out FILE] [--work DIR]
#
# Storm: for each shard size (bytes; default 64 KiB and 1 MiB) and each process count,
# that many processes spread over two mounts each create, write, fsync, close and rename
# into place their own shard files in one checkpoint directory (tools/bench/storm.py), N
# files in all per point (default 256); with --rank-dirs, in a directory per rank inside
# it (Megatron's layout; in one directory the kernel runs one create or rename at a time
# per mount). The size "create" (also a default) is concurrent creators instead: each
# process only creates and closes empty files (O_CREAT | O_EXCL, their final names),
# --create-files N in all per point (default 4096); its write, fsync and rename steps
# print 0. Printed per point: files/s and p50/p99 of a whole file and of each step,
# MooseFS's files/s and Lode's ratio to it (above 1: Lode is faster); and from the MDS's
# metrics during the point: fdatasyncs per file (lode_mds_log_syncs_total, plus two per
# lode_mds_checkpoints_total: the data file's and the sync record's), group commits per
# file and the mean requests per group commit (lode_mds_commit_batch_size); and the CPU
# time per file of every lode-mds, lode-oss and lode-fuse on the machine (of mfsmaster,
# mfschunkserver and mfsmount for MooseFS) and of the whole machine (idle excluded), which
# the two systems share: what is left is the storm.py processes and the kernel. Each point
# runs twice on Lode: on two mounts with the defaults (durable namespace and data), and on
# two more with -o namespace=lazy,data=lazy (namespace changes durable at fsync, fsyncdir
# or within a second; fsync returns with the data on every copy's server, unsynced:
# MooseFS's contract; docs/fuse.md), unless --no-lazy.
# --fuse-opts OPTS: more -o options for every Lode mount (io_uring: the kernel's requests
# over io_uring, docs/fuse.md).
# Single-threaded: fs_io meta (create, stat, readdir, unlink of --single files, default
# 2000; and 8 threads stat()ing them all through the other mount, which never had the
# names: a loader's workers scanning a dataset directory) and fs_io small (64 KiB files
# written, then read back with the client cache dropped, then read through the other
# mount) on one mount of each,
# each once the machine is quiet (below 15% busy for a second, 60 s at most): both
# systems go on deleting the storm's files in the background after a point ends.
# Every measurement of one system runs with the other's processes stopped (SIGSTOP, a
# few seconds at a time): an idle MooseFS polls, and cost Lode's small-file figures 15-28%
# on a 2-CPU machine (docs/benchmarks.md). And after a sync, so that no system's unwritten
# data is flushed by the kernel inside the other's measurement.
#
# Rounds: --rounds N (default 1) runs everything N times on the same clusters, then prints
# the median of each figure and of each ratio over the rounds (each ratio is taken within
# its round, both systems then having met the same machine): on this 2-CPU machine one
# figure moves by a quarter or more from one run to the next, as much as a target's margin.
#
# Copies: by default Lode keeps its two copies of every file and MooseFS one (goal 1), the
# comparison issue 15 states; --copies N gives both N (Lode: mirror_count=N as the default
# layout of the directories the storm writes in; MooseFS: goal N), like against like.
# Lode: lode-mds (--metrics on loopback) and 3 lode-oss started here, two lode-fuse mounts
# (and two lazy ones).
# MooseFS: tools/bench/peers/moosefs.sh (network namespaces), and a second mfsmount from
# its client namespace. Needs root and a build in build/ (LODE_BUILD=dir); builds
# nothing. Everything started is stopped on exit, also on failure.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${LODE_BUILD:-$root/build}
procs="1 8 64" sizes="create 65536 1048576" files=256 create_files=4096 single=2000 copies="" rank_dirs="" rounds=1
moosefs=1 lazy=1 fuse_opts="" out="" workbase=/var/tmp
num() { [[ $2 =~ ^[1-9][0-9]*$ ]] || { echo "storm.sh: $1 needs a positive number" >&2; exit 2; }; }
while (($#)); do
	case $1 in
	--procs) procs=${2:?--procs needs a list}; shift 2 ;;
	--sizes) sizes=${2:?--sizes needs a list}; shift 2 ;;
	--files) num "$1" "${2:-}"; files=$2; shift 2 ;;
	--create-files) num "$1" "${2:-}"; create_files=$2; shift 2 ;;
	--single) num "$1" "${2:-}"; single=$2; shift 2 ;;
	--copies)
		[[ ${2:-} =~ ^[1-3]$ ]] || { echo "storm.sh: --copies is 1, 2 or 3" >&2; exit 2; }
		copies=$2; shift 2 ;;
	--rank-dirs) rank_dirs=--rank-dirs; shift ;;
	--no-moosefs) moosefs=0; shift ;;
	--no-lazy) lazy=0; shift ;;
	--fuse-opts) fuse_opts=${2:?--fuse-opts needs options}; shift 2 ;;
	--rounds) num "$1" "${2:-}"; rounds=$2; shift 2 ;;
	--out) out=${2:?--out needs a file}; shift 2 ;;
	--work) workbase=${2:?--work needs a directory}; shift 2 ;;
	-h | --help) sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "storm.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
for p in $procs; do num --procs "$p"; done
for z in $sizes; do [[ $z == create ]] || num --sizes "$z"; done
[[ $(id -u) == 0 ]] || { echo "storm.sh: needs root (mounts, network namespaces)" >&2; exit 2; }
for f in mds/lode-mds oss/lode-oss tools/lodectl client/fuse/lode-fuse tools/bench/fs_io; do
	[[ -x $build/$f ]] || { echo "storm.sh: $build/$f missing: build first" >&2; exit 2; }
done
command -v curl >/dev/null || { echo "storm.sh: needs curl (the MDS's metrics)" >&2; exit 2; }

. "$root/tools/bench/lode-cluster.sh"
bench_start storm
mfs_dir=""
moosefs_down() { [[ -z $mfs_dir ]] || "$root/tools/bench/peers/moosefs.sh" down "$mfs_dir" >/dev/null 2>&1; }
# Each system is measured with the other's processes stopped (SIGSTOP, SIGCONT after): an
# idle MooseFS polls (its three chunkservers and two mounts take about a tenth of a CPU
# between them), and on this 2-CPU machine that cost Lode's single-threaded figures 15-28%
# (alternating rounds: lazy 64 KiB files written 701-813/s beside an idle MooseFS,
# 909-1,000/s with it stopped; an idle Lode did not slow MooseFS; docs/benchmarks.md).
# Each pause is one measurement, a few seconds, well inside MooseFS's 10 s
# master-chunkserver timeout; each system's own background work (deleting the last
# point's files) still lands in its own figures.
peer_pids() { # lode|mfs: the processes of that system started here, and no other's
	if [[ $1 == lode ]]; then
		echo "${pids[@]}"
	elif [[ -n $mfs_dir ]]; then
		pgrep -d ' ' -f -- "^mfs(master|chunkserver|mount) .*$mfs_dir/"
	fi
}
signal_peer() { local p; p=$(peer_pids "$2"); [[ -n $p ]] && kill "-$1" $p 2>/dev/null; true; }
# Each measurement also starts with nothing dirty in the page cache (sync, while both
# systems run): a storm point leaves up to 128 MiB of written data to the kernel's flusher,
# which wrote it out, 30 s later, in the middle of whichever system's point came next.
pause_peer() { sync; signal_peer STOP "$1"; }
resume_peer() { signal_peer CONT "$1"; }
storm_teardown() { resume_peer lode; resume_peer mfs; moosefs_down; }
bench_teardown=storm_teardown

log "Lode: lode-mds with --metrics, 3 lode-oss, 2 lode-fuse mounts under $work"
lode_cluster_up --metrics 127.0.0.1:0 --metrics-port-file "$work/mds.metrics"
bench_wait_file "$work/mds.metrics"
lode_mnt=() lazy_mnt=()
for m in a b la lb; do
	[[ $m == l* ]] && ((!lazy)) && continue
	if [[ $m == l* ]]; then
		lode_mount "$work/$m" -o "namespace=lazy,data=lazy${fuse_opts:+,$fuse_opts}"
		lazy_mnt+=("$work/$m")
	else
		lode_mount "$work/$m" ${fuse_opts:+-o "$fuse_opts"}
		lode_mnt+=("$work/$m")
	fi
done
lode_mounted "${lode_mnt[@]}" "${lazy_mnt[@]}"
if [[ -n $copies ]]; then
	# Every point writes in a subdirectory of the mounts' root made here, with the
	# layout as its default; what the storm creates inherits it.
	for i in "${!lode_mnt[@]}"; do
		mkdir -p "${lode_mnt[i]}/c$copies"
		setfattr -n user.lode.layout -v "mirror_count=$copies" "${lode_mnt[i]}/c$copies"
		lode_mnt[i]=${lode_mnt[i]}/c$copies
	done
	for i in "${!lazy_mnt[@]}"; do
		mkdir -p "${lazy_mnt[i]}/c$copies"
		lazy_mnt[i]=${lazy_mnt[i]}/c$copies
	done
fi
metrics_url=http://$(cat "$work/mds.metrics")/metrics

mfs_mnt=()
if ((moosefs)); then
	log "MooseFS: goal ${copies:-1}, two mounts"
	mfs_dir=$work/mfs
	m1=$(MFS_GOAL=${copies:-1} "$root/tools/bench/peers/moosefs.sh" up "$mfs_dir")
	mkdir -p "$mfs_dir/mnt2"
	# the second client, from the same client namespace (moosefs.sh mounts the first)
	timeout 60 nsenter --net=/run/netns/lodemfs-cl mfsmount "$mfs_dir/mnt2" -H 10.77.0.1 -P 9421 \
		-o mfsbind=10.77.0.5 >"$work/mfsmount2.log" 2>&1 ||
		{ cat "$work/mfsmount2.log" >&2; echo "storm.sh: second mfsmount failed" >&2; exit 1; }
	mounts=("$mfs_dir/mnt2" "${mounts[@]}")
	mfs_mnt=("$m1" "$mfs_dir/mnt2")
fi

# MDS counters: group commits, requests in them, fdatasyncs (one per sync of the commit
# log, two per checkpoint: the data file's and the sync record's; an MDS from before the
# commit log: two per sync)
mds_counts() {
	curl -sf "$metrics_url" | awk '
		/^lode_mds_commit_batch_size_count / { c = $2 }
		/^lode_mds_commit_batch_size_sum / { s = $2 }
		/^lode_mds_syncs_total / { old = 2 * $2 }
		/^lode_mds_log_syncs_total / { k += $2; haslog = 1 }
		/^lode_mds_checkpoints_total / { k += 2 * $2 }
		END { printf "%d %d %d\n", c, s, haslog ? k : old }'
}
# machine_ticks: the whole machine's CPU time in clock ticks, every CPU: busy (idle and
# iowait excluded), then idle and iowait
machine_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat; }
# cpu_ticks NAME...: CPU time (user and system, in clock ticks) of every process named so,
# then of the whole machine (every CPU, idle excluded)
cpu_ticks() {
	local n p s=0 busy
	for n in "$@"; do
		for p in $(pgrep -x "$n"); do
			s=$((s + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
		done
	done
	read -r busy _ < <(machine_ticks)
	echo "$s $busy"
}
# settle: waits (60 s at most) until the machine's CPUs were busy less than 15% over a
# second. Each system goes on deleting what a storm point removed after the point ends
# (MooseFS's chunkservers, Lode's orphan cleanup a minute later): a single-threaded figure
# taken meanwhile measured that background work more than the file system it ran on.
settle() {
	local a b t
	for t in $(seq 60); do
		a=$(machine_ticks)
		sleep 1
		b=$(machine_ticks)
		if awk -v a="$a" -v b="$b" 'BEGIN { split(a, x); split(b, y)
			busy = y[1] - x[1]; all = busy + y[2] - x[2]
			exit !(all > 0 && busy / all < 0.15) }'; then
			return 0
		fi
	done
	log "the machine stayed busy for 60 s; measuring anyway"
}
# cpu_fig D0 M0 D1 M1 FILES: "servers and clients / machine" CPU ms per file
cpu_fig() {
	awk -v d=$(($3 - $1)) -v m=$(($4 - $2)) -v f="$5" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "%.2f/%.2f", d * 1000 / hz / f, m * 1000 / hz / f }'
}
lode_procs=(lode-mds lode-oss lode-fuse)
mfs_procs=(mfsmaster mfschunkserver mfsmount)
# storm_args SIZE: storm.py's arguments for a point of that size ("create": creators)
storm_args() { if [[ $1 == create ]]; then echo "--size 0 --creates-only"; else echo "--size $1"; fi; }
# lode_point DIR1 DIR2 SIZE N PER TAG: storm.py's JSON, a line of the MDS's figures, and
# one of CPU ms per file (cpu_fig)
lode_point() {
	local c0 s0 k0 c1 s1 k1 j d0 m0 d1 m1
	pause_peer mfs
	# the checkpoint's directories first, so that the MDS's figures are the storm's alone
	python3 "$root/tools/bench/storm.py" --procs "$4" --files "$5" $(storm_args "$3") \
		--dir "$1" --dir "$2" --tag "$6" $rank_dirs --setup-only
	read -r c0 s0 k0 < <(mds_counts)
	read -r d0 m0 < <(cpu_ticks "${lode_procs[@]}")
	j=$(python3 "$root/tools/bench/storm.py" --procs "$4" --files "$5" $(storm_args "$3") \
		--dir "$1" --dir "$2" --tag "$6" $rank_dirs)
	read -r d1 m1 < <(cpu_ticks "${lode_procs[@]}")
	read -r c1 s1 k1 < <(mds_counts)
	rm -rf "${1:?}/$6"
	resume_peer mfs
	echo "$j"
	awk -v c=$((c1 - c0)) -v s=$((s1 - s0)) -v f="$(jget "$j" files)" -v k=$((k1 - k0)) \
		'BEGIN { printf "%.2f fdatasyncs, %.2f commits; %.1f req/commit\n", k / f, c / f, (c ? s / c : 0) }'
	cpu_fig "$d0" "$m0" "$d1" "$m1" "$(jget "$j" files)"
	echo
}
# step_times JSON: p50/p99 ms of each step of a file
step_times() {
	python3 -c 'import json, sys
d = json.loads(sys.argv[1])
print(" ".join("%s/%s" % (d[s + "_p50_ms"], d[s + "_p99_ms"]) for s in ("create", "write", "fsync", "close", "rename")))' "$1"
}
jget() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d[sys.argv[2]])' "$1" "$2"; }

table=$work/table.txt
: >"$table"
emit() { printf '%s\n' "$*" | tee -a "$table"; }

where="one directory"
[[ -n $rank_dirs ]] && where="a directory per rank"
emit "# checkpoint storm: N processes over 2 mounts, each: create, write, fsync, close, rename its own shard files; $files files per point; $where"
[[ " $sizes " == *" create "* ]] &&
	emit "# size create: concurrent creators, each process only creates and closes empty files; $create_files files per point"
emit "# $(date -u +%Y-%m-%dT%H:%MZ) $(uname -r), $(nproc) CPUs; Lode $(git -C "$root" describe --always --dirty 2>/dev/null || echo '?') ${copies:-2} copies; MooseFS goal ${copies:-1} $( ((moosefs)) && dpkg-query -W -f '${Version}' moosefs-master 2>/dev/null)"
single_fig() { # DIR OTHER PEER: "create stat unlink write64k read64k readvia64k statvia"
	local d=$1/single m s
	mkdir -p "$d"
	settle
	pause_peer "$3"
	m=$("$build/tools/bench/fs_io" meta --count "$single" --stat-via "$2/single" --threads 8 "$d")
	s=$("$build/tools/bench/fs_io" small --count $((single / 4)) --size 64K --read-via "$2/single" "$d")
	resume_peer "$3"
	rm -rf "$d"
	printf '%s %s\n' "$m" "$s" | tr ' ' '\n' | awk -F= '{ v[$1] = $2 } END {
		printf "%s %s %s %s %s %s %s\n", v["create_ops"], v["stat_ops"], v["unlink_ops"], v["write_files"], v["read_files"], v["read_via_files"], v["stat_via_ops"] }'
}
figs=$work/figs.txt singles=$work/singles.txt
: >"$figs"
: >"$singles"
for round in $(seq "$rounds"); do
	((rounds > 1)) && emit "## round $round of $rounds"
	emit "$(printf '%-6s %5s | %9s %9s %9s | %9s %9s %9s | %6s | %9s %6s | %-88s | %-94s | %s' size procs \
		'Lode f/s' 'p50 ms' 'p99 ms' 'MFS f/s' 'p50 ms' 'p99 ms' ratio 'lazy f/s' ratio \
		'Lode p50/p99 ms: create write fsync close rename (durable | lazy)' 'MDS per file (durable | lazy): fdatasyncs, group commits; requests/commit' \
		'CPU ms/file, servers+clients/machine: Lode, lazy, MooseFS')"
	for size in $sizes; do
		for n in $procs; do
			if [[ $size == create ]]; then
				per=$(((create_files + n - 1) / n)) label=create
			else
				per=$(((files + n - 1) / n)) label=$((size / 1024))K
			fi
			tag=ckpt-$size-$n
			{ read -r lj; read -r mdsfig; read -r cpufig; } < <(lode_point "${lode_mnt[0]}" "${lode_mnt[1]}" "$size" "$n" "$per" "$tag")
			steps=$(step_times "$lj")
			zf="-" zratio="-" zcpu="-"
			if ((lazy)); then
				{ read -r zj; read -r zfig; read -r zcpu; } < <(lode_point "${lazy_mnt[0]}" "${lazy_mnt[1]}" "$size" "$n" "$per" "$tag")
				zf=$(jget "$zj" files_per_s)
				mdsfig+=" | $zfig"
				steps+=" | $(step_times "$zj")"
			fi
			cpufig+=" $zcpu"
			mf="-" m50="-" m99="-" ratio="-"
			if ((moosefs)); then
				pause_peer lode
				python3 "$root/tools/bench/storm.py" --procs "$n" --files "$per" $(storm_args "$size") \
					--dir "${mfs_mnt[0]}" --dir "${mfs_mnt[1]}" --tag "$tag" $rank_dirs --setup-only
				read -r d0 m0 < <(cpu_ticks "${mfs_procs[@]}")
				mj=$(python3 "$root/tools/bench/storm.py" --procs "$n" --files "$per" $(storm_args "$size") \
					--dir "${mfs_mnt[0]}" --dir "${mfs_mnt[1]}" --tag "$tag" $rank_dirs)
				read -r d1 m1 < <(cpu_ticks "${mfs_procs[@]}")
				cpufig+=" $(cpu_fig "$d0" "$m0" "$d1" "$m1" "$(jget "$mj" files)")"
				rm -rf "${mfs_mnt[0]:?}/$tag"
				resume_peer lode
				mf=$(jget "$mj" files_per_s) m50=$(jget "$mj" file_p50_ms) m99=$(jget "$mj" file_p99_ms)
				ratio=$(awk -v a="$(jget "$lj" files_per_s)" -v b="$mf" 'BEGIN { printf "%.2f", a / b }')
				((lazy)) && zratio=$(awk -v a="$zf" -v b="$mf" 'BEGIN { printf "%.2f", a / b }')
			fi
			emit "$(printf '%-6s %5s | %9s %9s %9s | %9s %9s %9s | %6s | %9s %6s | %-88s | %-94s | %s' \
				"$label" "$n" "$(jget "$lj" files_per_s)" "$(jget "$lj" file_p50_ms)" \
				"$(jget "$lj" file_p99_ms)" "$mf" "$m50" "$m99" "$ratio" "$zf" "$zratio" "$steps" "$mdsfig" "$cpufig")"
			echo "$label $n $(jget "$lj" files_per_s) $mf $ratio $zf $zratio" >>"$figs"
		done
	done

	emit ""
	emit "# single-threaded, one mount: fs_io meta --count $single (and 8 threads stat()ing its files through the other mount, which never had them); fs_io small --count $((single / 4)) --size 64K (read back with the client cache dropped, then through the other mount)"
	read -r lc ls lu lw lr lv lsv < <(single_fig "${lode_mnt[0]}" "${lode_mnt[1]}" mfs)
	read -r zc zs zu zw zr zv zsv < <(if ((lazy)); then single_fig "${lazy_mnt[0]}" "${lazy_mnt[1]}" mfs; else echo "- - - - - - -"; fi)
	read -r mc ms mu mw mr mv msv < <(if ((moosefs)); then single_fig "${mfs_mnt[0]}" "${mfs_mnt[1]}" lode; else echo "- - - - - - -"; fi)
	emit "$(printf '%-26s %12s %12s %8s %12s %8s' figure Lode MooseFS ratio 'Lode lazy' ratio)"
	for row in "creates/s $lc $mc $zc" "stats/s $ls $ms $zs" "unlinks/s $lu $mu $zu" \
		"64 KiB files written/s $lw $mw $zw" "64 KiB files read cold/s $lr $mr $zr" \
		"64 KiB read, other mount/s $lv $mv $zv" "stats/s, 8 threads, cold $lsv $msv $zsv"; do
		set -- $row
		while (($# > 4)); do set -- "$1 $2" "${@:3}"; done
		line=$(awk -v n="$1" -v a="$2" -v b="$3" -v z="$4" 'function r(x, y) { return (x == "-" || y == "-" || y == 0) ? "-" : sprintf("%.2f", x / y) }
			BEGIN { printf "%-26s %12.0f %12s %8s %12s %8s", n, a, b, r(a, b), z == "-" ? "-" : sprintf("%.0f", z), r(z, b) }')
		emit "$line"
		echo "$line" >>"$singles"
	done
done
if ((rounds > 1)); then
	emit ""
	emit "## median of $rounds rounds (each ratio taken within its round)"
	python3 - "$figs" "$singles" <<'PY' | tee -a "$table"
import statistics, sys
def med(v):
    v = [float(x) for x in v if x != "-"]
    return "%.2f" % statistics.median(v) if v else "-"
def medf(v):
    m = med(v)
    return m if m == "-" else "%.0f" % float(m)
rows = {}
for l in open(sys.argv[1]):
    f = l.split()
    rows.setdefault((f[0], f[1]), []).append(f[2:])
print("%-6s %5s | %9s %9s %6s | %9s %6s" % ("size", "procs", "Lode f/s", "MFS f/s", "ratio", "lazy f/s", "ratio"))
for (size, n), v in rows.items():
    c = list(zip(*v))
    print("%-6s %5s | %9s %9s %6s | %9s %6s" % (size, n, medf(c[0]), medf(c[1]), med(c[2]), medf(c[3]), med(c[4])))
print()
single = {}
for l in open(sys.argv[2]):
    f = l.split()
    single.setdefault(" ".join(f[:-5]), []).append(f[-5:])
print("%-26s %12s %12s %8s %12s %8s" % ("figure", "Lode", "MooseFS", "ratio", "Lode lazy", "ratio"))
for name, v in single.items():
    c = list(zip(*v))
    print("%-26s %12s %12s %8s %12s %8s" % (name, medf(c[0]), medf(c[1]), med(c[2]), medf(c[3]), med(c[4])))
PY
fi
[[ -n $out ]] && cp "$table" "$out"
log "done"
