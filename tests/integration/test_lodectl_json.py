#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every lodectl command with --json prints one JSON document with the fields that
docs/lodectl.md documents, errors included, against a real local cluster.

The commands come from `lodectl help --json`: a command added to lodectl's table without
a case here fails this test, so that its JSON gets documented and checked.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

LODECTL = os.environ["LODECTL"]

# The documented members of each command's document (docs/lodectl.md), beside "command".
STAT_FIELDS = {"name", "type", "inode", "mode", "size", "nlink", "uid", "gid", "atime_ns",
               "mtime_ns", "ctime_ns", "mtime"}
COPY_FIELDS = {"files", "bytes", "seconds", "copied"}
FIELDS = {
    "status": {"mds", "targets_up", "targets_total", "bytes_total", "bytes_free", "insecure",
               "targets"},
    "df": {"mds", "bytes_total", "bytes_used", "bytes_free", "files", "files_limit",
           "targets_up", "targets_total"},
    "put": COPY_FIELDS,
    "get": COPY_FIELDS,
    "ls": {"path", "entries"},
    "stat": STAT_FIELDS | {"path"},
    "rm": {"path", "files_removed", "directories_removed"},
    "mkdir": {"path"},
    "rmdir": {"path"},
    "mv": {"from", "to"},
    "ln": {"target", "path", "symbolic"},
    "repair": {"path", "copies_degraded", "copies_repaired", "bytes_copied", "seconds"},
    "fsck": {"findings", "repair", "inodes", "files", "objects", "targets", "errors_found",
             "errors_fixed", "errors_left", "seconds", "files_per_s", "objects_per_s", "exit"},
    "scrub": {"targets", "bad", "repair", "rate", "bad_copies", "repaired", "left", "exit"},
    "load": {"to", "files", "tensors", "bytes", "seconds", "gb_per_s", "verified", "per_file"},
    "key generate": {"file", "role"},
    "key derive": {"file", "role"},
    "mds backup": {"file", "bytes", "blake2b", "seconds"},
    "local up": {"dir", "mds", "key_file"},
    "local add-oss": {"dir", "name", "addr", "capacity"},
    "local down": {"dir"},
    "drain": {"target", "copies_moved", "bytes_moved", "copies_left", "moves_busy",
              "moves_cleaned_up"},
    "target list": {"targets"},
    "target remove": {"target", "state"},
    "target undrain": {"target", "state"},
    "rebalance": {"dry_run", "mean_used_percent", "bytes_above_mean", "bytes_planned",
                  "moves_planned", "moves_cleaned_up", "targets_before", "targets_planned"},
    "local kill": {"dir", "daemon", "signal"},
    "help": {"commands"},
}
TARGET_FIELDS = {"id", "state", "address", "bytes_total", "bytes_free", "objects",
                 "last_seen_ms", "scrub"}
COPIED_FIELDS = {"from", "to", "bytes"}
LAYOUT_FIELDS = {"stripe_size", "stripe_count", "mirror_count", "generation", "stripes"}
ERROR_FIELDS = {"code", "message"}

seen = set()


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(args, want_rc=0, stdin=None, check=True):
    """Runs lodectl --json ARGS; returns its one document, checked against FIELDS."""
    p = subprocess.run([LODECTL, "--json"] + args, capture_output=True, text=True,
                       stdin=stdin, timeout=120)
    if p.returncode != want_rc:
        fail(f"lodectl {' '.join(args)} exited {p.returncode}, not {want_rc}:\n"
             f"{p.stdout}{p.stderr}")
    try:
        doc = json.loads(p.stdout)  # the whole of stdout: one document, nothing else
    except json.JSONDecodeError as e:
        fail(f"lodectl {' '.join(args)}: stdout is not one JSON document ({e}):\n{p.stdout}")
    if not isinstance(doc, dict):
        fail(f"lodectl {' '.join(args)}: not an object: {doc}")
    if want_rc or not check:
        if not want_rc:
            return doc
        err = doc.get("error")
        if not isinstance(err, dict) or not ERROR_FIELDS <= err.keys():
            fail(f"lodectl {' '.join(args)} failed without an error member: {doc}")
        return doc
    if "error" in doc:
        fail(f"lodectl {' '.join(args)} succeeded with an error member: {doc}")
    cmd = doc.get("command")
    want = FIELDS.get(cmd)
    if want is None:
        fail(f"lodectl {' '.join(args)}: unknown command member {cmd!r}")
    if not want <= doc.keys():
        fail(f"lodectl {' '.join(args)}: missing {sorted(want - doc.keys())} in {doc}")
    seen.add(cmd)
    return doc


