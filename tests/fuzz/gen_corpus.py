#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpora of tests/fuzz/ (corpus/NAME/): small, valid inputs in each
harness's input format, built from the wire structs of proto/wire/wire_spec.h (and the
other formats the harnesses read), so that fuzzing starts from frames a real peer sends.

Run from anywhere: python3 tests/fuzz/gen_corpus.py. Files are named after what they hold;
rerunning rewrites them identically. libFuzzer adds what it finds to a separate working
directory (see README.md), not here."""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC, VERSION = 0x45444F4C, 2
CHUNK = 1 << 16
ROLE_CLIENT, ROLE_OSS = 1, 2


def write(harness, name, data):
    d = os.path.join(HERE, 'corpus', harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def hdr(op, body_len, data_len, reply=False, req_id=1, status=0):
    return struct.pack('<IBBHQiIQQ', MAGIC, VERSION, op, 1 if reply else 0, req_id, status,
                       body_len, data_len, 0)


CRED = struct.pack('<IIII', 1000, 1000, 0, 0) + bytes(4 * 32)  # uid, gid, no groups


def layout(stripe_size=CHUNK * 16, count=1, mirrors=1, gen=0, targets=()):
    t = list(targets) + [0] * (64 - len(targets))
    return struct.pack('<IHHQ', stripe_size, count, mirrors, gen) + struct.pack('<64I', *t)


def objid(ino=7, gen=1, stripe=0):
    return struct.pack('<QQII', ino, gen, stripe, 0)


def hop(tid, addr):
    a = addr.encode()
    return struct.pack('<IHH', tid, len(a), 0) + a + b'\0' * (128 - len(a))


def chain(self_target, hops, timeout=5000):
    return struct.pack('<IHHII', self_target, len(hops), 0, timeout, 0) + b''.join(
        hop(t, a) for t, a in hops)


def lookup_like(parent, name):
    return struct.pack('<Q', parent) + CRED + struct.pack('<HHI', len(name), 0, 0) + name


def xattr_req(ino, name, size=0, flags=0):
    return struct.pack('<Q', ino) + CRED + struct.pack('<IIHHI', flags, size, len(name), 0,
                                                       0) + name


def sums(data):
    # any value: the harnesses that check sums compute their own; these only give shape
    n = (len(data) + CHUNK - 1) // CHUNK
    return struct.pack('<%dQ' % n, *([0x1234567890abcdef] * n))


# (opcode, name, body, data_len) for every request the message table knows
def requests():
    wdata = b'x' * 100
    return [
        (1, 'hello', struct.pack('<QII', 42, ROLE_CLIENT, 0), 0),
        (1, 'hello_oss', struct.pack('<QII', 43, ROLE_OSS, 0), 0),
        (2, 'ping', b'', 0),
        (10, 'lookup', lookup_like(1, b'a'), 0),
        (11, 'getattr', struct.pack('<Q', 1), 0),
        (12, 'setattr', struct.pack('<Q', 2) + CRED +
         struct.pack('<IIIIQqqq', 0x1 | 0x8, 0o644, 0, 0, 4096, 0, 0, 0), 0),
        (13, 'create', struct.pack('<Q', 1) + CRED +
         struct.pack('<IIHHHH', 0o644, 0x13, 1, 1, 0, 0) + layout() + b'f', 0),
        (14, 'mkdir', struct.pack('<Q', 1) + CRED + struct.pack('<IHH', 0o755, 1, 0) + b'd', 0),
        (15, 'unlink', lookup_like(1, b'f'), 0),
        (16, 'rmdir', lookup_like(1, b'd'), 0),
        (17, 'rename', struct.pack('<QQ', 1, 1) + CRED + struct.pack('<HHI', 1, 1, 0) +
         b'f' + b'g', 0),
        (18, 'link', struct.pack('<QQ', 2, 1) + CRED + struct.pack('<HHI', 1, 0, 0) + b'h', 0),
        (19, 'symlink', struct.pack('<Q', 1) + CRED + struct.pack('<HHI', 1, 4, 0) + b'l' +
         b'f/g1', 0),
        (20, 'readlink', struct.pack('<Q', 3), 0),
        (21, 'readdir', struct.pack('<QQ', 1, 0) + CRED + struct.pack('<II', 64, 0), 0),
        (21, 'readdirplus', struct.pack('<QQ', 1, 0) + CRED + struct.pack('<II', 64, 1), 0),
        (22, 'statfs', b'', 0),
        (48, 'sync', b'', 0),
        (60, 'grant_return', struct.pack('<QQ', 1, 7), 0),
        (23, 'setxattr', xattr_req(1, b'user.a', 5), 5),
        (24, 'getxattr', xattr_req(1, b'user.a', 64), 0),
        (25, 'listxattr', xattr_req(1, b'', 256), 0),
        (26, 'removexattr', xattr_req(1, b'user.a'), 0),
        (27, 'open', struct.pack('<Q', 2) + CRED + struct.pack('<II', 0x3, 0), 0),
        (28, 'close', struct.pack('<QQQqII', 2, 1, 100, 1, 1, 0), 0),
        (29, 'commit', struct.pack('<QQQqII', 2, 1, 100, 1, 1, 0), 0),
        (49, 'close_many', b'', 32),
        (30, 'target_register', b'U' * 16 + struct.pack('<QQHHI', 1 << 30, 1 << 29, 20, 0, 0) +
         b'tcp://127.0.0.1:7001', 0),
        (31, 'target_heartbeat', struct.pack('<IIQQQ', 1, 0, 1 << 30, 1 << 29, 3), 0),
        (32, 'target_list', b'', 0),
        (33, 'orphan_list', struct.pack('<II', 1, 16), 0),
        (34, 'orphan_done', struct.pack('<II', 1, 0), 48),
        (35, 'report_copy', struct.pack('<QQIIII', 2, 1, 0, 1, 1, 0), 0),
        (36, 'layout_get', struct.pack('<Q', 2), 0),
        (37, 'layout_set_copy', struct.pack('<QQIIII', 2, 1, 0, 1, 2, 0), 0),
        (41, 'scrub_report', objid() + struct.pack('<IIQ', 1, 2, 3), 0),
        (42, 'backup_start', struct.pack('<QQ', 0, 0), 0),
        (43, 'backup_read', struct.pack('<QQII', 1, 0, 1 << 20, 0), 0),
        (47, 'cap_get', struct.pack('<Q', 2) + CRED + struct.pack('<QIIQ', 1, 1, 0, 0), 0),
        (44, 'move_begin', struct.pack('<QQQQIIII', 2, 1, 1, 0, 1, 0, 1, 2), 0),
        (44, 'move_commit', struct.pack('<QQQQIIII', 2, 1, 1, 3, 2, 1, 1, 2), 0),
        (45, 'target_state', struct.pack('<II', 1, 1), 0),
        (46, 'move_list', struct.pack('<IIQQ', 16, 1, 2, 1), 0),
        (50, 'obj_write', objid() + struct.pack('<QII', 0, 0, 1) + sums(wdata), len(wdata)),
        (50, 'obj_write_sync', objid() + struct.pack('<QII', 0, 1, 1) + sums(wdata),
         len(wdata)),
        (50, 'obj_write_chain', objid() + struct.pack('<QII', 0, 2, 1) + sums(wdata) +
         chain(1, [(2, 'tcp://127.0.0.1:7002'), (3, 'tcp://127.0.0.1:7003')]), len(wdata)),
        (50, 'obj_write_merge', objid() + struct.pack('<QII', 1000, 4, 1) + sums(wdata),
         len(wdata)),
        (51, 'obj_read', objid() + struct.pack('<QII', 0, CHUNK, 0), 0),
        (51, 'obj_read_held', objid() + struct.pack('<QII', 0, CHUNK, 1), 0),
        (52, 'obj_truncate', objid() + struct.pack('<Q', 50), 0),
        (53, 'obj_remove', objid(), 0),
        (54, 'obj_stat', objid(), 0),
        (55, 'obj_list', objid(0, 0, 0) + struct.pack('<II', 16, 0), 0),
        (56, 'obj_fsync', objid(), 0),
        (56, 'obj_fsync_chain', objid() + chain(1, [(2, 'tcp://127.0.0.1:7002')]), 0),
        (58, 'obj_scrub', struct.pack('<IIQQQ', 1, 0, 64 << 20, 0, 0), 0),
        (58, 'obj_scrub_cancel', struct.pack('<IIQQQ', 2, 0, 0, 0, 0), 0),
        (59, 'obj_scrub_status', struct.pack('<II', 16, 0), 0),
    ]


def wire_request():
    for op, name, body, dlen in requests():
        write('wire_request', name, struct.pack('<BI', op, dlen) + body)
    # the harness also checks the input's first 40 bytes as a header
    write('wire_request', 'as_header', hdr(10, 24, 0) + b'\0' * 8)


def dirent(ino, cookie, mode, name):
    rec = struct.pack('<QQIHH', ino, cookie, mode, len(name), 0) + name
    return rec + b'\0' * (-len(rec) % 8)


def attr(ino, mode, size=0):
    return struct.pack('<QQQqqqIIIIQII', ino, size, 0, 1, 2, 3, mode, 0, 0, 1, 0, 0, 0)


def direntplus(ino, cookie, mode, name):
    rec = attr(ino, mode) + struct.pack('<QQIHH', ino, cookie, mode, len(name), 0) + name
    return rec + b'\0' * (-len(rec) % 8)


def target(tid, addr):
    a = addr.encode()
    rec = struct.pack('<IIQQQQHHI', tid, 1, 1 << 30, 1 << 29, 5, 10, len(a), 0, 0) + a
    return rec + b'\0' * (-len(rec) % 8)


def wire_reply():
    def rep(kind, body, arg, data=b''):
        return struct.pack('<BHI', kind, len(body), arg) + body + data
    ents = dirent(2, 1, 0o100644, b'f') + dirent(3, 2, 0o40755, b'dir')
    write('wire_reply', 'readdir', rep(0, struct.pack('<II', 2, 1), 0, ents))
    plus = direntplus(2, 1, 0o100644, b'f') + direntplus(3, 2, 0o40755, b'dir')
    write('wire_reply', 'readdirplus', rep(1, struct.pack('<II', 2, 0), 0, plus))
    write('wire_reply', 'obj_read', rep(2, struct.pack('<QII', 100, 1, 0) + sums(b'x'), CHUNK,
                                        b'x' * 100))
    write('wire_reply', 'obj_chain', rep(3, struct.pack('<QQHHI', 100, 4096, 3, 0, 0) +
                                         struct.pack('<8i', 0, 0, 5, 0, 0, 0, 0, 0), 2))
    write('wire_reply', 'targets', rep(4, b'', 0, target(1, 'tcp://127.0.0.1:7001') +
                                       target(2, 'rdma://10.0.0.2:7001')))
    write('wire_reply', 'chain', rep(5, chain(1, [(2, 'tcp://127.0.0.1:7002'),
                                                  (3, 'tcp://127.0.0.1:7003')]), 0))


def tcp_frames():
    # [mode u8][chunk u8] then the byte stream a peer sends
    reqs = requests()
    stream = b''.join(hdr(op, len(body), dlen) + body + b'd' * dlen for op, _, body, dlen in reqs)
    write('tcp_frames', 'requests', bytes([0x06, 7]) + stream)
    write('tcp_frames', 'requests_bigchunks', bytes([0x02, 200]) + stream)
    big = 40000
    w = objid() + struct.pack('<QII', 0, 0, 1) + sums(b'x' * big)
    write('tcp_frames', 'large_data', bytes([0x02, 255]) + hdr(50, len(w), big) + w +
          b'x' * big)
    replies = hdr(10, 80, 0, reply=True) + attr(2, 0o100644) + hdr(51, 0, 0, reply=True,
                                                                    status=2)
    write('tcp_frames', 'replies', bytes([0x03, 13]) + replies)
    write('tcp_frames', 'bad_magic', bytes([0x00, 1]) + b'EDOL' + hdr(2, 0, 0)[4:])


def rdma_msg():
    def msg(credits, flags, ndesc, inline_len, h, body, sink=None, descs=(), inline=b''):
        m = struct.pack('<IHHHHI', 0x414D4452, 1, credits, flags, ndesc, inline_len)
        out = m + h + body + b'\0' * (-len(body) % 8)
        if sink:
            out += struct.pack('<QII', *sink)
        for d in descs:
            out += struct.pack('<QII', *d)
        return out + inline
    lk = lookup_like(1, b'a')
    write('rdma_msg', 'plain', msg(4, 0, 0, 0, hdr(10, len(lk), 0), lk))
    rd = objid() + struct.pack('<QII', 0, CHUNK, 0)
    write('rdma_msg', 'sink', msg(1, 1, 0, 0, hdr(51, len(rd), 0), rd,
                                  sink=(0x7f0000001000, 0x1234, CHUNK)))
    w = objid() + struct.pack('<QII', 0, 0, 1) + sums(b'x' * 100)
    write('rdma_msg', 'inline', msg(0, 4, 0, 100, hdr(50, len(w), 100), w, inline=b'x' * 100))
    write('rdma_msg', 'descs', msg(2, 0, 2, 0, hdr(50, len(w), 8192), w,
                                   descs=[(0x1000, 7, 4096), (0x3000, 7, 4096)]))
    write('rdma_msg', 'placed_reply', msg(3, 2, 0, 0, hdr(51, 24, 100, reply=True),
                                          struct.pack('<QII', 100, 1, 0) + sums(b'x')))


def frames(reqs):
    """The handler harnesses' input: [opcode u8][body_len u16][data_len u16][body][data]..."""
    out = b''
    for op, body, data in reqs:
        out += struct.pack('<BHH', op, len(body), len(data)) + body + data
    return out


