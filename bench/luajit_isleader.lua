-- Cost of is_leader() from LuaJIT through zkelect.ffi: ns of thread CPU
-- time per call, median of repeats, on a leading and on a following
-- candidacy; beside it the same loop on the raw FFI call (no method, no
-- table lookup) and on an empty loop. The C figure is bench/isleader.c's.
--
--   ZKELECT_LIBRARY=<build>/capi/libzkelect.so.1 LUA_PATH="bindings/luajit/?.lua;;" \
--     luajit bench/luajit_isleader.lua HOSTS [CALLS] [REPEATS]
-- Prints one JSON object on stdout.

local ffi = require "ffi"
local zk = require "zkelect.ffi"

ffi.cdef [[
struct zkelect_bench_timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk, struct zkelect_bench_timespec *ts);
]]
local CLOCK_THREAD_CPUTIME_ID = 3
local ts = ffi.new("struct zkelect_bench_timespec")
local function cpu_ns()
  ffi.C.clock_gettime(CLOCK_THREAD_CPUTIME_ID, ts)
  return tonumber(ts.tv_sec) * 1e9 + tonumber(ts.tv_nsec)
end

local hosts = assert(arg[1], "usage: luajit_isleader.lua HOSTS [CALLS] [REPEATS]")
local calls = tonumber(arg[2] or 1000000)
local repeats = tonumber(arg[3] or 7)

local path = string.format("/zkelect_bench_luajit_isleader_%d", math.random(1, 2 ^ 30))
local client = zk.connect{ hosts = hosts }
local lead = client:elector(path, "leader")
local fol = client:elector(path, "follower")
lead:volunteer()
assert(lead:await_leader(30000), "the leader did not lead")
fol:volunteer()
for _ = 1, 300 do
  local ev = fol:next_event(100)
  if ev and ev.type == "FOLLOWING" then break end
end

local C = zk.load()

-- Each loop sums its answers so the work has a result the JIT must keep.
local loops = {
  method = function(e, n)
    local sum = 0
    for _ = 1, n do if e:is_leader() then sum = sum + 1 end end
    return sum
  end,
  raw = function(e, n)
    local h, sum = e._h, 0
    for _ = 1, n do sum = sum + C.zkelect_is_leader(h) end
    return sum
  end,
  empty = function(e, n)
    local sum = 0
    for i = 1, n do sum = sum + (i > 0 and 1 or 0) end
    return sum
  end,
}

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) / 2] or (t[n / 2] + t[n / 2 + 1]) / 2
end

local function measure(kind, e, expect)
  local per = {}
  loops[kind](e, 1000) -- warm: let the loop be compiled before it counts
  for r = 1, repeats do
    local t0 = cpu_ns()
    local sum = loops[kind](e, calls)
    local t1 = cpu_ns()
    if kind ~= "empty" and sum ~= expect then
      error(string.format("%s: %d leader answers, %d expected", kind, sum, expect))
    end
    per[r] = (t1 - t0) / calls
  end
  return median(per)
end

local runs = {}
for _, kind in ipairs({ "method", "raw" }) do
  for _, role in ipairs({ "leader", "follower" }) do
    local e = role == "leader" and lead or fol
    local ns = measure(kind, e, role == "leader" and calls or 0)
    runs[#runs + 1] = string.format('{"call": "%s", "role": "%s", "ns_per_call_median": %.3f}',
                                    kind, role, ns)
    io.stderr:write(string.format("is_leader %-6s %-8s %.2f ns/call\n", kind, role, ns))
  end
end
local empty = measure("empty", lead, 0)
io.stderr:write(string.format("empty loop            %.2f ns/iteration\n", empty))

print(string.format('{"jit": "%s", "calls": %d, "repeats": %d, "empty_loop_ns": %.3f, "runs": [%s]}',
                    jit.version, calls, repeats, empty, table.concat(runs, ", ")))
fol:close()
lead:close()
client:close()
