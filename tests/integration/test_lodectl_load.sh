#!/usr/bin/env bash
# lodectl load on a real local cluster (MDS + 3 OSS): a model directory of safetensors files
# and a plain file loads, --verify compares every byte with a second read, --json has the
# documented fields and counts, the GPU pipeline's stand-in (--to staged) loads the same,
# a malformed safetensors file fails with its reason and exit 1, an unknown target exits 2,
# and cuda:0 without a GPU (or a CUDA build) says so.
set -euo pipefail
LODE_TEST_NAME=lodectl-load
. "$(dirname "$0")/lib.sh"
py=/usr/bin/python3
[ -x "$py" ] || py=python3

export LODE_MDS=$("$lodectl" local up "$dir/c" --oss 3)
# a safetensors file: 8-byte length, JSON header, data (3 tensors, one of them empty)
"$py" - "$dir/a.safetensors" <<'PY'
import json, os, struct, sys
data = os.urandom(3 * 1024 * 1024 + 8)
hdr = {"__metadata__": {"format": "pt"},
       "w": {"dtype": "F32", "shape": [786432], "data_offsets": [0, 3145728]},
       "b": {"dtype": "U8", "shape": [8], "data_offsets": [3145728, 3145736]},
       "e": {"dtype": "F16", "shape": [0], "data_offsets": [3145736, 3145736]}}
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + data)
PY
head -c 5000001 /dev/urandom >"$dir/tokenizer.bin"
"$lodectl" mkdir /model
"$lodectl" put "$dir/a.safetensors" /model/a.safetensors >/dev/null
"$lodectl" put "$dir/a.safetensors" /model/sub.safetensors >/dev/null
"$lodectl" put "$dir/tokenizer.bin" /model/tokenizer.bin >/dev/null
data=$((3 * 1024 * 1024 + 8))

out=$("$lodectl" load /model --verify) || fail "load --verify of a good model failed: $out"
echo "$out"
grep -q "^loaded 3 files, 6 tensors, " <<<"$out" || fail "wrong counts: $out"
grep -q "verified: every byte matches" <<<"$out" || fail "no verification line"

for to in host staged; do
	"$lodectl" load /model --to "$to" --json >"$dir/out.json" || fail "--json --to $to failed"
	"$py" - "$dir/out.json" "$to" "$((2 * data + 5000001))" <<'PY' || fail "JSON of --to $to"
import json, sys
d = json.load(open(sys.argv[1]))
want = {"to", "files", "tensors", "bytes", "seconds", "gb_per_s", "verified", "per_file"}
assert want <= set(d), f"missing {want - set(d)}"
assert d["to"] == sys.argv[2] and d["files"] == 3 and d["tensors"] == 6, d
assert d["bytes"] == int(sys.argv[3]), (d["bytes"], sys.argv[3])
paths = [f["path"] for f in d["per_file"]]
assert paths == ["/model/a.safetensors", "/model/sub.safetensors", "/model/tokenizer.bin"], paths
assert all(f["seconds"] >= 0 and f["bytes"] > 0 for f in d["per_file"])
PY
done
"$lodectl" load /model/tokenizer.bin --to staged --verify >/dev/null || fail "staged --verify"

# a header that claims more than the file holds: the reason, exit 1, nothing loaded
"$py" - "$dir/a.safetensors" "$dir/bad.safetensors" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
b[0:8] = struct.pack("<Q", len(b) * 2)
open(sys.argv[2], "wb").write(bytes(b))
PY
"$lodectl" put "$dir/bad.safetensors" /bad.safetensors >/dev/null
rc=0
"$lodectl" load /bad.safetensors 2>"$dir/err" || rc=$?
[ "$rc" = 1 ] || fail "a malformed file exited $rc, not 1"
grep -q "not a valid safetensors file: header length .* larger than the file" "$dir/err" ||
	fail "no reason given: $(cat "$dir/err")"

rc=0
"$lodectl" load /model --to tpu:0 2>"$dir/err" || rc=$?
[ "$rc" = 2 ] || fail "--to tpu:0 exited $rc, not 2"
rc=0
"$lodectl" load /no/such/path 2>"$dir/err" || rc=$?
[ "$rc" = 1 ] && grep -q "No such file" "$dir/err" || fail "a missing path: $rc $(cat "$dir/err")"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
	rc=0
	"$lodectl" load /model --to cuda:0 2>"$dir/err" || rc=$?
	[ "$rc" = 1 ] && grep -q "no such GPU" "$dir/err" || fail "cuda:0 without a GPU: $rc $(cat "$dir/err")"
fi
echo "ok"
