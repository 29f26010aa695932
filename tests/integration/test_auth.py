#!/usr/bin/env python3
"""Cluster keys, the handshake and roles, on a real local cluster (MDS + 2 OSS, TCP).

- The MDS and every OSS answer nothing to a peer that has not proved the cluster key: a
  request sent without the handshake closes the connection unanswered; a keyless AUTH is
  refused (EACCES) and closed; a handshake with a wrong key fails on both sides; a recorded
  handshake (what a real lodectl sent on one connection, captured by a proxy; what a keyed
  client sent to an OSS) replayed on a new connection is refused, and the request behind
  it is never answered. A handshake in Python with the right key is answered: the control
  that shows the refusals are about the key, not about this test's framing.
- Roles: a client-role connection may not register a target, send a heartbeat or orphan
  operations, or repair a layout (EACCES); a target-role connection may send a heartbeat.
- Key files: one that group or others can read, or that is malformed, is refused by
  lodectl and lode-mds with a reason; a daemon with neither --key nor --insecure does not
  start; `lodectl key generate` never overwrites and writes mode 0600.
- --insecure: a cluster started so serves keyless clients, `lodectl status` says INSECURE,
  and a client holding a key refuses it (an insecure server cannot prove the key).
"""
import hashlib
import os
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time

LODECTL = os.environ["LODECTL"]
MDS_BIN = os.environ["LODE_MDS_BIN"]
OSS_BIN = os.environ["LODE_OSS_BIN"]
MAGIC, VERSION = 0x45444F4C, 2
OP_HELLO, OP_AUTH = 1, 3
OP_TARGET_REGISTER, OP_TARGET_HEARTBEAT, OP_ORPHAN_LIST, OP_ORPHAN_DONE = 30, 31, 33, 34
OP_LAYOUT_SET_COPY, OP_OBJ_READ = 37, 51
F_REPLY = 1
CLIENT, TARGET, ADMIN = 1, 2, 3
EACCES = 13
HDR = "<IBBHQiIQQ"


def hdr(opcode, body_len, data_len=0, req_id=1, flags=0):
    return struct.pack(HDR, MAGIC, VERSION, opcode, flags, req_id, 0, body_len, data_len, 0)


def addr_of(url):
    host, port = url.split("://", 1)[1].rsplit(":", 1)
    return host, int(port)


def read_key(path):
    magic, kind, hexkey = open(path).read().split()
    assert magic == "lode-key-v1" and kind == "cluster", (magic, kind)
    return bytes.fromhex(hexkey)


def role_key(cluster, role):
    name = {CLIENT: "client", TARGET: "target", ADMIN: "admin"}[role]
    return hashlib.blake2b(b"lode role " + name.encode(), key=cluster, digest_size=32).digest()


def proof(key, server, role, cn, sn):
    h = hashlib.blake2b(key=key, digest_size=32)
    h.update(b"lode server" if server else b"lode client")
    h.update(struct.pack("<I", role))
    h.update(cn + sn if server else sn + cn)
    return h.digest()


def auth_req(step, role, flags=0, nonce=bytes(32), prf=bytes(32)):
    body = struct.pack("<IIII", step, role, flags, 0) + nonce + prf
    return hdr(OP_AUTH, len(body), req_id=0) + body


def recv_frame(s):
    """One frame (header fields, body), or None when the connection closes first."""
    buf = b""
    while len(buf) < 40:
        try:
            b = s.recv(40 - len(buf))
        except (ConnectionResetError, socket.timeout):
            return None
        if not b:
            return None
        buf += b
    f = struct.unpack(HDR, buf)
    body = b""
    while len(body) < f[6] + f[7]:
        b = s.recv(f[6] + f[7] - len(body))
        if not b:
            return None
        body += b
    return f, body


class Conn:
    """A raw connection that records every byte it sends."""

    def __init__(self, addr):
        self.s = socket.create_connection(addr, timeout=5)
        self.sent = b""

    def send(self, b):
        self.sent += b
        self.s.sendall(b)

    def close(self):
        self.s.close()


def handshake(c, key, role):
    """Runs the handshake with key (role's key, or None); returns (ok, why)."""
    cn = os.urandom(32)
    c.send(auth_req(1, role, nonce=cn))
    r = recv_frame(c.s)
    if r is None:
        return False, "closed"
    (_, _, op, flags, rid, status, blen, dlen, _), body = r
    if status:
        return False, f"status {status}"
    flags_, _res = struct.unpack("<II", body[:8])
    sn, ps = body[8:40], body[40:72]
    if proof(key, True, role, cn, sn) != ps:
        # what a client does with a server that does not prove the key: send its (wrong)
        # proof anyway here, to see the server refuse it too
        c.send(auth_req(2, role, prf=proof(key, False, role, cn, sn)))
        return False, "server proof did not verify"
    c.send(auth_req(2, role, prf=proof(key, False, role, cn, sn)))
    return True, ""


