"""The C consumer check (pkgconfig/): install libzkelect into a scratch
staging root, then build pkgconfig/consumer/elect.c with nothing but
`cc elect.c $(pkg-config --cflags --libs libzkelect)` and run it against
the test ensemble; and check the installed tree is what a distribution
would package (exported symbols, SONAME, headers, .pc).

The install is the test build's own (`./dev` configures it with
-Ddefault_library=both, as Debian's rules do), put under
<build dir>/pkgconfig-check/stage by `meson install --destdir`, the way a
distribution stages a package; pkg-config finds it there through
PKG_CONFIG_SYSROOT_DIR, as it finds a staged or cross-built tree. (A build
of its own for this check cost a whole second build of the library in
every `./dev test`.)
"""

import json
import os
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from bed import sh

REPO = Path(__file__).resolve().parents[2]
CONSUMER = REPO / "pkgconfig" / "consumer" / "elect.c"
SOURCE_HEADER = REPO / "capi" / "zkelect" / "zkelect.h"
BUILD_TIMEOUT = 1200


def _run(cmd, timeout=120, **kw):
    return sh.run(cmd, timeout, **kw)


_ok = sh.ok


def _clean_env():
    """The environment with every pointer into the build dir removed, so
    only the installed tree can be found."""
    env = dict(os.environ)
    for var in ("PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "PKG_CONFIG_SYSROOT_DIR",
                "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH",
                "CFLAGS", "LDFLAGS", "MESON_BUILD_ROOT", "MESON_SOURCE_ROOT"):
        env.pop(var, None)
    return env


