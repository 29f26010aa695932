#!/usr/bin/env python3
# create_files.py DIR PREFIX COUNT SIZE [SECONDS]
# Creates COUNT files of SIZE bytes named PREFIX0, PREFIX1, ... in DIR (open, write, close,
# as a checkpoint writer does), or with SECONDS, as many as it can (at most COUNT) in that
# time; never stops at an error. Prints "created N failed M" and the first errors, and
# exits 1 if any create failed.
import os
import sys
import time

def main():
    d, prefix, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    end = time.monotonic() + float(sys.argv[5]) if len(sys.argv) > 5 else None
    data = os.urandom(size)
    failed, errors, done = 0, [], 0
    for i in range(count):
        if end is not None and time.monotonic() > end:
            break
        done += 1
        path = os.path.join(d, "%s%d" % (prefix, i))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError as e:
            failed += 1
            if len(errors) < 5:
                errors.append("%s: %s" % (path, e))
    print("created %d failed %d" % (done - failed, failed))
    for e in errors:
        print("  " + e)
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main())
