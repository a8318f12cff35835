"""README.md's "From source with Meson", as a user runs it: what `meson
install` puts under the README's --prefix (/usr/local) is where lua5.4,
luajit and the JVM look, or the docs say exactly what to set.

The tested build (configured with the README's --prefix) is installed into
a temporary DESTDIR (`meson install --destdir`, no root); each installed
file is then looked up through the interpreter's own search path, the
prefix's folders mapped into that DESTDIR. (The README's static link is
tests/bindings/test_pkgconfig.py's, on its install with both libraries.)
"""

import json
import os
import re
import shlex
from pathlib import Path

import pytest

from bed import examples
from bed.sh import ok as _ok, run as _run
from test_installed_debs import _clean_env, _token

REPO = Path(__file__).resolve().parents[2]

README = REPO / "README.md"


def _readme_block():
    mine = "tested by tests/packaging/" + Path(__file__).name
    found = [b for b in examples.blocks(README) if mine in b.marks]
    assert len(found) == 1, f"README.md: {len(found)} blocks marked '{mine}'"
    return found[0].text


def _setup_args():
    m = re.search(r"^meson setup build (.*?)\s*(?:#.*)?$", _readme_block(), re.M)
    assert m, _readme_block()
    return shlex.split(m.group(1))


def _prefix():
    return next(a.split("=", 1)[1] for a in _setup_args() if a.startswith("--prefix="))


def _multiarch():
    return _ok(_run(["gcc", "-print-multiarch"], timeout=30), "gcc -print-multiarch").stdout.strip()


@pytest.fixture(scope="module")
def destdir(build_dir, tmp_path_factory):
    opts = json.loads(_ok(_run(["meson", "introspect", "--buildoptions", str(build_dir)],
                               timeout=120), "meson introspect").stdout)
    prefix = next(o["value"] for o in opts if o["name"] == "prefix")
    assert prefix == _prefix(), (f"the tested build's prefix is {prefix}, the README's "
                                 f"{_prefix()}: set it up as the README says")
    d = tmp_path_factory.mktemp("destdir")
    _ok(_run(["meson", "install", "-C", str(build_dir), "--no-rebuild", "--destdir", str(d)],
             timeout=600), "meson install --destdir")
    return d


def _installed(destdir, pattern):
    found = [p for p in destdir.rglob("*") if re.search(pattern, str(p)) and not p.is_dir()]
    assert len(found) == 1, f"{pattern}: installed {found}"
    return "/" + str(found[0].relative_to(destdir))


def _env(destdir, tmp_path):
    env = _clean_env(tmp_path)
    # ld.so.conf names PREFIX/lib/<multiarch> for /usr/local; the DESTDIR's copy stands in.
    env["LD_LIBRARY_PATH"] = f"{destdir}{_prefix()}/lib/{_multiarch()}"
    return env


def _mapped(search, destdir):
    """A Lua search path with each folder under the prefix moved into destdir."""
    return ";".join(str(destdir) + t if t.startswith(_prefix() + "/") else t
                    for t in search.split(";"))


@pytest.mark.parametrize("lua,module,var,pattern", [
    ("lua5.4", "zkelect", "cpath", r"/zkelect\.so$"),
    ("luajit", "zkelect.ffi", "path", r"/zkelect/ffi\.lua$")])
def test_a_plain_require_finds_the_installed_lua_module(destdir, tmp_path, lua, module, var,
                                                        pattern):
    path = _installed(destdir, pattern)
    env = _env(destdir, tmp_path)
    search = _ok(_run([lua, "-e", f"io.write(package.{var})"], env=env, timeout=30),
                 lua).stdout
    candidates = [t.replace("?", module.replace(".", "/")) for t in search.split(";")]
    assert path in candidates, (f"{lua}: `require \"{module}\"` looks in {candidates}; "
                                f"meson install put it at {path}")
    env["LUA_CPATH" if var == "cpath" else "LUA_PATH"] = _mapped(search, destdir)
    proc = _ok(_run([lua, "-e", f'local m = require "{module}"; io.write(package.searchpath('
                     f'"{module}", package.{var}))'], env=env, timeout=60), f"{lua} require")
    assert proc.stdout == f"{destdir}{path}", proc.stdout


