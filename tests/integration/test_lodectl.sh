#!/usr/bin/env bash
# lodectl against a real local cluster: `ls` shows control bytes in names escaped, never raw
# (a name could move the cursor or retitle the terminal), and a `get` that fails half way
# leaves no partial file behind and an existing LOCAL as it was.
set -euo pipefail
LODE_TEST_NAME=lodectl
. "$(dirname "$0")/lib.sh"

export LODE_MDS=$("$lodectl" local up "$dir/c" --oss 2)
"$lodectl" mkdir /d
echo hello >"$dir/small"
name=$(printf 'bad\033]0;title\007name\001')
"$lodectl" put "$dir/small" "/d/$name" >/dev/null

echo "== ls escapes control bytes"
for flag in "" -l; do
	"$lodectl" ls $flag /d >"$dir/ls.out"
	if LC_ALL=C grep -q $'[\001-\037\177]' "$dir/ls.out"; then
		fail "ls $flag printed a control byte: $(od -c "$dir/ls.out" | head -3)"
	fi
	grep -q 'bad\\x1b]0;title\\x07name\\x01' "$dir/ls.out" || fail "ls $flag: $(cat "$dir/ls.out")"
done

echo "== a get that fails half way leaves no partial file"
head -c $((64 << 20)) /dev/urandom >"$dir/big"
"$lodectl" put "$dir/big" /d/big >/dev/null
echo "old content" >"$dir/local"
"$lodectl" local kill "$dir/c" oss0 -9
"$lodectl" local kill "$dir/c" oss1 -9
if "$lodectl" --timeout 2000 get /d/big "$dir/local" 2>"$dir/get.err"; then
	fail "get succeeded with every OSS down"
fi
[ "$(cat "$dir/local")" = "old content" ] || fail "the existing file was changed"
leftover=$(find "$dir" -maxdepth 1 -name 'local?*' | head -1)
[ -z "$leftover" ] || fail "a partial file was left behind: $leftover"
if "$lodectl" --timeout 2000 get /d/big "$dir/new" 2>/dev/null; then
	fail "get succeeded with every OSS down"
fi
[ ! -e "$dir/new" ] || fail "a failed get created LOCAL"
[ -z "$(find "$dir" -maxdepth 1 -name 'new*')" ] || fail "a failed get left a file"
echo PASS
