# SPDX-License-Identifier: MIT
"""Lode from Python: ctypes over liblode and liblode-loader, nothing beyond the standard
library.

    import lode
    with lode.Client("tcp://10.0.0.1:7000") as c:
        with c.open("/models/llama/config.json") as f:
            text = f.read()
        tensors = lode.safetensors.load("/models/llama/model.safetensors", client=c)

Files read into any writable buffer (bytearray, memoryview, numpy array, a CPU torch
tensor's numpy view) with readinto(); every byte is verified against its checksums on the
way. A Loader puts ranges into host memory in place, or into GPU memory through pinned
buffers ("cuda:N"). lode.safetensors loads a whole safetensors file as numpy arrays or
torch tensors; lode.reader has the read_chunked() shape that model-loading libraries use,
and lode.fastsafetensors_copier plugs Lode into fastsafetensors.

The libraries are found in $LODE_LIB_DIR (where they are installed), else in the build
tree $LODE_BUILD_DIR (default: build/ next to this package's folder), else where the
dynamic linker finds them.
"""
import ctypes
import ctypes.util
import errno as _errno
import os

__all__ = ["Client", "File", "Loader", "LodeError", "safetensors", "reader"]


class LodeError(OSError):
    """A liblode call failed: errno and strerror as OSError's, plus what was done."""

    def __init__(self, rc, what, detail=None):
        code = -rc if rc < 0 else rc
        msg = os.strerror(code)
        if detail:
            msg = f"{msg}: {detail}"
        super().__init__(code, msg, what)


def _find(name, subdir):
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = []
    if os.environ.get("LODE_LIB_DIR"):
        candidates.append(os.path.join(os.environ["LODE_LIB_DIR"], f"lib{name}.so"))
    builds = [os.environ["LODE_BUILD_DIR"]] if os.environ.get("LODE_BUILD_DIR") else \
        [os.path.join(here, "..", "..", "build")]
    for build in builds:
        candidates.append(os.path.join(build, subdir, f"lib{name}.so"))
    for c in candidates:
        if os.path.exists(c):
            return c
    found = ctypes.util.find_library(name)
    if not found:
        raise ImportError(f"lode: cannot find lib{name}.so (set LODE_LIB_DIR)")
    return found


_lib = ctypes.CDLL(_find("lode", "client"), mode=ctypes.RTLD_GLOBAL)
_ldr = ctypes.CDLL(_find("lode-loader", os.path.join("client", "loader")))

_c_ssize = ctypes.c_ssize_t
_vp = ctypes.c_void_p
_u64 = ctypes.c_uint64
_PIECE_FN = ctypes.CFUNCTYPE(ctypes.c_int, _vp, _u64, _vp, ctypes.c_size_t)


class _ClientOpts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("timeout_ms", ctypes.c_uint),
                ("max_inflight", ctypes.c_uint), ("uid", ctypes.c_uint32),
                ("gid", ctypes.c_uint32), ("use_process_creds", ctypes.c_int),
                ("io_threads", ctypes.c_uint), ("key_file", ctypes.c_char_p)]


class _Stat(ctypes.Structure):
    # struct lode_stat (include/lode/lode.h)
    _fields_ = [("ino", _u64), ("size", _u64), ("blocks", _u64), ("mode", ctypes.c_uint32),
                ("uid", ctypes.c_uint32), ("gid", ctypes.c_uint32), ("nlink", ctypes.c_uint32),
                ("atime_ns", ctypes.c_int64), ("mtime_ns", ctypes.c_int64),
                ("ctime_ns", ctypes.c_int64), ("generation", _u64), ("reserved", _u64 * 7)]


class _LoaderOpts(ctypes.Structure):
    _fields_ = [("to", ctypes.c_char_p), ("chunk_bytes", ctypes.c_size_t),
                ("buffers", ctypes.c_uint), ("streams", ctypes.c_uint),
                ("copy_min", ctypes.c_size_t), ("reserved", _u64 * 8)]


def _proto(lib, name, res, *args):
    fn = getattr(lib, name)
    fn.restype = res
    fn.argtypes = list(args)
    return fn


_connect = _proto(_lib, "lode_connect", ctypes.c_int, ctypes.c_char_p,
                  ctypes.POINTER(_ClientOpts), ctypes.POINTER(_vp))
_disconnect = _proto(_lib, "lode_disconnect", None, _vp)
_open = _proto(_lib, "lode_open", ctypes.c_int, _vp, ctypes.c_char_p, ctypes.c_int,
               ctypes.c_uint32, ctypes.POINTER(_vp))
