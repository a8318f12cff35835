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
-- first use. This file is the LuaJIT back end of zkelect/layer.lua, the
-- Lua layer of the Lua 5.4 module (`require "zkelect"`, bindings/lua) too:
-- the same verbs and errors, tables {code=, name=, message=} that print as
-- "ZKELECT_ESTATE: message"; the calls whose "no" is an ordinary answer
-- (await_leader timing out, no leader, not leading) return false or nil
-- instead.
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
typedef struct zkelect_fenced_ops zkelect_fenced_ops_t;
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
int zkelect_client_shutdown(zkelect_client_t *client, int timeout_ms);
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
int zkelect_requeue(zkelect_election_t *election);
int zkelect_is_leader(const zkelect_election_t *election);
int64_t zkelect_lease_left_ms(const zkelect_election_t *election);
int zkelect_is_leader_for(const zkelect_election_t *election, int min_ms);
int zkelect_await_leader(zkelect_election_t *election, int timeout_ms);
int zkelect_transfer(zkelect_election_t *election, const char *target_id, int timeout_ms);
int zkelect_client_transfer(zkelect_client_t *client, const char *path, const char *target_id,
                            int timeout_ms);
int zkelect_fencing_token(const zkelect_election_t *election, int64_t *token);
zkelect_fenced_ops_t *zkelect_fenced_ops_new(void);
int zkelect_fenced_ops_set(zkelect_fenced_ops_t *ops, const char *path, const void *data,
                           size_t len, int32_t version);
int zkelect_fenced_ops_create(zkelect_fenced_ops_t *ops, const char *path, const void *data,
                              size_t len, int flags);
int zkelect_fenced_ops_delete(zkelect_fenced_ops_t *ops, const char *path, int32_t version);
int zkelect_fenced_ops_failed(const zkelect_fenced_ops_t *ops, int *zk_rc);
void zkelect_fenced_ops_destroy(zkelect_fenced_ops_t *ops);
int zkelect_fenced_commit(zkelect_election_t *election, zkelect_fenced_ops_t *ops, int timeout_ms);
int zkelect_client_fenced_commit(zkelect_client_t *client, const char *node, int64_t token,
                                 zkelect_fenced_ops_t *ops, int timeout_ms);
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
int zkelect_participants_priority(const zkelect_participants_t *p, size_t i);
void zkelect_participants_destroy(zkelect_participants_t *p);

zkelect_stats_t *zkelect_election_stats(zkelect_election_t *election, char *errbuf,
                                        size_t errlen);
zkelect_stats_t *zkelect_client_stats(zkelect_client_t *client, char *errbuf, size_t errlen);
zkelect_stats_t *zkelect_client_group_stats(zkelect_client_t *client, const char *group, char *errbuf, size_t errlen);
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
  ENOCANDIDATE = -16,
  ETARGET_LOST = -17,
  ELIMIT = -18,
  EFENCED = -19,
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
  EV_STEPPED_BACK = 12,
  EV_LEASE_LOW = 13,
  REASON_NONE = 0,
  REASON_RESIGNED = 1,
  REASON_SUSPENDED = 2,
  REASON_LEASE_ENDED = 3,
  REASON_EXPIRED = 4,
  REASON_NODE_DELETED = 5,
  REASON_CLOSED = 6,
  REASON_TRANSFERRED = 7,
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
  COUNTER_SESSION_TIMEOUT_BELOW_TWO_TICKS = 12,
  COUNTER_CRASH_GUARD_WARNINGS = 13,
  COUNTER_LEASE_LOW = 14,
  COUNTER_BALANCE_MOVES = 15,
  COUNTER__COUNT = 16,
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
  return setmetatable({ code = code, name = ffi.string(lib().zkelect_err_name(code)),
                        message = message }, Error)
end

local function raise(code, message)
  error(make_error(code, message), 0)
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

local function check(rc)
  if rc < 0 then raise(rc, message_of(rc)) end
  return rc
end

local ERRLEN = 512

local function errbuf()
  return ffi.new("char[?]", ERRLEN)
end

-- The code of a constructor's NULL, read from its errbuf by the rule every
-- binding follows (bindings/README.md, "Error codes"): "ZKELECT_<NAME>:
-- text" is that code (the prefix dropped), "out of memory" ENOMEM,
-- "internal error" EINTERNAL, anything else EINVAL (a bad argument, the
-- documented cause for every such function).
local codes_by_name
local function raise_from_errbuf(buf)
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
    code = M.EINVAL
  end
  if msg == "" then msg = ffi.string(C.zkelect_strerror(code)) end
  raise(code, msg)
end

-- A constructor's result: NULL raises what its errbuf says.
local function made(p, buf)
  if p == nil then raise_from_errbuf(buf) end
  return p
end

-- A string argument for C: a NUL byte would cut it short unseen.
local function cstring(v, what)
  if type(v) ~= "string" then raise(M.EINVAL, what .. " must be a string, not " .. type(v)) end
  if v:find("\0", 1, true) then raise(M.EINVAL, what .. " holds a NUL byte") end
  return v
