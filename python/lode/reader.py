# SPDX-License-Identifier: MIT
"""The reader shape that model-loading libraries plug in (fastsafetensors' 3FS reader has
it): read_chunked(path, dev_ptr, file_offset, total_length, chunk_size) reads a byte range
of a file to an address, host or GPU, and returns the bytes read.

    r = lode.reader.LodeFileReader(mount_point="/models", mds="tcp://10.0.0.1:7000")
    n = r.read_chunked("/models/llama/model-00001.safetensors", ptr, off, length, 64 << 20)

Paths under mount_point (where lode-fuse mounts the cluster) are read through liblode
directly, not through the mount; a path that is already a cluster path works too.
device: "host" when dev_ptr is host memory, "cuda:N" for a GPU's.
"""
import os

from . import Client, Loader, LodeError


class LodeFileReader:
    def __init__(self, mount_point="/", mds=None, client=None, device="host"):
        self.mount_point = os.path.abspath(mount_point)
        self.client = client or Client(mds)
        self._own = client is None
        self.device = device
        self._loaders = {}

    def cluster_path(self, path):
        p = os.path.abspath(path)
        if self.mount_point != "/" and (p == self.mount_point or
                                        p.startswith(self.mount_point + os.sep)):
            p = p[len(self.mount_point):] or "/"
        return p

    def _loader(self, chunk_size):
        key = chunk_size or 0
        if key not in self._loaders:
            self._loaders[key] = Loader(self.client, self.device, chunk_bytes=key)
        return self._loaders[key]

    def read_chunked(self, path, dev_ptr, file_offset, total_length, chunk_size=0):
        """Reads total_length bytes at file_offset of path to dev_ptr; chunk_size is the
        pinned buffer size for device loads (0: the loader's default). Returns the bytes
        read (less only at the end of the file)."""
        if total_length < 0 or file_offset < 0:
            raise ValueError("lode: negative offset or length")
        if total_length == 0:
            return 0
        with self.client.open(self.cluster_path(path)) as f:
            return self._loader(chunk_size).read(f, dev_ptr, total_length, file_offset)

    def close(self):
        for ld in self._loaders.values():
            ld.close()
        self._loaders.clear()
        if self._own:
            self.client.close()


__all__ = ["LodeFileReader", "LodeError"]
