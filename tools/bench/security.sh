#!/usr/bin/env bash
# security.sh - what cluster keys and capabilities cost, against --insecure, on this machine.
#
#   LODE_BUILD=build tools/bench/security.sh [--rounds 5] [--size-mib 512] [--files 256]
#        [--out FILE]
#
# Two local clusters (MDS + 3 OSS on loopback each) run at once: one keyed, the client
# proving a client key (`lodectl key derive --role client`), so every connection runs the
# handshake and every object request carries a capability the OSS checks; one started
# --insecure, the client holding no key. Rounds alternate between them, each round in the
# other order than the last (the machine is shared and noisy: only figures of the same
# run compare), and each figure is the median:
#   write       lode_io write --mirrors 2: SIZE MiB, 1 MiB stripes over every OSS
#   warm read   lode_io read of that file again, the objects in the OSS's page cache
#   creates     lode_io write of FILES files of 64 KiB at once (create, write, fsync,
#               close: one thread each, 64 at a time)
# Prints GB/s or files/s per figure, the keyed/insecure ratio of the medians and the median
# of each round's own ratio, and every round's seconds; the issue's target is every ratio
# at 0.95 or above.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=$(realpath "${LODE_BUILD:-build}")
rounds=5 size_mib=512 files=256 out=""
while [[ $# -gt 0 ]]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--size-mib) size_mib=$2; shift 2 ;;
	--files) files=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h|--help) sed -n '2,/^[^#]/p' tools/bench/security.sh | sed '$d'; exit 0 ;;
	*) echo "security.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
done
for f in tools/lodectl tools/bench/lode_io; do
	[[ -x $build/$f ]] || { echo "security.sh: $build/$f missing: build first" >&2; exit 2; }
done
lodectl=$build/tools/lodectl
io=$build/tools/bench/lode_io
work=$(mktemp -d /var/tmp/lode-security.XXXXXX)
cleanup() {
	local rc=$?
	trap - EXIT
	"$lodectl" local down "$work/keyed" >/dev/null 2>&1 || true
	"$lodectl" local down "$work/open" >/dev/null 2>&1 || true
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

log "starting the keyed and the --insecure cluster"
mds_keyed=$("$lodectl" local up "$work/keyed" --oss 3 2>/dev/null)
"$lodectl" key derive --role client "$work/keyed/cluster.key" "$work/client.key" >/dev/null
mds_open=$("$lodectl" --insecure local up "$work/open" --oss 3 2>/dev/null)

# run KIND CMD...: lode_io against one cluster, with its key or none
run() {
	local kind=$1
	shift
	if [[ $kind == keyed ]]; then
		LODE_KEY_FILE=$work/client.key "$io" --mds "$mds_keyed" "$@"
	else
		LODE_KEY_FILE= "$io" --mds "$mds_open" "$@"
	fi
}
# remove KIND PATH: rm of one file of that cluster, as its admin
remove() {
	if [[ $1 == keyed ]]; then
		"$lodectl" --mds "$mds_keyed" --key "$work/keyed/cluster.key" rm "$2" >/dev/null
	else
		"$lodectl" --mds "$mds_open" --insecure rm "$2" >/dev/null
	fi
}
secs() { sed -n 's/.*seconds=\([0-9.]*\).*/\1/p'; }

paths=()
for r in $(seq "$rounds"); do
	# ABBA: which cluster goes first alternates, so that neither always runs right after
	# the other's writes (their writeback) or always first
	order="keyed open"
	((r % 2 == 0)) && order="open keyed"
	for kind in $order; do
		log "round $r/$rounds: $kind"
		run "$kind" write --mirrors 2 --size "${size_mib}M" "/w$r" | secs >>"$work/$kind.write"
		run "$kind" read --req 16M "/w$r" >/dev/null # the OSS's page cache holds it now
		run "$kind" read --req 16M "/w$r" | secs >>"$work/$kind.read"
		remove "$kind" "/w$r" # or 9 rounds of 2 GiB x 2 copies x 2 clusters fill the disk
		paths=()
		for i in $(seq "$files"); do paths+=("/c$r.$i"); done
		: >"$work/$kind.c$r"
		for ((i = 0; i < files; i += 64)); do
			run "$kind" write --size 64K "${paths[@]:i:64}" | secs >>"$work/$kind.c$r"
		done
		awk '{ s += $1 } END { print s }' "$work/$kind.c$r" >>"$work/$kind.create"
	done
done

{
	printf '# tools/bench/security.sh, %s, %s CPUs, %s rounds, load average %s\n' \
		"$(date -u +%Y-%m-%dT%H:%MZ)" "$(nproc)" "$rounds" "$(cut -d' ' -f1-3 /proc/loadavg)"
	printf '%-34s %12s %12s %8s %8s\n' "figure (median)" "keyed" "--insecure" "ratio" "paired"
	for fig in write read create; do
		k=$(median <"$work/keyed.$fig") o=$(median <"$work/open.$fig")
		case $fig in
		write) name="write ${size_mib} MiB, 2 copies" unit=GB/s n=$((size_mib << 20)) ;;
		read) name="read ${size_mib} MiB, OSS warm" unit=GB/s n=$((size_mib << 20)) ;;
		create) name="$files files of 64 KiB, 64 at once" unit=files/s n=$files ;;
		esac
		# the median of each round's own ratio: the two runs of a round are seconds apart,
		# so load that drifts over the run cancels out of it
		p=$(paste "$work/open.$fig" "$work/keyed.$fig" | awk '{ print $1 / $2 }' | median)
		awk -v name="$name" -v k="$k" -v o="$o" -v n="$n" -v unit="$unit" -v p="$p" 'BEGIN {
			div = unit == "GB/s" ? 1e9 : 1
			rk = n / k / div; ro = n / o / div
			printf "%-34s %7.3f %-4s %7.3f %-4s %7.2f %8.2f\n", name, rk, unit == "GB/s" ? "GB/s" : "f/s", ro, unit == "GB/s" ? "GB/s" : "f/s", rk / ro, p
		}'
	done
	echo "ratio: keyed rate over --insecure rate, of the medians; paired: the median of"
	echo "each round's ratio (target >= 0.95)"
	for fig in write read create; do
		printf 'per round, %s seconds (keyed / --insecure):' "$fig"
		paste -d/ "$work/keyed.$fig" "$work/open.$fig" | tr '\n' ' '
		echo
	done
} | tee ${out:+"$out"}
