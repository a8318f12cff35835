"""The ABI gate (abi/abigate.py, abidw/abidiff from abigail-tools).

The built library must keep the ABI of the committed baseline
abi/libzkelect.abi. Then the gate itself is put through its cases on small
throwaway libraries built here with a header and a version script of the
same shape as libzkelect's: an added function in a new version node passes;
a removed function, a function added to the old node, a changed signature
and a changed public type each fail.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GATE = REPO / "abi" / "abigate.py"

HEADER = """#ifndef T_H
#define T_H
#include <stdint.h>
typedef enum t_kind { T_ONE = 1, T_TWO = 2 } t_kind_t;
typedef struct t_info { int64_t token; t_kind_t kind; } t_info_t;
typedef struct t_handle t_handle_t;
t_handle_t *t_new(const char *name);
int t_info(const t_handle_t *h, t_info_t *out);
void t_destroy(t_handle_t *h);
%s
#endif
"""
SOURCE = """#include <stdlib.h>
#include "t.h"
struct t_handle { int n; };
t_handle_t *t_new(const char *name) { (void)name; return calloc(1, sizeof(t_handle_t)); }
int t_info(const t_handle_t *h, t_info_t *out) { out->token = h->n; out->kind = T_ONE; return 0; }
void t_destroy(t_handle_t *h) { free(h); }
%s
"""
MAP_10 = "T_1.0 { global: t_new; t_info; t_destroy; %s local: *; };\n"


def _need():
    for tool in ("abidw", "abidiff", "cc"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed (Debian: apt-get install abigail-tools gcc)",
                        pytrace=False)


def _lib(dirpath, header_extra="", source_extra="", map_text=None, replace=()):
    dirpath.mkdir(parents=True)
    header, source = HEADER % header_extra, SOURCE % source_extra
    for old, new in replace:
        assert old in header + source, old
        header, source = header.replace(old, new), source.replace(old, new)
    (dirpath / "t.h").write_text(header)
    (dirpath / "t.c").write_text(source)
    (dirpath / "t.map").write_text(map_text or MAP_10 % "")
    lib = dirpath / "libt.so.1"
    proc = subprocess.run(["cc", "-shared", "-fPIC", "-g", "-O0", "-o", str(lib), str(dirpath / "t.c"),
                           "-Wl,-soname,libt.so.1", f"-Wl,--version-script={dirpath / 't.map'}"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return lib


def _gate(*args):
    return subprocess.run([sys.executable, str(GATE), *map(str, args)],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def baseline(tmp_path):
    _need()
    lib = _lib(tmp_path / "base")
    abi = tmp_path / "base.abi"
    proc = _gate("update", "--lib", lib, "--headers-dir", tmp_path / "base", "--baseline", abi)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return abi


def _check(baseline, lib):
    return _gate("check", "--lib", lib, "--headers-dir", lib.parent, "--baseline", baseline)


def test_built_library_keeps_the_committed_baseline(build_dir):
    _need()
    proc = _gate("check", "--build", build_dir)
    assert proc.returncode == 0, (
        proc.stdout + proc.stderr + "\n(a deliberate addition in a new version node: "
        "./dev abi-baseline, then commit abi/libzkelect.abi)")


def test_the_same_library_passes(baseline, tmp_path):
    proc = _check(baseline, _lib(tmp_path / "same"))
    assert proc.returncode == 0, proc.stdout


def test_a_function_added_in_a_new_node_passes(baseline, tmp_path):
    lib = _lib(tmp_path / "added", "int t_extra(const t_handle_t *h);",
               "int t_extra(const t_handle_t *h) { return h->n; }",
               MAP_10 % "" + "T_1.1 { global: t_extra; } T_1.0;\n")
    proc = _check(baseline, lib)
    assert proc.returncode == 0, proc.stdout


def test_a_function_added_to_the_old_node_fails(baseline, tmp_path):
    lib = _lib(tmp_path / "added-old", "int t_extra(const t_handle_t *h);",
               "int t_extra(const t_handle_t *h) { return h->n; }", MAP_10 % "t_extra;")
    proc = _check(baseline, lib)
    assert proc.returncode == 1, proc.stdout
    assert "added to the existing node T_1.0: t_extra" in proc.stdout, proc.stdout


def test_a_removed_function_fails(baseline, tmp_path):
    lib = _lib(tmp_path / "removed", map_text="T_1.0 { global: t_new; t_info; local: *; };\n")
    proc = _check(baseline, lib)
    assert proc.returncode == 1, proc.stdout
    assert "removed: t_destroy@T_1.0" in proc.stdout, proc.stdout


def test_a_changed_signature_fails(baseline, tmp_path):
    lib = _lib(tmp_path / "signature", replace=[("t_new(const char *name)", "t_new(const char *name, int flags)"),
                                                ("(void)name;", "(void)name; (void)flags;")])
    proc = _check(baseline, lib)
    assert proc.returncode == 1, proc.stdout
    assert "changed" in proc.stdout, proc.stdout


def test_a_changed_public_type_fails(baseline, tmp_path):
    # A member inserted before another moves it: old programs read garbage.
    lib = _lib(tmp_path / "type", replace=[("{ int64_t token; t_kind_t kind; }",
                                            "{ int32_t flags; int64_t token; t_kind_t kind; }")])
    proc = _check(baseline, lib)
    assert proc.returncode == 1, proc.stdout
    assert "changed" in proc.stdout, proc.stdout


def test_a_renumbered_enum_fails(baseline, tmp_path):
    lib = _lib(tmp_path / "enum", replace=[("T_TWO = 2", "T_TWO = 3")])
    proc = _check(baseline, lib)
    assert proc.returncode == 1, proc.stdout
