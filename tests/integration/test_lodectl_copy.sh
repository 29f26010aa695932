#!/usr/bin/env bash
# lodectl put/get of whole directory trees (-r, files copied in parallel), from stdin and to
# stdout, rm -r, and their progress: a bar with bytes, rate and ETA on a terminal (a pty
# here), plain lines at most every LODECTL_PROGRESS_INTERVAL seconds elsewhere (none for a
# short transfer: test logs stay readable), nothing with --quiet. repair shows one too.
set -euo pipefail
LODE_TEST_NAME=lodectl-copy
. "$(dirname "$0")/lib.sh"

export LODE_MDS=$("$lodectl" local up "$dir/c" --oss 2)
umask 022 # the permission bits checked below are the files' less the umask

# on_pty CMD...: runs CMD with stderr on a pseudo-terminal, prints what it wrote there
on_pty() {
	python3 - "$@" <<'EOF'
import os, pty, subprocess, sys
master, slave = pty.openpty()
p = subprocess.Popen(sys.argv[1:], stderr=slave, stdout=subprocess.DEVNULL)
os.close(slave)
out = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:  # EIO: the child closed its end
        break
    if not chunk:
        break
    out += chunk
sys.stdout.write(out.decode(errors="replace"))
sys.exit(p.wait())
EOF
}

echo "== put -r and get -r copy a model directory, in parallel"
m=$dir/model
mkdir -p "$m/tokenizer" "$m/nested/deeper"
for i in 1 2 3 4 5; do head -c $((i * 700000 + 13)) /dev/urandom >"$m/model-0000$i.safetensors"; done
echo '{"a": 1}' >"$m/config.json"
head -c 1000 /dev/urandom >"$m/tokenizer/tokenizer.model"
: >"$m/nested/deeper/empty"
ln -s model-00001.safetensors "$m/latest"
printf '#!/bin/sh\necho hi\n' >"$m/run.sh"
chmod 755 "$m/run.sh"
chmod 600 "$m/config.json"
"$lodectl" mkdir /models
for jobs in 1 8; do
	"$lodectl" put -r -j $jobs "$m" /models/m$jobs 2>"$dir/put.err" || fail "put -r: $(cat "$dir/put.err")"
	grep -q "^put 9 files" "$dir/put.err" || fail "put -r summary: $(cat "$dir/put.err")"
	"$lodectl" get -r -j $jobs /models/m$jobs "$dir/back$jobs" 2>/dev/null || fail "get -r failed"
	diff -r --no-dereference "$m" "$dir/back$jobs" || fail "get -r -j $jobs: the trees differ"
	[ "$(stat -c %a "$dir/back$jobs/run.sh") $(stat -c %a "$dir/back$jobs/config.json")" = "755 600" ] ||
		fail "permission bits were not kept: $(ls -l "$dir/back$jobs")"
done
[ "$("$lodectl" stat /models/m1/latest | awk '/^target:/ {print $2}')" = model-00001.safetensors ] ||
	fail "the symlink was not copied as a symlink"
echo "a newer config" >"$m/config.json"
"$lodectl" put -r "$m" /models/m1 2>/dev/null || fail "put -r over an existing copy failed"
"$lodectl" get /models/m1/config.json - 2>/dev/null | grep -q newer || fail "put -r did not replace"

echo "== put into a directory takes the local name; stdin and stdout stream"
"$lodectl" put "$m/config.json" /models/ 2>/dev/null
"$lodectl" stat /models/config.json >/dev/null || fail "put FILE DIR/ did not write DIR/FILE"
head -c 5000000 /dev/urandom >"$dir/rand"
cat "$dir/rand" | "$lodectl" put - /models/streamed 2>/dev/null
"$lodectl" get /models/streamed - 2>/dev/null | cmp - "$dir/rand" || fail "stdin to stdout differs"

echo "== rm -r removes a tree, rm without -r refuses a directory"
if "$lodectl" rm /models/m8 2>"$dir/rm.err"; then fail "rm removed a directory"; fi
grep -q "is a directory (rm -r" "$dir/rm.err" || fail "rm: $(cat "$dir/rm.err")"
"$lodectl" rm -r /models/m8
if "$lodectl" stat /models/m8 >/dev/null 2>&1; then fail "rm -r left /models/m8"; fi
if "$lodectl" rm -r / 2>/dev/null; then fail "rm -r / was not refused"; fi
"$lodectl" stat /models/m1/config.json >/dev/null || fail "rm -r removed too much"