def hello_answered(c, req_id=7):
    """Sends HELLO; True if its reply (any status) comes back."""
    try:
        c.send(hdr(OP_HELLO, 16, req_id=req_id) + struct.pack("<QII", 42, 1, 0))
    except OSError:
        return False
    while True:
        r = recv_frame(c.s)
        if r is None:
            return False
        if r[0][4] == req_id:
            return True


def call_status(c, opcode, body, req_id):
    """Sends a request; its reply's status, or None if the connection closed first."""
    c.send(hdr(opcode, len(body), req_id=req_id) + body)
    while True:
        r = recv_frame(c.s)
        if r is None:
            return None
        if r[0][4] == req_id:
            return r[0][5]


class Proxy:
    """A TCP proxy to target that records what its first client sent."""

    def __init__(self, target):
        self.target = target
        self.l = socket.socket()
        self.l.bind(("127.0.0.1", 0))
        self.l.listen(4)
        self.addr = "tcp://127.0.0.1:%d" % self.l.getsockname()[1]
        self.first = b""
        self.n = 0
        threading.Thread(target=self.run, daemon=True).start()

    def pump(self, a, b, record):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                if record:
                    self.first += d
                b.sendall(d)
        except OSError:
            pass
        for x in (a, b):
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def run(self):
        while True:
            try:
                a, _ = self.l.accept()
            except OSError:
                return
            b = socket.create_connection(self.target)
            rec = self.n == 0
            self.n += 1
            threading.Thread(target=self.pump, args=(a, b, rec), daemon=True).start()
            threading.Thread(target=self.pump, args=(b, a, False), daemon=True).start()


def lodectl(*args, env=None, key=None):
    e = dict(os.environ)
    e.pop("LODE_KEY_FILE", None)
    if key:
        e["LODE_KEY_FILE"] = key
    e.update(env or {})
    return subprocess.run([LODECTL] + list(args), capture_output=True, text=True, env=e,
                          timeout=60)


def check_server(name, addr, cluster, fails):
    # control: the right key, in this test's own handshake, is answered
    c = Conn(addr)
    ok, why = handshake(c, role_key(cluster, CLIENT), CLIENT)
    if not ok or not hello_answered(c):
        fails.append(f"{name}: a handshake with the right key was not answered ({why})")
    recorded = c.sent
    c.close()
    print(f"{name}: the right key is answered")

    # no handshake at all: the request closes the connection unanswered
    for op, body in ((OP_HELLO, struct.pack("<QII", 42, 1, 0)), (OP_OBJ_READ, bytes(40))):
        c = Conn(addr)
        c.send(hdr(op, len(body)) + body)
        if recv_frame(c.s) is not None:
            fails.append(f"{name}: opcode {op} without the handshake was answered")
        c.close()

    # a keyless AUTH: refused with EACCES, then closed
    c = Conn(addr)
    c.send(auth_req(1, CLIENT, flags=1))
    r = recv_frame(c.s)
    if r is None or r[0][5] != EACCES:
        fails.append(f"{name}: a keyless AUTH got {r and r[0][5]}, not EACCES")
    if hello_answered(c):
        fails.append(f"{name}: a keyless client was served after its refusal")
    c.close()

    # a wrong key: the server's proof does not verify, and ours is refused
    wrong = os.urandom(32)
    c = Conn(addr)
    ok, why = handshake(c, role_key(wrong, CLIENT), CLIENT)
    if ok:
        fails.append(f"{name}: the server proved a key it does not hold")
    if hello_answered(c):
        fails.append(f"{name}: a client with a wrong key was served")
    c.close()

    # replay of a recorded handshake (and the HELLO behind it) on a new connection
    c = Conn(addr)
    c.send(recorded)
    while True:
        r = recv_frame(c.s)
        if r is None:
            break
        if r[0][2] == OP_HELLO:
            fails.append(f"{name}: a replayed handshake was served")
            break
    c.close()
    print(f"{name}: no handshake, no key, a wrong key and a replay are refused")


