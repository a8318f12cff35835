-- zkelect.ffi - libzkelect for LuaJIT through its FFI (OpenResty, nginx
-- with lua-nginx-module, plain luajit).
--
--   local zk = require "zkelect.ffi"
--   local e = zk.elector{ hosts = "127.0.0.1:2181", path = "/svc/leader", id = "web-1" }
--   e:volunteer()
--   if e:is_leader() then ... end
--
-- Pure Lua: the C API is declared below with ffi.cdef (tests/bindings/
-- test_luajit_cdef.py compiles these declarations against zkelect.h, so
-- the two cannot drift) and libzkelect.so.1 is loaded with ffi.load on
-- first use. The same verbs and errors as the Lua 5.4 module (`require
-- "zkelect"`, bindings/lua): errors are tables {code=, name=, message=}
-- that print as "ZKELECT_ESTATE: message"; the calls whose "no" is an
-- ordinary answer (await_leader timing out, no leader, not leading) return
-- false or nil instead.
--
-- Blocking. A few calls wait for ZooKeeper or for the library's threads
-- and must stay out of an nginx request handler or timer (they would stall
-- every connection of the worker):
--   client:await_connected, elector:await_leader, elector:leader_id,
--   elector:participants, client:participants, next_event(ms) with ms ~= 0,
--   close (an elector's waits for its node's deletion, at most the session
--   timeout; a client's joins its threads), zk.collect; and zk.connect /
--   zk.elector when zk.hosts names hosts rather than IP addresses (the
--   ZooKeeper client resolves them on the calling thread).
-- Everything else returns at once: connect/client/elector with IP
-- addresses (they do not wait for the connection, and never destroy
-- collected handles), client:elector, volunteer, resign, is_leader
-- (lock-free, tens of ns), fencing_token, event_fd, wake, next_event(0) or
-- next_event() (never waits), is_connected, session_id, counters, stats.
-- The garbage collector never blocks either: see "Collected handles".

local ffi = require "ffi"
local bit = require "bit"

local M = {}

-- Every declaration of the C API this module calls, as zkelect.h has it
-- (less ZKELECT_API and the comments). The enums are Lua constants below
-- rather than cdef enums, so the cdef can be compiled after the header
-- without redefining them.
M._cdef = [[
typedef struct zkelect_conf zkelect_conf_t;
typedef struct zkelect_client zkelect_client_t;
typedef struct zkelect_election zkelect_election_t;
typedef struct zkelect_observer zkelect_observer_t;
typedef struct zkelect_event zkelect_event_t;
typedef struct zkelect_participants zkelect_participants_t;
typedef struct zkelect_stats zkelect_stats_t;

const char *zkelect_strerror(int code);
const char *zkelect_err_name(int code);
const char *zkelect_last_error(void);
unsigned zkelect_version(void);
const char *zkelect_version_string(void);

zkelect_conf_t *zkelect_conf_new(void);
int zkelect_conf_set(zkelect_conf_t *conf, const char *key, const char *value,
                     char *errbuf, size_t errlen);
void zkelect_conf_destroy(zkelect_conf_t *conf);
const char *zkelect_conf_key(size_t index);

zkelect_client_t *zkelect_client_new(const zkelect_conf_t *conf, char *errbuf, size_t errlen);
int zkelect_client_destroy(zkelect_client_t *client);
int zkelect_client_await_connected(zkelect_client_t *client, int timeout_ms);
int zkelect_client_is_connected(const zkelect_client_t *client);
int zkelect_client_session_timeout_ms(const zkelect_client_t *client);
int64_t zkelect_client_session_id(const zkelect_client_t *client);
int zkelect_client_counter(const zkelect_client_t *client, int counter, uint64_t *value);
const char *zkelect_counter_name(int counter);

zkelect_election_t *zkelect_election_new(zkelect_client_t *client, const char *path,
                                         const char *participant_id, char *errbuf,
                                         size_t errlen);
int zkelect_election_destroy(zkelect_election_t *election);
int zkelect_volunteer(zkelect_election_t *election);
int zkelect_resign(zkelect_election_t *election);
int zkelect_is_leader(const zkelect_election_t *election);
int zkelect_await_leader(zkelect_election_t *election, int timeout_ms);
int zkelect_fencing_token(const zkelect_election_t *election, int64_t *token);
int zkelect_leader_id(zkelect_election_t *election, char *buf, size_t len);
zkelect_participants_t *zkelect_participants(zkelect_election_t *election, char *errbuf,
                                             size_t errlen);
zkelect_participants_t *zkelect_client_participants(zkelect_client_t *client,
                                                    const char *path, char *errbuf,
                                                    size_t errlen);
size_t zkelect_participants_count(const zkelect_participants_t *p);
const char *zkelect_participants_id(const zkelect_participants_t *p, size_t i);
const char *zkelect_participants_node(const zkelect_participants_t *p, size_t i);
int64_t zkelect_participants_token(const zkelect_participants_t *p, size_t i);
int64_t zkelect_participants_ctime_ms(const zkelect_participants_t *p, size_t i);
void zkelect_participants_destroy(zkelect_participants_t *p);

zkelect_stats_t *zkelect_election_stats(zkelect_election_t *election, char *errbuf,
                                        size_t errlen);
zkelect_stats_t *zkelect_client_stats(zkelect_client_t *client, char *errbuf, size_t errlen);
const char *zkelect_stats_json(const zkelect_stats_t *stats);
void zkelect_stats_destroy(zkelect_stats_t *stats);

zkelect_event_t *zkelect_next_event(zkelect_election_t *election, int timeout_ms);
int zkelect_event_fd(zkelect_election_t *election);
int zkelect_wake(zkelect_election_t *election);
int zkelect_event_type(const zkelect_event_t *event);
int zkelect_event_reason(const zkelect_event_t *event);
int64_t zkelect_event_token(const zkelect_event_t *event);
int zkelect_event_error(const zkelect_event_t *event);
int zkelect_event_zk_rc(const zkelect_event_t *event);
const char *zkelect_event_message(const zkelect_event_t *event);
const char *zkelect_event_node(const zkelect_event_t *event);
const char *zkelect_event_id(const zkelect_event_t *event);
int64_t zkelect_event_time_ns(const zkelect_event_t *event);
const char *zkelect_event_type_name(int type);
const char *zkelect_reason_name(int reason);
void zkelect_event_destroy(zkelect_event_t *event);

zkelect_observer_t *zkelect_observer_new(zkelect_client_t *client, const char *path,
                                         char *errbuf, size_t errlen);
zkelect_event_t *zkelect_observer_next_event(zkelect_observer_t *observer, int timeout_ms);
int zkelect_observer_event_fd(zkelect_observer_t *observer);
int zkelect_observer_wake(zkelect_observer_t *observer);
int zkelect_observer_destroy(zkelect_observer_t *observer);
]]
ffi.cdef(M._cdef)

-- The header's constants (checked against it by the same test).
M._constants = {
  -- BEGIN gen/vocab.py constants
  OK = 0,
  EINVAL = -1,
  ENOMEM = -2,
  ESTATE = -3,
  ECLOSED = -4,
  ETIMEDOUT = -5,
  ECONNLOSS = -6,
  ESESSION_EXPIRED = -7,
  EAUTH = -8,
  ENOTSUP = -9,
  EDEADLK = -10,
  EZK = -11,
  EINTERNAL = -12,
  ENOLEADER = -13,
  ERANGE = -14,
  ENOTLEADER = -15,
  EV_ELECTED = 1,
  EV_DEPOSED = 2,
  EV_FOLLOWING = 3,
  EV_SUSPENDED = 4,
  EV_RECONNECTED = 5,
  EV_EXPIRED = 6,
  EV_LEADER_CHANGED = 7,
  EV_ERROR = 8,
  EV_RESIGNED = 9,
  EV_OVERFLOW = 10,
  EV_WARNING = 11,
  REASON_NONE = 0,
  REASON_RESIGNED = 1,
  REASON_SUSPENDED = 2,
  REASON_LEASE_ENDED = 3,
  REASON_EXPIRED = 4,
  REASON_NODE_DELETED = 5,
  REASON_CLOSED = 6,
  COUNTER_TERMS_WON = 0,
  COUNTER_DEPOSED_RESIGNED = 1,
  COUNTER_DEPOSED_SUSPENDED = 2,
  COUNTER_DEPOSED_LEASE_ENDED = 3,
  COUNTER_DEPOSED_EXPIRED = 4,
  COUNTER_DEPOSED_NODE_DELETED = 5,
  COUNTER_DEPOSED_CLOSED = 6,
  COUNTER_RECONNECTS = 7,
  COUNTER_EXPIRIES = 8,
  COUNTER_ZK_REQUESTS = 9,
  COUNTER_KEEPALIVES = 10,
  COUNTER_SEQUENCE_NEAR_WRAP = 11,
  COUNTER__COUNT = 12,
  -- END gen/vocab.py constants
  ID_MAX = 1024,
}
for k, v in pairs(M._constants) do M[k] = v end

-- The library: loaded by M.load(path) or on first use, from
-- $ZKELECT_LIBRARY when set (a build tree's capi/libzkelect.so.1), else
-- "libzkelect.so.1" found the usual way (ld.so.cache, LD_LIBRARY_PATH).
-- Under nginx, os.getenv sees only the variables named by `env`
-- directives; zk.load(path) in init_worker_by_lua needs none.
local C

-- 1.1 brought zkelect_last_error, which the errors below read (hence
-- lua-zkelect's Depends: libzkelect1 (>= 1.1.0) in debian/control).
local MIN_VERSION = 0x010100

function M.load(path)
  if C then return C end
  path = path or os.getenv("ZKELECT_LIBRARY") or "libzkelect.so.1"
  local lib = ffi.load(path)
  local v = lib.zkelect_version()
  if bit.rshift(v, 16) ~= 1 or v < MIN_VERSION then
    error(string.format("zkelect.ffi: %s is libzkelect %s; 1.x from 1.1.0 is needed",
                        path, ffi.string(lib.zkelect_version_string())), 2)
  end
  C = lib
  M.VERSION = ffi.string(lib.zkelect_version_string())
  return C
end

local function lib()
  return C or M.load()
end

---------------------------------------------------------------------------
-- Errors

local Error = {}
Error.__index = Error
Error.__tostring = function(e) return e.name .. ": " .. e.message end

local function make_error(code, message)
  local c = lib()
  return setmetatable({ code = code, name = ffi.string(c.zkelect_err_name(code)),
                        message = message }, Error)
end
M.make_error = make_error

function M.is_error(v) return getmetatable(v) == Error end

local function raise(code, message, level)
  error(make_error(code, message), (level or 1) + 1)
end

-- The message of a failure that returned `code`: the library's own (this
-- thread's zkelect_last_error) when it is about this code, else the
-- code's description. A finalizer that ran in between may have replaced
-- the last error, hence the check of its name.
local function message_of(code)
  local c = lib()
  local name = ffi.string(c.zkelect_err_name(code))
  local last = ffi.string(c.zkelect_last_error())
  if last:sub(1, #name + 2) == name .. ": " then return last:sub(#name + 3) end
  return ffi.string(c.zkelect_strerror(code))
end

local function check(rc, level)
  if rc < 0 then raise(rc, message_of(rc), (level or 1) + 1) end
  return rc
end

local ERRLEN = 512

-- The code of a constructor's NULL, read from its errbuf by the rule every
-- binding follows (bindings/README.md, "Error codes"): "ZKELECT_<NAME>:
-- text" is that code (the prefix dropped), "out of memory" ENOMEM,
-- "internal error" EINTERNAL, anything else `fallback`.
local codes_by_name
local function raise_from_errbuf(buf, fallback, level)
  local msg = ffi.string(buf)
  if not codes_by_name then
    codes_by_name = {}
    for code = -1, -64, -1 do
      local n = ffi.string(C.zkelect_err_name(code))
      if n == "ZKELECT_EUNKNOWN" then break end
      codes_by_name[n] = code
    end
  end
  local name, rest = msg:match("^(ZKELECT_E[%u_]+): (.*)$")
  local code = name and codes_by_name[name]
  if code then
    msg = rest
  elseif msg == "out of memory" then
    code = M.ENOMEM
  elseif msg == "internal error" then
    code = M.EINTERNAL
  else
    code = fallback
  end
  if msg == "" then msg = ffi.string(C.zkelect_strerror(code)) end
  raise(code, msg, (level or 1) + 1)
end

-- A string argument for C: a NUL byte would cut it short unseen.
local function cstring(v, what, level)
  if type(v) ~= "string" then
    raise(M.EINVAL, what .. " must be a string, not " .. type(v), (level or 1) + 1)
  end
  if v:find("\0", 1, true) then
    raise(M.EINVAL, what .. " holds a NUL byte", (level or 1) + 1)
  end
  return v
end

local INT_MAX = 2147483647

-- A timeout in ms for the C API: nil gives `default`; negative, infinite
-- or past C's int (24.8 days) means no limit (-1); a fraction rounds up.
local function timeout_ms(t, default)
  if t == nil then return default end
  if type(t) ~= "number" then
    raise(M.EINVAL, "timeout must be a number of ms, not " .. type(t), 3)
  end
  if t ~= t then raise(M.EINVAL, "timeout is NaN", 3) end
  if t < 0 or t > INT_MAX then return -1 end
  return math.ceil(t)
end

local function closed_error(what)
  raise(M.ECLOSED, what .. " is closed", 3)
end

---------------------------------------------------------------------------
-- Collected handles
--
-- A finalizer runs at whatever allocation triggers the collector, in a
-- request handler as anywhere, so it must not block, and a destroy may
-- wait for ZooKeeper for up to the session timeout. A collected elector is
-- only resigned there (non-blocking: it stops leading at once and its node
-- is deleted in the background); its handle, and a collected client's,
-- wait in `graveyard` until the next call of this module that blocks
-- anyway (close, awaits, queries, next_event with a timeout) or
-- zk.collect(). Not zk.connect: it must return at once under nginx, and a
-- destroy may wait up to the session timeout. Elections and observers are
-- destroyed before clients.
--
-- When the Lua state closes (an nginx worker exiting, luajit ending) every
-- finalizer runs, in no set order: the keeper's finalizer then marks the
-- state as closing, after which finalizers destroy at once (blocking is
-- harmless then), a client whose children are not yet destroyed waiting
-- in `pending_clients` for the last of them.

local graveyard = {}
local state_closing = false
local pending_clients = {}

local function destroy_child(kind, h)
  if kind == "election" then
    C.zkelect_election_destroy(h)
  else
    C.zkelect_observer_destroy(h)
  end
end

-- Destroys the clients that were refused for children still open.
local function retry_pending_clients()
  for i = #pending_clients, 1, -1 do
    if C.zkelect_client_destroy(pending_clients[i]) ~= M.ESTATE then
      table.remove(pending_clients, i)
    end
  end
end

local function collect()
  if #graveyard == 0 and #pending_clients == 0 then return 0 end
  local list = graveyard
  graveyard = {}
  local freed = 0
  for _, g in ipairs(list) do
    if g[1] ~= "client" then
      destroy_child(g[1], g[2])
      freed = freed + 1
    end
  end
  for _, g in ipairs(list) do
    if g[1] == "client" then
      local rc = C.zkelect_client_destroy(g[2])
      if rc == M.ESTATE then
        -- a child not finalized yet: only while the state closes (a
        -- child keeps its client object alive otherwise); destroyed
        -- after the last child's finalizer
        if state_closing then
          pending_clients[#pending_clients + 1] = g[2]
        else
          graveyard[#graveyard + 1] = g
        end
      else
        freed = freed + 1
      end
    end
  end
  retry_pending_clients()
  return freed
end

-- Destroys what the collector left; returns how many handles it freed.
-- Blocks (see the top of this file).
function M.collect() return collect() end

local function bury(kind, h)
  if state_closing then
    if kind == "client" then
      if C.zkelect_client_destroy(h) == M.ESTATE then
        pending_clients[#pending_clients + 1] = h
      end
    else
      destroy_child(kind, h)
      retry_pending_clients()
    end
    return
  end
  graveyard[#graveyard + 1] = { kind, h }
end

local function finalize_election(h)
  C.zkelect_resign(h) -- ESTATE when not a candidate: nothing to leave
  bury("election", h)
end
local function finalize_observer(h) bury("observer", h) end
local function finalize_client(h) bury("client", h) end

M._keeper = ffi.gc(ffi.new("char[1]"), function()
  state_closing = true
  if C then collect() end
end)

---------------------------------------------------------------------------
-- Options

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
  local c = lib()
  local conf = c.zkelect_conf_new()
  if conf == nil then raise(M.ENOMEM, "out of memory", 3) end
  conf = ffi.gc(conf, c.zkelect_conf_destroy)
  local errbuf = ffi.new("char[?]", ERRLEN)
  for k, v in pairs(opts) do
    local key = option_keys[k] or (type(k) == "string" and k:find(".", 1, true) and k)
    if not key then
      raise(M.EINVAL, string.format(
        "unknown option %q (options: hosts, session_timeout_ms, connect_timeout_ms, auth, "
        .. "acl, leadership, lease_margin_ms, log_level, or a libzkelect key such as "
        .. "\"zk.session.timeout.ms\")", tostring(k)), 3)
    end
    local value = cstring(tostring(v), "option " .. key, 3)
    errbuf[0] = 0
    local rc = c.zkelect_conf_set(conf, key, value, errbuf, ERRLEN)
    if rc < 0 then
      local msg = ffi.string(errbuf)
      if msg == "" then msg = message_of(rc) end
      raise(rc, msg, 3)
    end
  end
  return conf
end

local function event_table(ev)
  local c = C
  local t = c.zkelect_event_type(ev)
  local e = {
    type = ffi.string(c.zkelect_event_type_name(t)),
    type_code = t,
    reason = ffi.string(c.zkelect_reason_name(c.zkelect_event_reason(ev))),
    token = c.zkelect_event_token(ev),
    error = c.zkelect_event_error(ev),
    zk_rc = c.zkelect_event_zk_rc(ev),
    message = ffi.string(c.zkelect_event_message(ev)),
    node = ffi.string(c.zkelect_event_node(ev)),
    id = ffi.string(c.zkelect_event_id(ev)),
    time_ns = c.zkelect_event_time_ns(ev),
  }
  if e.error ~= 0 then e.error_name = ffi.string(c.zkelect_err_name(e.error)) end
  return e
end

-- The event as a table; the C event is freed even if reading it fails.
local function take_event(ev)
  if ev == nil then return nil end
  local ok, t = pcall(event_table, ev)
  C.zkelect_event_destroy(ev)
  if not ok then error(t, 0) end
  return t
end

local function participants_list(p)
  local c = C
  local list = {}
  for i = 0, tonumber(c.zkelect_participants_count(p)) - 1 do
    local id, node = c.zkelect_participants_id(p, i), c.zkelect_participants_node(p, i)
    list[#list + 1] = {
      id = id ~= nil and ffi.string(id) or nil,
      node = node ~= nil and ffi.string(node) or nil,
      token = c.zkelect_participants_token(p, i),
      ctime_ms = c.zkelect_participants_ctime_ms(p, i),
    }
  end
  return list
end

local function take_participants(p, errbuf, level)
  if p == nil then raise_from_errbuf(errbuf, M.EINVAL, level + 1) end
  local ok, list = pcall(participants_list, p)
  C.zkelect_participants_destroy(p)
  if not ok then error(list, 0) end
  return list
end

---------------------------------------------------------------------------
-- Client: one ZooKeeper session

local Client = {}
Client.__index = Client

-- zk.connect{hosts=, ...} (or zk.client): a new session. Does not wait for
-- the connection; host names in `hosts` are resolved here (DNS). Leaves
-- the graveyard alone (see "Collected handles").
function M.connect(opts)
  if type(opts) ~= "table" then raise(M.EINVAL, "zkelect.connect: options table expected", 2) end
  local c = lib()
  local conf = make_conf(opts)
  local errbuf = ffi.new("char[?]", ERRLEN)
  local h = c.zkelect_client_new(conf, errbuf, ERRLEN)
  c.zkelect_conf_destroy(ffi.gc(conf, nil))
  if h == nil then raise_from_errbuf(errbuf, M.EINVAL, 2) end
  return setmetatable({ _h = ffi.gc(h, finalize_client),
                        _children = setmetatable({}, { __mode = "k" }) }, Client)
end
M.client = M.connect

function Client:_handle()
  if not self._h then closed_error("client") end
  return self._h
end

-- true when connected, false when ms ran out (nil or negative:
-- zk.connect.timeout.ms, as in C). Blocks.
function Client:await_connected(ms)
  local h = self:_handle()
  collect()
  local t = timeout_ms(ms, -1)
  if t < 0 and ms ~= nil and ms >= 0 then t = INT_MAX end -- past C's int: saturate
  local rc = C.zkelect_client_await_connected(h, t)
  if rc == M.ETIMEDOUT then return false end
  check(rc, 2)
  return true
end

function Client:is_connected() return C.zkelect_client_is_connected(self:_handle()) == 1 end
function Client:session_id() return C.zkelect_client_session_id(self:_handle()) end
function Client:session_timeout_ms() return C.zkelect_client_session_timeout_ms(self:_handle()) end

local function counter_names()
  local t = {}
  for i = 0, M.COUNTER__COUNT - 1 do
    local n = C.zkelect_counter_name(i)
    if n ~= nil then t[i] = ffi.string(n) end
  end
  return t
end

-- A counter by name ("terms_won") or number, as a Lua number.
function Client:counter(which)
  local h = self:_handle()
  local n = which
  if type(which) == "string" then
    n = nil
    for i, name in pairs(counter_names()) do
      if name == which then n = i end
    end
    if not n then raise(M.EINVAL, "unknown counter " .. which, 2) end
  end
  local v = ffi.new("uint64_t[1]")
  check(C.zkelect_client_counter(h, n, v), 2)
  return tonumber(v[0])
end

function Client:counters()
  local h = self:_handle()
  local t, v = {}, ffi.new("uint64_t[1]")
  for i, name in pairs(counter_names()) do
    check(C.zkelect_client_counter(h, i, v), 2)
    t[name] = tonumber(v[0])
  end
  return t
end

-- A snapshot as a JSON string (docs/monitoring.md); the C snapshot is freed
-- even if reading it fails. Needs libzkelect 1.2: with 1.1, ENOTSUP.
local function take_stats(fname, h, level)
  local found, f = pcall(function() return C[fname] end)
  if not found then
    raise(M.ENOTSUP, "stats need libzkelect 1.2 or later; this is " .. M.VERSION, level + 1)
  end
  local errbuf = ffi.new("char[?]", ERRLEN)
  local s = f(h, errbuf, ERRLEN)
  if s == nil then raise_from_errbuf(errbuf, M.EINVAL, level + 1) end
  local ok, json = pcall(function() return ffi.string(C.zkelect_stats_json(s)) end)
  C.zkelect_stats_destroy(s)
  if not ok then error(json, 0) end
  return json
end

-- The client's figures as a JSON object (a string): session, counters and
-- each elector's snapshot under "elections". Never blocks.
function Client:stats() return take_stats("zkelect_client_stats", self:_handle(), 2) end

-- The candidates on any path, in queue order. Blocks.
function Client:participants(path)
  local h = self:_handle()
  cstring(path, "path", 2)
  collect()
  local errbuf = ffi.new("char[?]", ERRLEN)
  return take_participants(C.zkelect_client_participants(h, path, errbuf, ERRLEN), errbuf, 2)
end

-- Closes the client's electors and observers, then the session. Blocks.
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
  local rc = C.zkelect_client_destroy(self._h)
  if rc == M.ESTATE then
    -- An elector or observer dropped without close leaves the weak
    -- _children before its handle's finalizer runs (LuaJIT clears weak
    -- keys in one phase of a cycle and finalizes in a later one), so its
    -- handle may be neither closed above nor buried yet. A full cycle runs
    -- the pending finalizers, which bury it; collect() destroys it.
    collectgarbage("collect")
    collect()
    rc = C.zkelect_client_destroy(self._h)
  end
  check(rc, 2)
  ffi.gc(self._h, nil)
  self._h = nil
end

---------------------------------------------------------------------------
-- Elector: one candidacy

local Elector = {}
Elector.__index = Elector

local function new_elector(client, path, id, owns_client)
  local h = client:_handle()
  cstring(path, "path", 3)
  cstring(id, "id", 3)
  local errbuf = ffi.new("char[?]", ERRLEN)
  local eh = C.zkelect_election_new(h, path, id, errbuf, ERRLEN)
  if eh == nil then raise_from_errbuf(errbuf, M.EINVAL, 3) end
  local e = setmetatable({ _h = ffi.gc(eh, finalize_election), _client = client,
                           _owns = owns_client, path = path, id = id }, Elector)
  client._children[e] = true
  return e
end

-- client:elector(path, id): an idle candidacy on this session.
function Client:elector(path, id)
  return new_elector(self, path, id, false)
end

-- zk.elector{hosts=, path=, id=, ...}: an elector on a session of its own
-- (closed with it).
function M.elector(opts)
  if type(opts) ~= "table" then
    raise(M.EINVAL, "zkelect.elector: {hosts=, path=, id=} expected", 2)
  end
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

function Elector:volunteer() check(C.zkelect_volunteer(self:_handle()), 2) end
function Elector:resign() check(C.zkelect_resign(self:_handle()), 2) end

-- Lock-free; false once closed. The one call meant for every request.
function Elector:is_leader()
  local h = self._h
  return h ~= nil and C.zkelect_is_leader(h) == 1
end

-- true once leading, false when ms ran out (nil, < 0 or past 24.8 days:
-- no limit). Blocks.
function Elector:await_leader(ms)
  local h = self:_handle()
  local t = timeout_ms(ms, -1)
  collect()
  local rc = C.zkelect_await_leader(h, t)
  if rc == M.ETIMEDOUT then return false end
  check(rc, 2)
  return true
end

-- The next event as a table, or nil when none came within ms (nil or 0:
-- do not wait, never blocks; < 0: no limit) or wake() was called.
function Elector:next_event(ms)
  local h = self:_handle()
  local t = timeout_ms(ms, 0)
  if t ~= 0 then collect() end
  return take_event(C.zkelect_next_event(h, t))
end

-- Readable while events wait (level-triggered), for poll loops. Owned by
-- the library: never read or close it.
function Elector:event_fd() return check(C.zkelect_event_fd(self:_handle()), 2) end
function Elector:wake() check(C.zkelect_wake(self:_handle()), 2) end

-- The leader's participant id, or nil when nobody is a candidate. Blocks
-- (asks ZooKeeper).
function Elector:leader_id()
  local h = self:_handle()
  collect()
  for _, len in ipairs({ M.ID_MAX + 1, 1024 * 1024 + 1 }) do
    local buf = ffi.new("char[?]", len)
    local rc = C.zkelect_leader_id(h, buf, len)
    if rc == 0 then return ffi.string(buf) end
    if rc == M.ENOLEADER then return nil end
    -- a foreign id longer than ours: once more with ZooKeeper's own limit
    if rc ~= M.ERANGE then check(rc, 2) end
  end
  raise(M.ERANGE, "the leader's id is longer than 1 MiB", 2)
end

-- The fencing token of this term (an int64_t cdata: exact, compares with
-- numbers and other tokens), or nil when not leading.
function Elector:fencing_token()
  local tok = ffi.new("int64_t[1]")
  local rc = C.zkelect_fencing_token(self:_handle(), tok)
  if rc == M.ENOTLEADER then return nil end
  check(rc, 2)
  return tok[0]
end

-- The candidates of this election, in queue order. Blocks.
function Elector:participants()
  local h = self:_handle()
  collect()
  local errbuf = ffi.new("char[?]", ERRLEN)
  return take_participants(C.zkelect_participants(h, errbuf, ERRLEN), errbuf, 2)
end

-- This candidacy's figures as a JSON object (a string): state, term,
-- queue position, losses by reason, keepalive and failover histograms.
-- Never blocks.
function Elector:stats() return take_stats("zkelect_election_stats", self:_handle(), 2) end

function Elector:client() return self._client end

-- Leaves the election and frees the handle; blocks until ZooKeeper
-- acknowledged the deletion of the node (at most the session timeout).
-- An elector made by zk.elector closes its session too.
function Elector:close()
  if not self._h then return end
  collect()
  local h = self._h
  self._h = nil
  self._client._children[self] = nil
  ffi.gc(h, nil)
  C.zkelect_election_destroy(h)
  if self._owns and not self._client._closing then self._client:close() end
end

---------------------------------------------------------------------------
-- Observer: who leads, without taking part

local Observer = {}
Observer.__index = Observer

function Client:observer(path)
  local h = self:_handle()
  cstring(path, "path", 2)
  local errbuf = ffi.new("char[?]", ERRLEN)
  local oh = C.zkelect_observer_new(h, path, errbuf, ERRLEN)
  if oh == nil then raise_from_errbuf(errbuf, M.EINVAL, 2) end
  local o = setmetatable({ _h = ffi.gc(oh, finalize_observer), _client = self, path = path },
                         Observer)
  self._children[o] = true
  return o
end

function Observer:_handle()
  if not self._h then closed_error("observer") end
  return self._h
end

function Observer:next_event(ms)
  local h = self:_handle()
  local t = timeout_ms(ms, 0)
  if t ~= 0 then collect() end
  return take_event(C.zkelect_observer_next_event(h, t))
end
function Observer:event_fd() return check(C.zkelect_observer_event_fd(self:_handle()), 2) end
function Observer:wake() check(C.zkelect_observer_wake(self:_handle()), 2) end

function Observer:close()
  if not self._h then return end
  collect()
  local h = self._h
  self._h = nil
  self._client._children[self] = nil
  ffi.gc(h, nil)
  C.zkelect_observer_destroy(h)
end

function M.version_string()
  return ffi.string(lib().zkelect_version_string())
end

-- Every configuration key the library knows, in a fixed order. Never blocks.
function M.config_keys()
  local L, keys = lib(), {}
  for i = 0, 1023 do -- bounded: the library knows a handful
    local k = L.zkelect_conf_key(i)
    if k == nil then break end
    keys[#keys + 1] = ffi.string(k)
  end
  return keys
end

M.Client, M.Elector, M.Observer, M.Error = Client, Elector, Observer, Error
return M
