#!/usr/bin/env bash
# meson install (into a DESTDIR) puts the programs, mount.lode, the systemd units, the
# example config files and docs/config.md in place; the installed programs accept the
# example files; systemd-analyze verify accepts the units, with their ExecStart= pointed at
# the DESTDIR's programs (a unit naming a program that is not there fails verify).
set -euo pipefail
LODE_TEST_NAME=install
build=${LODE_BUILD_ROOT:?}
. "$(dirname "$0")/lib.sh"
command -v meson >/dev/null || { echo "SKIP: meson is not in PATH"; exit 77; }
dest=$dir/dest
meson install -C "$build" --no-rebuild --quiet --destdir "$dest" >"$dir/install.out" 2>&1 ||
	fail "meson install: $(cat "$dir/install.out")"
d=$dest
export LD_LIBRARY_PATH=$d$LODE_LIBDIR

echo "== programs"
for p in lode-mds lode-oss lodectl ${LODE_WITH_FUSE:+lode-fuse}; do
	[ -x "$d$LODE_BINDIR/$p" ] || fail "$LODE_BINDIR/$p is not installed"
	"$d$LODE_BINDIR/$p" --version | grep -q "^$p " || fail "$p --version"
	echo "$LODE_BINDIR/$p"
done
if [ -n "${LODE_WITH_FUSE:-}" ]; then
	[ -x "$d$LODE_SBINDIR/mount.lode" ] || fail "$LODE_SBINDIR/mount.lode is not installed"
	echo "$LODE_SBINDIR/mount.lode"
fi

echo "== units, examples, docs"
timers="lode-fsck.service lode-fsck.timer lode-scrub.service lode-scrub.timer"
for f in "$LODE_UNITDIR/lode-mds.service" "$LODE_UNITDIR/lode-oss@.service" \
	"$LODE_UNITDIR/models.mount" "$LODE_DOCDIR/config.md" "$LODE_DOCDIR/examples/mds.conf" \
	"$LODE_DOCDIR/examples/oss.conf" "$LODE_DOCDIR/examples/fuse.conf" \
	"$LODE_DOCDIR/examples/lodectl.env" $(printf "$LODE_UNITDIR/%s " $timers); do
	[ -f "$d$f" ] || fail "$f is not installed"
	echo "$f"
done
grep -qx "ExecStart=$LODE_BINDIR/lode-mds --config $LODE_SYSCONFDIR/lode/mds.conf" \
	"$d$LODE_UNITDIR/lode-mds.service" || fail "lode-mds.service runs something else"
grep -qx "ExecStart=$LODE_BINDIR/lode-oss --config $LODE_SYSCONFDIR/lode/oss-%i.conf" \
	"$d$LODE_UNITDIR/lode-oss@.service" || fail "lode-oss@.service runs something else"
grep -qx "ExecStart=$LODE_BINDIR/lodectl fsck --repair" "$d$LODE_UNITDIR/lode-fsck.service" ||
	fail "lode-fsck.service runs something else"
grep -qx "EnvironmentFile=$LODE_SYSCONFDIR/lode/lodectl.env" "$d$LODE_UNITDIR/lode-scrub.service" ||
	fail "lode-scrub.service reads its environment elsewhere"
grep -E '@[a-z]+@' "$d$LODE_UNITDIR"/lode-*.service "$d$LODE_UNITDIR"/lode-*.timer \
	"$d$LODE_UNITDIR/models.mount" && fail "an unsubstituted @VAR@ in a unit"

echo "== the examples are valid config files (keys and values)"
"$d$LODE_BINDIR/lode-mds" --config "$d$LODE_DOCDIR/examples/mds.conf" --version >/dev/null ||
	fail "lode-mds refuses examples/mds.conf"
"$d$LODE_BINDIR/lode-oss" --config "$d$LODE_DOCDIR/examples/oss.conf" --version >/dev/null ||
	fail "lode-oss refuses examples/oss.conf"
if [ -n "${LODE_WITH_FUSE:-}" ]; then
	"$d$LODE_BINDIR/lode-fuse" --config "$d$LODE_DOCDIR/examples/fuse.conf" --version \
		>/dev/null || fail "lode-fuse refuses examples/fuse.conf"
fi

echo "== systemd-analyze verify"
command -v systemd-analyze >/dev/null ||
	{ echo "SKIP: systemd-analyze missing (package systemd, tools/install-deps.sh)"; exit 77; }
mkdir "$dir/units"
for u in lode-mds.service lode-oss@.service models.mount $timers; do
	sed -e "s|$LODE_BINDIR/|$d$LODE_BINDIR/|g" -e "s|$LODE_SBINDIR/|$d$LODE_SBINDIR/|g" \
		"$d$LODE_UNITDIR/$u" >"$dir/units/$u"
done
cp "$dir/units/lode-oss@.service" "$dir/units/lode-oss@0.service"
# the timers' services read an environment file that only an admin writes: the example
sed -i "s|EnvironmentFile=$LODE_SYSCONFDIR/lode/lodectl.env|EnvironmentFile=$d$LODE_DOCDIR/examples/lodectl.env|" \
	"$dir/units/lode-fsck.service" "$dir/units/lode-scrub.service"
(cd "$dir/units" && systemd-analyze verify --man=no lode-mds.service lode-oss@0.service \
	models.mount $timers) >"$dir/verify.out" 2>&1 || fail "systemd-analyze verify: $(cat "$dir/verify.out")"
[ ! -s "$dir/verify.out" ] || fail "systemd-analyze verify warned: $(cat "$dir/verify.out")"
# and it would catch a unit whose program is missing
sed -i "s|$d$LODE_BINDIR/lode-mds|$dir/nowhere/lode-mds|" "$dir/units/lode-mds.service"
(cd "$dir/units" && systemd-analyze verify --man=no lode-mds.service) >/dev/null 2>&1 &&
	fail "systemd-analyze verify accepts a unit naming a missing program"
echo "PASS"
