#!/usr/bin/env python3
# create_storm.py DIR PREFIX STOPFILE: creates files DIR/PREFIX0, DIR/PREFIX1, ... through
# liblode (python/lode) until STOPFILE exists, each of content(name) (below, the same in
# the checker), and prints the name of each file once it is closed. Exits 1 on an error.
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import lode  # noqa: E402


def content(name):
    """Bytes a file of the storm holds: 1..24 KiB derived from its name."""
    seed = hashlib.sha256(name.encode()).digest()
    size = 1024 * (1 + seed[0] % 24)
    out = bytearray()
    while len(out) < size:
        seed = hashlib.sha256(seed).digest()
        out += seed
    return bytes(out[:size])


def main():
    d, prefix, stop = sys.argv[1], sys.argv[2], sys.argv[3]
    with lode.Client() as c:
        i = 0
        while not os.path.exists(stop):
            name = "%s/%s%d" % (d, prefix, i)
            with c.open(name, "w") as f:
                f.write(content(name))
            print(name, flush=True)
            i += 1


if __name__ == "__main__" and len(sys.argv) == 4:
    main()
elif __name__ == "__main__" and len(sys.argv) == 2 and sys.argv[1] == "--check":
    # --check: reads "PATH" lines on stdin; prints "full", "empty" or "bad" for each
    with lode.Client() as c:
        for line in sys.stdin:
            p = line.strip()
            with c.open(p, "r") as f:
                got = f.read()
            print("%s %s" % ("full" if got == content(p) else "empty" if not got else "bad", p))
else:
    sys.exit("usage: create_storm.py DIR PREFIX STOPFILE | create_storm.py --check")
