#!/usr/bin/env python3
"""The ABI gate: compare a built libzkelect with the committed baseline.

    abigate.py check  [--build DIR]      exit 0: nothing removed or changed
    abigate.py update [--build DIR]      rewrite the baseline from DIR's library

(--lib, --headers-dir and --baseline name other files; the tests use them.)

The baseline (abi/libzkelect.abi) is `abidw` of the library, limited to
what the public headers declare. The check fails on any removed symbol,
any symbol that moved to another version node, and any changed function,
variable or type as `abidiff` sees them. It passes an added function only
in a version node the baseline does not have (ZKELECT_1.1, ...): adding to
ZKELECT_1.0 would let a program built against the new library load the
old one and miss the symbol at run time instead of at load time.

After a deliberate addition, run `./dev abi-baseline` (this script's
update) and commit abi/libzkelect.abi with the change that needs it.
"""

import argparse
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BASELINE = REPO / "abi" / "libzkelect.abi"
ABIDW_FLAGS = ["--no-corpus-path", "--drop-private-types", "--exported-interfaces-only",
               "--no-show-locs", "--no-comp-dir-path", "--type-id-style", "hash"]


def _defaults(build):
    build = Path(build)
    return (build / "capi" / "libzkelect.so.1",
            [REPO / "capi" / "zkelect", build / "capi" / "zkelect"])


def _headers_flags(dirs, flag):
    out = []
    for d in dirs:
        out += [flag, str(d)]
    return out


def dump(lib, headers):
    proc = subprocess.run(["abidw", *ABIDW_FLAGS, *_headers_flags(headers, "--headers-dir"),
                           str(Path(lib).resolve())],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"abidw failed on {lib}:\n{proc.stderr}")
    return proc.stdout


def symbols(abi_xml):
    """{name: version} of the defined function and variable symbols."""
    root = ET.fromstring(abi_xml)
    out = {}
    for section in ("elf-function-symbols", "elf-variable-symbols"):
        for sect in root.iter(section):
            for sym in sect.iter("elf-symbol"):
                if sym.get("is-defined") == "yes":
                    out[sym.get("name")] = sym.get("version", "")
    return out


def compare(baseline_xml, lib, headers, baseline_path):
    """Problems found (empty: the gate passes) and abidiff's report."""
    problems = []
    old = symbols(baseline_xml)
    new = symbols(dump(lib, headers))
    old_nodes = set(old.values())
    for name in sorted(set(old) - set(new)):
        problems.append(f"removed: {name}@{old[name]}")
    for name in sorted(set(old) & set(new)):
        if old[name] != new[name]:
            problems.append(f"moved to another version node: {name}@{old[name]} -> @{new[name]}")
    for name in sorted(set(new) - set(old)):
        if new[name] in old_nodes:
            problems.append(f"added to the existing node {new[name]}: {name} "
                            "(new functions go into a new node, e.g. ZKELECT_1.1)")
    # No header options here: the baseline holds only what the library
    # exports, and the library's side is read the same way. (With
    # --headers-dir2 abidiff would call every baseline type private, since
    # the baseline carries no source locations, and filter its changes.)
    proc = subprocess.run(["abidiff", str(baseline_path), str(Path(lib).resolve())],
                          capture_output=True, text=True, timeout=300)
    report = proc.stdout + proc.stderr
    # abidiff's status is a bit field: 1 error, 2 usage, 4 ABI change,
    # 8 incompatible change. An addition alone is 4, so 4 is read from the
    # summary lines rather than trusted either way.
    if proc.returncode & 3:
        problems.append(f"abidiff could not compare (status {proc.returncode})")
    if proc.returncode & 8:
        problems.append("abidiff reports an incompatible change")
    for m in re.finditer(r"^(\w[\w ]*?) changes summary: (\d+) Removed(?: \(\d+ filtered out\))?, "
                         r"(?:(\d+) Changed(?: \(\d+ filtered out\))?, )?", report, re.M):
        what, removed, changed = m.group(1), int(m.group(2)), int(m.group(3) or 0)
        if removed:
            problems.append(f"abidiff: {removed} removed ({what})")
        if changed:
            problems.append(f"abidiff: {changed} changed ({what})")
    if proc.returncode & 4 and not re.search(r"changes summary:", report):
        problems.append("abidiff reports a change it did not summarise")
    return problems, report


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["check", "update"])
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--lib")
    ap.add_argument("--headers-dir", action="append", dest="headers")
    ap.add_argument("--baseline", default=str(BASELINE))
    a = ap.parse_args(argv)
    lib, headers = _defaults(a.build)
    lib = Path(a.lib) if a.lib else lib
    headers = [Path(h) for h in a.headers] if a.headers else headers
    if not lib.exists():
        print(f"abigate: {lib} does not exist (build first)", file=sys.stderr)
        return 2
    baseline = Path(a.baseline)
    if a.command == "update":
        baseline.write_text(dump(lib, headers))
        print(f"abigate: wrote {baseline} from {lib}; commit it with the change that needs it")
        return 0
    if not baseline.exists():
        print(f"abigate: no baseline {baseline} (abigate.py update)", file=sys.stderr)
        return 2
    problems, report = compare(baseline.read_text(), lib, headers, baseline)
    if problems:
        print("abigate: the ABI of %s breaks the baseline %s:" % (lib, baseline))
        for p in problems:
            print("  - " + p)
        print("\nabidiff says:\n" + report)
        return 1
    print(f"abigate: {lib} keeps the ABI of {baseline}")
    if report.strip():
        print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