def check_roles(addr, cluster, fails):
    bodies = {OP_TARGET_REGISTER: bytes(40), OP_TARGET_HEARTBEAT: bytes(32),
              OP_ORPHAN_LIST: bytes(8), OP_ORPHAN_DONE: bytes(8),
              OP_LAYOUT_SET_COPY: bytes(32)}
    c = Conn(addr)
    ok, why = handshake(c, role_key(cluster, CLIENT), CLIENT)
    if not ok:
        fails.append(f"roles: client handshake failed ({why})")
        return
    for i, (op, body) in enumerate(bodies.items()):
        st = call_status(c, op, body, 100 + i)
        if st != EACCES:
            fails.append(f"roles: a client connection's opcode {op} got {st}, not EACCES")
    c.close()
    c = Conn(addr)
    ok, why = handshake(c, role_key(cluster, TARGET), TARGET)
    st = call_status(c, OP_TARGET_HEARTBEAT, bodies[OP_TARGET_HEARTBEAT], 200) if ok else None
    if st in (None, EACCES):
        fails.append(f"roles: a target connection's heartbeat got {st} ({why})")
    st = call_status(c, OP_LAYOUT_SET_COPY, bodies[OP_LAYOUT_SET_COPY], 201) if ok else None
    if st != EACCES:
        fails.append(f"roles: a target connection's LAYOUT_SET_COPY got {st}, not EACCES")
    c.close()
    print("roles: a client cannot register, heartbeat, list orphans or repair; a target "
          "can heartbeat")


def replay_real_client(mds, key, fails):
    """What lodectl really sent on its connection, through a proxy, replayed."""
    p = Proxy(addr_of(mds))
    r = lodectl("--mds", p.addr, "status", key=key)
    if r.returncode != 0:
        fails.append(f"lodectl status through the proxy failed: {r.stderr.strip()}")
        return
    time.sleep(0.2)
    if len(p.first) < 2 * (40 + 80):
        fails.append(f"the proxy recorded only {len(p.first)} bytes")
        return
    c = Conn(addr_of(mds))
    c.send(p.first)
    answered = 0
    while True:
        r = recv_frame(c.s)
        if r is None:
            break
        if r[0][2] != OP_AUTH:
            answered += 1
    c.close()
    if answered:
        fails.append(f"a replay of lodectl's connection got {answered} answers")
    print(f"a replay of the {len(p.first)} bytes lodectl sent is refused")


def check_key_files(d, cdir, mds, fails):
    key = os.path.join(cdir, "cluster.key")
    if stat.S_IMODE(os.stat(key).st_mode) != 0o600:
        fails.append(f"local up wrote {key} with mode {oct(os.stat(key).st_mode)}")
    gen = os.path.join(d, "gen.key")
    if lodectl("key", "generate", gen).returncode != 0:
        fails.append("lodectl key generate failed")
    elif stat.S_IMODE(os.stat(gen).st_mode) != 0o600:
        fails.append(f"lodectl key generate wrote mode {oct(os.stat(gen).st_mode)}")
    before = open(gen).read()
    r = lodectl("key", "generate", gen)
    if r.returncode == 0 or open(gen).read() != before:
        fails.append("lodectl key generate overwrote a key file")

    readable = os.path.join(d, "readable.key")
    with open(readable, "w") as f:
        f.write(open(key).read())
    os.chmod(readable, 0o644)
    r = lodectl("--mds", mds, "status", key=readable)
    if r.returncode == 0 or "group or others" not in r.stderr:
        fails.append(f"lodectl used a key file others can read: {r.stderr.strip()}")
    r = subprocess.run([MDS_BIN, "--data", os.path.join(d, "m1"), "--listen",
                        "tcp://127.0.0.1:0", "--key", readable], capture_output=True,
                       text=True, timeout=20)
    if r.returncode != 2 or "group or others" not in r.stderr:
        fails.append(f"lode-mds took a key file others can read: {r.returncode} {r.stderr}")

    bad = os.path.join(d, "bad.key")
    with open(bad, "w") as f:
        f.write("lode-key-v1 cluster 1234\n")
    os.chmod(bad, 0o600)
    r = lodectl("--mds", mds, "status", key=bad)
    if r.returncode == 0 or "not a Lode key" not in r.stderr:
        fails.append(f"lodectl used a malformed key file: {r.stderr.strip()}")

    for prog, extra in ((MDS_BIN, []), (OSS_BIN, ["--mds", mds])):
        r = subprocess.run([prog, "--data", os.path.join(d, "m2"), "--listen",
                            "tcp://127.0.0.1:0"] + extra, capture_output=True, text=True,
                           timeout=20)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 2 or len(lines) != 1 or "--insecure" not in lines[0]:
            fails.append(f"{os.path.basename(prog)} without --key or --insecure: "
                         f"{r.returncode} {r.stderr}")
        if os.path.exists(os.path.join(d, "m2")):
            fails.append(f"{os.path.basename(prog)} without a key made its data directory")

    r = lodectl("--mds", mds, "status", key=os.path.join(d, "gen.key"))
    if r.returncode == 0 or "refused the key" not in r.stderr:
        fails.append(f"lodectl with a wrong key: {r.returncode} {r.stderr.strip()}")
    r = lodectl("--mds", mds, "status")
    if r.returncode == 0 or "needs a key" not in r.stderr:
        fails.append(f"lodectl with no key: {r.returncode} {r.stderr.strip()}")
    r = lodectl("--mds", mds, "status", key=key)
    if r.returncode != 0 or "INSECURE" in r.stdout:
        fails.append(f"lodectl status with the key: {r.returncode} {r.stdout} {r.stderr}")

    # a client node may hold only the client key
    ck = os.path.join(d, "client.key")
    r = lodectl("key", "derive", "--role", "client", key, ck)
    src = os.path.join(d, "src")
    with open(src, "wb") as f:
        f.write(os.urandom(300000))
    r2 = lodectl("--mds", mds, "put", src, "/by-client-key", key=ck)
    if r.returncode or r2.returncode:
        fails.append(f"a client key could not put a file: {r.stderr} {r2.stderr}")
    print("key files: modes, no overwrite, group-readable and malformed files refused; "
          "a daemon needs --key or --insecure; a client key works")


