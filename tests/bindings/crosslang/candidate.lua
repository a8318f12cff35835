-- The Lua candidate of the cross-language test (tests/bindings/test_crosslang.py),
-- on the Lua binding. Same request/response protocol as
-- bindings/rust/zkelect/examples/candidate.rs:
--
--   lua5.4 candidate.lua HOSTS PATH ID [KEY=VALUE...]   ->  READY
--   join | resign | await MS | leader? | who | events MS | counters | quit
--
-- Under LuaJIT it runs on the ffi module (zkelect.ffi, found through
-- LUA_PATH), which has the same layer.
local zkelect = require(jit and "zkelect.ffi" or "zkelect")

-- Lua 5.4 has integers; the ffi module gives 64-bit values as int64 cdata,
-- which tostring() shows with an LL suffix.
local function int(x)
  if math.tointeger then return math.tointeger(x) end
  return (tostring(x):gsub("U?LL$", ""))
end

local hosts, path, id = arg[1], arg[2], arg[3]
if not id then
  io.stderr:write("usage: candidate.lua HOSTS PATH ID [KEY=VALUE...]\n")
  os.exit(2)
end
io.stdout:setvbuf("line")

local opts = { hosts = hosts, session_timeout_ms = 6000 }
for i = 4, #arg do
  local k, v = arg[i]:match("^([^=]+)=(.*)$")
  opts[k] = v
end
local client = zkelect.connect(opts)
assert(client:await_connected(30000), "cannot connect to " .. hosts)
local e = client:elector(path, id)
print("READY")

local function describe(ev)
  if ev.type == "ELECTED" then return "EVENT ELECTED " .. int(ev.token) end
  if ev.type == "DEPOSED" then return "EVENT DEPOSED " .. ev.reason end
  if ev.type == "FOLLOWING" then return "EVENT FOLLOWING " .. ev.id end
  if ev.type == "WARNING" then return "EVENT WARNING " .. ev.message end
  return "EVENT " .. ev.type
end

local commands = {
  join = function() e:volunteer(); return "OK" end,
  resign = function() e:resign(); return "OK" end,
  await = function(ms)
    if not e:await_leader(ms) then return "TIMEOUT" end
    return "LEADER " .. int(e:fencing_token())
  end,
  ["leader?"] = function() return e:is_leader() and "IS 1" or "IS 0" end,
  who = function() return "LEADS " .. tostring(e:leader_id()) end,
  counters = function()
    local all, names = client:counters(), {}
    for name in pairs(all) do names[#names + 1] = name end
    table.sort(names)
    local out = { "COUNTERS" }
    for _, name in ipairs(names) do out[#out + 1] = name .. "=" .. int(all[name]) end
    return table.concat(out, " ")
  end,
  events = function(ms)
    local lines = {}
    local ev = e:next_event(ms)
    while ev do
      lines[#lines + 1] = describe(ev)
      ev = e:next_event(0)
    end
    lines[#lines + 1] = "END"
    return table.concat(lines, "\n")
  end,
}

for line in io.lines() do
  local cmd, ms = line:match("^(%S+)%s*(%d*)")
  if cmd == "quit" then break end
  if cmd then
    local f = commands[cmd]
    if not f then
      print("ERR unknown command " .. cmd)
    else
      local ok, res = pcall(f, tonumber(ms) or 0)
      print(ok and res or ("ERR " .. tostring(res)))
    end
  end
end
e:close()
client:close()
print("BYE")