_close = _proto(_lib, "lode_close", ctypes.c_int, _vp)
_pread = _proto(_lib, "lode_pread", _c_ssize, _vp, _vp, ctypes.c_size_t, _u64)
_pwrite = _proto(_lib, "lode_pwrite", _c_ssize, _vp, _vp, ctypes.c_size_t, _u64)
_fsync = _proto(_lib, "lode_fsync", ctypes.c_int, _vp)
_read_stream = _proto(_lib, "lode_read_stream", _c_ssize, _vp, _vp, ctypes.c_size_t, _u64,
                      _PIECE_FN, _vp)
_file_size = _proto(_lib, "lode_file_size", _u64, _vp)
_stat = _proto(_lib, "lode_stat", ctypes.c_int, _vp, ctypes.c_char_p, ctypes.POINTER(_Stat))
_loader_new = _proto(_ldr, "lode_loader_new", ctypes.c_int, _vp, ctypes.POINTER(_LoaderOpts),
                     ctypes.POINTER(_vp))
_loader_free = _proto(_ldr, "lode_loader_free", None, _vp)
_loader_read = _proto(_ldr, "lode_loader_read", _c_ssize, _vp, _vp, _vp, ctypes.c_size_t, _u64)
_loader_to_host = _proto(_ldr, "lode_loader_to_host", ctypes.c_int, _vp, _vp, _vp,
                         ctypes.c_size_t)
_loader_error = _proto(_ldr, "lode_loader_error", ctypes.c_char_p, _vp)
_loader_alloc = _proto(_ldr, "lode_loader_alloc", ctypes.c_int, _vp, ctypes.c_size_t,
                       ctypes.POINTER(_vp))
_loader_release = _proto(_ldr, "lode_loader_release", None, _vp, _vp)

O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_TRUNC = os.O_RDONLY, os.O_WRONLY, os.O_RDWR, \
    os.O_CREAT, os.O_TRUNC


def _check(rc, what, detail=None):
    if rc < 0:
        raise LodeError(rc, what, detail)
    return rc


def buffer_address(buf):
    """(address, length in bytes) of a writable buffer: bytearray, memoryview, numpy array,
    array.array, mmap ... (anything with the buffer protocol, writable, C-contiguous)."""
    mv = memoryview(buf)
    if mv.readonly:
        raise TypeError("lode: the buffer is read-only")
    if not mv.c_contiguous:
        raise TypeError("lode: the buffer is not contiguous")
    mv = mv.cast("B")
    n = mv.nbytes
    if n == 0:
        return 0, 0
    return ctypes.addressof(ctypes.c_char.from_buffer(mv)), n


_host = None  # a host loader without a client: only its allocator is used


class _HostMemory:
    def __init__(self, n):
        global _host
        if _host is None:
            h = _vp()
            _check(_loader_new(None, None, ctypes.byref(h)), "host loader")
            _host = h
        p = _vp()
        _check(_loader_alloc(_host, n, ctypes.byref(p)), f"allocate {n} bytes")
        self.addr = p.value

    def __del__(self):
        if self.addr:
            _loader_release(_host, self.addr)
            self.addr = None


def host_buffer(nbytes):
    """nbytes of host memory for weights, as a ctypes array (numpy.frombuffer,
    torch.frombuffer and memoryview take it): 2 MiB aligned and backed by huge pages where
    the kernel has them, so that filling it costs a page fault per 2 MiB, not per 4 KiB.
    Freed when the last array viewing it is."""
    if nbytes <= 0:
        return (ctypes.c_uint8 * 0)()
    mem = _HostMemory(nbytes)
    arr = (ctypes.c_uint8 * nbytes).from_address(mem.addr)
    arr._owner = mem  # the memory lives as long as the array (and what views it)
    return arr


class _Closing:
    """What owns a liblode handle: usable in `with`, closed when collected."""
    _h = None

    def close(self):
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Client(_Closing):
    """A connection to a Lode cluster: mds is "tcp://HOST:PORT" (default: $LODE_MDS);
    key_file the key it proves (default: $LODE_KEY_FILE; "" for none); max_inflight the
    data requests one read keeps in flight (default 64)."""

    def __init__(self, mds=None, timeout_ms=0, key_file=None, max_inflight=0):
        mds = mds or os.environ.get("LODE_MDS")
        if not mds:
            raise ValueError("lode: no MDS address (pass one or set LODE_MDS)")
        opts = _ClientOpts(size=ctypes.sizeof(_ClientOpts), timeout_ms=timeout_ms,
                           max_inflight=max_inflight, use_process_creds=1,
                           key_file=None if key_file is None else key_file.encode())
        self._h = None
        h = _vp()
        _check(_connect(mds.encode(), ctypes.byref(opts), ctypes.byref(h)), f"connect {mds}")
        self._h = h
        self.mds = mds

    def close(self):
        if self._h:
            _disconnect(self._h)
            self._h = None

    def open(self, path, mode="r"):
        """Opens a file: mode "r" (read), "w" (create or truncate, write), "r+" (read and
        write)."""
        flags = {"r": O_RDONLY, "rb": O_RDONLY, "w": O_WRONLY | O_CREAT | O_TRUNC,
                 "wb": O_WRONLY | O_CREAT | O_TRUNC, "r+": O_RDWR, "r+b": O_RDWR}.get(mode)
        if flags is None:
            raise ValueError(f"lode: mode {mode!r}: use 'r', 'w' or 'r+'")
        h = _vp()
        _check(_open(self._h, path.encode(), flags, 0o644, ctypes.byref(h)), f"open {path}")
        return File(self, h, path)

    def stat_size(self, path):
        st = _Stat()
        _check(_stat(self._h, path.encode(), ctypes.byref(st)), f"stat {path}")
        return st.size


