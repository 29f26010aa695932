#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Plants a namespace fault into a stopped MDS's LMDB store, for test_lodectl_fsck.sh.

Test-only: it writes the records of mds/mds_spec.h directly, as a bug or a damaged disk
would leave them. The MDS must not be running (its lock file is respected by LMDB, but its
in-memory state would not follow).

  fsck_plant.py DATA unlink-entry PARENT NAME   remove the entry and its cookie only
  fsck_plant.py DATA nlink INO N                set the inode's link count
  fsck_plant.py DATA target INO INDEX ID        point layout copy INDEX at target ID
  fsck_plant.py DATA remove-target ID           mark target ID removed from the cluster
Exit 77 when python3-lmdb is missing.
"""
import struct
import sys

try:
    import lmdb
except ImportError:
    print("SKIP: python3-lmdb is not installed")
    sys.exit(77)

# struct lode_disk_inode: mode uid gid nlink (4 x u32), size..., then the layout at 96:
# stripe_size u32, stripe_count u16, mirror_count u16, generation u64, targets[64] u32,
# stored up to the last nonzero target only (the rest read as zero)
NLINK_OFF = 12
TARGETS_OFF = 96 + 16


def be64(v):
    return struct.pack(">Q", v)


def main():
    data, action, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    env = lmdb.open(data, max_dbs=16, subdir=True, map_size=64 << 30)
    inodes = env.open_db(b"inodes")
    dirents = env.open_db(b"dirents")
    cookies = env.open_db(b"cookies")
    targets = env.open_db(b"targets")  # not inside the write txn: open_db makes its own
    with env.begin(write=True) as txn:
        if action == "unlink-entry":
            parent, name = int(args[0]), args[1].encode()
            val = txn.get(be64(parent) + name, db=dirents)
            if val is None:
                sys.exit("no such entry")
            ino, cookie = struct.unpack_from("<QQ", val)
            txn.delete(be64(parent) + name, db=dirents)
            txn.delete(be64(parent) + be64(cookie), db=cookies)
            print(ino)
        elif action in ("nlink", "target"):
            ino = int(args[0])
            rec = bytearray(txn.get(be64(ino), db=inodes))
            if action == "nlink":
                struct.pack_into("<I", rec, NLINK_OFF, int(args[1]))
            else:
                at = TARGETS_OFF + 4 * int(args[1])
                rec.extend(bytes(max(0, at + 4 - len(rec))))
                struct.pack_into("<I", rec, at, int(args[2]))
            txn.put(be64(ino), bytes(rec), db=inodes)
        elif action == "remove-target":
            # struct lode_disk_target: target_id u32, addr_len u16, admin u16, ...
            for key, val in txn.cursor(db=targets):
                tid, = struct.unpack_from("<I", val)
                if tid == int(args[0]):
                    rec = bytearray(val)
                    struct.pack_into("<H", rec, 6, 2)  # LODE_TARGET_REMOVED
                    txn.put(key, bytes(rec), db=targets)
                    break
            else:
                sys.exit("no such target")
        else:
            sys.exit("unknown action " + action)


main()
