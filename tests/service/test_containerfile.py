#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""deploy/Containerfile stays buildable as the tree grows, checked without a container
builder (none can pull the debian:12 base image here): exactly the paths it COPYs
configure with the options it gives meson, its build stage installs every -dev package
the build tree's meson setup needed, and its final stage installs the Debian package of
every shared library the built programs load (by ldd of this build, mapped with dpkg -S)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

src, build = sys.argv[1], sys.argv[2]
text = open(os.path.join(src, "deploy", "Containerfile")).read()
stages = re.split(r"^FROM ", text, flags=re.M)[1:]
if len(stages) != 2:
    sys.exit(f"FAIL: expected a build and a final stage, found {len(stages)}")


def packages(stage):
    pkgs = set()
    for cmd in re.findall(r"apt-get install(.*?)(?:&&|$)", stage.replace("\\\n", " "), re.S):
        pkgs |= {w for w in cmd.split() if not w.startswith("-")}
    return pkgs


build_pkgs, run_pkgs = packages(stages[0]), packages(stages[1])

# 1. the COPYed paths configure, with the Containerfile's meson options
tmp = tempfile.mkdtemp(prefix="lode-containerfile.")
try:
    for srcs in re.findall(r"^COPY (?!--from)(.+?) \S+$", stages[0], flags=re.M):
        for p in srcs.split():
            a = os.path.join(src, p)
            (shutil.copytree if os.path.isdir(a) else shutil.copy)(a, os.path.join(tmp, p))
    # what meson install copies as folders is not checked at configure time: check here
    for folder in re.findall(r"install_subdir\('([^']+)'", open(os.path.join(src, "meson.build")).read()):
        if not os.path.isdir(os.path.join(tmp, folder)):
            sys.exit(f"FAIL: meson install needs {folder}, which the Containerfile does not COPY")
    opts = re.search(r"meson setup /build (.*?) \\", stages[0]).group(1).split()
    r = subprocess.run(["meson", "setup", os.path.join(tmp, "b")] + opts, cwd=tmp,
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit("FAIL: the Containerfile's sources do not configure:\n" + r.stdout[-3000:] +
                 r.stderr[-2000:])
finally:
    shutil.rmtree(tmp, ignore_errors=True)

# 2. every library the programs (and Lode's own libraries) name as NEEDED comes from a
# package the final stage installs (what those need in turn, apt brings)
progs = ["mds/lode-mds", "oss/lode-oss", "client/fuse/lode-fuse", "tools/lodectl",
         "client/liblode.so", "client/loader/liblode-loader.so"]
missing = {}
for prog in progs:
    path = os.path.join(build, prog)
    if not os.path.exists(path):
        continue
    dyn = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
    needed = re.findall(r"\(NEEDED\).*\[(.+?)\]", dyn)
    where = dict(re.findall(r"^\s*(\S+) => (/\S+)", subprocess.run(
        ["ldd", path], capture_output=True, text=True).stdout, flags=re.M))
    for name in needed:
        lib = where.get(name)
        if not lib or name.startswith("liblode") or "asan" in name or "ubsan" in name:
            continue  # Lode's own libraries, or the sanitizers of an ASan build
        owner = subprocess.run(["dpkg", "-S", lib], capture_output=True, text=True)
        if owner.returncode:
            owner = subprocess.run(["dpkg", "-S", os.path.realpath(lib)], capture_output=True,
                                   text=True)
        pkg = owner.stdout.split(":")[0].strip()
        if pkg and pkg not in run_pkgs and pkg not in ("libc6", "libgcc-s1", "libstdc++6"):
            missing.setdefault(pkg, set()).add(prog)
if missing:
    sys.exit("FAIL: the final stage lacks " + ", ".join(
        f"{p} (for {', '.join(sorted(v))})" for p, v in sorted(missing.items())))
print(f"Containerfile: sources configure; {len(run_pkgs)} runtime packages cover every "
      f"library of {len(progs)} programs")
