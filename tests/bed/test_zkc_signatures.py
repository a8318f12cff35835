"""Every C function a test calls through ctypes has its signature declared.

Without argtypes ctypes passes a Python int as a C int: a handle whose
address lies above 4 GiB reaches the library cut to 32 bits. It ran for
weeks because the test process's heap usually lay low, then crashed a CI
run (test_priority, zkelect_fencing_token). Declared means: a line in
bed/zkc.py's table, or argtypes/restype set in the test that calls it."""

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_function_called_through_ctypes_is_declared():
    table = (TESTS / "bed" / "zkc.py").read_text()
    declared = set(re.findall(r'"(zkelect_\w+)":', table))
    missing = []
    for f in sorted(TESTS.rglob("*.py")):
        text = f.read_text(errors="replace")
        here = declared | set(re.findall(r"\b(zkelect_\w+)\.(?:argtypes|restype)", text))
        here |= set(re.findall(r"=\s*\w+\.(zkelect_\w+)\s*\n\s*\w+\.restype, \w+\.argtypes", text))
        if ".argtypes" in text:  # names declared in a loop: getattr(lib, name).argtypes
            here |= set(re.findall(r'"(zkelect_\w+)"', text))
        for m in re.finditer(r"\blib\.(zkelect_\w+)\s*\(", text):
            if m.group(1) not in here:
                missing.append(f"{f.relative_to(TESTS)}: {m.group(1)}")
    assert not missing, "called without a declared signature: " + ", ".join(sorted(set(missing)))
