"""The ABI promises of docs/design.md ("The C API"): only zkelect_* exported, under the
version node ZKELECT_1.0, SONAME libzkelect.so.1, a header that is plain C99
and also valid C++, and every function the header declares really exported."""
import os
import pathlib
import re
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEADER = ROOT / "capi" / "zkelect" / "zkelect.h"


def header_functions():
    return sorted(set(re.findall(r"ZKELECT_API[^;(]*?\b(zkelect_\w+)\s*\(", HEADER.read_text())))


def library(build_dir):
    so = build_dir / "capi" / "libzkelect.so.1"
    assert so.exists(), "build the library first (./dev build): %s" % so
    return so


def test_exports_exactly_the_header_functions(build_dir):
    out = subprocess.run(["nm", "-D", "--defined-only", str(library(build_dir))],
                         capture_output=True, text=True, check=True).stdout
    exported = sorted({l.split()[-1].split("@")[0] for l in out.splitlines()
                       if not re.fullmatch(r"ZKELECT_\d+\.\d+", l.split()[-1])})
    stray = [s for s in exported if not s.startswith("zkelect_")]
    assert not stray, "symbols outside zkelect_*: %s" % stray[:10]
    assert exported == header_functions()


def header_since():
    """{function: "1.0" or the version its doc comment says it came in}."""
    text = HEADER.read_text()
    since = {}
    for m in re.finditer(r"(/\*\*(?:(?!\*/).)*\*/)?\s*ZKELECT_API[^;(]*?\b(zkelect_\w+)\s*\(",
                         text, re.S):
        doc = m.group(1) or ""
        v = re.search(r"Since (\d+\.\d+)", doc)
        since[m.group(2)] = v.group(1) if v else "1.0"
    return since


def test_symbols_carry_the_version_node(build_dir):
    """Each function is in the version node of the release that added it
    (its doc comment says "Since 1.x"; none means 1.0): a function added
    later must never land in an older node."""
    out = subprocess.run(["objdump", "-T", str(library(build_dir))],
                         capture_output=True, text=True, check=True).stdout
    nodes = {}
    for l in out.splitlines():
        w = l.split()
        if w and w[-1].startswith("zkelect_"):
            nodes[w[-1]] = w[-2]
    since = header_since()
    assert nodes and set(nodes) == set(since)
    wrong = {f: (nodes[f], "ZKELECT_" + v) for f, v in since.items() if nodes[f] != "ZKELECT_" + v}
    assert not wrong, f"functions in the wrong version node (have, want): {wrong}"


def test_soname(build_dir):
    out = subprocess.run(["readelf", "-d", str(library(build_dir))],
                         capture_output=True, text=True, check=True).stdout
    assert "Library soname: [libzkelect.so.1]" in out
    # The ZooKeeper client: the system's, linked dynamically
    # (-Dzookeeper=system), or the bundled one inside, hidden, with the
    # OpenSSL and Cyrus SASL it was built with (docs/tls.md). Never
    # re-exported either way (test_exports_exactly_the_header_functions).
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    if "libzookeeper_mt.so.2" not in needed:
        assert {"libssl.so.3", "libsasl2.so.2"} <= set(needed), needed


def _compile(compiler, flags, source, build_dir, suffix):
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp) / ("t" + suffix)
        src.write_text(source)
        cmd = [compiler, *flags, "-I", str(ROOT / "capi"), "-I", str(build_dir / "capi"),
               str(src), "-L", str(build_dir / "capi"), "-lzkelect", "-o", str(pathlib.Path(tmp) / "t")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        env = dict(os.environ, LD_LIBRARY_PATH=str(build_dir / "capi"))
        run = subprocess.run([str(pathlib.Path(tmp) / "t")], capture_output=True, text=True, env=env)
        assert run.returncode == 0, run.stdout + run.stderr


def _every_function_source():
    # Taking the address of every declared function proves each one links.
    funcs = header_functions()
    body = "\n".join("    (void)(fp = (void (*)(void))%s);" % f for f in funcs)
    return """#include <zkelect/zkelect.h>
#include <stdio.h>
int main(void) {
    void (*fp)(void);
%s
    if (zkelect_version() != ZKELECT_VERSION_NUMBER) return 2;
    if (!ZKELECT_VERSION_CHECK(1, 0, 0)) return 3;
    printf("%%s\\n", zkelect_version_string());
    return 0;
}
""" % body


def test_header_is_strict_c99_and_every_function_links(build_dir):
    _compile("cc", ["-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror",
                    "-Wno-cast-function-type"], _every_function_source(), build_dir, ".c")


def test_header_is_valid_cplusplus(build_dir):
    _compile("c++", ["-std=c++11", "-pedantic", "-Wall", "-Wextra", "-Werror",
                     "-Wno-cast-function-type"], _every_function_source(), build_dir, ".cpp")


def test_version_script_names_only_the_one_node():
    text = (ROOT / "capi" / "libzkelect.map").read_text()
    assert re.search(r"ZKELECT_1\.0\s*\{\s*global:\s*zkelect_\*;\s*local:\s*\*;\s*\};", text)
