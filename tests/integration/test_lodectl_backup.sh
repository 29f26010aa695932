#!/usr/bin/env bash
# lodectl mds backup during a create storm, then the documented restore: stop the cluster,
# lode-mds --restore, start, fsck. Files created after the backup are strays, files deleted
# since are missing; fsck --repair --remove-lost resolves both and a second fsck is clean;
# files in the backup read byte-exact; a new file never meets a stray's object.
set -euo pipefail
LODE_TEST_NAME=backup
source "$(dirname "$0")/lib.sh"
here="$(cd "$(dirname "$0")" && pwd)"
storm="$here/create_storm.py"
py=/usr/bin/python3
mds_bin=${LODE_MDS_BIN:?}
export LODE_BUILD_DIR=${LODE_BUILD_DIR:-$(cd "$(dirname "$lodectl")/.." && pwd)}
# python/lode in an uninstrumented python: with ASan, its runtime goes first, and python's
# own allocations are not this project's leaks (the daemons and lodectl keep the checks)
py() {
	if [ -n "${LODE_PY_PRELOAD:-}" ]; then
		LD_PRELOAD=$LODE_PY_PRELOAD ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 /usr/bin/python3 "$@"
	else
		/usr/bin/python3 "$@"
	fi
}
writers=()
stop_writers() {
	touch "$dir/stop"
	for p in "${writers[@]}"; do
		wait "$p" || { tail -n 5 "$dir"/w*.err; fail "a storm writer failed"; }
	done
	writers=()
}
trap 'touch "$dir/stop"; cleanup' EXIT

c="$dir/c"
# orphan grace 0: the objects of deleted files are removed within seconds
mds=$("$lodectl" local up "$c" --oss 3 --orphan-grace 0)
export LODE_MDS=$mds
js() { $py -c "import json,sys; d=json.load(sys.stdin); print($1)"; }
fsck_expect() { # fsck_expect STATUS [ARGS]: fsck must exit STATUS; its JSON in $dir/fsck.json
	local want=$1 rc=0
	shift
	"$lodectl" --json fsck "$@" >"$dir/fsck.json" 2>"$dir/fsck.err" || rc=$?
	[ "$rc" = "$want" ] || { cat "$dir/fsck.json" "$dir/fsck.err"; fail "fsck $* exited $rc, expected $want"; }
}
kinds() { js '" ".join(sorted(set(x["kind"] for x in d["findings"])))' <"$dir/fsck.json"; }

echo "files before the backup, some deleted after it"
head -c 300000 /dev/urandom >"$dir/data"
for d in keep gone storm after; do "$lodectl" mkdir "/$d"; done
for i in 1 2 3 4 5; do "$lodectl" put --quiet "$dir/data" "/keep/k$i"; done
for i in 1 2 3; do "$lodectl" put --quiet "$dir/data" "/gone/g$i"; done
"$lodectl" ln /gone/g1 /keep/g1-link

echo "a create storm, and a backup while it runs"
for w in 0 1 2; do
	py "$storm" /storm "w$w-" "$dir/stop" >"$dir/w$w.list" 2>"$dir/w$w.err" &
	writers+=($!)
done
for _ in $(seq 100); do [ "$(cat "$dir"/w*.list | wc -l)" -ge 20 ] && break; sleep 0.1; done
cat "$dir"/w*.list >"$dir/before" # closed before the backup began: in it, whole
"$lodectl" --json mds backup "$dir/ns.backup" >"$dir/backup.json"
during=$(cat "$dir"/w*.list | wc -l)
for _ in $(seq 100); do [ "$(cat "$dir"/w*.list | wc -l)" -ge $((during + 20)) ] && break; sleep 0.1; done
stop_writers
total=$(cat "$dir"/w*.list | wc -l)
echo "storm: $total files, $during of them when the backup was done"
[ -s "$dir/ns.backup" ] || fail "no backup file"
[ "$(js 'd["bytes"]' <"$dir/backup.json")" = "$(stat -c %s "$dir/ns.backup")" ] ||
	fail "backup size differs from what lodectl reported"
ls "$dir"/ns.backup.lodectl-backup.* 2>/dev/null && fail "a temporary file was left"
"$lodectl" key derive --role client "$c/cluster.key" "$dir/client.key" >/dev/null
if "$lodectl" --key "$dir/client.key" mds backup "$dir/x.backup" 2>"$dir/err"; then
	fail "a client key made a backup"
fi
grep -q "admin key" "$dir/err" || fail "unclear refusal: $(cat "$dir/err")"
[ ! -e "$dir/x.backup" ] || fail "a refused backup left a file"

