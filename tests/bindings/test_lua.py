"""The Lua 5.4 module (bindings/lua): built by bindings/lua/build.sh into
<build dir>/script-bindings/lua/zkelect.so (apart from Meson's own bindings/lua) (SWIG from bindings/swig/*.i), then
bindings/lua/test_zkelect.lua (with the layer's tests of
bindings/luajit/layer_tests.lua) run with lua5.4 against the shared ensemble,
(the README example runs in tests/docs/test_examples.py).
"""

from pathlib import Path

import pytest

from bed import luasuite, sh

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
    luasuite.passes(_run, ["lua5.4", "test_zkelect.lua"], dict(test_env, **lua_env, **foreign_long_leader),
                    ["to-be-closed variable releases the node",
                     "a client whose close is refused stays usable and is closed later",
                     "leader_id reads a foreign id longer than ID_MAX",
                     "a failure that returns only a code carries the library's detail"])


def test_lua_tests_fail_without_an_ensemble(test_env, lua_env):
    luasuite.refuses_without_an_ensemble(_run, ["lua5.4", "test_zkelect.lua"], dict(test_env, **lua_env))
