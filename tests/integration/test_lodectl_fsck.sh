#!/usr/bin/env bash
# lodectl fsck on a real local cluster: each planted fault is found (exit 4), fixed by
# --repair (exit 1), and a second fsck is clean (exit 0). Object faults are planted in the
# OSS's object directories; namespace faults (a removed entry, a wrong link count, a layout
# naming a removed target) in the stopped MDS's LMDB store by fsck_plant.py (test only).
set -euo pipefail
LODE_TEST_NAME=fsck
source "$(dirname "$0")/lib.sh"
plant="$(cd "$(dirname "$0")" && pwd)/fsck_plant.py"
/usr/bin/python3 -c 'import lmdb' 2>/dev/null ||
	{ echo "SKIP: python3-lmdb is not installed (tools/install-deps.sh)"; exit 77; }

c="$dir/c"
mds=$("$lodectl" local up "$c" --oss 3)
export LODE_MDS=$mds
head -c 3000000 /dev/urandom >"$dir/data"

# fsck_expect STATUS [ARGS]: runs fsck, which must exit STATUS; its output in $dir/out
fsck_expect() {
	local want=$1 rc=0
	shift
	"$lodectl" fsck "$@" >"$dir/out" 2>&1 || rc=$?
	[ "$rc" = "$want" ] || { cat "$dir/out"; fail "fsck $* exited $rc, expected $want"; }
}
# found_fixed_clean KIND: the planted fault is found, repaired, then gone
found_fixed_clean() {
	fsck_expect 4
	grep -q "^$1:" "$dir/out" || { cat "$dir/out"; fail "fsck did not report $1"; }
	fsck_expect 1 --repair
	grep -q "^$1: .*(fixed)\|^$1:" "$dir/out" || { cat "$dir/out"; fail "repair did not see $1"; }
	fsck_expect 0
}
ino_of() { "$lodectl" stat --json "$1" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["inode"])'; }
# objects INO STRIPE: the data files of that stripe's copies, on every OSS
objects() { ls "$c"/oss*/objects/*/"$(printf '%016x' "$1")".*."$(printf '%08x' "$2")" 2>/dev/null; }
same_bytes() { "$lodectl" get --quiet "$1" "$dir/back" && cmp -s "$dir/data" "$dir/back" || fail "$1 changed"; }
restart_mds_after() { # restart_mds_after CMD...: runs CMD on the stopped MDS's store
	"$lodectl" local kill "$c" mds >/dev/null # returns once it has exited
	"$@"
	"$lodectl" local up "$c" >/dev/null
}

for f in a b c d e f g; do "$lodectl" put --quiet "$dir/data" "/$f"; done
"$lodectl" mkdir /sub
"$lodectl" ln /a /sub/a2
fsck_expect 0
grep -q " 0 errors" "$dir/out" || fail "a healthy cluster had errors: $(cat "$dir/out")"

echo "a removed object file"
ino=$(ino_of /a)
obj=$(objects "$ino" 0 | head -1)
rm -f "$obj" "$obj.sum"
found_fixed_clean missing_object
same_bytes /a
[ -e "$obj" ] || fail "the removed object was not rebuilt"

echo "an extra object file (a generation no file has)"
ino=$(ino_of /b)
obj=$(objects "$ino" 0 | head -1)
extra="${obj%.*.*}.$(printf '%016x' 7).00000000"
cp "$obj" "$extra"; cp "$obj.sum" "$extra.sum"
found_fixed_clean stray_object
[ ! -e "$extra" ] || fail "the stray object is still there"
same_bytes /b

echo "a truncated object"
ino=$(ino_of /c)
obj=$(objects "$ino" 0 | head -1)
truncate -s 1000 "$obj"
found_fixed_clean short_object
same_bytes /c

echo "a stray left by repair (a copy on a target the layout does not name)"
ino=$(ino_of /g)
obj=$(objects "$ino" 0 | head -1)
for o in "$c"/oss*; do
	if [ -z "$(ls "$o"/objects/*/"$(basename "$obj")" 2>/dev/null)" ]; then
		mkdir -p "$o/objects/$(basename "$(dirname "$obj")")"
		cp "$obj" "$obj.sum" "$o/objects/$(basename "$(dirname "$obj")")/"
		left="$o/objects/$(basename "$(dirname "$obj")")/$(basename "$obj")"
		break
	fi
done
[ -n "${left:-}" ] || fail "no OSS without a copy of stripe 0"
found_fixed_clean stray_object
[ ! -e "$left" ] || fail "the stray copy is still there"
same_bytes /g

echo "a removed directory entry (orphaned inode)"
ino=$(ino_of /d)
restart_mds_after /usr/bin/python3 "$plant" "$c/mds" unlink-entry 1 d >/dev/null
found_fixed_clean unlinked_inode
same_bytes "/lost+found.$ino"

echo "a wrong link count"
ino=$(ino_of /e)
restart_mds_after /usr/bin/python3 "$plant" "$c/mds" nlink "$ino" 5
found_fixed_clean link_count
[ "$("$lodectl" stat --json /e | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["nlink"])')" = 1 ] ||
	fail "/e's link count was not set back to 1"
ino=$(ino_of /a)
restart_mds_after /usr/bin/python3 "$plant" "$c/mds" nlink "$ino" 1
found_fixed_clean link_count

echo "a layout naming a removed target"
ino=$(ino_of /f)
restart_mds_after /usr/bin/python3 "$plant" "$c/mds" target "$ino" 0 77
found_fixed_clean unknown_target
same_bytes /f
"$lodectl" stat --json /f | grep -q '"target": 77' && fail "/f still names target 77"

echo "a layout naming a target removed from the cluster"
# oss2's target is marked removed (as lodectl target remove would, had it been drained):
# every copy it holds is lost to the layouts, and --repair copies them to the others
tid=$("$lodectl" --json status | /usr/bin/python3 -c '
import json, sys
addr = open(sys.argv[1]).read().strip()
print([t["id"] for t in json.load(sys.stdin)["targets"] if t["address"] == addr][0])' "$c/oss2/addr")
restart_mds_after /usr/bin/python3 "$plant" "$c/mds" remove-target "$tid"
found_fixed_clean unknown_target
same_bytes /f
"$lodectl" stat --json /f | grep -q "\"target\": $tid[,}]" && fail "/f still names removed target $tid"

echo "an operational error: an OSS down"
"$lodectl" local kill "$c" oss1 -9 >/dev/null
for _ in $(seq 200); do "$lodectl" status | grep -q " down " && break; sleep 0.05; done
fsck_expect 8
echo "PASS"