def mds_handler():
    by = {name: (op, body, dlen) for op, name, body, dlen in requests() if op < 50}

    def req(name, data=None):
        op, body, dlen = by[name]
        return (op, body, data if data is not None else b'v' * dlen)
    write('mds_handler', 'namespace', frames([req('hello'), req('mkdir'), req('create'),
                                              req('lookup'), req('getattr'), req('readdir'),
                                              req('readdirplus'), req('rename'), req('symlink'),
                                              req('unlink'), req('rmdir')]))
    write('mds_handler', 'xattrs', frames([req('setxattr', b'value'), req('getxattr'),
                                           req('listxattr'), req('removexattr')]))
    write('mds_handler', 'targets', frames([req('hello_oss'), req('target_register'),
                                            req('target_heartbeat'), req('target_list'),
                                            req('orphan_list'),
                                            req('orphan_done', objid() + objid(8))]))
    write('mds_handler', 'files', frames([req('create'), req('open'), req('setattr'),
                                          req('commit'), req('close'),
                                          req('close_many', struct.pack('<QQQQ', 2, 1, 2, 9)),
                                          req('layout_get'),
                                          req('report_copy'), req('layout_set_copy'),
                                          req('link'), req('readlink'), req('statfs'),
                                          req('ping')]))
    # a lazy client (the opcode's top bit: LODE_WIRE_F_LAZY), then a SYNC
    lazy = [(op | 0x80, body, data) for op, body, data in
            [req('mkdir'), req('create'), req('setattr'), req('rename'), req('unlink')]]
    write('mds_handler', 'lazy', frames(lazy + [req('sync'), req('close')]))
    for op, name, body, dlen in requests():
        if op < 50 or op == 60:  # the MDS's opcodes: below the OSS's 50-59, and GRANT_RETURN
            write('mds_handler', 'one_' + name, frames([(op, body, b'v' * dlen)]))


