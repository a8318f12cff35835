"""A command run with a bound, its failure reported as a test failure
(the packaging suites and the docs' examples)."""

import subprocess

import pytest

TIMEOUT = 600


def run(cmd, timeout=TIMEOUT, **kw):
    """subprocess.run with output captured as text; a test failure when it
    does not finish within timeout seconds."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{cmd} did not finish in {timeout} s:\n{e.stdout or ''}\n{e.stderr or ''}",
                    pytrace=False)


def ok(proc, what):
    """proc when it exited 0; else a test failure with the tail of its output."""
    if proc.returncode != 0:
        pytest.fail(f"{what} failed (exit {proc.returncode}):\n{proc.stdout[-5000:]}\n{proc.stderr[-5000:]}",
                    pytrace=False)
    return proc


def need(*tools, path=None):
    """A test failure naming the Debian package of the first tool (a name,
    or (name, package)) not on PATH."""
    import shutil
    for tool in tools:
        name, pkg = (tool, tool) if isinstance(tool, str) else tool
        if shutil.which(name, path=path) is None:
            pytest.fail(f"{name} is not installed (Debian: apt-get install {pkg})", pytrace=False)


def need_library(build_dir):
    """A test failure when build_dir holds no built libzkelect."""
    lib = build_dir / "capi" / "libzkelect.so.1"
    if not lib.exists():
        pytest.fail("libzkelect is not built: ./dev build", pytrace=False)
    return lib


def build_binding(script, out, build_dir):
    """Run a binding's build.sh (bindings/java, bindings/lua) into out
    against the uninstalled library of build_dir."""
    import os
    env = dict(os.environ)
    env["ZKELECT_BUILD_DIR"] = str(build_dir)
    env["PKG_CONFIG_PATH"] = str(build_dir / "meson-uninstalled") + ":" + env.get("PKG_CONFIG_PATH", "")
    env["LD_LIBRARY_PATH"] = str(build_dir / "capi") + ":" + env.get("LD_LIBRARY_PATH", "")
    ok(run(["sh", str(script), str(out)], env=env), script)
    return out
