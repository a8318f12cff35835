"""The Go module's committed SWIG layer (bindings/go/internal/capi) and its
compile-time check of libzkelect's major version.

A Go user builds the module with cgo and pkg-config only, so the generated
files are committed; these tests fail when they no longer match what
bindings/go/gen.sh writes from bindings/swig/*.i and the public header
(fix: run bindings/go/gen.sh and commit), and when a libzkelect header of
another major version would be accepted.
"""

import os
import shutil
from pathlib import Path

import pytest

from bed import sh

REPO = Path(__file__).resolve().parents[2]
GO = REPO / "bindings" / "go"
GENERATED = ("capi.go", "capi_wrap.c")


def _run(cmd, timeout=300, **kw):
    return sh.run(cmd, timeout, **kw)


def _need(*tools):
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed", pytrace=False)


def _stale(tree, out):
    """Names of the generated files in tree/bindings/go that differ from what
    that tree's gen.sh writes into out."""
    proc = _run(["sh", str(tree / "bindings" / "go" / "gen.sh"), str(out)])
    assert proc.returncode == 0, f"gen.sh failed:\n{proc.stdout}\n{proc.stderr}"
    committed = tree / "bindings" / "go" / "internal" / "capi"
    return [n for n in GENERATED if (out / n).read_bytes() != (committed / n).read_bytes()]


def test_committed_layer_is_what_gen_sh_writes(tmp_path):
    _need("swig")
    stale = _stale(REPO, tmp_path / "gen")
    assert not stale, (f"bindings/go/internal/capi/{stale} is stale against bindings/swig/*.i: "
                       "run bindings/go/gen.sh and commit the result")


def test_a_changed_interface_is_caught(tmp_path):
    """The comparison above can fail: the same check on a copy whose
    interface gained a rename reports the layer stale."""
    _need("swig")
    copy = tmp_path / "tree"
    for sub in ("bindings/go", "bindings/swig", "capi/zkelect"):
        shutil.copytree(REPO / sub, copy / sub)
    iface = copy / "bindings" / "swig" / "zkelect.i"
    iface.write_text(iface.read_text().replace(
        "%include <zkelect/zkelect.h>", "%rename(VersionText) zkelect_version_string;\n"
        "%include <zkelect/zkelect.h>"))
    assert _stale(copy, tmp_path / "gen") == ["capi.go", "capi_wrap.c"]


def test_generated_layer_names_no_machine_path():
    for name in GENERATED:
        text = (GO / "internal" / "capi" / name).read_text()
        assert str(REPO) not in text and "/tmp/" not in text, name


def _go_env(build_dir, tmp_path):
    env = dict(os.environ)
    env.update(CGO_ENABLED="1", GOFLAGS="-mod=mod", GOTOOLCHAIN="local",
               GOCACHE=str(build_dir / "bindings" / "go" / "gocache"),
               PKG_CONFIG_PATH=str(build_dir / "meson-uninstalled"))
    return env


def test_module_builds_without_swig(build_dir, tmp_path):
    """go build with a PATH that has go, cc and pkg-config but no swig."""
    _need("go", "pkg-config", "cc")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("go", "cc", "gcc", "pkg-config", "pkgconf", "ld", "as"):
        found = shutil.which(tool)
        if found:
            (bindir / tool).symlink_to(os.path.realpath(found) if tool == "go" else found)
    env = _go_env(build_dir, tmp_path)
    env["PATH"] = f"{bindir}:/usr/lib/gcc/x86_64-linux-gnu/12"
    assert shutil.which("swig", path=env["PATH"]) is None
    proc = _run(["go", "build", "./..."], cwd=GO, env=env)
    assert proc.returncode == 0, f"go build without swig failed:\n{proc.stdout}\n{proc.stderr}"


def test_another_major_version_is_refused_at_compile_time(build_dir, tmp_path):
    """A libzkelect.pc that leads to a header of major version 2 (a copy of
    the real headers, the version bumped) stops the build with the
    module's own message."""
    _need("go", "pkg-config")
    real = build_dir / "capi" / "zkelect" / "version.h"
    assert real.exists(), f"{real} missing: build first"
    inc = tmp_path / "inc"
    (inc / "zkelect").mkdir(parents=True)
    shutil.copy(REPO / "capi" / "zkelect" / "zkelect.h", inc / "zkelect" / "zkelect.h")
    bumped = real.read_text().replace("#define ZKELECT_VERSION_MAJOR 1", "#define ZKELECT_VERSION_MAJOR 2")
    assert "ZKELECT_VERSION_MAJOR 2" in bumped
    (inc / "zkelect" / "version.h").write_text(bumped)
    pc = tmp_path / "pc"
    pc.mkdir()
    (pc / "libzkelect.pc").write_text(
        f"Name: libzkelect\nDescription: a 2.x stand-in\nVersion: 2.0.0\n"
        f"Cflags: -I{inc}\nLibs: -L{build_dir / 'capi'} -lzkelect\n")
    env = _go_env(build_dir, tmp_path)
    env["PKG_CONFIG_PATH"] = str(pc)
    # Go's cache keys on CGO_CFLAGS but not on pkg-config's answer: without
    # a flag of its own this build would reuse the package compiled against
    # the real header.
    env["CGO_CFLAGS"] = f"-O2 -g -DZKELECT_MAJOR_CHECK_PROBE={os.getpid()}{abs(hash(str(tmp_path)))}"
    proc = _run(["go", "build", "./..."], cwd=GO, env=env)
    assert proc.returncode != 0, "a libzkelect 2.x header was accepted"
    assert "needs libzkelect 1.x" in proc.stderr, proc.stderr
