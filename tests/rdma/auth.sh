#!/bin/sh
# Inside the soft-RoCE VM (vm.sh): a local cluster with every daemon on rdma://, whose MDS
# and OSS serve the cluster key's holder and refuse a client with a wrong key and one with
# none, over RDMA. The handshake runs at the frame layer, so this is the TCP checks' twin
# (tests/integration/test_auth.py, which also covers replay and roles).
set -eu
lodectl=${LODECTL:-lodectl}
d=$(mktemp -d /tmp/lode-auth-rdma.XXXXXX)
trap '"$lodectl" local down "$d/c" >/dev/null 2>&1 || true' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}
mds=$(LODE_LOCAL_LISTEN=rdma://$LODE_RDMA_IP "$lodectl" local up "$d/c" --oss 1 2>/dev/null) ||
	fail "local up on rdma:// failed"
case $mds in rdma://*) ;; *) fail "the MDS is not on rdma:// ($mds)" ;; esac
key=$d/c/cluster.key
"$lodectl" key generate "$d/wrong.key"
head -c 2000000 /dev/urandom >"$d/src"
LODE_KEY_FILE=$key "$lodectl" --mds "$mds" put "$d/src" /f || fail "put with the key failed"
LODE_KEY_FILE=$key "$lodectl" --mds "$mds" get /f "$d/back" || fail "get with the key failed"
cmp "$d/src" "$d/back" || fail "the data read back differs"
echo "the key's holder writes and reads over rdma://"
if LODE_KEY_FILE=$d/wrong.key "$lodectl" --mds "$mds" status 2>"$d/err"; then
	fail "a wrong key was served over rdma://"
fi
grep -q "refused the key" "$d/err" || fail "wrong key: $(cat "$d/err")"
if LODE_KEY_FILE= "$lodectl" --mds "$mds" status 2>"$d/err"; then
	fail "a client without a key was served over rdma://"
fi
grep -q "needs a key" "$d/err" || fail "no key: $(cat "$d/err")"
# the OSS, asked directly (lodectl takes it for an MDS: with the key it gets as far as
# "not an MDS"; without it, not even that)
oss=$(cat "$d/c/oss0/addr")
if LODE_KEY_FILE=$d/wrong.key "$lodectl" --mds "$oss" status 2>"$d/err"; then
	fail "the OSS served a wrong key"
fi
grep -q "refused the key" "$d/err" || fail "OSS, wrong key: $(cat "$d/err")"
if LODE_KEY_FILE= "$lodectl" --mds "$oss" status 2>"$d/err"; then
	fail "the OSS served a client without a key"
fi
grep -q "needs a key" "$d/err" || fail "OSS, no key: $(cat "$d/err")"
LODE_KEY_FILE=$key "$lodectl" --mds "$oss" status 2>"$d/err" || true
grep -q "refused\|needs a key" "$d/err" && fail "the OSS refused the right key: $(cat "$d/err")"
grep -q "refused" "$d/c/mds/log" || fail "the MDS logged no refusal"
grep -q "refused" "$d/c/oss0/log" || fail "the OSS logged no refusal"
echo "a wrong key and no key are refused by the MDS and the OSS over rdma://"
echo PASS
