#!/usr/bin/env bash
# Daemon log lines carry a full date, time and zone (ISO 8601 with milliseconds) when
# written to a file; when stderr is systemd's journal stream (JOURNAL_STREAM names its
# device and inode) they carry sd-daemon level prefixes and no time instead; a
# JOURNAL_STREAM inherited by a process whose stderr went elsewhere is not the journal.
set -euo pipefail
LODE_TEST_NAME=log
. "$(dirname "$0")/lib.sh"

dated='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{2}:[0-9]{2} (ERROR|WARN |INFO |DEBUG) lode-(mds|oss): '
# stop_and_check NAME: stops the daemon started last and waits for it
stop_last() {
	local p=${pids[-1]}
	kill "$p"
	wait "$p" || true
	unset 'pids[-1]'
}

echo "== in a file: full date, time and zone"
start_daemon mds "$mds_bin" --key "$key" --data "$dir/mds" --listen tcp://127.0.0.1:0 \
	--port-file "$dir/mds.port"
wait_file "$dir/mds.port"
mds=$(cat "$dir/mds.port")
start_daemon oss "$oss_bin" --key "$key" --data "$dir/oss" --listen tcp://127.0.0.1:0 --mds "$mds" \
	--port-file "$dir/oss.port"
wait_file "$dir/oss.port"
stop_last
stop_last
for f in mds oss; do
	cat "$dir/$f.log"
	[ "$(wc -l <"$dir/$f.log")" -ge 2 ] || fail "lode-$f logged less than its start and stop"
	if grep -Evq "$dated" "$dir/$f.log"; then
		fail "lode-$f: a line without a full date and zone: $(grep -Ev "$dated" "$dir/$f.log" | head -1)"
	fi
	grep -q "listening on tcp://127.0.0.1:" "$dir/$f.log" || fail "lode-$f did not log its address"
	# the date is today's (UTC or local, near midnight either)
	day=$(head -c 10 "$dir/$f.log")
	[ "$day" = "$(date +%F)" ] || [ "$day" = "$(date -u +%F)" ] || [ "$day" = "$(date -d '-1 day' +%F)" ] ||
		fail "lode-$f dated its line $day"
done

echo "== under systemd: level prefixes for the journal, no time"
# stderr is a file here; JOURNAL_STREAM names that file as systemd names the journal socket
(
	exec 2>"$dir/journal.log"
	JOURNAL_STREAM=$(stat -L -c '%d:%i' /dev/stderr) exec "$mds_bin" --key "$key" --data "$dir/mds" \
		--listen tcp://127.0.0.1:0 --port-file "$dir/mds2.port"
) &
pids+=($!)
wait_file "$dir/mds2.port"
# a second MDS on the same directory: refused with an error line, also for the journal
(
	exec 2>"$dir/journal-err.log"
	JOURNAL_STREAM=$(stat -L -c '%d:%i' /dev/stderr) exec "$mds_bin" --key "$key" --data "$dir/mds" \
		--listen tcp://127.0.0.1:0
) && fail "a second lode-mds started on a directory in use"
stop_last
cat "$dir/journal.log" "$dir/journal-err.log"
grep -qx '<6>listening on tcp://127\.0\.0\.1:[0-9]*' "$dir/journal.log" ||
	fail "no info line with <6>"
grep -q '^<6>.*stopping' "$dir/journal.log" || fail "no stop line with <6>"
if grep -vq '^<[3467]>' "$dir/journal.log"; then
	fail "a line without a level prefix: $(grep -v '^<[3467]>' "$dir/journal.log" | head -1)"
fi
grep -Eq '[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}' "$dir/journal.log" && fail "a time in a journal line"
grep -q '^<3>.*in use by another lode-mds' "$dir/journal-err.log" || fail "no error line with <3>"

echo "== JOURNAL_STREAM inherited, stderr elsewhere: dated lines"
JOURNAL_STREAM=$(stat -L -c '%d:%i' "$dir/journal.log") start_daemon stale "$mds_bin" \
	--key "$key" --data "$dir/mds" --listen tcp://127.0.0.1:0 --port-file "$dir/mds3.port"
wait_file "$dir/mds3.port"
stop_last
grep -Eq "$dated" "$dir/stale.log" || fail "not dated: $(head -1 "$dir/stale.log")"
grep -q '^<' "$dir/stale.log" && fail "a journal prefix while stderr is not the journal"
echo "PASS"