end

-- A borrowed C string as a Lua string; NULL as nil.
local function str(p)
  if p == nil then return nil end
  return ffi.string(p)
end

---------------------------------------------------------------------------
-- The back end of zkelect/layer.lua: the C calls in the shape of the Lua
-- 5.4 module's SWIG functions (prefix removed, out-parameters returned,
-- errbufs hidden, failures raised), int64_t results left as exact cdata.

local raw = { make_error = make_error, error_mt = Error }

-- LuaJIT finalizes no table: a handle carries its own finalizer, dropped
-- once it is destroyed or buried.
function raw.gc(h, f) return ffi.gc(h, f) end
function raw.disown(h) ffi.gc(h, nil) end
function raw.keeper(f) return ffi.gc(ffi.new("char[1]"), f) end

-- nginx calls connect, client:elector, stats and next_event(0) from a
-- request or a timer, where nothing may wait for a destroy.
raw.lazy_collect = true

function raw.conf_new()
  local conf = lib().zkelect_conf_new()
  if conf == nil then raise(M.ENOMEM, "out of memory") end
  return conf
end

function raw.conf_set(conf, key, value)
  cstring(key, "option")
  cstring(value, "option " .. key)
  local buf = errbuf()
  local rc = C.zkelect_conf_set(conf, key, value, buf, ERRLEN)
  if rc < 0 then
    local msg = ffi.string(buf)
    if msg == "" then msg = message_of(rc) end
    raise(rc, msg)
  end
end

function raw.conf_destroy(conf) C.zkelect_conf_destroy(conf) end
function raw.conf_key(i) return str(lib().zkelect_conf_key(i)) end

function raw.client_new(conf)
  local buf = errbuf()
  return made(C.zkelect_client_new(conf, buf, ERRLEN), buf)
end

function raw.client_destroy(h)
  check(C.zkelect_client_destroy(h))
  ffi.gc(h, nil) -- only now: a client whose destroy was refused is still open
end

function raw.client_shutdown(h, t) return check(C.zkelect_client_shutdown(h, t)) end
function raw.client_await_connected(h, t) return check(C.zkelect_client_await_connected(h, t)) end
function raw.client_is_connected(h) return C.zkelect_client_is_connected(h) end
function raw.client_session_id(h) return C.zkelect_client_session_id(h) end
function raw.client_session_timeout_ms(h) return C.zkelect_client_session_timeout_ms(h) end
function raw.counter_name(i) return str(C.zkelect_counter_name(i)) end

function raw.client_counter(h, i)
  local v = ffi.new("uint64_t[1]")
  check(C.zkelect_client_counter(h, i, v))
  return tonumber(v[0])
end

function raw.client_participants(h, path)
  cstring(path, "path")
  local buf = errbuf()
  return made(C.zkelect_client_participants(h, path, buf, ERRLEN), buf)
end

-- The stats calls came with libzkelect 1.2; M.load accepts 1.1, where
-- looking them up fails.
local function since_1_2(lookup)
  local found, f = pcall(lookup)
  if not found then
    raise(M.ENOTSUP, "stats need libzkelect 1.2 or later; this is " .. M.VERSION)
  end
  return f
end

function raw.client_stats(h)
  local f = since_1_2(function() return C.zkelect_client_stats end)
  local buf = errbuf()
  return made(f(h, buf, ERRLEN), buf)
end

function raw.election_stats(h)
  local f = since_1_2(function() return C.zkelect_election_stats end)
  local buf = errbuf()
  return made(f(h, buf, ERRLEN), buf)
end

function raw.stats_json(s) return ffi.string(C.zkelect_stats_json(s)) end
function raw.stats_destroy(s) C.zkelect_stats_destroy(s) end

function raw.election_new(h, path, id)
  cstring(path, "path")
  cstring(id, "id")
  local buf = errbuf()
  return made(C.zkelect_election_new(h, path, id, buf, ERRLEN), buf)
end

function raw.election_destroy(h)
  ffi.gc(h, nil)
  check(C.zkelect_election_destroy(h))
end

function raw.volunteer(h) check(C.zkelect_volunteer(h)) end
function raw.resign(h) check(C.zkelect_resign(h)) end
function raw.requeue(h) check(C.zkelect_requeue(h)) end
function raw.is_leader(h) return C.zkelect_is_leader(h) end
function raw.lease_left_ms(h) return C.zkelect_lease_left_ms(h) end
function raw.is_leader_for(h, ms) return C.zkelect_is_leader_for(h, ms) end
function raw.await_leader(h, t) return check(C.zkelect_await_leader(h, t)) end
function raw.transfer(h, target, t)
  cstring(target, "target id")
  return check(C.zkelect_transfer(h, target, t))
end
-- A fenced write's batch, freed by the collector (a free, never a wait).
function raw.fenced_ops_new()
  local p = C.zkelect_fenced_ops_new()
  if p == nil then raise(M.ENOMEM, "out of memory") end
  return ffi.gc(p, C.zkelect_fenced_ops_destroy)