class File:
    """An open Lode file, read (and written) at a position like a Python file."""

    def __init__(self, client, h, path):
        self.client = client
        self._h = h
        self.path = path
        self.pos = 0

    @property
    def size(self):
        return _file_size(self._h)

    def close(self):
        if self._h:
            h, self._h = self._h, None
            _check(_close(h), f"close {self.path}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def pread_into(self, buf, offset):
        """Reads into buf from offset; returns the bytes read (short only at the end)."""
        addr, n = buffer_address(buf)
        if n == 0:
            return 0
        return _check(_pread(self._h, addr, n, offset), f"read {self.path}")

    def readinto(self, buf):
        n = self.pread_into(buf, self.pos)
        self.pos += n
        return n

    def read(self, n=-1):
        if n < 0:
            n = max(self.size - self.pos, 0)
        b = bytearray(n)
        got = self.readinto(b)
        return bytes(b[:got])

    def read_stream(self, buf, offset, on_piece=None):
        """Reads into buf from offset with many pieces in flight; on_piece(offset, length)
        is called for each verified piece as it lands (in completion order). Returns the
        bytes read. An exception in on_piece stops the read and is raised here."""
        addr, n = buffer_address(buf)
        if n == 0:
            return 0
        failure = []

        def piece(arg, off, ptr, length):
            if on_piece is None:
                return 0
            try:
                on_piece(off, length)
                return 0
            except BaseException as e:  # handed back to the caller below
                failure.append(e)
                return -_errno.ECANCELED

        got = _read_stream(self._h, addr, n, offset, _PIECE_FN(piece), None)
        if failure:
            raise failure[0]
        return _check(got, f"read {self.path}")

    def write(self, data):
        mv = memoryview(data).cast("B")
        if mv.nbytes == 0:
            return 0
        src = (ctypes.c_char * mv.nbytes).from_buffer_copy(mv) if mv.readonly else \
            ctypes.c_char.from_buffer(mv)
        n = _check(_pwrite(self._h, ctypes.addressof(src), mv.nbytes, self.pos),
                   f"write {self.path}")
        self.pos += n
        return n

    def fsync(self):
        _check(_fsync(self._h), f"fsync {self.path}")


class Loader(_Closing):
    """Loads file ranges into host memory in place ("host"), or into a GPU's memory
    through pinned buffers and asynchronous copies ("cuda:N"); "staged" is the GPU's
    pipeline with host memory behind it."""

    def __init__(self, client, to="host", chunk_bytes=0, buffers=0, streams=0):
        self._h = None
        self.client = client
        self.to = to
        opts = _LoaderOpts(to=to.encode(), chunk_bytes=chunk_bytes, buffers=buffers,
                           streams=streams)
        h = _vp()
        rc = _loader_new(client._h, ctypes.byref(opts), ctypes.byref(h))
        if rc == -_errno.ENODEV:
            raise LodeError(rc, f"loader {to}", "no such GPU, or liblode-loader has no CUDA")
        if rc == -_errno.EINVAL:
            raise ValueError(f"lode: loader target {to!r}: use host, staged or cuda:N")
        _check(rc, f"loader {to}")
        self._h = h

    def close(self):
        if self._h:
            _loader_free(self._h)
            self._h = None

    def read(self, f, dst_ptr, length, offset):
        """Reads [offset, offset + length) of the open File f to address dst_ptr (memory of
        the loader's kind: a device pointer for cuda). Returns the bytes read."""
        got = _loader_read(self._h, f._h, dst_ptr, length, offset)
        if got < 0:
            detail = _loader_error(self._h).decode() or None
            raise LodeError(got, f"load {f.path}", detail)
        return got

    def to_host(self, dst_ptr, src_ptr, length):
        _check(_loader_to_host(self._h, dst_ptr, src_ptr, length), "copy to the host")


from . import reader, safetensors  # noqa: E402  (they use the names above)
