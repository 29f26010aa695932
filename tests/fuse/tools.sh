#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real tools through lode-fuse: tools.sh cp|rsync|tar copies a tree holding a 2 GiB file,
# symlinks (relative, absolute and dangling, to a dir), hard links, varied permissions and
# user xattrs into the mount and back out, and requires it byte-exact (diff -r) and
# metadata-exact (stat -c '%a %h %s %Y %F', and every user xattr) at each step. A
# sanitizer build copies a 256 MiB file instead: the same code, an eighth of the bytes.
. "$(dirname "$0")/lib.sh"

mode=${1:?usage: tools.sh cp|rsync|tar}
need_fuse
need_prog diff stat getfattr setfattr
[ "$mode" = rsync ] && need_prog rsync
[ "$mode" = tar ] && need_prog tar
big=$((2 * 1024 * 1024 * 1024))
[ "${LODE_SANITIZED:-0}" = 1 ] && big=$((256 * 1024 * 1024))
BIG=${LODE_TEST_BIG_BYTES:-$big}

make_tree() {
	local s=$1
	mkdir -p "$s/small" "$s/private" "$s/sticky" "$s/d1/d2/d3/d4" "$s/empty-dir"
	"$FIXTURE" pattern 7 "$BIG" >"$s/big.bin"
	printf 'alpha\n' >"$s/small/a.txt"
	printf '#!/bin/sh\necho hi\n' >"$s/small/b.sh"
	printf 'read only' >"$s/small/c.ro"
	: >"$s/small/empty"
	printf 'secret' >"$s/private/key"
	printf 'deep' >"$s/d1/d2/d3/d4/leaf"
	printf 'space' >"$s/with space"
	printf 'utf8' >"$s/utf8-é€"
	"$FIXTURE" pattern 8 1000001 >"$s/d1/odd-size.bin"
	chmod 0600 "$s/small/a.txt"
	chmod 0755 "$s/small/b.sh"
	chmod 0444 "$s/small/c.ro"
	chmod 0640 "$s/small/empty"
	chmod 04755 "$s/d1/odd-size.bin"
	chmod 0700 "$s/private"
	chmod 01777 "$s/sticky"
	chmod 0750 "$s/d1/d2"
	ln "$s/small/a.txt" "$s/hard-1"
	ln "$s/small/a.txt" "$s/d1/hard-2"
	ln "$s/big.bin" "$s/big-hardlink.bin"
	ln -s small/a.txt "$s/link-rel"
	ln -s /nonexistent/target "$s/link-dangling"
	ln -s small "$s/link-dir"
	ln -s ../../small/b.sh "$s/d1/d2/link-up"
	setfattr -n user.comment -v "a text value" "$s/small/a.txt"
	setfattr -n user.binary -v 0x000102fefdff00 "$s/small/b.sh"
	setfattr -n user.empty "$s/small/empty"
	setfattr -n user.on-dir -v dir "$s/small"
	setfattr -n user.big -v "$(head -c 2000 /dev/zero | tr '\0' 'a')" "$s/big.bin"
	# fixed times, leaves first so that directories keep theirs
	local t=1500000000
	find "$s" -depth -print0 | while IFS= read -r -d '' p; do
		t=$((t + 3607))
		touch -h -d "@$t.123456789" "$p"
	done
}

# One line per entry: name, mode, links, size (not for dirs), mtime, type; then its xattrs.
describe() {
	(cd "$1" && find . -print0 | LC_ALL=C sort -z | while IFS= read -r -d '' p; do
		stat -c '%n %a %h %s %Y %F' -- "$p" |
			awk '$NF == "directory" { $4 = "-" } { print }'
		getfattr -h -d -e hex -m '^user\.' -- "$p" 2>/dev/null | grep -v '^$' || true
	done)
}

compare() {
	local what=$1 a=$2 b=$3
	diff -r --no-dereference "$a" "$b" >"$WORK/content.diff" 2>&1 ||
		{ head -n 20 "$WORK/content.diff"; fail "$what: contents differ (diff -r)"; }
	describe "$a" >"$WORK/meta-a"
	describe "$b" >"$WORK/meta-b"
	diff -u "$WORK/meta-a" "$WORK/meta-b" >"$WORK/meta.diff" ||
		{ cat "$WORK/meta.diff"; fail "$what: metadata differ (- source, + copy)"; }
	echo "$what: identical ($(wc -l <"$WORK/meta-a") lines of metadata)"
}

# A fresh mount: what the cluster holds, not what the kernel still caches from the copy.
remount() {
	umount_lode "$M"
	mount_lode "$M"
}

start_cluster 3
M=$WORK/mnt
mount_lode "$M"
echo "building the source tree ($BIG-byte file)"
make_tree "$WORK/src"
mkdir "$WORK/back"
SECONDS=0
case $mode in
cp)
	cp -a "$WORK/src" "$M/cp"
	compare "cp -a into the mount" "$WORK/src" "$M/cp"
	remount
	compare "cp -a into the mount, after a remount" "$WORK/src" "$M/cp"
	cp -a "$M/cp" "$WORK/back/cp"
	compare "cp -a back out" "$WORK/src" "$WORK/back/cp"
	;;
rsync)
	rsync -aHX "$WORK/src/" "$M/rs/"
	compare "rsync -aHX into the mount" "$WORK/src" "$M/rs"
	again=$(rsync -aHXi --dry-run "$WORK/src/" "$M/rs/")
	[ -z "$again" ] || { echo "$again" | head; fail "a second rsync would copy again"; }
	remount
	compare "rsync -aHX into the mount, after a remount" "$WORK/src" "$M/rs"
	rsync -aHX "$M/rs/" "$WORK/back/rs/"
	compare "rsync -aHX back out" "$WORK/src" "$WORK/back/rs"
	;;
tar)
	TARX=(--xattrs --xattrs-include='user.*' --numeric-owner)
	tar -C "$WORK/src" "${TARX[@]}" -cf "$M/archive.tar" .
	mkdir "$M/tar"
	tar -C "$M/tar" "${TARX[@]}" -xpf "$M/archive.tar"
	compare "tar c into the mount, tar x from it within the mount" "$WORK/src" "$M/tar"
	remount
	compare "tar x within the mount, after a remount" "$WORK/src" "$M/tar"
	mkdir "$WORK/back/tar"
	tar -C "$M/tar" "${TARX[@]}" -cf - . | tar -C "$WORK/back/tar" "${TARX[@]}" -xpf -
	compare "tar c | tar x back out" "$WORK/src" "$WORK/back/tar"
	;;
*) fail "unknown mode $mode" ;;
esac
echo "$mode: done in ${SECONDS}s"
