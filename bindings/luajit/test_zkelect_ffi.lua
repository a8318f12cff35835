-- Tests of the LuaJIT ffi module against a real ZooKeeper ensemble.
--
--   ZKELECT_TEST_HOSTS=host:port,... ZKELECT_LIBRARY=<build>/capi/libzkelect.so.1 \
--     LUA_PATH="bindings/luajit/?.lua;;" luajit bindings/luajit/test_zkelect_ffi.lua [name...]
--
-- (tests/bindings/test_luajit.py runs this.) Prints "ok <name>" or
-- "FAIL <name>: <error>" per test, "passed N/M" last, and exits non-zero
-- when anything failed or the ensemble is not named. With names given,
-- runs only those.

local hosts = os.getenv("ZKELECT_TEST_HOSTS")
if not hosts or hosts == "" then
  io.stderr:write("ZKELECT_TEST_HOSTS is not set: these tests need a ZooKeeper ensemble\n")
  os.exit(2)
end

local ffi = require "ffi"
local zk = require "zkelect.ffi"

local tests, order = {}, {}
local function test(name, f) tests[name] = f; order[#order + 1] = name end

math.randomseed(os.time())
local run_id = tostring(os.time()) .. "-" .. tostring(math.random(1, 2 ^ 30))
local path_n = 0
local function fresh_path(name)
  path_n = path_n + 1
  return string.format("/t/luajit-%s-%s-%d", name, run_id, path_n)
end

local function elector(path, id)
  return zk.elector{ hosts = hosts, session_timeout_ms = 4000, path = path, id = id }
end

local function check(cond, fmt, ...)
  if not cond then error(string.format(fmt, ...), 2) end
end

-- The next event of one of the wanted types (others are passed over),
-- waiting at most 100 x 200 ms.
local function next_of(e, ...)
  local want = {}
  for _, t in ipairs({ ... }) do want[t] = true end
  for _ = 1, 100 do
    local ev = e:next_event(200)
    if ev and want[ev.type] then return ev end
  end
  error(string.format("%s: none of %s within 20 s", tostring(e.id or e.path),
                      table.concat({ ... }, ",")), 2)
end

local function enroll(e)
  e:volunteer()
  return next_of(e, "ELECTED", "FOLLOWING")
end

local function catch(f, ...)
  local ok, err = pcall(f, ...)
  check(not ok, "expected an error")
  check(zk.is_error(err) and type(err.code) == "number", "error is not a zkelect error: %s",
        tostring(err))
  return err
end

local function ids(ps)
  local t = {}
  for _, p in ipairs(ps) do t[#t + 1] = p.id end
  return table.concat(t, ",")
end

test("errors carry code, name and message", function()
  local err = catch(zk.connect, { hosts = hosts, ["no.such.key"] = "1" })
  check(err.code == zk.EINVAL and err.name == "ZKELECT_EINVAL", "code %s", tostring(err.code))
  check(err.message:find("no.such.key", 1, true), "message %q does not name the key", err.message)
  check(tostring(err) == "ZKELECT_EINVAL: " .. err.message, "tostring: %s", tostring(err))
  err = catch(zk.connect, { hosts = "127.0.0.1:notaport" })
  check(err.code == zk.EINVAL and err.message:find("notaport", 1, true), "bad hosts: %s",
        tostring(err))
  check(not err.message:find("^ZKELECT_"), "the name is repeated in the message: %s", err.message)
  local c = zk.connect{ hosts = hosts }
  err = catch(c.elector, c, fresh_path("nul"), "a\0b")
  check(err.code == zk.EINVAL, "an id with a NUL byte gave %s", err.name)
  err = catch(c.elector, c, "relative/path", "x")
  check(err.code == zk.EINVAL and err.message:find("absolute", 1, true), "bad path gave %s",
        tostring(err))
  err = catch(c.elector, c, 42, "x")
  check(err.code == zk.EINVAL, "a number as path gave %s", err.name)
  err = catch(c.elector, c, fresh_path("noid"), nil)
  check(err.code == zk.EINVAL, "no id gave %s", err.name)
  err = catch(c.elector, c, fresh_path("emptyid"), "")
  check(err.code == zk.EINVAL, "an empty id gave %s", err.name)
  err = catch(zk.connect, "127.0.0.1:2181")
  check(err.code == zk.EINVAL, "a string for options gave %s", err.name)
  local e = c:elector(fresh_path("errors"), "idle")
  err = catch(e.resign, e)
  check(err.code == zk.ESTATE, "resign of an idle candidacy gave %s", err.name)
  err = catch(e.await_leader, e, 100)
  check(err.code == zk.ESTATE, "await_leader of an idle candidacy gave %s", err.name)
  check(e:fencing_token() == nil, "fencing token of an idle candidacy")
  err = catch(e.await_leader, e, 0 / 0)
  check(err.code == zk.EINVAL, "await_leader(NaN) gave %s", err.name)
  err = catch(e.next_event, e, "soon")
  check(err.code == zk.EINVAL, "next_event('soon') gave %s", err.name)
  c:close() -- closes the elector first
  err = catch(e.volunteer, e)
  check(err.code == zk.ECLOSED, "volunteer after close gave %s", err.name)
  check(e:is_leader() == false, "is_leader after close")
  err = catch(c.session_id, c)
  check(err.code == zk.ECLOSED, "session_id after close gave %s", err.name)
  check(zk.version_string() == zk.VERSION and zk.VERSION:find("^%d+%.%d+%.%d+$"), "version %s",
        tostring(zk.VERSION))
  local keys = zk.config_keys()
  check(#keys >= 8 and keys[1] == "zk.hosts", "config_keys %s", table.concat(keys, ","))
end)

test("three electors elect exactly one", function()
  local path = fresh_path("three")
  local es = { elector(path, "jit-a"), elector(path, "jit-b"), elector(path, "jit-c") }
  for _, e in ipairs(es) do e:volunteer() end
  local leader
  for _ = 1, 200 do
    for _, e in ipairs(es) do
      if e:await_leader(50) then leader = e end
    end
    if leader then break end
  end
  check(leader, "nobody was elected")
  local n = 0
  for _, e in ipairs(es) do if e:is_leader() then n = n + 1 end end
  check(n == 1, "%d electors lead", n)
  for _, e in ipairs(es) do
    check(e:leader_id() == leader.id, "%s says %s leads, not %s", e.id, tostring(e:leader_id()),
          leader.id)
  end
  local ps = es[1]:participants()
  check(#ps == 3 and ps[1].id == leader.id, "participants: %d, first %s", #ps, ps[1] and ps[1].id)
  local tok = leader:fencing_token()
  check(ffi.istype("int64_t", tok) and tok > 0 and tok == ps[1].token,
        "token %s vs %s", tostring(tok), tostring(ps[1].token))
  for _, e in ipairs(es) do
    if e ~= leader then check(e:fencing_token() == nil, "%s has a token", e.id) end
  end
  check(leader:client():counters().terms_won == 1, "terms_won")
  check(leader:client():counter("terms_won") == 1, "counter('terms_won')")
  for _, e in ipairs(es) do e:close() end
end)

test("resign fails over in queue order", function()
  local path = fresh_path("failover")
  local a, b, c = elector(path, "jit-a"), elector(path, "jit-b"), elector(path, "jit-c")
  enroll(a); enroll(b); enroll(c)
  check(a:is_leader(), "first in the queue does not lead")
  check(ids(a:participants()) == "jit-a,jit-b,jit-c", "queue %s", ids(a:participants()))
  local prev = a:fencing_token()
  for _, step in ipairs({ { a, b }, { b, c } }) do
    local from, to = step[1], step[2]
    from:resign()
    check(not from:is_leader(), "%s still leads after resign", from.id)
    check(to:await_leader(20000), "%s did not take over", to.id)
    local t = to:fencing_token()
    check(t > prev, "token %s not above %s", tostring(t), tostring(prev))
    prev = t
  end
  check(not a:is_leader() and not b:is_leader() and c:is_leader(), "only jit-c must lead")
  a:close(); b:close(); c:close()
end)

test("events come in order", function()
  local path = fresh_path("events")
  local a, b = elector(path, "jit-a"), elector(path, "jit-b")
  check(a:next_event() == nil, "an event before volunteering")
  a:volunteer()
  local el = next_of(a, "ELECTED")
  check(el.id == "jit-a" and el.token > 0 and el.type_code == zk.EV_ELECTED,
        "ELECTED %s %s", el.id, tostring(el.token))
  b:volunteer()
  local fo = next_of(b, "FOLLOWING", "ELECTED")
  check(fo.type == "FOLLOWING" and fo.id == "jit-a", "jit-b: %s %s", fo.type, fo.id)
  a:resign()
  local dep = next_of(a, "DEPOSED", "RESIGNED")
  check(dep.type == "DEPOSED" and dep.reason == "resigned", "jit-a: first %s (%s)", dep.type,
        dep.reason)
  local res = next_of(a, "RESIGNED", "ELECTED", "DEPOSED")
  check(res.type == "RESIGNED", "jit-a: then %s", res.type)
  check(res.time_ns >= dep.time_ns, "times go backwards")
  local el2 = next_of(b, "ELECTED")
  check(el2.token > el.token, "token %s not above %s", tostring(el2.token), tostring(el.token))
  local fd = a:event_fd()
  check(type(fd) == "number" and fd >= 0 and a:event_fd() == fd, "event_fd %s", tostring(fd))
  -- wake ends a wait without an event
  a:wake()
  check(a:next_event(20000) == nil, "next_event after wake gave an event")
  a:close(); b:close()
end)

test("close releases the node", function()
  local path = fresh_path("close")
  local watcher = zk.connect{ hosts = hosts }
  local e = elector(path, "jit-closing")
  enroll(e)
  check(ids(watcher:participants(path)) == "jit-closing", "before close: %s",
        ids(watcher:participants(path)))
  e:close()
  check(ids(watcher:participants(path)) == "", "after close: %s", ids(watcher:participants(path)))
  e:close() -- a second close does nothing
  check(not e:is_leader(), "is_leader after close")
  watcher:close()
end)

test("gc resigns at once and frees at the next call", function()
  local path = fresh_path("gc")
  local watcher = zk.connect{ hosts = hosts }
  zk.collect()
  do
    local e = elector(path, "jit-collected")
    enroll(e)
  end
  check(ids(watcher:participants(path)) == "jit-collected", "before collection")
  collectgarbage("collect")
  collectgarbage("collect")
  -- The finalizer only resigned (non-blocking); the handles wait for the
  -- next call that may block, or zk.collect().
  check(zk.collect() >= 2, "collect() freed nothing (election and client expected)")
  check(ids(watcher:participants(path)) == "", "after collection: %s",
        ids(watcher:participants(path)))
  check(zk.collect() == 0, "a second collect() freed something")
  watcher:close()
end)

test("a collected follower leaves the queue and the next in line leads", function()
  local path = fresh_path("gcqueue")
  local a = elector(path, "jit-a")
  enroll(a)
  do
    local b = elector(path, "jit-b")
    enroll(b)
  end
  local c = elector(path, "jit-c")
  enroll(c)
  collectgarbage("collect")
  collectgarbage("collect")
  a:resign()
  check(c:await_leader(20000), "jit-c did not lead after jit-a resigned and jit-b was collected")
  a:close(); c:close()
end)

test("observer reports the leader", function()
  local path = fresh_path("observer")
  local e = elector(path, "jit-observed")
  enroll(e)
  local c = zk.connect{ hosts = hosts }
  local o = c:observer(path)
  local ev = next_of(o, "LEADER_CHANGED")
  check(ev.id == "jit-observed" and ev.token > 0, "LEADER_CHANGED %s", ev.id)
  e:resign()
  ev = next_of(o, "LEADER_CHANGED")
  check(ev.id == "" and ev.token == 0, "after resign: %s", ev.id)
  c:close(); e:close()
  local err = catch(o.next_event, o)
  check(err.code == zk.ECLOSED, "observer after its client closed: %s", err.name)
end)

test("closing an elector's own client closes both, without an error", function()
  local path = fresh_path("ownclient")
  local e = elector(path, "jit-own")
  enroll(e)
  local ok, err = pcall(function() e:client():close() end)
  check(ok, "client():close() raised %s", tostring(err))
  err = catch(e.volunteer, e)
  check(err.code == zk.ECLOSED, "volunteer after the client closed gave %s", err.name)
end)

test("timeouts accept any number and saturate", function()
  local path = fresh_path("timeouts")
  local a, b = elector(path, "jit-a"), elector(path, "jit-b")
  enroll(a); enroll(b)
  check(b:await_leader(1e2) == false, "await_leader(1e2) of a follower")
  check(b:await_leader(0.5) == false, "await_leader(0.5) of a follower")
  check(b:next_event(1e2) == nil, "next_event(1e2) on a quiet queue")
  a:close()
  -- 2^32 ms must not wrap into "do not wait": the ELECTED that follows a's
  -- leaving must be waited for.
  local ev = b:next_event(2 ^ 32)
  while ev and ev.type ~= "ELECTED" do ev = b:next_event(2 ^ 32) end
  check(ev and ev.type == "ELECTED", "next_event(2^32) gave %s", ev and ev.type)
  check(b:await_leader(2 ^ 40) == true, "await_leader(2^40) of the leader")
  check(b:client():await_connected(2 ^ 40) == true, "await_connected(2^40)")
  b:close()
end)

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

test("stats of an elector and its client", function()
  local path = fresh_path("stats")
  local e = elector(path, "jit-stats")
  enroll(e)
  local st = e:stats()
  check(type(st) == "string" and st:find('"state":"leader"', 1, true)
        and st:find('"is_leader":true', 1, true), "elector stats: %s", tostring(st))
  check(st:find('"token":' .. string.format("%d", e:fencing_token()) .. ",", 1, true),
        "elector stats lack the token: %s", st)
  local cst = e:client():stats()
  check(cst:find('"counters":{"terms_won":1,', 1, true), "client stats: %s", cst)
  e:close()
  local err = catch(e.stats, e)
  check(err.code == zk.ECLOSED, "stats after close gave %s", err.name)
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

local wanted = {}
for _, name in ipairs(arg) do wanted[name] = true end
local ran, failed = 0, 0
for _, name in ipairs(order) do
  if (next(wanted) and wanted[name]) or (not next(wanted) and not only_named[name]) then
    ran = ran + 1
    local ok, err = xpcall(tests[name], debug.traceback)
    if ok then
      print("ok " .. name)
    else
      failed = failed + 1
      print("FAIL " .. name .. ": " .. tostring(err))
    end
  end
end
print(string.format("passed %d/%d", ran - failed, ran))
io.stdout:flush()
if failed > 0 then os.exit(1) end
-- falling off the end: luajit closes the state (finalizers run)