@pytest.fixture(scope="module")
def installed(build_dir):
    for tool in ("meson", "ninja", "cc", "pkg-config", "nm", "readelf"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed", pytrace=False)
    options = {o["name"]: o["value"] for o in json.loads(_ok(_run(
        ["meson", "introspect", "--buildoptions", str(build_dir)]), "meson introspect").stdout)}
    if options.get("default_library") != "both":
        pytest.fail(f"{build_dir} is not configured with -Ddefault_library=both (./dev build "
                    "configures it so)", pytrace=False)
    stage = build_dir / "pkgconfig-check" / "stage"
    shutil.rmtree(build_dir / "pkgconfig-check", ignore_errors=True)
    env = _clean_env()
    _ok(_run(["meson", "install", "-C", str(build_dir), "--no-rebuild", "--quiet",
              "--destdir", str(stage)], timeout=BUILD_TIMEOUT, env=env), "meson install --destdir")
    prefix = stage / options["prefix"].lstrip("/")

    libs = sorted(prefix.rglob("libzkelect.so.1"))
    pcs = sorted(prefix.rglob("libzkelect.pc"))
    assert len(libs) == 1, f"libzkelect.so.1 installed {len(libs)} times: {libs}"
    assert len(pcs) == 1, f"libzkelect.pc installed {len(pcs)} times: {pcs}"
    pc_dir = pcs[0].parent
    env["PKG_CONFIG_PATH"] = str(pc_dir)
    # LIBDIR replaces pkg-config's default search path: the staged tree only.
    env["PKG_CONFIG_LIBDIR"] = str(pc_dir)
    env["PKG_CONFIG_SYSROOT_DIR"] = str(stage)
    return SimpleNamespace(prefix=prefix, lib=libs[0], libdir=libs[0].parent, pc=pcs[0], env=env)


def _pc_fields(pc_text):
    fields = {}
    for line in pc_text.splitlines():
        m = re.match(r"^([A-Za-z.]+):\s*(.*)$", line)
        if m:
            fields[m.group(1)] = m.group(2)
    return fields


def _header_functions(header):
    text = re.sub(r"/\*.*?\*/", " ", header.read_text(), flags=re.S)
    return set(re.findall(r"\bZKELECT_API\b[^;(]*?\b(zkelect_\w+)\s*\(", text))


def test_consumer_builds_with_pkg_config_only_and_elects(installed, zk, zk_path, tmp_path):
    src = tmp_path / "elect.c"
    shutil.copy(CONSUMER, src)
    env = dict(installed.env)
    # Exactly the documented command line: nothing but what pkg-config says.
    _ok(_run(["sh", "-c", "cc elect.c -o elect $(pkg-config --cflags --libs libzkelect)"],
             cwd=tmp_path, env=env), "cc elect.c $(pkg-config --cflags --libs libzkelect)")
    # The installed header is plain C99 without warnings.
    _ok(_run(["sh", "-c", "cc -std=c99 -Wall -Wextra -pedantic -Werror -c elect.c -o strict.o "
                          "$(pkg-config --cflags libzkelect)"], cwd=tmp_path, env=env),
        "strict C99 compile of the installed header")

    env["LD_LIBRARY_PATH"] = str(installed.libdir)
    ldd = _ok(_run(["ldd", str(tmp_path / "elect")], env=env), "ldd").stdout
    m = re.search(r"libzkelect\.so\.1 => (\S+)", ldd)
    assert m, ldd
    assert Path(m.group(1)).resolve() == installed.lib.resolve(), \
        f"the program loads {m.group(1)}, not the installed {installed.lib}"

    proc = _run([str(tmp_path / "elect"), zk.connect_string, zk_path, "c-consumer"],
                timeout=90, env=env)
    assert proc.returncode == 0, f"elect failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stdout.splitlines()
    version = (REPO / "meson.build").read_text()
    project_version = re.search(r"version\s*:\s*'([^']+)'", version).group(1)
    assert lines[0] == f"VERSION {project_version}", proc.stdout
    m = re.fullmatch(r"LEADER c-consumer token=(\d+)", lines[1])
    assert m, proc.stdout
    token = int(m.group(1))

    # The token is the czxid of the node it led with: created after the
    # election path, deleted (the last change of the path's children) on exit.
    from kazoo.client import KazooClient
    kz = KazooClient(hosts=zk.connect_string, timeout=10)
    kz.start(timeout=20)
    try:
        kz.sync(zk_path)
        children, stat = kz.get_children(zk_path, include_data=True)
        assert children == [], f"the program left {children} behind"
        assert stat.czxid < token < stat.pzxid, (stat, token)
    finally:
        kz.stop()
        kz.close()


def _readme_static_link():
    """README.md's static link command, whitespace as the shell takes it."""
    m = re.search(r"a\s+static link:\s+`([^`]*)`", (REPO / "README.md").read_text())
    assert m, "README.md names no static link command"
    return " ".join(m.group(1).split())


def test_readme_static_link_elects_without_libzkelect_so(installed, zk, zk_path, tmp_path):
    """README.md's static link, as written, of a program against the install
    (libzkelect.a and libzkelect.so side by side, as -Ddefault_library=both
    and libzkelect-dev install them): nothing of libzkelect is loaded at run
    time, and the engine's C++ runtime comes along in a link driven by cc."""
    archives = sorted(installed.prefix.rglob("libzkelect.a"))
    assert len(archives) == 1, f"libzkelect.a installed {len(archives)} times: {archives}"
    assert (archives[0].parent / "libzkelect.so").exists(), "no libzkelect.so beside the .a"
    shutil.copy(CONSUMER, tmp_path / "prog.c")
    cmd = _readme_static_link() + " -o elect-static"
    env = dict(installed.env)
    _ok(_run(["sh", "-c", cmd], cwd=tmp_path, env=env), cmd)
    dyn = _ok(_run(["readelf", "-d", str(tmp_path / "elect-static")], env=env), "readelf").stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", dyn)
    assert needed and not [n for n in needed if "zkelect" in n or "zookeeper" in n], (
        f"{cmd}: the program needs {needed}")
    proc = _run([str(tmp_path / "elect-static"), zk.connect_string, zk_path, "c-static"],
                timeout=90, env=env)
    assert proc.returncode == 0, f"elect-static failed (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    assert re.fullmatch(r"LEADER c-static token=\d+", proc.stdout.splitlines()[1]), proc.stdout


def test_bindings_installed_where_debian_looks(installed):
    """Meson installs each binding where the language finds it without any
    environment variable: for Debian's prefix /usr, relative to it; the Lua
    module under another prefix in Lua's own lib/lua/5.4 (what lua5.4
    searches under /usr/local; tests/packaging/test_source_install.py)."""
    libdir = installed.libdir
    multiarch = libdir.name  # lib/<multiarch> on Debian
    lua_mod = installed.prefix / "lib" / "lua" / "5.4" / "zkelect.so"
    assert lua_mod.exists(), f"no {lua_mod}"
    needed = _ok(_run(["readelf", "-d", str(lua_mod)]), "readelf").stdout
    assert "libzkelect.so.1" in needed and "liblua" not in needed, needed

    java = installed.prefix / "share" / "java"
    version = _pc_fields(installed.pc.read_text())["Version"]
    jar = java / f"zkelect-{version}.jar"
    assert jar.exists(), sorted(p.name for p in java.iterdir())
    link = java / "zkelect.jar"
    assert link.is_symlink() and os.readlink(link) == jar.name, link
    import zipfile
    with zipfile.ZipFile(jar) as z:
        manifest = z.read("META-INF/MANIFEST.MF").decode()
        names = set(z.namelist())
    assert f"Implementation-Version: {version}" in manifest, manifest
    assert {"org/zkelect/Elector.class", "org/zkelect/ZkelectNativeJNI.class"} <= names, sorted(names)[:20]
    jni = libdir / "jni" / "libzkelect_jni.so"
    assert jni.exists(), f"no {jni} ({multiarch})"

    go = installed.prefix / "share" / "gocode" / "src" / "github.com" / "libzkelect" / "libzkelect" / "bindings" / "go"
    src = REPO / "bindings" / "go"
    want = {p.relative_to(src).as_posix() for p in src.rglob("*.go") if not p.name.endswith("_test.go")}
    want |= {"go.mod", "internal/capi/capi_wrap.c"}
    got = {p.relative_to(go).as_posix() for p in go.rglob("*") if p.is_file()}
    assert {"zkelect.go", "internal/capi/capi.go", "internal/capi/version_check.go"} <= want
    assert got == want, f"installed Go module differs from the tree: missing {sorted(want - got)}, extra {sorted(got - want)}"


def test_pc_url_is_the_project(installed):
    fields = _pc_fields(installed.pc.read_text())
    meson = (REPO / "meson.build").read_text()
    url = re.search(r"project_url\s*=\s*'([^']+)'", meson).group(1)
    assert fields.get("URL") == url, fields
    assert ".invalid" not in url and url.startswith("https://"), url


def test_only_zkelect_symbols_are_exported(installed):
    out = _ok(_run(["nm", "-D", "--defined-only", str(installed.lib)]), "nm").stdout
    names = {}
    for line in out.splitlines():
        parts = line.split()
        if not parts:
            continue
        sym = parts[-1]
        name, _, ver = sym.partition("@")
        names[name] = ver.lstrip("@")
    # Each version node shows up as an absolute symbol of its own name.
    nodes = {n for n in names if re.fullmatch(r"ZKELECT_1\.\d+", n)}
    assert "ZKELECT_1.0" in nodes, sorted(names)[:20]
    for n in nodes:
        names.pop(n)
    stray = sorted(n for n in names if not n.startswith("zkelect_"))
    assert not stray, f"exported beyond zkelect_*: {stray[:20]}"
    wrong_node = sorted(n for n, v in names.items() if v not in nodes)
    assert not wrong_node, f"symbols outside the ZKELECT_1.x version nodes: {wrong_node}"
    declared = _header_functions(installed.prefix / "include" / "zkelect" / "zkelect.h")
    assert declared, "no function found in the installed header"
    assert declared <= set(names), f"declared but not exported: {sorted(declared - set(names))}"
    assert set(names) <= declared, f"exported but not declared: {sorted(set(names) - declared)}"


def test_soname_and_links(installed):
    out = _ok(_run(["readelf", "-d", str(installed.lib)]), "readelf -d").stdout
    assert re.search(r"\(SONAME\)\s+Library soname: \[libzkelect\.so\.1\]", out), out
    dev = installed.libdir / "libzkelect.so"
    assert dev.is_symlink() or dev.exists(), "no libzkelect.so for -lzkelect"
    assert dev.resolve() == installed.lib.resolve()


def test_headers_installed(installed):
    inc = installed.prefix / "include" / "zkelect"
    assert (inc / "zkelect.h").read_text() == SOURCE_HEADER.read_text()
    version_h = (inc / "version.h").read_text()
    assert "@" not in version_h, "version.h was not configured"
    assert re.search(r"#define ZKELECT_VERSION_MAJOR \d+", version_h)


def test_pc_keeps_zookeeper_private(installed):
    fields = _pc_fields(installed.pc.read_text())
    assert "-lzkelect" in fields.get("Libs", "").split(), fields
    assert "zookeeper" not in fields.get("Libs", ""), f"Libs: {fields.get('Libs')}"
    # The ZooKeeper client: the system's (-Dzookeeper=system), or what the
    # bundled one inside needs, by name: a consumer needs no openssl.pc.
    private = fields.get("Libs.private", "").split()
    system = "-lzookeeper_mt" in private
    own = ["-lzookeeper_mt"] if system else ["-lssl", "-lcrypto", "-lsasl2"]
    assert set(own) <= set(private), fields
    assert "Requires.private" not in fields and "Requires" not in fields, fields
    env = installed.env
    libs = _ok(_run(["pkg-config", "--libs", "libzkelect"], env=env), "pkg-config --libs").stdout
    static = _ok(_run(["pkg-config", "--static", "--libs", "libzkelect"], env=env),
                 "pkg-config --static --libs").stdout
    assert "zookeeper_mt" not in libs and "-lzkelect" in libs.split(), libs
    assert set(own) <= set(static.split()), static
    cflags = _ok(_run(["pkg-config", "--cflags", "libzkelect"], env=env), "pkg-config --cflags").stdout
    for flag in cflags.split():
        if flag.startswith("-I"):
            assert Path(flag[2:]).resolve().is_relative_to(installed.prefix.resolve()), cflags
    modversion = _ok(_run(["pkg-config", "--modversion", "libzkelect"], env=env), "modversion").stdout.strip()
    version_h = (installed.prefix / "include" / "zkelect" / "version.h").read_text()
    nums = [re.search(rf"#define ZKELECT_VERSION_{p} (\d+)", version_h).group(1)
            for p in ("MAJOR", "MINOR", "PATCH")]
    assert modversion == ".".join(nums)
