"""zkelect.ffi inside nginx: Debian's nginx with libnginx-mod-http-lua
(LuaJIT, lua-resty-core), two instances started here on loopback, each
from a configuration written to a temp dir of its own (prefix, pid file,
error log, temp paths; `daemon off`, so the Popen is the master), one
worker each.

Each worker runs the OpenResty pattern of docs/lua.md: init_worker_by_lua
makes one elector and volunteers, an ngx.timer.every drains its events
without blocking, a location answers from is_leader(), and
exit_worker_by_lua closes the elector. The test asks both over HTTP, sees
exactly one leader, stops that nginx by its master's PID and sees the
other lead within the session timeout.
"""

import os
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from bed.zkbed import free_ports

REPO = Path(__file__).resolve().parents[2]
LUAJIT_DIR = REPO / "bindings" / "luajit"
MODULES = Path("/usr/lib/nginx/modules")
SESSION_TIMEOUT_MS = 4000

APP = r'''
-- leader.lua: one elector per nginx worker (see docs/lua.md).
local zk = require "zkelect.ffi"

local M = { events = {} }
local elector

function M.start(conf)
  zk.load(conf.library)
  elector = zk.elector{ hosts = conf.hosts, path = conf.path, id = conf.id,
                        session_timeout_ms = conf.session_timeout_ms }
  elector:volunteer()
  -- never blocks: next_event() without a timeout only looks at the queue
  local ok, err = ngx.timer.every(0.1, function(premature)
    if premature or not elector then return end
    for _ = 1, 100 do
      local ev = elector:next_event()
      if not ev then break end
      M.events[#M.events + 1] = ev.type
      ngx.log(ngx.NOTICE, "zkelect: ", ev.type, " ", ev.reason, " ", ev.id)
    end
  end)
  if not ok then error("ngx.timer.every: " .. tostring(err)) end
end

function M.is_leader() return elector ~= nil and elector:is_leader() end

function M.stop()
  if elector then
    elector:close()
    elector = nil
  end
end

return M
'''

CONF = r'''
daemon off;
master_process on;
worker_processes 1;
{user}
pid {dir}/nginx.pid;
error_log {dir}/error.log notice;
load_module {modules}/ndk_http_module.so;
load_module {modules}/ngx_http_lua_module.so;

events {{ worker_connections 64; }}

http {{
    access_log off;
    client_body_temp_path {dir}/tmp/body;
    proxy_temp_path {dir}/tmp/proxy;
    fastcgi_temp_path {dir}/tmp/fastcgi;
    uwsgi_temp_path {dir}/tmp/uwsgi;
    scgi_temp_path {dir}/tmp/scgi;

    # ";;": Debian's default path after ours (lua-resty-core lives there)
    lua_package_path "{dir}/?.lua;{luajit_dir}/?.lua;;";

    init_worker_by_lua_block {{
        require("leader").start{{ library = "{library}", hosts = "{hosts}", path = "{path}",
                                 id = "{id}", session_timeout_ms = {session_timeout_ms} }}
    }}
    exit_worker_by_lua_block {{
        require("leader").stop()
    }}

    server {{
        listen 127.0.0.1:{port};
        location = /leader {{
            content_by_lua_block {{
                ngx.say(require("leader").is_leader() and "leader" or "follower")
            }}
        }}
        location = /events {{
            content_by_lua_block {{
                ngx.say(table.concat(require("leader").events, ","))
            }}
        }}
        location = /jit {{
            content_by_lua_block {{
                ngx.say(jit and jit.version or "not LuaJIT")
            }}
        }}
    }}
}}
'''


