#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Randomized namespace operations (ns_random.py; seeds 1..NS_SEEDS as root and 101..110 as
# an unprivileged user, NS_OPS each) applied to a fresh tmpfs and to lode-fuse; results and
# trees must be identical. A sanitizer build runs seeds 1..8 and 101..104.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || skip "needs root (mounts a tmpfs)"
need_fuse
start_cluster 3
mount_lode "$WORK/mnt" allow_other
mount_tmpfs "$WORK/ref"
as_user=(setpriv --reuid=1000 --regid=1000 --clear-groups)
# the script from $WORK, which uid 1000 can reach wherever the source tree lies (a clone in a
# 0700 directory would make the unprivileged seeds fail to even start it)
cp "$LODE_TEST_SRCDIR/ns_random.py" "$WORK/ns_random.py"
chmod 0644 "$WORK/ns_random.py"
user_py=
for py in "$PYTHON" /usr/bin/python3; do
	if "${as_user[@]}" "$py" -c '' 2>/dev/null; then user_py=$py; break; fi
done
seeds=20 user_last=110
[ "${LODE_SANITIZED:-0}" = 1 ] && seeds=8 user_last=104
user_seeds=
if [ -n "$user_py" ] && command -v setpriv >/dev/null; then
	user_seeds=$(seq 101 $user_last)
else
	echo "note: no python3 that uid 1000 can run: the unprivileged seeds do not run"
fi
status=0
for seed in $(seq 1 "${NS_SEEDS:-$seeds}") $user_seeds; do
	run=("$PYTHON")
	[ "$seed" -gt 100 ] && run=("${as_user[@]}" "$user_py")
	for fs in ref mnt; do
		mkdir "$WORK/$fs/s$seed"
		chmod 0777 "$WORK/$fs/s$seed"
		timeout 120 "${run[@]}" "$WORK/ns_random.py" "$WORK/$fs/s$seed" "$seed" \
			"${NS_OPS:-300}" >"$WORK/s$seed-$fs.txt" 2>&1 ||
			{ echo "seed $seed on $fs: exited $?"; tail -n 3 "$WORK/s$seed-$fs.txt"; status=1; }
	done
	if diff -u "$WORK/s$seed-ref.txt" "$WORK/s$seed-mnt.txt" >"$WORK/s$seed.diff"; then
		echo "seed $seed$([ "$seed" -gt 100 ] && echo ' (uid 1000)'): identical ($(grep -c ' = ' "$WORK/s$seed-mnt.txt") calls)"
	else
		echo "seed $seed: lode-fuse differs from tmpfs (- tmpfs, + lode-fuse), first hunks:"
		head -n 40 "$WORK/s$seed.diff"
		status=1
	fi
done
exit $status
