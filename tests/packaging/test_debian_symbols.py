"""debian/libzkelect1.symbols with `dpkg-gensymbols -c4` (what
override_dh_makeshlibs runs): the built library matches it, and a library
with a symbol in a version node the file does not name fails, so an ABI
addition cannot reach a package without the file (and the dependency it
generates) saying from which version on it exists.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SYMBOLS = REPO / "debian" / "libzkelect1.symbols"


def _gensymbols(lib, tmp_path):
    if shutil.which("dpkg-gensymbols") is None:
        pytest.fail("dpkg-gensymbols is not installed (Debian: apt-get install dpkg-dev)", pytrace=False)
    (tmp_path / "debian").mkdir(exist_ok=True)
    for f in ("control", "changelog"):
        shutil.copy(REPO / "debian" / f, tmp_path / "debian" / f)
    return subprocess.run(["dpkg-gensymbols", "-c4", "-plibzkelect1", "-v1.0.0-1", f"-e{lib}",
                           f"-I{SYMBOLS}", f"-O{tmp_path / 'out.symbols'}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)


def _lib(tmp_path, nodes):
    src = tmp_path / "l.c"
    src.write_text("".join(f"int {f}(void) {{ return 0; }}\n" for fs in nodes.values() for f in fs))
    script, prev = "", None
    for node, fs in nodes.items():
        script += f"{node} {{ global: {' '.join(f + ';' for f in fs)} " + ("local: *; " if prev is None else "")
        script += "}" + (f" {prev};\n" if prev else ";\n")
        prev = node
    (tmp_path / "l.map").write_text(script)
    lib = tmp_path / "libzkelect.so.1"
    proc = subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src), "-Wl,-soname,libzkelect.so.1",
                           f"-Wl,--version-script={tmp_path / 'l.map'}"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return lib


def test_the_built_library_matches_the_symbols_file(build_dir, tmp_path):
    lib = (build_dir / "capi" / "libzkelect.so.1").resolve()
    proc = _gensymbols(lib, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_symbol_in_a_new_node_fails_the_build(tmp_path):
    lib = _lib(tmp_path, {"ZKELECT_1.0": ["zkelect_a"], "ZKELECT_1.99": ["zkelect_b"]})
    proc = _gensymbols(lib, tmp_path)
    assert proc.returncode != 0, proc.stdout
    assert "zkelect_b@ZKELECT_1.99" in proc.stdout, proc.stdout


def test_more_functions_in_the_known_node_pass(tmp_path):
    # (symver) covers every symbol of ZKELECT_1.0; the ABI gate (abi/) is
    # what refuses an addition to an existing node.
    lib = _lib(tmp_path, {"ZKELECT_1.0": ["zkelect_a", "zkelect_b"]})
    proc = _gensymbols(lib, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
