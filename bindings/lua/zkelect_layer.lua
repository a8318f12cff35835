-- zkelect_layer.lua - the idiomatic Lua layer of libzkelect.
--
-- Built into zkelect.so (not a module of its own, hence the name, which
-- "require" cannot mistake for the module): the build embeds this file, and the module's
-- loader runs it with the table of raw SWIG functions (one per C function,
-- prefix removed) as its argument, so `require "zkelect"` gives both.
--
-- Objects here own their raw handles and free them in a fixed order
-- (elections and observers before their client), from close(), from a
-- to-be-closed variable (local e <close> = ...) or, for objects nobody
-- closed, after __gc (see "Collected handles" below). Errors are
-- raised as tables {code=, name=, message=} (see lua.i); the calls whose
-- "no" is an ordinary answer (await_leader timing out, no leader, not
-- leading) return false or nil instead.

local M = ...

local raw = {}
for k, v in pairs(M) do raw[k] = v end

-- Every error this module raises, from C or from this layer, is made by
-- lua.i's push_error and shares its metatable.
local error_mt = getmetatable(raw.make_error(M.EINVAL, ""))

-- true when v is an error raised by this module (a pcall's second result).
function M.is_error(v) return type(v) == "table" and getmetatable(v) == error_mt end

local function code_of(err)
  return type(err) == "table" and err.code or nil
end

-- Run f(...); an error whose code is one of `codes` becomes `nil`.
local function unless(codes, f, ...)
  local ok, res = pcall(f, ...)
  if ok then return res end
  local c = code_of(res)
  for _, want in ipairs(codes) do
    if c == want then return nil end
  end
  error(res, 0)
end

---------------------------------------------------------------------------
-- Collected handles
--
-- __gc runs at whatever allocation triggers the collector, so it must not
-- block, and a destroy may wait for ZooKeeper for up to the session
-- timeout. A collected elector is only resigned there (non-blocking: it
-- stops leading and its node is deleted in the background), and its
-- handles wait in `graveyard` until the next call of this module that may
-- block anyway (connect, close, awaits, next_event, queries), an explicit
-- zkelect.collect(), or the closing of the Lua state, whichever comes
-- first. Elections and observers are destroyed before clients.

local graveyard = {}

local function bury(kind, h)
  raw.disown(h)
  graveyard[#graveyard + 1] = { kind, h }
end

local destroyers = {
  election = raw.election_destroy,
  observer = raw.observer_destroy,
  client = raw.client_destroy,
}

-- Destroy the buried handles; returns how many were freed. A client still
-- refused (ESTATE: handles the layer does not know of) is kept for later.
local function collect()
  if #graveyard == 0 then return 0 end
  local list = graveyard
  graveyard = {}
  local freed = 0
  for _, clients in ipairs({ false, true }) do
    for _, g in ipairs(list) do
      if (g[1] == "client") == clients then
        local ok, err = pcall(destroyers[g[1]], g[2])
        if ok then
          freed = freed + 1
        elseif code_of(err) == M.ESTATE then
          bury(g[1], g[2])
        end
      end
    end
  end
  return freed
end
M.collect = collect

-- Frees what is still buried when the Lua state closes: made before any
-- handle, so finalized after them all.
M._graveyard_keeper = setmetatable({}, { __gc = function() collect() end })

local INT_MAX = 2147483647

-- A timeout in ms for the C API: nil gives `default`; negative, infinite or
-- past C's int (24.8 days) means no limit (-1); a fraction rounds up.
local function timeout_ms(t, default)
  if t == nil then return default end
  if type(t) ~= "number" then
    error(raw.make_error(M.EINVAL, "timeout must be a number of ms, not " .. type(t)), 3)
  end
  if t ~= t then error(raw.make_error(M.EINVAL, "timeout is NaN"), 3) end
  if t < 0 or t > INT_MAX then return -1 end
  return math.ceil(t)
end

-- Friendly option names; keys with a dot are libzkelect's own and passed to
-- zkelect_conf_set as they are; any other key is a mistake and an error.
local option_keys = {
  hosts = "zk.hosts",
  session_timeout_ms = "zk.session.timeout.ms",
  connect_timeout_ms = "zk.connect.timeout.ms",
  auth = "zk.auth",
  acl = "election.acl",
  leadership = "leadership",
  lease_margin_ms = "lease.margin.ms",
  log_level = "zk.log.level",
}

local function make_conf(opts)
  local conf = raw.conf_new()
  local ok, err = pcall(function()
    for k, v in pairs(opts) do
      local key = option_keys[k] or (type(k) == "string" and k:find(".", 1, true) and k)
      if not key then
        error(raw.make_error(M.EINVAL, string.format(
          "unknown option %q (options: hosts, session_timeout_ms, connect_timeout_ms, auth, "
          .. "acl, leadership, lease_margin_ms, log_level, or a libzkelect key such as "
          .. "\"zk.session.timeout.ms\")", tostring(k))), 0)
      end
      raw.conf_set(conf, key, tostring(v))
    end
  end)
  if not ok then
    raw.conf_destroy(conf)
    error(err, 0)
  end
  return conf
end

local function event_table(ev)
  local t = raw.event_type(ev)
  local e = {
    type = raw.event_type_name(t),
    type_code = t,
    reason = raw.reason_name(raw.event_reason(ev)),
    token = raw.event_token(ev),
    error = raw.event_error(ev),
    zk_rc = raw.event_zk_rc(ev),
    message = raw.event_message(ev),
    node = raw.event_node(ev),
    id = raw.event_id(ev),
    time_ns = raw.event_time_ns(ev),
  }
  if e.error ~= 0 then e.error_name = raw.err_name(e.error) end
  raw.event_destroy(ev)
  return e
end

local function participants_list(p)
  local list = {}
  for i = 0, raw.participants_count(p) - 1 do
    list[#list + 1] = {
      id = raw.participants_id(p, i),
      node = raw.participants_node(p, i),
      token = raw.participants_token(p, i),
      ctime_ms = raw.participants_ctime_ms(p, i),
    }
  end
  raw.participants_destroy(p)
  return list
end

-- A snapshot's JSON text; the snapshot is freed at once.
local function stats_json(s)
  local json = raw.stats_json(s)
  raw.stats_destroy(s)
  return json
end

local function closed_error(what)
  error(raw.make_error(M.ECLOSED, what .. " is closed"), 3)
end

---------------------------------------------------------------------------
-- Client: one ZooKeeper session

local Client = {}
Client.__index = Client

function M.connect(opts)
  assert(type(opts) == "table", "zkelect.connect: options table expected")
  collect()
  local conf = make_conf(opts)
  local ok, c = pcall(raw.client_new, conf)
  raw.conf_destroy(conf)
  if not ok then error(c, 0) end
  return setmetatable({ _h = c, _children = setmetatable({}, { __mode = "k" }) }, Client)
end

function Client:_handle()
  if not self._h then closed_error("client") end
  return self._h
end

-- true when connected, false when timeout_ms ran out.
-- (nil or negative: zk.connect.timeout.ms, as in C).
function Client:await_connected(ms)
  collect()
  local t = timeout_ms(ms, -1)
  if t < 0 and ms ~= nil and ms >= 0 then t = INT_MAX end -- past C's int: saturate
  return unless({ M.ETIMEDOUT }, raw.client_await_connected, self:_handle(), t) ~= nil
end
function Client:is_connected() return raw.client_is_connected(self:_handle()) == 1 end
function Client:session_id() return raw.client_session_id(self:_handle()) end
function Client:session_timeout_ms() return raw.client_session_timeout_ms(self:_handle()) end

function Client:counter(which)
  local n = which
  if type(which) == "string" then
    for i = 0, M.COUNTER__COUNT - 1 do
      if raw.counter_name(i) == which then n = i end
    end
  end
  return raw.client_counter(self:_handle(), n)
end

function Client:counters()
  local t = {}
  for i = 0, M.COUNTER__COUNT - 1 do
    t[raw.counter_name(i)] = raw.client_counter(self:_handle(), i)
  end
  return t
end

-- The client's figures as a JSON object (a string): session, counters and
-- each elector's snapshot under "elections" (docs/monitoring.md). Since 1.2.
function Client:stats()
  collect()
  return stats_json(raw.client_stats(self:_handle()))
end

function Client:participants(path)
  collect()
  return participants_list(raw.client_participants(self:_handle(), path))
end

-- Closes the client's electors and observers, then the session. When the
-- library refuses (ESTATE: a handle made with the raw functions is still
-- open) the client stays open and usable, and the error is raised.
function Client:close()
  if not self._h or self._closing then return end
  collect()
  -- An elector that owns this client closes it when closed: _closing
  -- tells it this close is already under way.
  self._closing = true
  local ok, err = pcall(function()
    for child in pairs(self._children) do child:close() end
  end)
  self._closing = nil
  if not ok then error(err, 0) end
  raw.client_destroy(self._h)
  self._h = nil
end
Client.__close = Client.close
function Client:__gc()
  if self._h then
    bury("client", self._h)
    self._h = nil
  end
end

---------------------------------------------------------------------------
-- Elector: one candidacy

local Elector = {}
Elector.__index = Elector

local function new_elector(client, path, id, owns_client)
  collect()
  local h = raw.election_new(client:_handle(), path, id)
  local e = setmetatable({ _h = h, _client = client, _owns = owns_client, path = path, id = id },
                         Elector)
  client._children[e] = true
  return e
end

function Client:elector(path, id)
  return new_elector(self, path, id, false)
end

-- zkelect.elector{hosts=, path=, id=, ...}: an elector on a session of its own.
function M.elector(opts)
  assert(type(opts) == "table" and opts.path and opts.id,
         "zkelect.elector: {hosts=, path=, id=} expected")
  local rest = {}
  for k, v in pairs(opts) do
    if k ~= "path" and k ~= "id" then rest[k] = v end
  end
  local client = M.connect(rest)
  local ok, e = pcall(new_elector, client, opts.path, opts.id, true)
  if not ok then
    client:close()
    error(e, 0)
  end
  return e
end

function Elector:_handle()
  if not self._h then closed_error("elector") end
  return self._h
end

function Elector:volunteer() raw.volunteer(self:_handle()) end
function Elector:resign() raw.resign(self:_handle()) end
function Elector:is_leader() return self._h ~= nil and raw.is_leader(self._h) == 1 end

-- true once leading, false when timeout_ms ran out (nil, < 0 or past 24.8
-- days: no limit; any number of ms, 1e3 and 0.5 included).
function Elector:await_leader(ms)
  collect()
  return unless({ M.ETIMEDOUT }, raw.await_leader, self:_handle(), timeout_ms(ms, -1)) ~= nil
end

-- The next event as a table, or nil when timeout_ms (nil or 0: none, < 0:
-- no limit) ran out or wake() was called.
function Elector:next_event(ms)
  collect()
  local ev = raw.next_event(self:_handle(), timeout_ms(ms, 0))
  if ev == nil then return nil end
  return event_table(ev)
end

-- Readable while events wait (for poll loops such as luv or cqueues).
function Elector:event_fd() return raw.event_fd(self:_handle()) end
function Elector:wake() raw.wake(self:_handle()) end

-- The leader's participant id, or nil when nobody is a candidate.
function Elector:leader_id()
  collect()
  return unless({ M.ENOLEADER }, raw.leader_id, self:_handle())
end

-- The fencing token of this term, or nil when not leading.
function Elector:fencing_token()
  return unless({ M.ENOTLEADER }, raw.fencing_token, self:_handle())
end

function Elector:participants()
  collect()
  return participants_list(raw.participants(self:_handle()))
end

-- This elector's figures as a JSON object (a string): state, term, queue
-- position, losses, keepalive and failover histograms. Since 1.2.
function Elector:stats()
  collect()
  return stats_json(raw.election_stats(self:_handle()))
end

function Elector:client() return self._client end

function Elector:close()
  if not self._h then return end
  collect()
  local h = self._h
  self._h = nil
  self._client._children[self] = nil
  raw.election_destroy(h)
  if self._owns and not self._client._closing then self._client:close() end
end
Elector.__close = Elector.close
function Elector:__gc()
  if self._h then
    pcall(raw.resign, self._h) -- ESTATE when not a candidate: nothing to leave
    bury("election", self._h)
    self._h = nil
  end
end

---------------------------------------------------------------------------
-- Observer: who leads, without taking part

local Observer = {}
Observer.__index = Observer

function Client:observer(path)
  local o = setmetatable({ _h = raw.observer_new(self:_handle(), path), _client = self, path = path },
                         Observer)
  self._children[o] = true
  return o
end

function Observer:_handle()
  if not self._h then closed_error("observer") end
  return self._h
end

function Observer:next_event(ms)
  collect()
  local ev = raw.observer_next_event(self:_handle(), timeout_ms(ms, 0))
  if ev == nil then return nil end
  return event_table(ev)
end
function Observer:event_fd() return raw.observer_event_fd(self:_handle()) end
function Observer:wake() raw.observer_wake(self:_handle()) end

function Observer:close()
  if not self._h then return end
  collect()
  local h = self._h
  self._h = nil
  self._client._children[self] = nil
  raw.observer_destroy(h)
end
Observer.__close = Observer.close
function Observer:__gc()
  if self._h then
    bury("observer", self._h)
    self._h = nil
  end
end

M.Client, M.Elector, M.Observer = Client, Elector, Observer
M.VERSION = raw.version_string()

-- Every configuration key the library knows, in a fixed order (the keys
-- connect{} takes under its own names, and any other by its full name).
function M.config_keys()
  local keys = {}
  for i = 0, 1023 do -- bounded: the library knows a handful
    local k = raw.conf_key(i)
    if k == nil then break end
    keys[#keys + 1] = k
  end
  return keys
end