echo "== progress off a terminal: no line for a short transfer, plain lines for a long one"
head -c $((48 << 20)) /dev/urandom >"$dir/big"
"$lodectl" put "$dir/big" /models/big 2>"$dir/err" >/dev/null
[ "$(wc -l <"$dir/err")" -eq 1 ] || fail "a short put printed more than its summary: $(cat "$dir/err")"
grep -q "^put 1 file, 48.0 MiB (50331648 bytes) in .* s: .* GB/s$" "$dir/err" ||
	fail "put summary: $(cat "$dir/err")"
LODECTL_PROGRESS_INTERVAL=0.001 "$lodectl" get /models/big "$dir/big.back" 2>"$dir/err"
grep -qE '^get: [0-9.]+ [KMG]iB of 48.0 MiB \([0-9]+%\), [0-9.]+ [KMG]?i?B/s, ETA [0-9]+:[0-9]{2}$' \
	"$dir/err" || fail "no plain progress line: $(cat "$dir/err")"
LC_ALL=C grep -q $'[\r\033]' "$dir/err" && fail "terminal control bytes in a log: $(od -c "$dir/err" | head)"
"$lodectl" --quiet put "$dir/big" /models/big2 2>"$dir/err"
[ ! -s "$dir/err" ] || fail "--quiet still wrote: $(cat "$dir/err")"

echo "== progress on a terminal: a bar with bytes, rate and ETA"
on_pty "$lodectl" put "$dir/big" /models/big3 >"$dir/tty" || fail "put on a pty failed"
grep -qE $'\r.*put \\[#+\\] 100% 48.0 MiB / 48.0 MiB .*/s  ETA 0:00' "$dir/tty" ||
	fail "no bar: $(od -c "$dir/tty" | head -20)"
on_pty "$lodectl" get -r /models/m1 "$dir/back-tty" >"$dir/tty" || fail "get -r on a pty failed"
grep -qE 'get \[#+\] 100% ' "$dir/tty" || fail "no bar for get -r: $(od -c "$dir/tty" | head)"
on_pty "$lodectl" -q put "$dir/big" /models/big4 >"$dir/tty"
[ ! -s "$dir/tty" ] || fail "--quiet drew on the terminal: $(od -c "$dir/tty" | head)"

echo "== an interrupted put leaves nothing behind"
mkfifo "$dir/fifo"
"$lodectl" put - /models/never <"$dir/fifo" 2>"$dir/err" &
pid=$!
exec 4>"$dir/fifo" # a writer that never writes: put waits in read()
head -c 3000000 /dev/urandom >&4
sleep 0.5
kill -TERM $pid
rc=0
wait $pid || rc=$?
exec 4>&-
[ $rc -eq 143 ] || fail "an interrupted put exited $rc: $(cat "$dir/err")"
grep -q "interrupted: /models/never left as it was" "$dir/err" || fail "put: $(cat "$dir/err")"
"$lodectl" ls /models | grep -E 'never|lodectl-put' && fail "an interrupted put left a file"

echo "== repair shows its progress"
"$lodectl" put "$dir/rand" /models/mirrored --stripe-count 1 --mirrors 2 2>/dev/null
ino=$("$lodectl" stat /models/mirrored | awk '/^inode:/ {print $2}')
obj=$(find "$dir/c/oss0/objects" -name "$(printf '%016x' "$ino").*.00000000" | head -1)
[ -n "$obj" ] || fail "no object of inode $ino on oss0"
rm "$obj"
"$lodectl" local kill "$dir/c" oss1 -9
"$lodectl" --timeout 3000 get /models/mirrored "$dir/x" 2>/dev/null && fail "read a deleted object"
"$lodectl" local up "$dir/c" >/dev/null
"$lodectl" stat /models/mirrored | grep -q "copies: 1 of 2 degraded" || fail "no degraded copy"
on_pty "$lodectl" repair /models/mirrored >"$dir/tty" || fail "repair failed: $(cat "$dir/tty")"
grep -qE 'repair \[#+\] 100% 4.8 MiB / 4.8 MiB' "$dir/tty" || fail "no repair bar: $(od -c "$dir/tty" | head)"
"$lodectl" stat /models/mirrored | grep -q "copies: 0 of 2 degraded" || fail "repair did not repair"
echo PASS
