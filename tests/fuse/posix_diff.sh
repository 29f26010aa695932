#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Differential POSIX test: posix_diff runs every call with its edge and error cases on a
# fresh tmpfs and on a lode-fuse mount, as root and as an unprivileged user (uid/gid 1000,
# mount with allow_other); the transcripts must be identical. The only lines allowed to
# differ are the deliberate differences listed in docs/fuse.md, each filtered below by its
# name, on both sides alike, so that nothing is hidden silently.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || skip "needs root (mounts a tmpfs, runs as another user)"
need_fuse
need_prog setpriv
: "${POSIX_DIFF:?POSIX_DIFF is not set (run through meson test)}"

# Deliberate differences: name (as written in docs/fuse.md) -> sed script applied to both
# transcripts. Keep this list empty unless docs/fuse.md says why.
declare -A DELIBERATE=()

for name in "${!DELIBERATE[@]}"; do
	grep -qF "\`$name\`" "${LODE_DOCS:?}/fuse.md" 2>/dev/null ||
		fail "filter '$name' is not listed in docs/fuse.md's deliberate differences"
done

normalize() {
	local name
	cp "$1" "$1.norm"
	for name in "${!DELIBERATE[@]}"; do
		sed -i -e "${DELIBERATE[$name]}" "$1.norm"
	done
}

start_cluster 3
mount_lode "$WORK/mnt" allow_other
mount_tmpfs "$WORK/ref"

status=0
for who in root user; do
	run=()
	[ $who = user ] && run=(setpriv --reuid=1000 --regid=1000 --clear-groups)
	for fs in ref mnt; do
		mkdir "$WORK/$fs/$who"
		chmod 0777 "$WORK/$fs/$who"
		timeout 120 "${run[@]}" "$POSIX_DIFF" "$WORK/$fs/$who" >"$WORK/$who-$fs.txt" 2>&1 ||
			{ echo "posix_diff as $who on $fs exited $?" >&2; status=1; }
		normalize "$WORK/$who-$fs.txt"
	done
	if diff -u "$WORK/$who-ref.txt.norm" "$WORK/$who-mnt.txt.norm" >"$WORK/$who.diff"; then
		echo "as $who: $(grep -c '' "$WORK/$who-mnt.txt") lines, identical to tmpfs"
	else
		echo "as $who: lode-fuse differs from tmpfs (- tmpfs, + lode-fuse):"
		cat "$WORK/$who.diff"
		status=1
	fi
done
[ "${LODE_TEST_KEEP:-}" ] && cp "$WORK"/*.txt "$WORK"/*.diff "${LODE_TEST_KEEP_DIR:-/tmp}/" 2>/dev/null
exit $status
