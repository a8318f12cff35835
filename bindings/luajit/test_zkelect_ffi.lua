-- Tests of the LuaJIT ffi module (the one layer over LuaJIT's FFI back end)
-- against a real ZooKeeper ensemble.
--
--   ZKELECT_TEST_HOSTS=host:port,... ZKELECT_LIBRARY=<build>/capi/libzkelect.so.1 \
--     LUA_PATH="bindings/luajit/?.lua;;" luajit bindings/luajit/test_zkelect_ffi.lua [name...]
--
-- (tests/bindings/test_luajit.py runs this.) The layer's own tests are
-- layer_tests.lua beside this file, shared with Lua 5.4; these add what
-- only this back end does. With names given, runs only those. Exits
-- non-zero when anything failed or the ensemble is not named.

local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
local ffi = require "ffi"
local zk = require "zkelect.ffi"
local kit = dofile(here .. "/layer_tests.lua")(zk, {
  prefix = "jit",
  is_int = function(v) return ffi.istype("int64_t", v) end,
})
local test, check, catch, enroll = kit.test, kit.check, kit.catch, kit.enroll
local hosts, fresh_path = kit.hosts, kit.fresh_path

-- LuaJIT clears a dropped elector from its client's weak _children in
-- one step of a collection cycle and runs its handle's finalizer in a
-- later one; the client's close() falls in between here, every round.
test("client:close() after an elector or observer was dropped without close", function()
  for round = 1, 20 do
    local c = zk.connect{ hosts = hosts }
    do
      local _ = c:elector(fresh_path("dropped"), "jit-dropped")
      if round % 2 == 0 then _ = c:observer(fresh_path("dropped-obs")) end
    end
    local steps = 0
    while next(c._children) ~= nil and steps < 100000 do
      collectgarbage("step", 0)
      steps = steps + 1
    end
    check(next(c._children) == nil, "round %d: the dropped children were never collected", round)
    local ok, err = pcall(c.close, c)
    check(ok, "round %d: close() raised %s", round, tostring(err))
    err = catch(c.session_id, c)
    check(err.code == zk.ECLOSED, "round %d: the client is still open", round)
  end
  check(zk.collect() == 0, "handles left behind")
end)

-- Run by test_luajit.py with a faultproxy in front of one server: a
-- collected elector whose session is cut off (its node's deletion cannot
-- be acknowledged) must not hold up zk.connect, which nginx code calls
-- from a request or timer.
test("connect never waits for a collected handle", function()
  local proxied, ctl = os.getenv("ZKELECT_TEST_PROXY_HOSTS"), os.getenv("ZKELECT_TEST_PROXY_CTL")
  check(proxied and ctl, "ZKELECT_TEST_PROXY_HOSTS and ZKELECT_TEST_PROXY_CTL are not set")
  local function proxy(mode)
    local rc = os.execute(ctl .. " " .. mode .. " >/dev/null")
    check(rc == 0 or rc == true, "faultproxy ctl %s failed", mode)
  end
  ffi.cdef[[
    struct zkelect_test_timespec { long tv_sec; long tv_nsec; };
    int clock_gettime(int clk_id, struct zkelect_test_timespec *tp);
  ]]
  local function now()
    local ts = ffi.new("struct zkelect_test_timespec")
    ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
    return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) / 1e9
  end
  local path = fresh_path("connectgc")
  do
    local e = zk.elector{ hosts = proxied, session_timeout_ms = 8000, path = path, id = "jit-cut-off" }
    enroll(e)
    proxy("blackhole")
  end
  collectgarbage("collect")
  collectgarbage("collect")
  local t0 = now()
  local c = zk.connect{ hosts = hosts }
  local c2 = zk.elector{ hosts = hosts, path = path, id = "jit-next" }
  local took = now() - t0
  proxy("pass")
  check(took < 0.5, "zk.connect and zk.elector took %.2f s (collected handles destroyed inline?)", took)
  c2:close()
  c:close()
  zk.collect()
end)

-- Run by test_luajit.py in a process of its own: leads, then ends without
-- closing anything. Closing the Lua state runs every finalizer; the
-- module then destroys the handles, which closes the session, so the node
-- is gone when the process has exited (no wait for the session timeout).
test("state close ends the session", function()
  local path = os.getenv("ZKELECT_TEST_PATH")
  check(path, "ZKELECT_TEST_PATH is not set")
  _G.kept = zk.elector{ hosts = hosts, session_timeout_ms = 30000, path = path, id = "jit-exit" }
  _G.kept:volunteer()
  check(_G.kept:await_leader(20000), "did not lead")
  _G.kept_client = zk.connect{ hosts = hosts }
  _G.kept_follower = _G.kept_client:elector(path, "jit-exit-2")
  enroll(_G.kept_follower)
end)
local only_named = { ["state close ends the session"] = true,
                     ["connect never waits for a collected handle"] = true }
if kit.run(only_named) > 0 then os.exit(1) end
-- falling off the end: luajit closes the state (finalizers run)
