# SPDX-License-Identifier: MIT
"""safetensors files from Lode, as numpy arrays or torch tensors.

    tensors = lode.safetensors.load("/models/m/model.safetensors", device="cpu")
    tensors = lode.safetensors.load(path, device="cuda:0")          # torch, on the GPU

The header is parsed and checked by liblode-loader (every tensor inside the data, sizes
matching dtype and shape, no overlap; a malformed file raises ValueError with the reason).
The data section lands in one allocation, read in place with many pieces in flight (host)
or through pinned buffers and asynchronous copies (cuda), and each tensor is a view of it.
With numpy, BF16 and the F8 types have no numpy dtype: they come back as uint16 / uint8
arrays of the raw bits (use framework="torch" to get them typed).
"""
import ctypes
import errno

from . import Client, Loader, LodeError, _check, _ldr, _proto, buffer_address, host_buffer

_MAX_DIMS = 8


class _Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_char_p),
                ("elem_size", ctypes.c_uint), ("ndim", ctypes.c_uint),
                ("shape", ctypes.c_uint64 * _MAX_DIMS), ("begin", ctypes.c_uint64),
                ("end", ctypes.c_uint64)]


class _Header(ctypes.Structure):
    _fields_ = [("data_offset", ctypes.c_uint64), ("data_len", ctypes.c_uint64),
                ("count", ctypes.c_uint), ("tensors", ctypes.POINTER(_Tensor))]


_st_parse = _proto(_ldr, "lode_st_parse", ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                   ctypes.c_uint64, ctypes.POINTER(_Header), ctypes.POINTER(ctypes.c_size_t),
                   ctypes.c_char_p, ctypes.c_size_t)
_st_free = _proto(_ldr, "lode_st_header_free", None, ctypes.POINTER(_Header))

_NUMPY = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "uint16",
          "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U64": "uint64",
          "U32": "uint32", "U16": "uint16", "U8": "uint8", "BOOL": "bool",
          "F8_E4M3": "uint8", "F8_E5M2": "uint8", "F8_E8M0": "uint8", "C64": "complex64"}
_TORCH = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
          "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U64": "uint64",
          "U32": "uint32", "U16": "uint16", "U8": "uint8", "BOOL": "bool",
          "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "F8_E8M0": "float8_e8m0fnu",
          "C64": "complex64"}


class Tensor:
    """Where one tensor lies: name, dtype (safetensors' name), shape, [begin, end) in the
    data section."""

    def __init__(self, name, dtype, shape, begin, end):
        self.name, self.dtype, self.shape, self.begin, self.end = name, dtype, shape, begin, end

    def __repr__(self):
        return f"Tensor({self.name!r}, {self.dtype}, {self.shape}, [{self.begin}, {self.end}))"


def parse_header(head, file_size):
    """Checks a safetensors header. head: bytes from the file's start. Returns
    (data_offset, [Tensor...] sorted by begin), or the number of bytes needed (int) when head
    is too short. Raises ValueError with the reason when the header is malformed."""
    h = _Header()
    need = ctypes.c_size_t(0)
    err = ctypes.create_string_buffer(256)
    buf = ctypes.create_string_buffer(bytes(head), len(head))
    rc = _st_parse(buf, len(head), file_size, ctypes.byref(h), ctypes.byref(need), err,
                   len(err))
    if rc == -errno.EAGAIN:
        return need.value
    if rc == -errno.EBADMSG:
        raise ValueError(f"not a valid safetensors file: {err.value.decode()}")
    _check(rc, "parse a safetensors header")
    try:
        tensors = [Tensor(t.name.decode(), t.dtype.decode(), tuple(t.shape[:t.ndim]),
                          t.begin, t.end) for t in h.tensors[:h.count]]
    finally:
        _st_free(ctypes.byref(h))
    return h.data_offset, tensors


def read_header(f):
    """(data_offset, tensors) of the open lode.File f."""
    size = f.size
    head = bytearray(min(8, size))
    f.pread_into(head, 0)
    res = parse_header(head, size)
    if isinstance(res, int):
        head = bytearray(res)
        f.pread_into(head, 0)
        res = parse_header(head, size)
    return res


def _want_torch(framework, device):
    if framework == "torch" or (device not in ("cpu", "host") and framework != "numpy"):
        return True
    if framework == "numpy":
        return False
    try:
        import torch  # noqa: F401
        return True
    except ImportError:
        return False


