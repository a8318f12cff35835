"""The ffi.cdef of bindings/luajit/zkelect/ffi.lua cannot drift from
capi/zkelect/zkelect.h: the declarations, as the module holds them
(`_cdef`, printed by luajit), are compiled by the C compiler after the
header, each prototype asserted to be the very type of the header's
function, and each constant of the module asserted equal to the header's.
A prototype that differs (a parameter's type, constness, the return type),
a function the header lacks, or a constant of another value fails the
compile. The module must declare every function it calls and every error
code, event type and reason of the header.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODULE = REPO / "bindings" / "luajit" / "zkelect" / "ffi.lua"
HEADER = REPO / "capi" / "zkelect" / "zkelect.h"


@pytest.fixture(scope="module")
def cdef():
    if shutil.which("luajit") is None:
        pytest.fail("luajit is not installed (Debian: apt-get install luajit2)", pytrace=False)
    env = dict(os.environ, LUA_PATH=f"{MODULE.parent.parent}/?.lua;;")
    script = ('local zk = require "zkelect.ffi"; io.write(zk._cdef, "\\n//CONSTANTS\\n"); '
              'for k, v in pairs(zk._constants) do io.write(k, "=", v, "\\n") end')
    proc = subprocess.run(["luajit", "-e", script], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    text, consts = proc.stdout.split("//CONSTANTS\n")
    constants = dict(line.split("=") for line in consts.splitlines())
    return text, {k: int(v) for k, v in constants.items()}


def _declarations(text):
    """(typedef lines, {function name: (return type, params)}) of a cdef."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)
    typedefs, functions = [], {}
    for decl in (" ".join(d.split()) for d in text.split(";")):
        if not decl:
            continue
        if decl.startswith("typedef "):
            typedefs.append(decl + ";")
            continue
        m = re.fullmatch(r"(.+?)\b(zkelect_\w+)\s*\((.*)\)", decl)
        assert m, f"not a zkelect function declaration: {decl!r}"
        functions[m.group(2)] = (m.group(1).strip(), m.group(3))
    return typedefs, functions


def _check_source(text, constants):
    typedefs, functions = _declarations(text)
    lines = ["#include <zkelect/zkelect.h>", ""]
    lines += typedefs
    for name, (ret, params) in sorted(functions.items()):
        lines.append(f"typedef {ret} (cdef_{name})({params});")
        lines.append(f"_Static_assert(__builtin_types_compatible_p(__typeof__({name}), "
                     f"cdef_{name}), \"{name}: the cdef differs from zkelect.h\");")
    for key, value in sorted(constants.items()):
        lines.append(f"_Static_assert(ZKELECT_{key} == {value}, "
                     f"\"ZKELECT_{key} is not {value} in zkelect.h\");")
    return "\n".join(lines) + "\n"


def _compile(source, build_dir, tmp_path):
    src = tmp_path / "cdef_check.c"
    src.write_text(source)
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "no C compiler"
    return subprocess.run([cc, "-std=c11", "-fsyntax-only", "-Werror", "-Wall",
                           f"-I{build_dir / 'capi'}", f"-I{REPO / 'capi'}", str(src)],
                          capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def build_capi(build_dir):
    if not (build_dir / "capi" / "zkelect" / "version.h").exists():
        pytest.fail("zkelect/version.h is not generated: ./dev build", pytrace=False)
    return build_dir


def test_cdef_matches_the_header(cdef, build_capi, tmp_path):
    text, constants = cdef
    _, functions = _declarations(text)
    assert len(functions) >= 50, sorted(functions)
    proc = _compile(_check_source(text, constants), build_capi, tmp_path)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("change", [
    ("int zkelect_await_leader(zkelect_election_t *election, int timeout_ms)",
     "int zkelect_await_leader(zkelect_election_t *election, long timeout_ms)"),
    ("int zkelect_is_leader(const zkelect_election_t *election)",
     "int zkelect_is_leader(zkelect_election_t *election)"),
    ("int64_t zkelect_event_token(", "int zkelect_event_token("),
    ("void zkelect_event_destroy(zkelect_event_t *event);",
     "void zkelect_event_destroy(zkelect_event_t *event);\nint zkelect_no_such_function(void);"),
    ("typedef struct zkelect_observer zkelect_observer_t;",
     "typedef struct zkelect_event zkelect_observer_t;"),
], ids=["param-type", "constness", "return-type", "unknown-function", "typedef"])
def test_a_drifted_cdef_fails_the_check(cdef, build_capi, tmp_path, change):
    text, constants = cdef
    old, new = change
    assert old in text, f"{old!r} is not in the cdef"
    drifted = text.replace(old, new)
    proc = _compile(_check_source(drifted, constants), build_capi, tmp_path)
    assert proc.returncode != 0, f"the check passed a drifted cdef ({new})"


def test_a_wrong_constant_fails_the_check(cdef, build_capi, tmp_path):
    text, constants = cdef
    proc = _compile(_check_source(text, dict(constants, ENOTLEADER=-16)), build_capi, tmp_path)
    assert proc.returncode != 0 and "ZKELECT_ENOTLEADER" in proc.stderr, proc.stderr


def test_every_called_function_is_declared(cdef):
    _, functions = _declarations(cdef[0])
    source = MODULE.read_text().split("]]", 1)[1]  # the code after the cdef
    called = set(re.findall(r"\b(?:C|c|lib|lib\(\))\.(zkelect_\w+)", source))
    assert called, "no C calls found in the module"
    assert called <= set(functions), f"called but not declared: {sorted(called - set(functions))}"


def test_every_code_type_and_reason_of_the_header_is_a_constant(cdef):
    constants = cdef[1]
    header = HEADER.read_text()
    wanted = set(re.findall(r"\bZKELECT_((?:E[A-Z_]*|OK|EV_[A-Z_]+|REASON_[A-Z_]+))\s*=", header))
    assert {"EINVAL", "EV_ELECTED", "REASON_CLOSED"} <= wanted, sorted(wanted)
    missing = wanted - set(constants)
    assert not missing, f"zkelect.h has constants the module lacks: {sorted(missing)}"
