-- Tests of the Lua 5.4 module (the one layer over SWIG's back end) against
-- a real ZooKeeper ensemble.
--
--   ZKELECT_TEST_HOSTS=host:port,... LUA_CPATH="<dir of zkelect.so>/?.so;;" lua5.4 test_zkelect.lua
--
-- (tests/bindings/test_lua.py builds the module and runs this.) The layer's
-- own tests are bindings/luajit/layer_tests.lua, shared with LuaJIT; these
-- add what only this back end has. Exits non-zero when anything failed or
-- the ensemble is not named.

local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."
local zkelect = require "zkelect"
local kit = dofile(here .. "/../luajit/layer_tests.lua")(zkelect, {
  prefix = "lua",
  is_int = function(v) return math.type(v) == "integer" end,
})
local test, check, catch, enroll, ids = kit.test, kit.check, kit.catch, kit.enroll, kit.ids
local hosts, fresh_path, elector = kit.hosts, kit.fresh_path, kit.elector

test("to-be-closed variable releases the node", function()
  local path = fresh_path("tbc")
  local watcher = zkelect.connect{ hosts = hosts }
  do
    local e <close> = elector(path, "lua-scoped")
    enroll(e)
    check(ids(watcher:participants(path)) == "lua-scoped", "inside the scope")
  end
  check(ids(watcher:participants(path)) == "", "after the scope: %s", ids(watcher:participants(path)))
  watcher:close()
end)

test("a client whose close is refused stays usable and is closed later", function()
  local c = zkelect.connect{ hosts = hosts }
  -- A raw election the layer does not know of: the client's destroy is
  -- refused (ESTATE) and must not lose the handle.
  local raw_e = zkelect.election_new(c._h, fresh_path("estate"), "raw")
  local err = catch(c.close, c)
  check(err.code == zkelect.ESTATE, "close gave %s", err.name)
  check(math.type(c:session_id()) == "integer", "the client is unusable after a refused close")
  zkelect.election_destroy(raw_e)
  c:close()
  err = catch(c.session_id, c)
  check(err.code == zkelect.ECLOSED, "after close: %s", err.name)
end)

test("a failure that returns only a code carries the library's detail", function()
  local c <close> = zkelect.connect{ hosts = hosts }
  local path = fresh_path("nocandidate")
  local e <close> = c:elector(path, "idle")
  local err = catch(zkelect.leader_id, e._h)
  check(err.code == zkelect.ENOLEADER and err.message:find("no candidate under " .. path, 1, true),
        "leader_id: %s", tostring(err))
end)

os.exit(kit.run() == 0 and 0 or 1)