def check_copy(doc, files, nbytes):
    if doc["files"] != files or doc["bytes"] != nbytes or len(doc["copied"]) != files:
        fail(f"{doc['command']}: expected {files} files, {nbytes} bytes: {doc}")
    for c in doc["copied"]:
        if not COPIED_FIELDS <= c.keys():
            fail(f"copied entry without {COPIED_FIELDS}: {c}")
    if not isinstance(doc["seconds"], (int, float)):
        fail(f"seconds is not a number: {doc}")


def main():
    tmp = tempfile.mkdtemp(prefix="lode-lodectl-json.")
    cdir = os.path.join(tmp, "c")
    try:
        up = run(["local", "up", cdir, "--oss", "2"])
        os.environ["LODE_MDS"] = up["mds"]
        if up["dir"] != cdir or not up["mds"].startswith("tcp://") or \
                up["key_file"] != os.path.join(os.path.realpath(cdir), "cluster.key"):
            fail(f"local up: {up}")
        os.environ["LODE_KEY_FILE"] = up["key_file"]

        st = run(["status"])
        if st["targets_up"] != 2 or len(st["targets"]) != 2 or st["insecure"] is not False:
            fail(f"status: {st}")
        for t in st["targets"]:
            if not TARGET_FIELDS <= t.keys() or t["state"] != "up":
                fail(f"status target: {t}")
            if not isinstance(t["last_seen_ms"], int):
                fail(f"a target up has no last_seen_ms: {t}")

        df = run(["df"])
        if df["bytes_total"] < df["bytes_free"] or df["files"] < 1:
            fail(f"df: {df}")
        if df["files_limit"] is not None and df["files_limit"] < df["files"]:
            fail(f"df: {df}")

        run(["mkdir", "/j"])
        mk = run(["mkdir", "-p", "/j/a/b"])
        if mk["path"] != "/j/a/b":
            fail(f"mkdir: {mk}")

        src = os.path.join(tmp, "src")
        with open(src, "wb") as f:
            f.write(os.urandom(2_500_000))
        check_copy(run(["put", src, "/j/f", "--mirrors", "2", "--stripe-count", "1"]), 1,
                   2_500_000)
        with open(src, "rb") as f:
            check_copy(run(["put", "-", "/j/stdin"], stdin=f), 1, 2_500_000)
        tree = os.path.join(tmp, "tree")
        os.makedirs(os.path.join(tree, "sub"))
        for name, size in (("a", 1000), ("sub/b", 70000)):
            with open(os.path.join(tree, name), "wb") as f:
                f.write(os.urandom(size))
        check_copy(run(["put", "-r", tree, "/j/tree"]), 2, 71000)
        check_copy(run(["get", "/j/f", os.path.join(tmp, "back")]), 1, 2_500_000)
        check_copy(run(["get", "-r", "/j/tree", os.path.join(tmp, "tree-back")]), 2, 71000)

        ls = run(["ls", "/j"])
        names = {e["name"]: e for e in ls["entries"]}
        if set(names) != {"a", "f", "stdin", "tree"}:
            fail(f"ls: {ls}")
        for e in ls["entries"]:
            if not STAT_FIELDS <= e.keys():
                fail(f"ls entry without {sorted(STAT_FIELDS - e.keys())}: {e}")
        if names["f"]["type"] != "file" or names["f"]["size"] != 2_500_000 or \
                names["tree"]["type"] != "directory":
            fail(f"ls: {ls}")
        run(["ls", "-l", "/j"])

        s = run(["stat", "/j/f"])
        lay = s["layout"]
        if not LAYOUT_FIELDS <= lay.keys() or lay["mirror_count"] != 2 or \
                len(lay["stripes"]) != lay["stripe_count"] or s["copies_total"] != 2 or \
                s["copies_degraded"] != 0 or s["path"] != "/j/f" or s["size"] != 2_500_000:
            fail(f"stat: {s}")
        for copies in lay["stripes"]:
            for c in copies:
                if set(c) != {"target", "degraded"} or c["degraded"]:
                    fail(f"stat copy: {c}")

        ln = run(["ln", "-s", "f", "/j/sym"])
        if ln["symbolic"] is not True or ln["target"] != "f" or ln["path"] != "/j/sym":
            fail(f"ln -s: {ln}")
        if run(["stat", "/j/sym"]).get("target") != "f":
            fail("stat of a symlink has no target")
        if run(["ln", "/j/f", "/j/hard"])["symbolic"] is not False:
            fail("ln: symbolic")
        mv = run(["mv", "/j/hard", "/j/moved"])
        if mv["from"] != "/j/hard" or mv["to"] != "/j/moved":
            fail(f"mv: {mv}")

        rep = run(["repair", "/j/f"])
        if rep["copies_degraded"] != 0 or rep["copies_repaired"] != 0:
            fail(f"repair: {rep}")

        kg = run(["key", "generate", os.path.join(tmp, "k1")])
        if kg["file"] != os.path.join(tmp, "k1") or kg["role"] != "cluster":
            fail(f"key generate: {kg}")
        kd = run(["key", "derive", "--role", "client", os.path.join(tmp, "k1"),
                  os.path.join(tmp, "k2")])
        if kd["role"] != "client" or os.stat(os.path.join(tmp, "k2")).st_mode & 0o077:
            fail(f"key derive: {kd}")
        if run(["key", "generate", os.path.join(tmp, "k1")], want_rc=1)["error"]["code"] != "EIO":
            fail("key generate overwrote a file")

        for args in (["fsck"], ["fsck", "--repair"]):
            fk = run(args)
            if fk["errors_found"] != 0 or fk["exit"] != 0 or fk["findings"] != [] or \
                    fk["files"] < 1 or fk["objects"] < 1 or fk["repair"] != (len(args) == 2):
                fail(f"{' '.join(args)} of a healthy cluster: {fk}")

        sc = run(["scrub", "--repair", "--rate", "0"])
        if sc["bad_copies"] != 0 or sc["exit"] != 0 or sc["bad"] != [] or \
                len(sc["targets"]) != 2 or sc["rate"] != 0 or sc["repair"] is not True or \
                not all(t["state"] == "done" and t["objects_checked"] >= 1
                        for t in sc["targets"]):
            fail(f"scrub of a healthy cluster: {sc}")
        if run(["scrub", "--rate", "x"], want_rc=2)["error"]["code"] != "EUSAGE":
            fail("scrub --rate x is not a usage error")
        # targets: list, drain, undrain, remove; a dry-run rebalance
        tl = run(["target", "list"])
        if not tl["targets"] or any(t["state"] != "up" for t in tl["targets"]):
            fail(f"target list: {tl}")
        rb = run(["rebalance", "--dry-run"])
        if rb["dry_run"] is not True or not isinstance(rb.get("plan"), list):
            fail(f"rebalance --dry-run: {rb}")
        add = run(["local", "add-oss", cdir])
        if not add["name"].startswith("oss"):
            fail(f"local add-oss: {add}")
        new = max(t["id"] for t in run(["target", "list"])["targets"])
        if run(["target", "remove", str(new)], want_rc=1)["error"]["code"] != "EBUSY":
            fail("an active target was removed")
        dr = run(["drain", str(new)])
        if dr["target"] != new or dr["copies_left"] != 0:
            fail(f"drain: {dr}")
        states = {t["id"]: t["state"] for t in run(["target", "list"])["targets"]}
        if states[new] != "draining":
            fail(f"target list after drain: {states}")
        if run(["target", "undrain", str(new)])["state"] != "active":
            fail("target undrain")
        run(["drain", str(new)])
        if run(["target", "remove", str(new)])["state"] != "removed":
            fail("target remove")

        ld = run(["load", "/j/f", "--verify"])
        if ld["files"] != 1 or ld["bytes"] != 2_500_000 or ld["verified"] is not True or \
                ld["to"] != "host" or [f["path"] for f in ld["per_file"]] != ["/j/f"]:
            fail(f"load: {ld}")

        rm = run(["rm", "/j/moved"])
        if rm["files_removed"] != 1 or rm["directories_removed"] != 0:
            fail(f"rm: {rm}")
        rm = run(["rm", "-r", "/j/tree"])
        if rm["files_removed"] != 2 or rm["directories_removed"] != 2:
            fail(f"rm -r: {rm}")
        run(["rmdir", "/j/a/b"])

        helps = run(["help"])
        commands = [c["name"] for c in helps["commands"]]
        for c in helps["commands"]:
            if set(c) != {"name", "summary", "usage"}:
                fail(f"help: {c}")
        if run(["help", "put"], check=False).get("name") != "put":
            fail("help put")
        for name in commands:  # COMMAND --help --json: the usage as JSON
            doc = run(name.split() + ["--help"], check=False)
            if not doc.get("usage", "").startswith(name):
                fail(f"{name} --help --json: {doc}")

        # errors: one document with an error member, and the exit status
        err = run(["stat", "/nope"], want_rc=1)["error"]
        if err["code"] != "ENOENT" or err.get("errno") != 2 or "/nope" not in err["message"]:
            fail(f"stat /nope: {err}")
        if run(["mkdir", "rel"], want_rc=2)["error"]["code"] != "EUSAGE":
            fail("a relative path is not a usage error")
        if run(["ls", "--bogus"], want_rc=2)["error"]["code"] != "EUSAGE":
            fail("an unknown flag is not a usage error")
        # fsck's exit status is e2fsck's: 8 for an operational error
        if run(["--mds", "tcp://127.0.0.1:1", "--timeout", "500", "fsck"],
               want_rc=8)["error"]["code"] not in ("ECONNREFUSED", "EIO", "ETIMEDOUT"):
            fail("fsck without an MDS is not an operational error")
        if run(["--mds", "x", "df"], want_rc=1)["error"]["code"] != "EINVAL":
            fail("a bad address is not EINVAL")
        if run(["get", "/j/f", "-"], want_rc=2)["error"]["code"] != "EUSAGE":
            fail("get to stdout with --json is not refused")
        ver = subprocess.run([LODECTL, "--json", "--version"], capture_output=True, text=True)
        if "version" not in json.loads(ver.stdout):
            fail(f"--version --json: {ver.stdout}")

        backup = os.path.join(tmp, "ns.backup")
        bk = run(["mds", "backup", backup])
        if bk["file"] != backup or bk["bytes"] != os.path.getsize(backup) or \
                len(bk["blake2b"]) != 64:
            fail(f"mds backup: {bk}")
        add = run(["local", "add-oss", cdir, "--capacity", "64M"])
        if not add["name"].startswith("oss") or add["capacity"] != 64 << 20 or \
                not add["addr"].startswith("tcp://"):
            fail(f"local add-oss: {add}")

        kill = run(["local", "kill", cdir, "oss1", "-9"])
        if kill["daemon"] != "oss1" or kill["signal"] != "KILL":
            fail(f"local kill: {kill}")
        run(["local", "down", cdir])
        run(["local", "down", os.path.join(tmp, "nothing")], want_rc=1)

        missing = set(commands) - seen
        if missing:
            fail(f"commands not run with --json here: {sorted(missing)}")
        print("PASS")
    finally:
        subprocess.run([LODECTL, "local", "down", cdir], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