def oss_handler():
    data = bytes(range(256)) * 2
    w = objid() + struct.pack('<QII', 0, 0, 1) + sums(data)
    ws = objid() + struct.pack('<QII', 0, 1, 1) + sums(data)
    wc = objid() + struct.pack('<QII', 0, 2, 1) + sums(data) + chain(1, [])
    rd = objid() + struct.pack('<QII', 0, CHUNK, 0)
    write('oss_handler', 'write_read', frames([(1, struct.pack('<QII', 1, 1, 0), b''),
                                               (50, w, data), (51, rd, b''), (54, objid(), b''),
                                               (52, objid() + struct.pack('<Q', 77), b''),
                                               (51, rd, b''), (56, objid(), b''),
                                               (55, objid(0, 0, 0) + struct.pack('<II', 16, 0),
                                                b''), (53, objid(), b'')]))
    write('oss_handler', 'sync_and_chain_tail', frames([(50, ws, data), (50, wc, data),
                                                        (56, objid() + chain(1, []), b'')]))
    # merges: a partial chunk at an odd offset into what is stored, then across a chunk edge
    wm = objid() + struct.pack('<QII', 1000, 4, 1) + sums(data)
    edge = CHUNK - 100
    we = objid() + struct.pack('<QII', edge, 4, 2) + sums(data[:100]) + sums(data[100:])
    write('oss_handler', 'merge', frames([(50, w, data), (50, wm, data), (50, we, data),
                                          (51, rd, b'')]))
    # a read held against writes (LODE_OBJ_READ_HELD) between writes of the same chunk
    rh = objid() + struct.pack('<QII', 0, 2 * CHUNK, 1)
    write('oss_handler', 'held_read', frames([(50, w, data), (51, rh, b''), (50, ws, data),
                                              (51, rh, b''), (51, rd, b'')]))
    write('oss_handler', 'ping', frames([(2, b'', b'')]))
    write('oss_handler', 'scrub', frames([(59, struct.pack('<II', 16, 0), b''),
                                          (58, struct.pack('<IIQQQ', 2, 0, 0, 0, 0), b'')]))


