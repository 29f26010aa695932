#!/usr/bin/env python3
"""A raw peer on a real local cluster: what it can make a server do before it is refused.

- A request header announcing more body or data than its opcode can carry (a LOOKUP with a
  4 MiB body, an OBJ_STAT with 4 MiB of data) makes the MDS or OSS close the connection at
  once: it does not wait for the bytes, and does not allocate for them. 100 such
  connections held open leave the OSS's memory where it was. The daemon logs the refusal.
"""
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

LODECTL = os.environ["LODECTL"]
MAGIC, VERSION = 0x45444F4C, 1
OP_LOOKUP, OP_OBJ_STAT = 10, 54


def hdr(opcode, body_len, data_len, req_id=1):
    return struct.pack("<IBBHQiIQQ", MAGIC, VERSION, opcode, 0, req_id, 0, body_len, data_len, 0)


def addr_of(url):
    host, port = url.split("://", 1)[1].rsplit(":", 1)
    return host, int(port)


def closed_without_the_body(addr, opcode, body_len, data_len):
    """Sends only the header; True if the server closes the connection within 5 s."""
    s = socket.create_connection(addr, timeout=5)
    try:
        s.sendall(hdr(opcode, body_len, data_len))
        return s.recv(1) == b""
    except (ConnectionResetError, socket.timeout):
        return False
    finally:
        s.close()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    with tempfile.TemporaryDirectory(prefix="lode-hostile.") as d:
        cdir = os.path.join(d, "c")
        mds = subprocess.run([LODECTL, "local", "up", cdir, "--oss", "1"], check=True,
                             capture_output=True, text=True).stdout.strip()
        try:
            with open(os.path.join(cdir, "oss0", "addr")) as f:
                oss = f.read().strip()
            with open(os.path.join(cdir, "oss0", "pid")) as f:
                oss_pid = int(f.read())
            fails = []
            if not closed_without_the_body(addr_of(mds), OP_LOOKUP, 8192, 0):
                fails.append("the MDS waited for an 8 KiB LOOKUP body")
            if not closed_without_the_body(addr_of(mds), OP_LOOKUP, 24, 4 << 20):
                fails.append("the MDS waited for 4 MiB of LOOKUP data")
            if not closed_without_the_body(addr_of(oss), OP_OBJ_STAT, 24, 4 << 20):
                fails.append("the OSS waited for 4 MiB of OBJ_STAT data")

            before = rss_kib(oss_pid)
            conns = []
            for _ in range(100):
                s = socket.create_connection(addr_of(oss), timeout=5)
                s.sendall(hdr(OP_OBJ_STAT, 24, 4 << 20))
                conns.append(s)
            time.sleep(1)
            after = rss_kib(oss_pid)
            for s in conns:
                s.close()
            print(f"OSS RSS: {before} KiB before, {after} KiB with 100 peers announcing 4 MiB")
            if after - before > 32 * 1024:
                fails.append(f"the OSS grew by {after - before} KiB for 100 refused headers")

            with open(os.path.join(cdir, "mds", "log")) as f:
                if "refused a LOOKUP request" not in f.read():
                    fails.append("the MDS did not log the refused frame")
            for m in fails:
                print("FAIL:", m)
            return 1 if fails else 0
        finally:
            subprocess.run([LODECTL, "local", "down", cdir], capture_output=True)


if __name__ == "__main__":
    sys.exit(main())