end
function raw.fenced_ops_set(ops, path, data, version)
  cstring(path, "path")
  return check(C.zkelect_fenced_ops_set(ops, path, data, #data, version))
end
function raw.fenced_ops_create(ops, path, data, flags)
  cstring(path, "path")
  return check(C.zkelect_fenced_ops_create(ops, path, data, #data, flags))
end
function raw.fenced_ops_delete(ops, path, version)
  cstring(path, "path")
  return check(C.zkelect_fenced_ops_delete(ops, path, version))
end
function raw.fenced_ops_failed_index(ops) return C.zkelect_fenced_ops_failed(ops, nil) end
function raw.fenced_commit(h, ops, t) return check(C.zkelect_fenced_commit(h, ops, t)) end
function raw.client_fenced_commit(h, node, token, ops, t)
  cstring(node, "node")
  -- A number or an int64_t cdata (fencing_token()'s, an event's token).
  if type(token) ~= "number" and not (type(token) == "cdata" and ffi.istype("int64_t", token)) then
    raise(M.EINVAL, "token must be a number or an int64_t")
  end
  return check(C.zkelect_client_fenced_commit(h, node, token, ops, t))
end
function raw.client_transfer(h, path, target, t)
  cstring(path, "path")
  cstring(target, "target id")
  return check(C.zkelect_client_transfer(h, path, target, t))
end
function raw.next_event(h, t) return C.zkelect_next_event(h, t) end
function raw.event_fd(h) return check(C.zkelect_event_fd(h)) end
function raw.wake(h) check(C.zkelect_wake(h)) end

-- A foreign leader's id may be longer than ours (another program's
-- participant): once more with ZooKeeper's own limit.
function raw.leader_id(h)
  for _, len in ipairs({ M.ID_MAX + 1, 1024 * 1024 + 1 }) do
    local buf = ffi.new("char[?]", len)
    local rc = C.zkelect_leader_id(h, buf, len)
    if rc == 0 then return ffi.string(buf) end
    if rc ~= M.ERANGE then check(rc) end
  end
  raise(M.ERANGE, "the leader's id is longer than 1 MiB")
end

function raw.fencing_token(h)
  local tok = ffi.new("int64_t[1]")
  check(C.zkelect_fencing_token(h, tok))
  return tok[0]
end

function raw.participants(h)
  local buf = errbuf()
  return made(C.zkelect_participants(h, buf, ERRLEN), buf)
end

function raw.participants_count(p) return tonumber(C.zkelect_participants_count(p)) end
function raw.participants_id(p, i) return str(C.zkelect_participants_id(p, i)) end
function raw.participants_node(p, i) return str(C.zkelect_participants_node(p, i)) end
function raw.participants_token(p, i) return C.zkelect_participants_token(p, i) end
function raw.participants_ctime_ms(p, i) return C.zkelect_participants_ctime_ms(p, i) end
function raw.participants_priority(p, i) return C.zkelect_participants_priority(p, i) end
function raw.participants_destroy(p) C.zkelect_participants_destroy(p) end

function raw.event_type(ev) return C.zkelect_event_type(ev) end
function raw.event_reason(ev) return C.zkelect_event_reason(ev) end
function raw.event_token(ev) return C.zkelect_event_token(ev) end
function raw.event_error(ev) return C.zkelect_event_error(ev) end
function raw.event_zk_rc(ev) return C.zkelect_event_zk_rc(ev) end
function raw.event_message(ev) return str(C.zkelect_event_message(ev)) end
function raw.event_node(ev) return str(C.zkelect_event_node(ev)) end
function raw.event_id(ev) return str(C.zkelect_event_id(ev)) end
function raw.event_time_ns(ev) return C.zkelect_event_time_ns(ev) end
function raw.event_type_name(t) return str(C.zkelect_event_type_name(t)) end
function raw.reason_name(r) return str(C.zkelect_reason_name(r)) end
function raw.err_name(code) return str(C.zkelect_err_name(code)) end
function raw.event_destroy(ev) C.zkelect_event_destroy(ev) end

function raw.observer_new(h, path)
  cstring(path, "path")
  local buf = errbuf()
  return made(C.zkelect_observer_new(h, path, buf, ERRLEN), buf)
end

function raw.observer_destroy(h)
  ffi.gc(h, nil)
  check(C.zkelect_observer_destroy(h))
end

function raw.observer_next_event(h, t) return C.zkelect_observer_next_event(h, t) end
function raw.observer_event_fd(h) return check(C.zkelect_observer_event_fd(h)) end
function raw.observer_wake(h) check(C.zkelect_observer_wake(h)) end

---------------------------------------------------------------------------

M.make_error, M.Error = make_error, Error

function M.version_string()
  return ffi.string(lib().zkelect_version_string())
end

require "zkelect.layer" (M, raw)
M.client = M.connect

return M