def oss_sum():
    # [op u8][trunc u32][size u32][data_len u16][data][.sum bytes]: see fuzz_oss_sum.c
    def inp(op, trunc, size, data, sumbytes):
        return struct.pack('<BIIH', op, trunc, size, len(data)) + data + sumbytes
    write('oss_sum', 'empty_sums', inp(0, 10, 100, b'abc' * 10, b''))
    write('oss_sum', 'one_sum', inp(1, 70000, 1000, b'q' * 64, struct.pack('<Q', 0xdead)))
    write('oss_sum', 'hole_then_sum', inp(2, 0, 3 * CHUNK, b'', struct.pack('<3Q', 0, 1, 2)))
    write('oss_sum', 'short_sum_file', inp(3, CHUNK + 5, 2 * CHUNK, b'z', b'\1\2\3'))
    write('oss_sum', 'sums_past_data', inp(0, 5, 10, b'0123456789',
                                           struct.pack('<4Q', 5, 6, 7, 8)))


def safetensors():
    import json

    def st(hdr, data_len, pad=0):
        j = json.dumps(hdr, separators=(',', ':')).encode() + b' ' * pad
        head = struct.pack('<Q', len(j)) + j
        return struct.pack('<I', data_len) + head
    write('safetensors', 'two_tensors', st({
        '__metadata__': {'format': 'pt'},
        'a': {'dtype': 'F32', 'shape': [2, 3], 'data_offsets': [0, 24]},
        'b': {'dtype': 'BF16', 'shape': [4], 'data_offsets': [24, 32]}}, 32, pad=3))
    write('safetensors', 'empty_tensor', st({
        'e': {'dtype': 'I8', 'shape': [0], 'data_offsets': [0, 0]},
        'u': {'dtype': 'U8', 'shape': [], 'data_offsets': [0, 1]}}, 1))
    write('safetensors', 'dtypes', st({
        k: {'dtype': k, 'shape': [1], 'data_offsets': [i * 8, i * 8 + s]}
        for i, (k, s) in enumerate([('F64', 8), ('F16', 2), ('I64', 8), ('I32', 4),
                                    ('I16', 2), ('BOOL', 1), ('F8_E4M3', 1), ('U32', 4)])},
        64))
    # the header announced longer than the bytes given: -EAGAIN
    write('safetensors', 'short_head', struct.pack('<I', 100) + struct.pack('<Q', 90) + b'{')


