"""The LuaJIT ffi module (bindings/luajit/zkelect/ffi.lua) under Debian's
luajit against the shared ensemble: bindings/luajit/test_zkelect_ffi.lua
with the layer's tests shared with Lua 5.4 (layer_tests.lua: election, resign order, events, close and collection freeing the node as
a second session sees it, bad input), the end of a Lua state closing the
session (checked with kazoo), and the library found through
ZKELECT_LIBRARY or refused with a clear error.
"""

import os
import re
import subprocess
from pathlib import Path

import pytest

from bed import luasuite, sh

REPO = Path(__file__).resolve().parents[2]
LUAJIT_DIR = REPO / "bindings" / "luajit"
TIMEOUT = 300


def _run(cmd, env, cwd=LUAJIT_DIR, timeout=TIMEOUT):
    return sh.run(cmd, timeout, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def luajit_env(build_dir):
    sh.need(("luajit", "luajit"))
    lib = sh.need_library(build_dir)
    return {"LUA_PATH": f"{LUAJIT_DIR}/?.lua;;", "ZKELECT_LIBRARY": str(lib)}


def test_luajit_tests(test_env, luajit_env):
    luasuite.passes(_run, ["luajit", "test_zkelect_ffi.lua"], dict(test_env, **luajit_env),
                    ["client:close() after an elector or observer was dropped without close"])


def test_luajit_tests_fail_without_an_ensemble(test_env, luajit_env):
    luasuite.refuses_without_an_ensemble(_run, ["luajit", "test_zkelect_ffi.lua"],
                                         dict(test_env, **luajit_env))


def test_closing_the_lua_state_closes_the_session(test_env, luajit_env, kz, zk_path):
    # The script leads (and enrolls a second candidate on another client)
    # and ends without closing anything, with a 30 s session timeout: the
    # nodes are gone as soon as the process has exited only if the
    # finalizers run at the state's close destroyed the handles.
    env = dict(test_env, **luajit_env, ZKELECT_TEST_PATH=zk_path)
    proc = _run(["luajit", "test_zkelect_ffi.lua", "state close ends the session"], env)
    out = proc.stdout + "\n" + proc.stderr
    assert proc.returncode == 0 and "passed 1/1" in proc.stdout, out
    assert kz.exists(zk_path), f"{zk_path} was never created:\n{out}"
    kz.sync(zk_path)
    assert kz.get_children(zk_path) == [], "the nodes outlived the Lua state"


def test_connect_never_waits_for_a_collected_handle(test_env, luajit_env, zk, tmp_path):
    # A faultproxy (its own process, driven by the script through its
    # control socket) in front of one server: the script's collected elector
    # is cut off, so destroying it would wait; zk.connect must not.
    import sys
    script = str(REPO / "tests" / "bed" / "faultproxy.py")
    ctl = str(tmp_path / "ctl.sock")
    proxy = subprocess.Popen([sys.executable, script, "--target", f"127.0.0.1:{zk.client_port(0)}",
                              "--control", ctl, "--stdin-eof-exit"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        listen = None
        for _ in range(10):  # one LISTEN line, then READY
            line = proxy.stdout.readline().split()
            if not line or line[0] == "READY":
                break
            if line[0] == "LISTEN":
                listen = line[2]
        assert listen, "faultproxy did not start"
        env = dict(test_env, **luajit_env, ZKELECT_TEST_PROXY_HOSTS=listen,
                   ZKELECT_TEST_PROXY_CTL=f"{sys.executable} {script} ctl {ctl}")
        proc = _run(["luajit", "test_zkelect_ffi.lua", "connect never waits for a collected handle"],
                    env)
        out = proc.stdout + "\n" + proc.stderr
        assert proc.returncode == 0 and "passed 1/1" in proc.stdout, out
    finally:
        proxy.stdin.close()
        try:
            proxy.wait(10)
        except subprocess.TimeoutExpired:
            proxy.kill()
            proxy.wait()


def test_library_path_override(test_env, luajit_env, tmp_path):
    env = dict(test_env, **luajit_env)
    script = 'local zk = require "zkelect.ffi"; io.write(zk.version_string())'
    proc = _run(["luajit", "-e", script], env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    version = re.search(r"version : '([^']+)'", (REPO / "meson.build").read_text()).group(1)
    assert proc.stdout == version

    # an explicit zk.load(path) wins over the environment
    lib = luajit_env["ZKELECT_LIBRARY"]
    env_bad = dict(env, ZKELECT_LIBRARY=str(tmp_path / "nowhere.so"))
    proc = _run(["luajit", "-e", f'local zk = require "zkelect.ffi"; zk.load("{lib}"); '
                 'io.write(zk.version_string())'], env_bad, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == version, proc.stderr

    # a wrong path is named in the error, at the first call
    proc = _run(["luajit", "-e", script], env_bad, cwd=tmp_path)
    assert proc.returncode != 0
    assert "nowhere.so" in proc.stderr, proc.stderr


def test_requiring_the_module_loads_no_library(luajit_env, tmp_path):
    # nginx configurations require the module in init_by_lua (the master)
    # and load the library per worker; LuaJIT's cdef alone needs none.
    env = dict(os.environ, LUA_PATH=luajit_env["LUA_PATH"],
               ZKELECT_LIBRARY=str(tmp_path / "nowhere.so"))
    proc = _run(["luajit", "-e", 'local zk = require "zkelect.ffi"; io.write(zk.EINVAL)'], env,
                cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == "-1", proc.stderr


def test_readme_example_runs_as_written(test_env, luajit_env, zk, tmp_path):
    readme = (REPO / "bindings" / "README.md").read_text()
    m = re.search(r"<!-- luajit-example -->\s*```lua\n(.*?)```", readme, re.S)
    assert m, "bindings/README.md has no LuaJIT example"
    script = tmp_path / "example.lua"
    script.write_text(m.group(1))
    env = dict(test_env, **luajit_env, ZK_HOSTS=zk.connect_string)
    proc = _run(["luajit", str(script)], env, cwd=tmp_path)
    assert proc.returncode == 0, f"example failed:\n{proc.stdout}\n{proc.stderr}"
    m = re.fullmatch(r"leading with fencing token (\d+)\n", proc.stdout)
    assert m and int(m.group(1)) > 0, proc.stdout