def load(path, device="cpu", client=None, framework="auto", loader=None):
    """Loads every tensor of the safetensors file at path (a path in the cluster).

    device: "cpu" (host memory) or "cuda" / "cuda:N" (needs torch with CUDA and a
    liblode-loader built with CUDA). framework: "numpy", "torch", or "auto" (torch when it
    can be imported, else numpy). client: a lode.Client (default: one for $LODE_MDS).
    loader: a lode.Loader to reuse across files (its target must match device).
    Returns {name: array or tensor}, in the file's order of data."""
    own = client is None
    if own:
        client = Client()
    try:
        with client.open(path) as f:
            data_offset, tensors = read_header(f)
            data_len = f.size - data_offset
            if _want_torch(framework, device):
                return _load_torch(client, f, data_offset, data_len, tensors, device, loader)
            if device not in ("cpu", "host"):
                raise ValueError(f"lode: device {device!r} needs framework='torch'")
            return _load_numpy(client, f, data_offset, data_len, tensors, loader)
    finally:
        if own:
            client.close()


def _read_host(client, f, buf, data_offset, loader):
    addr, n = buffer_address(buf)
    if n == 0:
        return
    own = loader is None
    loader = loader or Loader(client, "host")
    try:
        got = loader.read(f, addr, n, data_offset)
    finally:
        if own:
            loader.close()
    if got != n:
        raise LodeError(-errno.EIO, f"load {f.path}", "the file shrank while it was read")


def _load_numpy(client, f, data_offset, data_len, tensors, loader):
    import numpy as np

    data = np.frombuffer(host_buffer(data_len), dtype=np.uint8)
    _read_host(client, f, data, data_offset, loader)
    out = {}
    for t in tensors:
        dt = np.dtype(_NUMPY[t.dtype])
        count = (t.end - t.begin) // dt.itemsize
        out[t.name] = np.frombuffer(data, dtype=dt, count=count,
                                    offset=t.begin).reshape(t.shape)
    return out


def _torch_dtype(torch, name):
    dt = getattr(torch, _TORCH[name], None)
    if dt is None:  # an older torch without that type: the raw bits
        dt = torch.uint8 if name.startswith("F8") else torch.uint16
    return dt


def _load_torch(client, f, data_offset, data_len, tensors, device, loader):
    import torch

    dev = torch.device(device if device not in ("host",) else "cpu")
    if dev.type == "cpu" and data_len:
        data = torch.frombuffer(host_buffer(data_len), dtype=torch.uint8)
    else:
        data = torch.empty(data_len, dtype=torch.uint8, device=dev)
    if dev.type == "cpu":
        _read_host(client, f, data.numpy(), data_offset, loader)
    elif dev.type == "cuda":
        to = f"cuda:{dev.index if dev.index is not None else torch.cuda.current_device()}"
        own = loader is None
        loader = loader or Loader(client, to)
        try:
            if data_len and loader.read(f, data.data_ptr(), data_len, data_offset) != data_len:
                raise LodeError(-errno.EIO, f"load {f.path}", "the file shrank")
        finally:
            if own:
                loader.close()
    else:
        raise ValueError(f"lode: device {device!r}: use cpu or cuda[:N]")
    out = {}
    for t in tensors:
        dt = _torch_dtype(torch, t.dtype)
        raw = data[t.begin:t.end]
        try:
            v = raw.view(dt)
        except RuntimeError:  # not aligned for that dtype inside the data: its own copy
            v = raw.clone().view(dt)
        out[t.name] = v.reshape(t.shape)
    return out


def load_local(path, framework="numpy", chunk=64 << 20):
    """The same loader over a file of the local file system (a mount of Lode or of another
    file system): the header checked by the same parser, the data read with readinto in
    chunk-sized pieces into one buffer, the tensors views of it. For comparisons, and for
    files that are not on Lode. Returns {name: array or tensor}."""
    import os

    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        head = os.pread(fd, min(8, size), 0)
        res = parse_header(head, size)
        if isinstance(res, int):
            res = parse_header(os.pread(fd, res, 0), size)
        data_offset, tensors = res
        import numpy as np

        data = np.empty(size - data_offset, dtype=np.uint8)
        mv = memoryview(data)
        pos = 0
        with open(fd, "rb", buffering=0, closefd=False) as f:
            f.seek(data_offset)
            while pos < len(data):
                n = f.readinto(mv[pos:pos + chunk])
                if not n:
                    raise OSError(f"{path}: the file ended at {data_offset + pos}")
                pos += n
    finally:
        os.close(fd)
    if framework == "torch":
        import torch

        data_t = torch.from_numpy(data)
        out = {}
        for t in tensors:
            raw = data_t[t.begin:t.end]
            try:
                v = raw.view(_torch_dtype(torch, t.dtype))
            except RuntimeError:
                v = raw.clone().view(_torch_dtype(torch, t.dtype))
            out[t.name] = v.reshape(t.shape)
        return out
    out = {}
    for t in tensors:
        dt = np.dtype(_NUMPY[t.dtype])
        out[t.name] = np.frombuffer(data, dtype=dt, count=(t.end - t.begin) // dt.itemsize,
                                    offset=t.begin).reshape(t.shape)
    return out