def mds_records():
    # [db u8][key_len u8][key][value_len u16][value]... : see fuzz_mds_records.c
    def rec(db, key, val):
        return struct.pack('<BB', db, len(key)) + key + struct.pack('<H', len(val)) + val
    be = lambda *v: b''.join(struct.pack('>Q', x) for x in v)
    # disk inode layout: see mds/mds_spec.h (the harness prints nothing; sizes matter)
    write('mds_records', 'dirent_and_cookie',
          rec(2, be(1) + b'a', struct.pack('<QQI', 2, 1, 0o100644) + b'\0' * 4) +
          rec(3, be(1, 1), struct.pack('<QQI', 2, 1, 0o100644) + b'\0' * 4 + b'a'))
    write('mds_records', 'symlink', rec(4, be(3), b'target/path'))
    write('mds_records', 'xattr', rec(5, be(1) + b'user.a', b'value'))
    def disk_layout(size=CHUNK * 16, count=1, mirrors=1, gen=1, targets=()):
        t = list(targets) + [0] * (64 - len(targets))
        return struct.pack('<IHHQ', size, count, mirrors, gen) + struct.pack('<64I', *t)

    def inode(mode, size=0, nlink=1, parent=0, next_cookie=0, lay=None):
        return struct.pack('<IIIIQqqqQQQ3Q', mode, 0, 0, nlink, size, 1, 2, 3, parent,
                           next_cookie, 0, 0, 0, 0) + (lay or disk_layout(0, 0, 0, 0))
    reg = inode(0o100644, 100, lay=disk_layout(targets=[1]))
    sub = inode(0o40755, 0, 2, 1, 3, disk_layout(CHUNK * 16, 0, 1, 0))
    tgt = struct.pack('<IHHQQ2Q', 1, 20, 0, 1 << 30, 1 << 29, 0, 0) + \
        b'tcp://127.0.0.1:7001' + b'\0' * 108
    write('mds_records', 'orphan', rec(7, be(9, 1), struct.pack('<Qq2Q', 1, 0, 0, 0) +
                                       disk_layout(targets=[1])))
    write('mds_records', 'tree', rec(1, be(2), reg) + rec(1, be(4), sub) +
          rec(2, be(1) + b'a', struct.pack('<QQII', 2, 3, 0o100644, 0)) +
          rec(3, be(1, 3), struct.pack('<QQII', 2, 3, 0o100644, 0) + b'a') +
          rec(2, be(1) + b'd', struct.pack('<QQII', 4, 4, 0o40755, 0)) +
          rec(3, be(1, 4), struct.pack('<QQII', 4, 4, 0o40755, 0) + b'd') +
          rec(6, b'U' * 16, tgt) + rec(5, be(2) + b'user.a', b'v'))


