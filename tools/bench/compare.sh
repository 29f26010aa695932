#!/usr/bin/env bash
# compare.sh: Lode's figures next to the same figures of other file systems, from the TSV
# tables that tools/bench/run.sh --out writes (Lode's own run, and run.sh --dir on each
# peer's mount).
#
#   tools/bench/compare.sh LODE.tsv NAME=PEER.tsv [NAME=PEER.tsv...]
#
# A figure of the mount ("lode-fuse ...") is matched with the peer's figure of the same
# name ("fuse.mfs ...", or its --label); "OSS warm" (Lode) and "client cache dropped"
# (a peer) are the same state: the client's cache dropped, the servers' kept. For each
# peer it prints the median and Lode's ratio to it (above 1: Lode is better, for speeds
# and for times alike) and, where both measured it, the CPU s/GiB and the peer's cost
# over Lode's (above 1: Lode is cheaper). Figures only one side has are left out; the
# baselines are printed for each run, since each run measured its own.
set -euo pipefail

(($# >= 2)) || { sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
for a in "$1" "${@:2}"; do
	f=${a#*=}
	[[ -r $f ]] || { echo "compare.sh: cannot read $f" >&2; exit 2; }
done

names="" files=()
for a in "${@:2}"; do
	[[ $a == *=* ]] || { echo "compare.sh: peers are NAME=FILE, not '$a'" >&2; exit 2; }
	names+="${a%%=*}|"
	files+=("${a#*=}")
done

awk -F'\t' -v names="$names" '
	BEGIN { split(names, nm, "|"); for (i in nm) name[i + 1] = nm[i] }
	# the label of a table: the one writer figure that is not liblode
	FNR == 1 { file++; next }
	{
		fig[file, FNR] = $1; unit[file, FNR] = $2; med[file, FNR] = $3; cpu[file, FNR] = $4
		rows[file] = FNR
		if ($1 ~ / write, 1 writer$/ && $1 !~ /^liblode/ && $1 !~ /^growth/) {
			l = $1; sub(/ write, 1 writer$/, "", l); label[file] = l
		}
	}
	function norm(f, l,   k) {
		k = f
		if (l != "" && index(k, l " ") == 1) k = "mount " substr(k, length(l) + 2)
		gsub(", " l ", ", ", mount, ", k)
		gsub(/client cache dropped/, "OSS warm", k)
		return k
	}
	END {
		for (i = 1; i <= file; i++) {
			if (!(i in label)) { printf "compare.sh: table %d has no \"... write, 1 writer\" figure\n", i > "/dev/stderr"; exit 2 }
			for (r = 2; r <= rows[i]; r++) {
				k = norm(fig[i, r], label[i])
				if (k ~ /baseline: |^liblode|^growth|^peer:/) continue
				key[i, k] = r
				if (i == 1) order[++n] = k
			}
		}
		printf "%-66s %9s", "figure (Lode: " label[1] ")", "Lode"
		for (i = 2; i <= file; i++) printf " | %-26s", name[i]
		printf "\n"
		for (j = 1; j <= n; j++) {
			k = order[j]; r = key[1, k]; any = 0
			for (i = 2; i <= file; i++) if ((i, k) in key) any = 1
			if (!any) continue
			printf "%-66s %9s", k " (" unit[1, r] ")", med[1, r]
			for (i = 2; i <= file; i++) {
				if (!((i, k) in key)) { printf " | %-26s", "-"; continue }
				p = key[i, k]
				if (med[1, r] + 0 == 0 || med[i, p] + 0 == 0) { printf " | %-26s", med[i, p]; continue }
				x = unit[1, r] == "s to load" ? med[i, p] / med[1, r] : med[1, r] / med[i, p]
				printf " | %9s %6.2fx", med[i, p], x
				if (cpu[1, r] != "-" && cpu[i, p] != "-" && cpu[1, r] + 0 > 0)
					printf " %4.1fc", cpu[i, p] / cpu[1, r]
				else
					printf "      "
			}
			printf "\n"
			if (cpu[1, r] != "-") {
				printf "%-66s %9s", "  CPU s/GiB, whole machine", cpu[1, r]
				for (i = 2; i <= file; i++) {
					p = ((i, k) in key) ? key[i, k] : 0
					printf " | %-26s", (p && cpu[i, p] != "-") ? cpu[i, p] : "-"
				}
				printf "\n"
			}
		}
		print "x: Lode over the peer (speeds) or the peer over Lode (times to load): above 1, Lode is better."
		print "c: the peer'"'"'s CPU s/GiB over Lode'"'"'s (whole machine, /proc/stat): above 1, Lode is cheaper."
	}
' "$1" "${files[@]}"
