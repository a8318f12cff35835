"""The Lua 5.4 module (bindings/lua): built by bindings/lua/build.sh into
<build dir>/script-bindings/lua/zkelect.so (apart from Meson's own bindings/lua) (SWIG from bindings/swig/*.i), then
bindings/lua/test_zkelect.lua run with lua5.4 against the shared ensemble,
and the README example run as written.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LUA = REPO / "bindings" / "lua"
TIMEOUT = 300


def _run(cmd, env, cwd=LUA, timeout=TIMEOUT):
    try:
        return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(map(str, cmd))} did not finish in {timeout} s:\n"
                    f"{e.stdout or ''}\n{e.stderr or ''}", pytrace=False)


@pytest.fixture(scope="module")
def lua_env(build_dir):
    import os
    for tool, pkg in (("lua5.4", "lua5.4"), ("swig", "swig"), ("pkg-config", "pkg-config")):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed (Debian: apt-get install {pkg})", pytrace=False)
    if not (build_dir / "capi" / "libzkelect.so.1").exists():
        pytest.fail("libzkelect is not built: ./dev build", pytrace=False)
    env = dict(os.environ)
    env["ZKELECT_BUILD_DIR"] = str(build_dir)
    env["PKG_CONFIG_PATH"] = str(build_dir / "meson-uninstalled") + ":" + env.get("PKG_CONFIG_PATH", "")
    env["LD_LIBRARY_PATH"] = str(build_dir / "capi") + ":" + env.get("LD_LIBRARY_PATH", "")
    out = build_dir / "script-bindings" / "lua"
    proc = _run(["sh", str(LUA / "build.sh"), str(out)], env)
    if proc.returncode != 0:
        pytest.fail(f"bindings/lua/build.sh failed:\n{proc.stdout}\n{proc.stderr}", pytrace=False)
    return {"LUA_CPATH": f"{out}/?.so;;"}


def test_lua_tests(test_env, lua_env, foreign_long_leader):
    env = dict(test_env, **lua_env, **foreign_long_leader)
    proc = _run(["lua5.4", "test_zkelect.lua"], env)
    out = proc.stdout + "\n" + proc.stderr
    assert proc.returncode == 0, f"lua tests failed (exit {proc.returncode}):\n{out}"
    m = re.search(r"passed (\d+)/(\d+)", out)
    assert m and m.group(1) == m.group(2) and int(m.group(2)) >= 13, out
    for name in ["three electors elect exactly one", "resign fails over in queue order",
                 "events come in order", "close releases the node", "__gc releases the node",
                 "closing an elector's own client closes both, without an error",
                 "an unknown option is an error, dotted or not",
                 "timeouts accept any number and saturate",
                 "a client whose close is refused stays usable and is closed later",
                 "__gc resigns at once and frees at the next call",
                 "leader_id reads a foreign id longer than ID_MAX",
                 "is_error tells a zkelect error from any other value",
                 "a failure that returns only a code carries the library's detail"]:
        assert f"ok {name}\n" in proc.stdout, f"{name} did not pass:\n{out}"


def test_lua_tests_fail_without_an_ensemble(test_env, lua_env):
    env = dict(test_env, **lua_env)
    env.pop("ZKELECT_TEST_HOSTS", None)
    proc = _run(["lua5.4", "test_zkelect.lua"], env)
    assert proc.returncode != 0, proc.stdout
    assert "ZKELECT_TEST_HOSTS is not set" in proc.stderr, proc.stderr


def test_readme_example_runs_as_written(test_env, lua_env, zk, tmp_path):
    readme = (REPO / "bindings" / "README.md").read_text()
    m = re.search(r"<!-- lua-example -->\s*```lua\n(.*?)```", readme, re.S)
    assert m, "bindings/README.md has no Lua example"
    script = tmp_path / "example.lua"
    script.write_text(m.group(1))
    env = dict(test_env, **lua_env, ZK_HOSTS=zk.connect_string)
    proc = _run(["lua5.4", str(script)], env, cwd=tmp_path)
    assert proc.returncode == 0, f"example failed:\n{proc.stdout}\n{proc.stderr}"
    m = re.fullmatch(r"leading with fencing token (\d+)\n", proc.stdout)
    assert m and int(m.group(1)) > 0, proc.stdout