def mds_log():
    # records [flags u8][len u16][payload]: see fuzz_mds_log.c; a payload's entries are
    # [op u8][db u8][2 bytes][key_len u32][value_len u32][key][value] (mds/store.c)
    def entry(op, db, key, val=b''):
        return struct.pack('<BBHII', op, db, 0, len(key), len(val)) + key + val
    def rec(payload, flags=0, delta=0):
        return bytes([flags]) + (bytes([delta & 0xff]) if flags & 1 else b'') + \
            struct.pack('<H', len(payload)) + payload
    be = lambda *v: b''.join(struct.pack('>Q', x) for x in v)
    put_x = entry(1, 5, be(1) + b'user.a', b'value')
    write('mds_log', 'one_put', rec(put_x))
    write('mds_log', 'put_then_delete', rec(put_x) + rec(entry(2, 5, be(1) + b'user.a')))
    write('mds_log', 'delete_prefix', rec(put_x + entry(1, 5, be(1) + b'user.b', b'w')) +
          rec(entry(3, 5, be(1))))
    write('mds_log', 'every_db', rec(b''.join(entry(1, db, be(100 + db), b'x' * db)
                                              for db in range(9))))
    write('mds_log', 'missing_txn', rec(put_x) + rec(put_x, flags=1, delta=1))
    write('mds_log', 'old_txn', rec(put_x, flags=1, delta=-1) + rec(put_x))
    write('mds_log', 'framing', rec(put_x) + rec(put_x, flags=2) + rec(put_x, flags=4) +
          rec(put_x, flags=8) + rec(put_x, flags=16))
    write('mds_log', 'bad_entries', rec(entry(1, 9, b'k', b'v')) +
          rec(struct.pack('<BBHII', 1, 5, 0, 1 << 31, 1 << 31) + b'k') +
          rec(entry(4, 5, b'k')) + rec(b'\x01\x05'))
    write('mds_log', 'empty_key', rec(entry(1, 5, b'', b'v')) + rec(entry(1, 5, b'k' * 600, b'v')))
    write('mds_log', 'meta_overwritten', rec(entry(3, 0, b'') + entry(3, 1, b'')))