class Nginx:
    def __init__(self, base, name, port, **conf):
        self.dir = base / name
        self.name = name
        self.port = port
        (self.dir / "tmp").mkdir(parents=True)
        (self.dir / "leader.lua").write_text(APP)
        user = "user root;" if os.geteuid() == 0 else ""
        (self.dir / "nginx.conf").write_text(CONF.format(
            dir=self.dir, modules=MODULES, luajit_dir=LUAJIT_DIR, port=port, id=name,
            user=user, session_timeout_ms=SESSION_TIMEOUT_MS, **conf))
        self.proc = None

    def start(self):
        self.log = open(self.dir / "stderr.log", "wb")
        self.proc = subprocess.Popen(
            ["nginx", "-p", str(self.dir), "-c", str(self.dir / "nginx.conf"),
             "-e", str(self.dir / "error.log")],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def get(self, what, timeout=2.0):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/{what}",
                                    timeout=timeout) as r:
            return r.read().decode().strip()

    def try_get(self, what):
        try:
            return self.get(what)
        except OSError:
            return None

    def workers(self):
        try:
            children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
        except OSError:
            return []
        return [int(p) for p in children.split()]

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Stops the master (which stops its worker); True when it exited."""
        if self.proc is None:
            return True
        if self.proc.poll() is not None:
            self.log.close()
            return True
        workers = self.workers()
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            for pid in workers:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.proc.kill()
            self.proc.wait(timeout=10)
            return False
        finally:
            self.log.close()

    def error_log(self):
        p = self.dir / "error.log"
        return p.read_text(errors="replace") if p.exists() else ""


def _poll(f, timeout, interval=0.05):
    """f() until it returns something true, at most `timeout` s (HTTP is
    the only window into the workers)."""
    deadline = time.monotonic() + timeout
    while True:
        v = f()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(interval)


@pytest.fixture
def nginx_pair(zk, build_dir, zk_path, tmp_path):
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.fail("nginx is not installed (Debian: apt-get install nginx libnginx-mod-http-lua)",
                    pytrace=False)
    if not (MODULES / "ngx_http_lua_module.so").exists():
        pytest.fail("libnginx-mod-http-lua is not installed", pytrace=False)
    lib = build_dir / "capi" / "libzkelect.so.1"
    if not lib.exists():
        pytest.fail("libzkelect is not built: ./dev build", pytrace=False)
    ports = free_ports(2)
    pair = [Nginx(tmp_path, name, port, library=lib, hosts=zk.connect_string, path=zk_path)
            for name, port in zip(("nginx-a", "nginx-b"), ports)]
    try:
        for n in pair:
            n.start()
        yield pair
    finally:
        for n in pair:
            n.stop()


def test_nginx_workers_elect_one_leader_and_fail_over(nginx_pair, kz, zk_path):
    a, b = nginx_pair
    for n in nginx_pair:
        up = _poll(lambda: n.try_get("jit"), 20)
        assert up, f"{n.name} does not answer:\n{n.error_log()}"
        assert up.startswith("LuaJIT 2.1"), f"{n.name} runs {up!r}, not LuaJIT"

    def leaders():
        answers = {n.name: n.try_get("leader") for n in nginx_pair}
        assert set(answers.values()) <= {"leader", "follower"}, answers
        return [name for name, v in answers.items() if v == "leader"]

    first = _poll(leaders, 20)
    assert first, f"nobody leads:\n{a.error_log()}\n{b.error_log()}"
    assert len(first) == 1, f"two leaders: {first}"
    leader = a if first == ["nginx-a"] else b
    other = b if leader is a else a
    for _ in range(20):
        assert leaders() == [leader.name]
    kz.sync(zk_path)
    assert len(kz.get_children(zk_path)) == 2, "not both workers are candidates"

    # the timer drained the events: ELECTED for the leader, FOLLOWING for the other
    assert _poll(lambda: "ELECTED" in leader.get("events").split(","), 5), leader.get("events")
    assert _poll(lambda: "FOLLOWING" in other.get("events").split(","), 5), other.get("events")

    t0 = time.monotonic()
    assert leader.stop(signal.SIGTERM), f"{leader.name} did not stop:\n{leader.error_log()}"
    assert leader.try_get("leader") is None, "the stopped nginx still answers"
    took = None
    if _poll(lambda: other.try_get("leader") == "leader", SESSION_TIMEOUT_MS / 1000):
        took = time.monotonic() - t0
    assert took is not None, (f"{other.name} did not lead within the session timeout "
                              f"({SESSION_TIMEOUT_MS} ms):\n{other.error_log()}")
    print(f"failover after stopping {leader.name}: {took * 1000:.0f} ms")
    assert _poll(lambda: "ELECTED" in other.get("events").split(","), 5), other.get("events")

    for n in nginx_pair:
        log = n.error_log()
        bad = [l for l in log.splitlines() if "[error]" in l or "[alert]" in l or "[emerg]" in l]
        assert not bad, f"{n.name}'s error log:\n{log}"


def test_a_stopped_worker_closes_its_session(nginx_pair, kz, zk_path):
    # exit_worker_by_lua closes the elector: its node is gone when nginx
    # has exited, before any session timeout.
    a, b = nginx_pair
    for n in nginx_pair:
        assert _poll(lambda: n.try_get("leader"), 20), f"{n.name} does not answer:\n{n.error_log()}"

    def both_enrolled():
        kz.sync(zk_path)
        return kz.exists(zk_path) and len(kz.get_children(zk_path)) == 2
    assert _poll(both_enrolled, 20), "not both workers are candidates"
    assert a.stop(signal.SIGQUIT), f"nginx-a did not stop:\n{a.error_log()}"
    kz.sync(zk_path)
    ids = [kz.get(f"{zk_path}/{c}")[0].decode() for c in kz.get_children(zk_path)]
    assert ids == ["nginx-b"], f"candidates after nginx-a stopped: {ids}"


def test_a_killed_leader_is_replaced_once_its_session_expires(nginx_pair):
    # SIGKILL to the master and its worker: no exit hook runs, the session
    # is left to expire. The other worker must lead once it has, that is
    # within the session timeout plus ZooKeeper's expiry tick and a claim.
    a, b = nginx_pair
    for n in nginx_pair:
        assert _poll(lambda: n.try_get("leader"), 20), f"{n.name} does not answer:\n{n.error_log()}"
    first = _poll(lambda: [n for n in nginx_pair if n.try_get("leader") == "leader"], 20)
    assert len(first) == 1, [n.name for n in first]
    leader = first[0]
    other = b if leader is a else a
    assert _poll(lambda: "FOLLOWING" in other.get("events").split(","), 5), other.get("events")
    workers = leader.workers()
    assert len(workers) == 1, workers
    t0 = time.monotonic()
    leader.proc.kill()
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    leader.proc.wait(timeout=10)
    bound = SESSION_TIMEOUT_MS / 1000 + 2.0
    assert _poll(lambda: other.try_get("leader") == "leader", bound), \
        f"{other.name} did not lead within {bound} s:\n{other.error_log()}"
    print(f"failover after SIGKILL of {leader.name}: {(time.monotonic() - t0) * 1000:.0f} ms")
