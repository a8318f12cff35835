"""The Lua 5.4 module (bindings/lua): built by bindings/lua/build.sh into
<build dir>/script-bindings/lua/zkelect.so (apart from Meson's own bindings/lua) (SWIG from bindings/swig/*.i), then
bindings/lua/test_zkelect.lua run with lua5.4 against the shared ensemble,
(the README example runs in tests/docs/test_examples.py).
"""

import re
from pathlib import Path

import pytest

from bed import sh

REPO = Path(__file__).resolve().parents[2]
LUA = REPO / "bindings" / "lua"
TIMEOUT = 300


def _run(cmd, env, cwd=LUA, timeout=TIMEOUT):
    return sh.run(cmd, timeout, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def lua_env(build_dir):
    sh.need("lua5.4", "swig", "pkg-config")
    sh.need_library(build_dir)
    out = sh.build_binding(LUA / "build.sh", build_dir / "script-bindings" / "lua", build_dir)
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