def handshake():
    # steps: see fuzz_handshake.c. Roles: 1 client, 2 target, 3 admin.
    def step1(role, flags=0, step=1, group=0):
        return bytes([0, step, role, flags, group]) + bytes(range(32))
    good, bad = bytes([1]), bytes([2, 1]) + b'\x55' * 32
    def req(op, body=b''):
        return bytes([3, op, len(body)]) + body
    lookup = req(10, struct.pack('<Q', 1) + b'\0' * 8 + b'a'.ljust(8, b'\0'))
    write('handshake', 'client_then_lookup', step1(1) + good + lookup + req(2))
    write('handshake', 'admin_then_fsck', step1(3) + good + req(39, b'\0' * 32))
    write('handshake', 'target_then_register', step1(2) + good + req(30, b'\0' * 64))
    write('handshake', 'client_asks_admin_ops', step1(1) + good + req(39) + req(30))
    write('handshake', 'request_first', lookup + step1(1) + good)
    write('handshake', 'wrong_proof', step1(1) + bad + bytes([4]) + step1(1) + good + req(2))
    write('handshake', 'nokey_then_more', step1(1, flags=1) + step1(1) + good)
    write('handshake', 'auth_again', step1(3) + good + step1(3) + req(2))
    write('handshake', 'bad_roles_and_steps', step1(0) + bytes([4]) + step1(4) + bytes([4]) +
          step1(1, step=2) + bytes([4]) + good + req(2))
    write('handshake', 'role_switch', step1(1) + bytes([2, 3]) + b'\0' * 32 + req(2))
    write('handshake', 'client_group', step1(1, group=1) + good + lookup + req(39))
    write('handshake', 'group_as_admin', step1(3, group=2) + good + req(2))
    write('handshake', 'group_bad_name', step1(1, group=3) + b'Bad!name' + good + req(2))


def main():
    for f in (wire_request, wire_reply, tcp_frames, rdma_msg, mds_handler, oss_handler, oss_sum,
              safetensors, mds_records, mds_log, handshake):
        f()
    return 0


if __name__ == '__main__':
    sys.exit(main())
