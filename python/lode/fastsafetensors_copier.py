# SPDX-License-Identifier: MIT
"""A fastsafetensors copier that reads from Lode.

fastsafetensors (the loader behind vLLM's and SGLang's --load-format fastsafetensors)
picks how a file's bytes reach the device through a registry of copier constructors; its
3FS backend is one. This module adds Lode's under the name "lode":

    import lode.fastsafetensors_copier as lc
    lc.register()      # needs fastsafetensors; then ask fastsafetensors for copier "lode"
                       # with mount_point= (where lode-fuse mounts the cluster) and mds=

A copier allocates the device buffer through fastsafetensors' framework layer, reads the
file's data section into it with LodeFileReader.read_chunked (liblode, not the mount:
pieces in flight across every OSS, verified, through pinned buffers for a GPU), and hands
the buffer back for fastsafetensors to cut into tensors.
"""
from .reader import LodeFileReader

try:  # the real interface when fastsafetensors is installed, a plain base otherwise
    from fastsafetensors.copier.base import CopierInterface as _Base
except ImportError:  # pragma: no cover - depends on what is installed
    _Base = object


def loader_target(device):
    """Lode's loader target for a fastsafetensors / torch device: "host" or "cuda:N"."""
    s = str(device).lower()
    if s.startswith("cpu") or s in ("host", ""):
        return "host"
    if s.startswith("cuda"):
        return s if ":" in s else "cuda:0"
    raise ValueError(f"lode: no loader for device {device!r}")


class LodeFileCopier(_Base):
    def __init__(self, metadata, device, reader, framework):
        self.metadata = metadata
        self.device = device
        self.reader = reader
        self.framework = framework

    def submit_io(self, use_buf_register, max_copy_block_size):
        offset = self.metadata.header_length
        length = self.metadata.size_bytes - offset
        gbuf = self.framework.alloc_tensor_memory(length, self.device)
        got = self.reader.read_chunked(self.metadata.src, gbuf.get_base_address(), offset,
                                       length, max(max_copy_block_size, 0))
        if got != length:
            raise IOError(f"lode: {self.metadata.src}: read {got} of {length} bytes")
        return gbuf

    def wait_io(self, gbuf, dtype=None, noalign=False):
        # read_chunked returned with every byte on the device: nothing left to wait for
        kw = {} if dtype is None else {"dtype": dtype}
        return self.metadata.get_tensors(gbuf, self.device, self.metadata.header_length, **kw)


def new_lode_file_copier(device, mount_point="/", mds=None, client=None, **kwargs):
    """The constructor factory fastsafetensors' registry calls: returns
    construct(metadata, device, framework) -> LodeFileCopier, all sharing one reader."""
    reader = LodeFileReader(mount_point=mount_point, mds=mds, client=client,
                            device=loader_target(device))

    def construct_copier(metadata, device, framework):
        return LodeFileCopier(metadata, device, reader, framework)

    construct_copier.reader = reader
    return construct_copier


def register(name="lode"):
    """Registers the factory in fastsafetensors' copier registry (ImportError without
    fastsafetensors)."""
    from fastsafetensors.copier.registry import register_copier_constructor

    register_copier_constructor(name)(new_lode_file_copier)
    return new_lode_file_copier
