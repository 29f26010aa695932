#!/usr/bin/env bash
# Identity bound server-side (issue 13): a node holding a client group's key (lodectl key
# derive --group NAME) gets what the MDS's --client-group rule for NAME says, whatever uid
# its callers claim. Through lode-fuse mounts, each with one group's key, on a real cluster:
# - squash=root: root on that node is nobody: it cannot read or chmod root's 0600 file, and
#   what it creates belongs to 65534;
# - uids=1000-1999: root is refused outright, uid 1500 works (its files are its own), uid
#   2500 is refused;
# - squash=all: every caller is nobody;
# - a group the MDS has no rule for is refused, and a group key cannot act as admin.
# The same operations through a mount holding the cluster key succeed (the control).
set -euo pipefail
mds_bin=${LODE_MDS_BIN:?}
oss_bin=${LODE_OSS_BIN:?}
LODE_TEST_NAME=identity
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root to mount and to change uid"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: setpriv missing (util-linux)"; exit 77; }

pids=()
trap 'cleanup_mounts; kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT

chmod 755 "$dir" # the mounts are reached by the uids below
key=$dir/cluster.key
"$lodectl" key generate "$key" >/dev/null
for g in sq team all ghost; do "$lodectl" key derive --group "$g" "$key" "$dir/$g.key" >/dev/null; done
grep -q "^lode-key-v1 client:team " "$dir/team.key" || fail "a group key file says $(cut -c1-30 "$dir/team.key")"

"$mds_bin" --data "$dir/mds" --listen tcp://127.0.0.1:0 --port-file "$dir/mds.addr" --key "$key" \
	--client-group sq:squash=root --client-group team:uids=1000-1999 \
	--client-group all:squash=all 2>"$dir/mds.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$dir/mds.addr" ] && break; sleep 0.1; done
mds=$(cat "$dir/mds.addr")
for i in 0 1; do
	"$oss_bin" --data "$dir/oss$i" --listen tcp://127.0.0.1:0 --mds "$mds" --key "$key" \
		2>"$dir/oss$i.log" &
	pids+=($!)
done
export LODE_MDS=$mds LODE_KEY_FILE=$key
for _ in $(seq 100); do
	[ "$("$lodectl" --json status 2>/dev/null | python3 -c 'import json,sys; print(sum(t["state"]=="up" for t in json.load(sys.stdin)["targets"]))' 2>/dev/null)" = 2 ] && break
	sleep 0.1
done

mount_lode "$dir/admin" "key=$key,allow_other"
mkdir "$dir/admin/pub" && chmod 1777 "$dir/admin/pub"
echo secret >"$dir/admin/rootfile" && chmod 600 "$dir/admin/rootfile"

as() { # UID CMD...: run CMD as UID (gid the same), no supplementary groups
	local u=$1
	shift
	setpriv --reuid "$u" --regid "$u" --clear-groups "$@"
}

echo "== squash=root: root on the node is nobody"
mount_lode "$dir/sq" "key=$dir/sq.key,allow_other"
if cat "$dir/sq/rootfile" >/dev/null 2>"$dir/err"; then fail "squashed root read root's 0600 file"; fi
grep -qi "permission denied" "$dir/err" || fail "squashed read: $(cat "$dir/err")"
if chmod 666 "$dir/sq/rootfile" 2>"$dir/err"; then fail "squashed root chmodded root's file"; fi
touch "$dir/sq/pub/from-sq"
[ "$(stat -c %u:%g "$dir/admin/pub/from-sq")" = 65534:65534 ] ||
	fail "a squashed root's file belongs to $(stat -c %u:%g "$dir/admin/pub/from-sq")"
as 1200 touch "$dir/sq/pub/from-1200"
[ "$(stat -c %u "$dir/admin/pub/from-1200")" = 1200 ] || fail "root squash changed uid 1200"

echo "== uids=1000-1999: only those uids"
mount_lode "$dir/team" "key=$dir/team.key,allow_other"
if stat "$dir/team/pub" >/dev/null 2>"$dir/err"; then fail "root passed a uids=1000-1999 group"; fi
as 1500 touch "$dir/team/pub/from-1500"
[ "$(stat -c %u:%g "$dir/admin/pub/from-1500")" = 1500:1500 ] || fail "uid 1500's file is not its own"
if as 2500 touch "$dir/team/pub/from-2500" 2>"$dir/err"; then fail "uid 2500 passed a uids=1000-1999 group"; fi
[ ! -e "$dir/admin/pub/from-2500" ] || fail "uid 2500's refused create left a file"

echo "== squash=all: everyone is nobody"
mount_lode "$dir/all" "key=$dir/all.key,allow_other"
as 1500 sh -c ": >\"\$0\"" "$dir/all/pub/from-all" # create only: touch's utimes would need ownership
[ "$(stat -c %u:%g "$dir/admin/pub/from-all")" = 65534:65534 ] ||
	fail "squash=all left $(stat -c %u:%g "$dir/admin/pub/from-all")"

echo "== a group without a rule, and a group key as admin"
if LODE_KEY_FILE=$dir/ghost.key "$lodectl" ls / >"$dir/out" 2>&1; then
	fail "a group the MDS has no rule for was served"
fi
grep -qi "permission denied\|refused\|EACCES" "$dir/out" || fail "ghost: $(cat "$dir/out")"
if LODE_KEY_FILE=$dir/team.key "$lodectl" fsck >"$dir/out" 2>&1; then
	fail "a client group's key ran fsck"
fi

echo "== the control: the cluster key does all of it"
cat "$dir/admin/rootfile" >/dev/null
chmod 644 "$dir/admin/rootfile"
echo PASS
