#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""liblode exports its API and nothing else.

Compares the functions declared in include/lode/lode.h with the symbols the shared library
defines (nm -D --defined-only) and fails, naming each one, on any difference: an internal
function that leaked (a missing `static`, a proto symbol pulled from the static library),
or an API function that client/liblode.map forgot.

Usage: check_exports.py NM HEADER LIBRARY
"""
import re
import subprocess
import sys


def header_functions(text):
    """Names of the functions a C header declares (not function pointer typedefs)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    # preprocessor lines, with their continuations
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
    text = text.replace('extern "C" {', " ")
    names = set()
    depth = 0
    stmt = ""
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                stmt = ""  # a struct or union body ends its declaration's interesting part
        elif depth == 0:
            if ch == ";":
                s = " ".join(stmt.split())
                stmt = ""
                if "(" not in s or s.startswith(("typedef", "_Static_assert", "static_assert")):
                    continue
                m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(", s)
                if m:
                    names.add(m.group(1))
            else:
                stmt += ch
    return names


def library_symbols(nm, lib):
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        kind, name = fields[1], fields[2].split("@")[0]
        if kind in ("A",):  # version nodes (LODE_1) are not symbols of the API
            continue
        names.add(name)
    return names


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    nm, header, lib = sys.argv[1:]
    with open(header) as f:
        declared = header_functions(f.read())
    exported = library_symbols(nm, lib)
    if len(declared) < 10:
        print(f"found only {len(declared)} functions in {header}: the parser is broken")
        return 1
    extra = sorted(exported - declared)
    missing = sorted(declared - exported)
    for name in extra:
        print(f"exported but not in {header}: {name}")
    for name in missing:
        print(f"declared in {header} but not exported: {name}")
    print(f"{len(declared)} functions declared, {len(exported)} symbols exported")
    return 1 if extra or missing else 0


if __name__ == "__main__":
    sys.exit(main())
