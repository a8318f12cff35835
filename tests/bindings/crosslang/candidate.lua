-- The Lua candidate of the cross-language test (tests/bindings/test_crosslang.py),
-- on the Lua binding. Same request/response protocol as
-- bindings/rust/zkelect/examples/candidate.rs:
--
--   lua5.4 candidate.lua HOSTS PATH ID   ->  READY
--   join | resign | await MS | leader? | who | events MS | counters | quit
local zkelect = require "zkelect"

local hosts, path, id = arg[1], arg[2], arg[3]
if not id then
  io.stderr:write("usage: candidate.lua HOSTS PATH ID\n")
  os.exit(2)
end
io.stdout:setvbuf("line")

local client = zkelect.connect { hosts = hosts, session_timeout_ms = 6000 }
assert(client:await_connected(30000), "cannot connect to " .. hosts)
local e = client:elector(path, id)
print("READY")

local function describe(ev)
  if ev.type == "ELECTED" then return "EVENT ELECTED " .. math.tointeger(ev.token) end
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
    return "LEADER " .. math.tointeger(e:fencing_token())
  end,
  ["leader?"] = function() return e:is_leader() and "IS 1" or "IS 0" end,
  who = function() return "LEADS " .. tostring(e:leader_id()) end,
  counters = function()
    local all, names = client:counters(), {}
    for name in pairs(all) do names[#names + 1] = name end
    table.sort(names)
    local out = { "COUNTERS" }
    for _, name in ipairs(names) do out[#out + 1] = name .. "=" .. math.tointeger(all[name]) end
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