echo "after the backup: new files, deleted files"
for i in 1 2 3; do "$lodectl" put --quiet "$dir/data" "/after/a$i"; done
after_inos=$(for i in 1 2 3; do "$lodectl" stat --json "/after/a$i" | js 'd["inode"]'; done)
gone_inos=$(for i in 1 2 3; do "$lodectl" stat --json "/gone/g$i" | js 'd["inode"]'; done)
"$lodectl" rm -r /gone
"$lodectl" rm /keep/g1-link
# wait for the OSS to remove the deleted files' objects (orphan sweep every 5 s)
objs_of() { for i in $1; do ls "$c"/oss*/objects/*/"$(printf '%016x' "$i")".* 2>/dev/null; done; }
for _ in $(seq 150); do [ -z "$(objs_of "$gone_inos")" ] && break; sleep 0.1; done
[ -z "$(objs_of "$gone_inos")" ] || fail "the deleted files' objects were not removed"

echo "restore: stop, lode-mds --restore, start"
"$lodectl" local down "$c"
if "$mds_bin" --data "$c/mds" --restore "$dir/data" 2>"$dir/err"; then fail "restored from a non-LMDB file"; fi
grep -q "restore" "$dir/err" || fail "unclear error: $(cat "$dir/err")"
"$mds_bin" --data "$c/mds" --restore "$dir/ns.backup" 2>"$dir/restore.log" ||
	{ cat "$dir/restore.log"; fail "lode-mds --restore failed"; }
[ -e "$c/mds/data.mdb.pre-restore" ] || fail "the replaced store was not kept"
"$lodectl" local up "$c" >/dev/null

echo "the restored namespace: the backup's, not what came after"
"$lodectl" ls /after >"$dir/out"
[ ! -s "$dir/out" ] || fail "/after holds files made after the backup: $(cat "$dir/out")"
"$lodectl" ls /gone | grep -q g1 || fail "/gone/g1 (deleted after the backup) is not back"

echo "a new file cannot meet a stray's object"
"$lodectl" put --quiet "$dir/data" /new1
new_ino=$("$lodectl" stat --json /new1 | js 'd["inode"]')
for i in $after_inos; do
	[ "$new_ino" -gt "$i" ] || fail "new file got inode $new_ino, not past $i made after the backup"
done

echo "fsck: strays and missing objects"
fsck_expect 4
[ "$(kinds)" = "missing_object stray_object" ] || fail "fsck found: $(kinds)"
for i in $after_inos; do
	js "[x for x in d['findings'] if x['kind'] == 'stray_object' and x['ino'] == $i]" \
		<"$dir/fsck.json" | grep -q ino || fail "no stray reported for inode $i"
done
for i in $gone_inos; do
	js "[x for x in d['findings'] if x['kind'] == 'missing_object' and x['ino'] == $i]" \
		<"$dir/fsck.json" | grep -q ino || fail "no missing object reported for inode $i"
done
echo "fsck --repair --remove-lost, then a clean fsck"
fsck_expect 1 --repair --remove-lost
fsck_expect 0
[ -z "$(objs_of "$after_inos")" ] || fail "strays of files made after the backup remain"
if "$lodectl" ls /gone 2>/dev/null | grep -q g; then fail "lost files remain in /gone"; fi
if "$lodectl" stat /keep/g1-link >/dev/null 2>&1; then fail "the lost file's other name remains"; fi

echo "files in the backup read byte-exact"
for i in 1 2 3 4 5; do
	"$lodectl" get --quiet "/keep/k$i" "$dir/back" && cmp -s "$dir/data" "$dir/back" ||
		fail "/keep/k$i changed"
done
"$lodectl" get --quiet /new1 "$dir/back" && cmp -s "$dir/data" "$dir/back" || fail "/new1 changed"
"$lodectl" ls /storm | sed 's|^|/storm/|' >"$dir/in_backup"
n=$(wc -l <"$dir/in_backup")
[ "$n" -ge "$(wc -l <"$dir/before")" ] || fail "the backup holds $n storm files, fewer than were closed before it"
[ "$n" -lt "$total" ] || fail "the backup holds all $total storm files: it was not taken during the storm"
py "$storm" --check <"$dir/in_backup" >"$dir/check"
! grep -q "^bad" "$dir/check" || fail "storm files differ: $(grep '^bad' "$dir/check" | head -3)"
full=$(grep -c "^full" "$dir/check" || true)
echo "backup: $n storm files of $total ($full complete, the rest caught before their data)"
while read -r p; do
	grep -qx "full $p" "$dir/check" || fail "$p, closed before the backup, is not whole after the restore"
done <"$dir/before"

echo "a restore with the old store lost skips 2^32 inode numbers"
"$lodectl" local down "$c"
rm -f "$c/mds/data.mdb" "$c/mds/data.mdb.pre-restore"
"$mds_bin" --data "$c/mds" --restore "$dir/ns.backup" 2>"$dir/restore.log" ||
	{ cat "$dir/restore.log"; fail "lode-mds --restore failed"; }
"$lodectl" local up "$c" >/dev/null
"$lodectl" put --quiet "$dir/data" /new2
new_ino=$("$lodectl" stat --json /new2 | js 'd["inode"]')
[ "$new_ino" -gt $((1 << 32)) ] || fail "a new file got inode $new_ino after a restore without the old store"
echo OK
