"""The binding options of meson_options.txt at configure time: `enabled`
without the toolchain stops with a message naming what is missing; `auto`
without it configures, says so in the summary and installs nothing of that
binding (no half-installed tree); `disabled` installs nothing of it.

A PATH of links to every program but the hidden one takes swig (or javac)
away from meson, so nothing on the machine has to be uninstalled.
"""

import json
import re
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _path_without(tmp_path, hide):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not d or not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            src = os.path.join(d, name)
            if name in hide or (bindir / name).exists() or not os.access(src, os.X_OK):
                continue
            (bindir / name).symlink_to(src)
    return str(bindir)


def _setup(tmp_path, *options, hide=()):
    bdir = tmp_path / "b"
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "JAVAC", "SWIG")}
    meson = shutil.which("meson")
    if hide:
        env["PATH"] = _path_without(tmp_path, set(hide))
    try:
        proc = subprocess.run([meson, "setup", str(bdir), str(REPO), "-Dtests=false", *options],
                              capture_output=True, text=True, timeout=300, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("meson setup did not finish in 300 s", pytrace=False)
    return proc, bdir


def _installed(bdir):
    proc = subprocess.run(["meson", "introspect", "--installed", str(bdir)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout).values())


@pytest.mark.parametrize("option,tool", [("lua", "swig"), ("java", "swig"), ("java", "javac")])
def test_enabled_without_its_toolchain_fails_at_configure_naming_it(tmp_path, option, tool):
    proc, _ = _setup(tmp_path, f"-D{option}=enabled", hide=[tool])
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"-D{option}=enabled configured without {tool}:\n{out[-3000:]}"
    assert f"{tool}" in out and ("not found" in out or "ERROR" in out), out[-3000:]


def test_auto_without_swig_configures_says_why_and_installs_no_binding(tmp_path):
    proc, bdir = _setup(tmp_path, "-Dlua=auto", "-Djava=auto", "-Dgo=disabled", hide=["swig"])
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    # (The summary pads its keys to the longest one of the section.)
    assert re.search(r"lua module\s*: not built \(needs swig", out), out[-3000:]
    assert re.search(r"java jar\s*: not built \(needs swig", out), out[-3000:]
    files = _installed(bdir)
    assert any(re.search(r"/libzkelect\.so\.1\.\d+\.\d+$", f) for f in files), files
    # The LuaJIT module is pure Lua: it needs no swig and is installed, with
    # the Lua layer it shares with the Lua 5.4 module.
    luajit = ("/lua/5.1/zkelect/ffi.lua", "/lua/5.1/zkelect/layer.lua")
    for want in luajit:
        assert any(f.endswith("/share" + want) for f in files), files
    stray = [f for f in files if ("/lua/" in f and not f.endswith(luajit))
             or "/java/" in f or "/jni/" in f or "/gocode/" in f]
    assert not stray, f"bindings installed without swig: {stray}"


def test_auto_with_the_toolchains_installs_every_binding(tmp_path):
    proc, bdir = _setup(tmp_path, "-Dlua=auto", "-Djava=auto", "-Dgo=auto")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    files = _installed(bdir)
    for want in ("/lua/5.4/zkelect.so", "/share/lua/5.1/zkelect/ffi.lua",
                 "/jni/libzkelect_jni.so", "/java/zkelect-",
                 "/gocode/src/github.com/libzkelect/libzkelect/bindings/go/go.mod"):
        assert any(want in f for f in files), f"{want} not among the installed files: {files}"


def test_luajit_disabled_installs_no_ffi_module(tmp_path):
    proc, bdir = _setup(tmp_path, "-Dluajit=disabled", "-Dlua=disabled", "-Djava=disabled",
                        "-Dgo=disabled")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    files = _installed(bdir)
    assert any(re.search(r"/libzkelect\.so\.1\.\d+\.\d+$", f) for f in files), files
    assert not [f for f in files if "/lua/" in f], files
