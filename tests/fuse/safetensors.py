#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""safetensors.py MNT1 MNT2: writes a safetensors file (8-byte little-endian header length,
JSON header with dtype/shape/data_offsets, tensor bytes) into MNT1, reads every tensor back
through mmap (and numpy when installed) from MNT1 and from MNT2, a second mount of the same
cluster; then changes tensors through a MAP_SHARED mapping on MNT1 and, after munmap and
close, checks every byte from MNT2. Exits 1 on the first wrong byte, saying where."""
import json
import mmap
import os
import random
import struct
import sys

try:
    import numpy as np
except ImportError:
    np = None

DTYPES = {"F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "U8": 1, "BOOL": 1, "F64": 8}
NP = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "U8": "u1", "F64": "<f8"}
TENSORS = [  # name, dtype, shape
    ("model.embed_tokens.weight", "F32", [4096, 1024]),
    ("model.layers.0.attn.q_proj.weight", "BF16", [1024, 1024]),
    ("model.layers.0.attn.q_proj.bias", "F16", [1024]),
    ("model.layers.0.mlp.weight", "F32", [1027, 513]),
    ("model.norm.scale", "F32", []),
    ("model.empty", "F32", [0, 7]),
    ("tokenizer.ids", "I64", [3, 77]),
    ("mask", "BOOL", [1000003]),
    ("lm_head.weight", "F64", [257, 1031]),
]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def build(seed):
    rnd = random.Random(seed)
    header, blobs, off = {"__metadata__": {"format": "pt", "writer": "lode tests"}}, {}, 0
    for name, dt, shape in TENSORS:
        n = DTYPES[dt]
        for d in shape:
            n *= d
        blobs[name] = rnd.randbytes(n) if dt != "BOOL" else bytes(b & 1 for b in rnd.randbytes(n))
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return h, blobs


def write(path, h, blobs):
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for name, _, _ in TENSORS:
            b = blobs[name]
            for i in range(0, len(b), 3 << 20):  # writes of 3 MiB, not stripe-aligned
                f.write(b[i:i + (3 << 20)])


def first_diff(a, b):
    for i in range(min(len(a), len(b))):
        if a[i] != b[i]:
            return i
    return min(len(a), len(b))


def verify(path, blobs, how):
    size = os.path.getsize(path)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        (hlen,) = struct.unpack("<Q", mm[:8])
        header = json.loads(bytes(mm[8:8 + hlen]))
        base = 8 + hlen
        for name, dt, shape in TENSORS:
            t = header[name]
            if t["dtype"] != dt or t["shape"] != shape:
                fail(f"{how}: {name}: header says {t}")
            b, e = t["data_offsets"]
            got = mm[base + b:base + e]
            if got != blobs[name]:
                i = first_diff(got, blobs[name])
                fail(f"{how}: tensor {name} differs at byte {i} of {e - b} "
                     f"(file offset {base + b + i})")
            if np is not None and dt in NP and e > b:
                arr = np.frombuffer(mm, dtype=NP[dt], count=(e - b) // DTYPES[dt],
                                    offset=base + b).reshape(shape)
                ref = np.frombuffer(blobs[name], dtype=NP[dt]).reshape(shape)
                if not np.array_equal(arr.view(np.uint8), ref.view(np.uint8)):
                    fail(f"{how}: numpy view of {name} differs")
                del arr
        if base + max(header[n]["data_offsets"][1] for n, _, _ in TENSORS) != size:
            fail(f"{how}: file size {size} does not end at the last tensor")
    print(f"{how}: {len(TENSORS)} tensors, {size} bytes, all byte-exact"
          f"{' (and through numpy)' if np is not None else ''}")
    return base, header


def main():
    m1, m2 = sys.argv[1], sys.argv[2]
    h, blobs = build(20261129)
    p1, p2 = os.path.join(m1, "model.safetensors"), os.path.join(m2, "model.safetensors")
    write(p1, h, blobs)
    verify(p1, blobs, "mmap read on the writing mount")
    base, header = verify(p2, blobs, "mmap read on a second mount")

    # MAP_SHARED writes on mount 1: a whole tensor, scattered bytes, a page-straddling run
    rnd = random.Random(7)
    with open(p1, "r+b") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_WRITE)
        for name in ("model.layers.0.attn.q_proj.bias", "lm_head.weight", "mask"):
            b, e = header[name]["data_offsets"]
            new = bytearray(blobs[name])
            if name == "model.layers.0.attn.q_proj.bias":
                new[:] = rnd.randbytes(len(new))
            elif name == "lm_head.weight":
                for _ in range(1000):
                    new[rnd.randrange(len(new))] = rnd.randrange(256)
            else:
                s = 4096 * 10 - 100
                new[s:s + 70000] = rnd.randbytes(70000)
            mm[base + b:base + e] = bytes(new)
            blobs[name] = bytes(new)
        mm.flush()
        mm.close()
    verify(p2, blobs, "after MAP_SHARED writes, munmap and close, on a second mount")
    with open(p2, "rb") as f:
        data = f.read()
    want = struct.pack("<Q", len(h)) + h + b"".join(blobs[n] for n, _, _ in TENSORS)
    if data != want:
        fail(f"plain read on the second mount differs at offset {first_diff(data, want)}")
    print("plain read on the second mount: byte-exact")


main()
