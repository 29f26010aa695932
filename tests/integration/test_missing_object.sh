#!/usr/bin/env bash
# Never a wrong byte: an object whose data file is deleted or cut short on the OSS's disk,
# while its checksums remain, is an error on read, never zeros. With the other copy's OSS
# down the read fails and the bad copy is reported degraded; with it back, the read
# fails over to it and returns every byte. (That a sparse file's never-written ranges still
# read as zeros is checked by cluster-data and fuse-fsx.)
set -euo pipefail
LODE_TEST_NAME=missing-object
. "$(dirname "$0")/lib.sh"

export LODE_MDS=$("$lodectl" local up "$dir/c" --oss 2)
head -c 3000000 /dev/urandom >"$dir/src"

# the object of stripe 0 of the file on each OSS: DATA/objects/XX/<ino 16 hex>.<gen>.00000000
object_on() { # OSS_NAME INO
	find "$dir/c/$1/objects" -name "$(printf '%016x' "$2").*.00000000" | head -1
}

for damage in delete truncate; do
	echo "== data file ${damage}d on one copy"
	"$lodectl" put "$dir/src" "/$damage" --stripe-count 1 --mirrors 2 >/dev/null
	ino=$("$lodectl" stat "/$damage" | awk '/^inode:/ {print $2}')
	obj=$(object_on oss0 "$ino")
	[ -n "$obj" ] && [ -s "$obj.sum" ] || fail "no object of inode $ino on oss0"
	if [ "$damage" = delete ]; then rm "$obj"; else truncate -s 65536 "$obj"; fi
	"$lodectl" local kill "$dir/c" oss1 -9
	if "$lodectl" --timeout 3000 get "/$damage" "$dir/out" 2>"$dir/err"; then
		cmp -s "$dir/src" "$dir/out" || fail "read returned wrong bytes instead of an error"
		fail "read succeeded from a copy whose data is gone"
	fi
	"$lodectl" stat "/$damage" | grep -q "copies: 1 of 2 degraded" ||
		fail "the bad copy was not reported: $("$lodectl" stat "/$damage")"
	"$lodectl" local up "$dir/c" --oss 2 >/dev/null
	"$lodectl" get "/$damage" "$dir/out" >/dev/null || fail "read failed with a good copy up"
	cmp "$dir/src" "$dir/out" || fail "the good copy's bytes differ"
done
echo PASS