def check_insecure(d, fails):
    cdir = os.path.join(d, "insecure")
    r = lodectl("local", "up", cdir, "--oss", "1", "--insecure")
    try:
        if r.returncode != 0:
            fails.append(f"local up --insecure failed: {r.stderr}")
            return
        mds = r.stdout.strip()
        r = lodectl("--mds", mds, "status")
        if r.returncode != 0 or "INSECURE" not in r.stdout:
            fails.append(f"lodectl status of an insecure cluster: {r.stdout} {r.stderr}")
        src = os.path.join(d, "src-insecure")
        with open(src, "wb") as f:
            f.write(os.urandom(200000))
        r = lodectl("--mds", mds, "put", src, "/f")
        if r.returncode != 0:
            fails.append(f"a keyless put to an insecure cluster failed: {r.stderr}")
        # capabilities go unsigned and unchecked there: the data comes back as it went
        back = os.path.join(d, "back-insecure")
        r = lodectl("--mds", mds, "get", "/f", back)
        if r.returncode != 0 or open(back, "rb").read() != open(src, "rb").read():
            fails.append(f"a keyless get from an insecure cluster failed: {r.stderr}")
        r = lodectl("--mds", mds, "status", key=os.path.join(d, "gen.key"))
        if r.returncode == 0:
            fails.append("a client holding a key trusted an insecure cluster")
        print("--insecure: keyless clients served, status says INSECURE, a keyed client "
              "refuses it")
    finally:
        lodectl("local", "down", cdir)


def main():
    with tempfile.TemporaryDirectory(prefix="lode-auth.") as d:
        cdir = os.path.join(d, "c")
        r = lodectl("local", "up", cdir, "--oss", "2")
        try:
            if r.returncode != 0:
                print("local up failed:", r.stderr)
                return 1
            mds = r.stdout.strip()
            key = os.path.join(cdir, "cluster.key")
            cluster = read_key(key)
            fails = []
            servers = [("MDS", addr_of(mds))]
            for i in range(2):
                with open(os.path.join(cdir, f"oss{i}", "addr")) as f:
                    servers.append((f"OSS {i}", addr_of(f.read().strip())))
            for name, addr in servers:
                check_server(name, addr, cluster, fails)
            check_roles(addr_of(mds), cluster, fails)
            replay_real_client(mds, key, fails)
            check_key_files(d, cdir, mds, fails)
            check_insecure(d, fails)
            with open(os.path.join(cdir, "mds", "log")) as f:
                log = f.read()
            if "refused: " not in log:
                fails.append("the MDS did not log a refused peer")
            n = log.count("refused: ")
            print(f"the MDS logged {n} refusal lines (at most one a second)")
            for m in fails:
                print("FAIL:", m)
            return 1 if fails else 0
        finally:
            lodectl("local", "down", cdir)


if __name__ == "__main__":
    sys.exit(main())
