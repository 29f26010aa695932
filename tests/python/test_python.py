#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Python package (python/lode) against a real local cluster (MDS + 3 OSS): files read
into every kind of writable buffer; safetensors files (every dtype, empty and scalar
tensors, unaligned offsets) loaded as numpy arrays and as torch tensors equal what a pure
Python reference reader makes of the same bytes; malformed files refused with their
reason; read_chunked and the fastsafetensors copier (against a stand-in of fastsafetensors'
interface: fastsafetensors is not a Debian package) put the right bytes at an address; and
a GPU asked for where there is none is a clear error."""
import array
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
import numpy as np  # noqa: E402  (Debian's python3-numpy: required, not optional)
import torch  # noqa: E402  (Debian's python3-torch, CPU)

import lode  # noqa: E402
import lode.fastsafetensors_copier as fsc  # noqa: E402
import lode.safetensors as lst  # noqa: E402

LODECTL = os.environ.get("LODECTL", "lodectl")
DIR = None
MDS = None


def setUpModule():
    global DIR, MDS
    DIR = tempfile.mkdtemp(prefix="lode-python-")
    out = subprocess.run([LODECTL, "local", "up", DIR + "/c", "--oss", "3"], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    MDS = out.strip().splitlines()[-1]
    # liblode, inside this process, proves the cluster key as any client does
    os.environ["LODE_KEY_FILE"] = DIR + "/c/cluster.key"


def tearDownModule():
    subprocess.run([LODECTL, "local", "down", DIR + "/c"], stdout=subprocess.DEVNULL)
    shutil.rmtree(DIR, ignore_errors=True)


# ---- a pure-Python reference: how the format's own definition reads a file ----

NP = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16,
      "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8,
      "U16": np.uint16, "U32": np.uint32, "U64": np.uint64, "BOOL": np.bool_,
      "F8_E4M3": np.uint8}


def reference(blob):
    n = struct.unpack("<Q", blob[:8])[0]
    hdr = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, t in hdr.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(data[b:e], dtype=NP[t["dtype"]]).reshape(t["shape"])
    return out


def make_safetensors(tensors, pad_to=8, align=True):
    """tensors: [(name, dtype name, np array)] -> file bytes."""
    hdr = {"__metadata__": {"format": "pt"}}
    data = b""
    for name, dt, a in tensors:
        raw = a.tobytes()
        hdr[name] = {"dtype": dt, "shape": list(a.shape),
                     "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
        if not align:
            data += b"\x00"  # the next tensor starts at an odd offset
            hdr["pad" + name] = {"dtype": "U8", "shape": [1],
                                 "data_offsets": [len(data) - 1, len(data)]}
    h = json.dumps(hdr).encode()
    h += b" " * ((pad_to - len(h) % pad_to) % pad_to)
    return struct.pack("<Q", len(h)) + h + data


def sample_tensors(rng):
    return [
        ("w.f32", "F32", rng.standard_normal((64, 33)).astype(np.float32)),
        ("w.f64", "F64", rng.standard_normal((7, 5))),
        ("w.f16", "F16", rng.standard_normal((128,)).astype(np.float16)),
        ("w.bf16", "BF16", rng.integers(0, 65535, (3, 4, 5), dtype=np.uint16)),
        ("idx.i64", "I64", rng.integers(-2**40, 2**40, (17,), dtype=np.int64)),
        ("idx.i32", "I32", rng.integers(-2**30, 2**30, (2, 9), dtype=np.int32)),
        ("b.u8", "U8", rng.integers(0, 255, (1000,), dtype=np.uint8)),
        ("mask", "BOOL", rng.integers(0, 2, (31,)).astype(np.bool_)),
        ("empty", "F32", np.zeros((0, 4), dtype=np.float32)),
        ("scalar", "I16", np.array(7, dtype=np.int16)),
        ("big", "F32", rng.standard_normal((1024, 1536)).astype(np.float32)),  # 6 MiB
    ]


class Python(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = lode.Client(MDS)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def put(self, path, blob):
        with self.c.open(path, "w") as f:
            self.assertEqual(f.write(blob), len(blob))
            f.fsync()

    def test_readinto_fills_any_writable_buffer(self):
        blob = os.urandom(3 * 1024 * 1024 + 11)
        self.put("/raw", blob)
        with self.c.open("/raw") as f:
            self.assertEqual(f.size, len(blob))
            ba = bytearray(1000)
            self.assertEqual(f.readinto(ba), 1000)
            self.assertEqual(bytes(ba), blob[:1000])
            mv = memoryview(bytearray(5000))
            self.assertEqual(f.readinto(mv), 5000)
            self.assertEqual(bytes(mv), blob[1000:6000])
            arr = np.empty(len(blob), dtype=np.uint8)
            self.assertEqual(f.pread_into(arr, 0), len(blob))
            self.assertEqual(arr.tobytes(), blob)
            a32 = array.array("I", bytes(400))
            self.assertEqual(f.pread_into(a32, 8), 400)
            self.assertEqual(a32.tobytes(), blob[8:408])
            t = torch.empty(4096, dtype=torch.uint8)
            self.assertEqual(f.pread_into(t.numpy(), 77), 4096)
            self.assertEqual(t.numpy().tobytes(), blob[77:77 + 4096])
            # the end: short, then nothing
            f.pos = len(blob) - 10
            self.assertEqual(f.read(), blob[-10:])
            self.assertEqual(f.readinto(bytearray(10)), 0)
            with self.assertRaises(TypeError):
                f.pread_into(b"read-only bytes", 0)
            # streamed: every piece handed over once, verified, in place
            got = bytearray(len(blob))
            seen = []
            self.assertEqual(f.read_stream(got, 0, lambda off, n: seen.append((off, n))),
                             len(blob))
            self.assertEqual(bytes(got), blob)
            self.assertEqual(sum(n for _, n in seen), len(blob))
            self.assertEqual(len(set(off for off, _ in seen)), len(seen))

            def stop(off, n):
                raise KeyError("consumer stopped")
            with self.assertRaises(KeyError):
                f.read_stream(bytearray(len(blob)), 0, stop)
        with self.assertRaises(lode.LodeError) as cm:
            self.c.open("/no/such/file")
        self.assertEqual(cm.exception.errno, 2)

    def check_equal(self, got, ref, torch_out):
        self.assertEqual(sorted(got), sorted(ref))
        for name, r in ref.items():
            g = got[name]
            if torch_out:
                self.assertIsInstance(g, torch.Tensor)
                self.assertEqual(tuple(g.shape), r.shape, name)
                if g.dtype == torch.bfloat16:  # compare the raw bits
                    g = g.view(torch.int16).numpy().view(np.uint16)
                else:
                    g = g.numpy()
            self.assertEqual(g.shape, r.shape, name)
            self.assertTrue(np.array_equal(g, r), name)

    def test_safetensors_load_equals_a_pure_python_reader(self):
        rng = np.random.default_rng(3)
        for align, pad in ((True, 8), (False, 1)):
            blob = make_safetensors(sample_tensors(rng), pad_to=pad, align=align)
            path = f"/m-{int(align)}.safetensors"
            self.put(path, blob)
            ref = reference(blob)
            got = lst.load(path, client=self.c, framework="numpy")
            self.check_equal(got, ref, torch_out=False)
            self.assertEqual(got["w.f32"].dtype, np.float32)
            got = lst.load(path, client=self.c, framework="torch", device="cpu")
            self.check_equal(got, ref, torch_out=True)
            self.assertEqual(got["w.bf16"].dtype, torch.bfloat16)
            # torch importable: auto gives torch
            self.assertIsInstance(lst.load(path, client=self.c)["big"], torch.Tensor)
            # the same loader over a local file
            local = os.path.join(DIR, "local.safetensors")
            with open(local, "wb") as lf:
                lf.write(blob)
            self.check_equal(lst.load_local(local), ref, torch_out=False)
            self.check_equal(lst.load_local(local, framework="torch", chunk=4096), ref,
                             torch_out=True)
            # a staged loader (the GPU pipeline on the host) gives the same arrays
            with lode.Loader(self.c, "staged", chunk_bytes=1 << 20, buffers=2) as ld:
                got = lst.load(path, client=self.c, framework="numpy", loader=ld)
            self.check_equal(got, ref, torch_out=False)

    def test_malformed_files_are_refused_with_the_reason(self):
        good = make_safetensors([("a", "F32", np.ones(4, dtype=np.float32))])
        n = struct.unpack("<Q", good[:8])[0]
        cases = {
            "larger than the file": struct.pack("<Q", 10 ** 6) + good[8:],
            "past the end of the data": good[:-4],
            "overlap": make_safetensors([]) and (lambda h: struct.pack("<Q", len(h)) + h +
                                                 bytes(16))(json.dumps({
                                                     "a": {"dtype": "U8", "shape": [8],
                                                           "data_offsets": [0, 8]},
                                                     "b": {"dtype": "U8", "shape": [8],
                                                           "data_offsets": [4, 12]}}).encode()),
            "not JSON": struct.pack("<Q", n) + b"{" + b" " * (n - 1) + good[8 + n:],
            "unknown dtype": good.replace(b'"F32"', b'"Q32"'),
        }
        for reason, blob in cases.items():
            self.put("/bad.safetensors", blob)
            with self.assertRaises(ValueError) as cm:
                lst.load("/bad.safetensors", client=self.c, framework="numpy")
            self.assertIn(reason, str(cm.exception))

    def test_read_chunked_puts_a_range_at_an_address(self):
        blob = os.urandom(9 * 1024 * 1024 + 5)
        self.put("/chunked", blob)
        r = lode.reader.LodeFileReader(mount_point="/models", client=self.c)
        self.assertEqual(r.cluster_path("/models/chunked"), "/chunked")
        self.assertEqual(r.cluster_path("/chunked"), "/chunked")
        dst = np.zeros(5 * 1024 * 1024, dtype=np.uint8)
        addr, n = lode.buffer_address(dst)
        self.assertEqual(r.read_chunked("/models/chunked", addr, 12345, n, 1 << 20), n)
        self.assertEqual(dst.tobytes(), blob[12345:12345 + n])
        # past the end: short
        self.assertEqual(r.read_chunked("/models/chunked", addr, len(blob) - 7, n, 0), 7)
        r.close()

    def test_the_fastsafetensors_copier_loads_through_its_interface(self):
        # fastsafetensors cannot be installed here (not in Debian): a stand-in with the
        # shape of its interface: metadata (src, header_length, size_bytes, get_tensors)
        # and a framework whose alloc_tensor_memory returns a buffer with an address
        rng = np.random.default_rng(8)
        blob = make_safetensors(sample_tensors(rng))
        self.put("/fst.safetensors", blob)
        ref = reference(blob)
        n = struct.unpack("<Q", blob[:8])[0]

        class Buffer:
            def __init__(self, length):
                self.mem = np.zeros(length, dtype=np.uint8)

            def get_base_address(self):
                return lode.buffer_address(self.mem)[0]

        class Framework:
            def alloc_tensor_memory(self, length, device):
                return Buffer(length)

        class Metadata:
            src = "/mnt/lode/fst.safetensors"
            header_length = 8 + n
            size_bytes = len(blob)

            def get_tensors(self, gbuf, device, header_length, dtype=None):
                hdr = json.loads(blob[8:8 + n])
                return {k: np.frombuffer(gbuf.mem, NP[v["dtype"]],
                                         offset=v["data_offsets"][0],
                                         count=(v["data_offsets"][1] - v["data_offsets"][0])
                                         // np.dtype(NP[v["dtype"]]).itemsize
                                         ).reshape(v["shape"])
                        for k, v in hdr.items() if k != "__metadata__"}

        construct = fsc.new_lode_file_copier("cpu", mount_point="/mnt/lode", client=self.c)
        copier = construct(Metadata(), "cpu", Framework())
        gbuf = copier.submit_io(False, 16 << 20)
        self.check_equal(copier.wait_io(gbuf), ref, torch_out=False)
        self.assertEqual(fsc.loader_target("cuda"), "cuda:0")
        self.assertEqual(fsc.loader_target("cuda:3"), "cuda:3")
        with self.assertRaises(ValueError):
            fsc.loader_target("tpu")

    def test_a_gpu_where_there_is_none_is_a_clear_error(self):
        if torch.cuda.is_available():
            self.skipTest("this machine has a GPU: tests/integration/test_loader_gpu.c")
        with self.assertRaises(lode.LodeError) as cm:
            lode.Loader(self.c, "cuda:0")
        self.assertIn("no such GPU", str(cm.exception))
        with self.assertRaises(ValueError):
            lode.Loader(self.c, "tpu:0")


if __name__ == "__main__":
    unittest.main(verbosity=2)