def test_the_jvm_finds_the_installed_jni_library_as_the_docs_say(destdir, tmp_path, zk):
    """The JVM searches no folder under /usr/local: the docs must name the
    flag for a source install, and the Java example must run with it."""
    jni = os.path.dirname(_installed(destdir, r"/libzkelect_jni\.so$"))
    jar = _installed(destdir, r"/java/zkelect\.jar$")
    env = _env(destdir, tmp_path)
    # Asked without LD_LIBRARY_PATH, which the JVM would put first.
    props = _ok(_run(["java", "-XshowSettings:properties", "-version"],
                     env=_clean_env(tmp_path), timeout=60), "java -XshowSettings").stderr
    m = re.search(r"java\.library\.path = (.*?)\n\s+java\.", props, re.S)
    searched = m.group(1).split() if m else []
    assert searched, props
    flag = ""
    if jni not in searched:
        generic = jni.replace(_multiarch(), "<multiarch>")
        flag = f"-Djava.library.path={generic}"
        for doc in (README, REPO / "bindings" / "README.md"):
            assert flag in doc.read_text(), (
                f"the JVM searches {searched}, not {jni}, where `meson install` puts "
                f"libzkelect_jni.so: {doc.relative_to(REPO)} must say `{flag}`")
        flag = f"-Djava.library.path={destdir}{jni}"
    d = tmp_path / "java"
    d.mkdir()
    (d / "Example.java").write_text(examples.named("java-example").text)
    env["ZK_HOSTS"] = zk.connect_string
    cmd = ["java", *([flag] if flag else []), "-cp", f"{destdir}{jar}", "Example.java"]
    proc = _ok(_run(cmd, cwd=d, env=env, timeout=300), " ".join(cmd))
    _token(proc.stdout, "the Java example")


def test_python_imports_the_installed_package_from_the_prefix(destdir, tmp_path, zk):
    """`meson install` puts the package in the folder /usr/bin/python3
    imports from for the prefix, every module of bindings/python/zkelect,
    and it elects from there."""
    src = REPO / "bindings" / "python" / "zkelect"
    init = _installed(destdir, r"/zkelect/__init__\.py$")
    folder = os.path.dirname(os.path.dirname(init))
    installed = sorted(p.name for p in (destdir / folder.lstrip("/") / "zkelect").iterdir())
    assert installed == sorted(p.name for p in src.glob("*.py")), installed
    env = _env(destdir, tmp_path)
    path = _ok(_run(["/usr/bin/python3", "-c", "import sys; print('\\n'.join(sys.path))"],
                    env=env, timeout=30), "sys.path").stdout.split()
    assert folder in path, f"python3 imports from {path}; meson install put zkelect in {folder}"
    d = tmp_path / "python"
    d.mkdir()
    (d / "example.py").write_text(examples.named("python-example").text)
    env.update(PYTHONPATH=f"{destdir}{folder}", ZK_HOSTS=zk.connect_string)
    proc = _ok(_run(["/usr/bin/python3", "example.py"], cwd=d, env=env, timeout=120),
               "the Python example")
    _token(proc.stdout, "the Python example")


def test_the_installed_tool_loads_the_library_installed_beside_it(destdir):
    """A `zkelect` installed under a prefix other than /usr finds that
    prefix's libzkelect.so.1 before a system one of another version: its
    RUNPATH names the prefix's libdir."""
    tool = _installed(destdir, r"/bin/zkelect$")
    lib = os.path.dirname(_installed(destdir, r"/libzkelect\.so\.1$"))
    dyn = _ok(_run(["readelf", "-d", f"{destdir}{tool}"], timeout=30), "readelf -d").stdout
    m = re.search(r"\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[(.*)\]", dyn)
    assert m and lib in m.group(1).split(":"), (f"{tool} must carry a RUNPATH to {lib}, "
                                                f"where meson install put libzkelect.so.1:\n{dyn}")
