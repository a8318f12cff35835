-- zkelect/layer.lua - the idiomatic Lua layer of libzkelect, one for both
-- Lua modules: Client, Elector, Observer, errors, events, counters, stats
-- and the collection of handles nobody closed.
--
-- The chunk returns a function that fills a module table M over `raw`, the
-- back end of one runtime:
--   Lua 5.4 (`require "zkelect"`): the SWIG functions (bindings/lua/
--     zkelect_swig.lua); the build embeds this file in zkelect.so.
--   LuaJIT (`require "zkelect.ffi"`): ffi.lua's C calls; ffi.lua requires
--     this file as "zkelect.layer", hence its place beside it (installed,
--     or from a checkout with bindings/luajit on LUA_PATH).
--
-- raw has the SWIG functions' shape: one per C function, prefix removed,
-- out-parameters as results, errbufs hidden, and every failure raised as an
-- error made by raw.make_error (a table {code=, name=, message=} whose
-- metatable is raw.error_mt). The back end adds raw.disown(h) (the runtime
-- must not free h any more), raw.keeper(f) (an object whose finalizer runs
-- f), and, on LuaJIT, raw.gc(h, f) and raw.lazy_collect (see below).
--
-- Objects here own their raw handles and free them in a fixed order
-- (elections and observers before their client), from close(), from a
-- to-be-closed variable (local e <close> = ..., Lua 5.4) or, for objects
-- nobody closed, after the collector found them (see "Collected handles").
-- The calls whose "no" is an ordinary answer (await_leader timing out, no
-- leader, not leading) return false or nil instead of raising.

return function(M, raw)
  local ESTATE, EINVAL = M.ESTATE, M.EINVAL

  local function raise(code, message)
    error(raw.make_error(code, message), 0)
  end

  -- The PostgreSQL guard's (fencing.sql, docs/fencing.md): the statement a
  -- fenced transaction begins with (the resource's name, the leader's
  -- token) and the SQLSTATE of its refusal, "this process no longer leads".
  M.FENCE_SQL = "SELECT zkelect.fence($1, $2)"
  M.DEPOSED_SQLSTATE = "ZKE01"

  -- true when v is an error raised by this module (a pcall's second result).
  function M.is_error(v) return type(v) == "table" and getmetatable(v) == raw.error_mt end

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

  -------------------------------------------------------------------------
  -- Collected handles
  --
  -- A finalizer runs at whatever allocation triggers the collector (in an
  -- nginx request handler as anywhere), so it must not block, and a destroy
  -- may wait for ZooKeeper for up to the session timeout. A collected
  -- elector is only resigned there (non-blocking: it stops leading at once
  -- and its node is deleted in the background); its handle, and a
  -- collected client's or observer's, wait in `graveyard` until the next
  -- call of this module that blocks anyway (close, awaits, queries,
  -- next_event with a timeout), zkelect.collect(), or the closing of the Lua
  -- state. Elections and observers are destroyed before clients.
  --
  -- The Lua 5.4 module also collects in connect (it may wait for DNS),
  -- elector creation, stats and next_event(0). LuaJIT's (raw.lazy_collect)
  -- does not: nginx code calls those where nothing may wait.
  --
  -- When the Lua state closes every finalizer runs; Lua 5.4 runs the
  -- keeper's last (it was made first), LuaJIT in no set order. The keeper's
  -- finalizer marks the state as closing, after which finalizers destroy at
  -- once (blocking is harmless then), a client whose children are not yet
  -- destroyed waiting in `pending_clients` for the last of them.

  local graveyard = {}
  local state_closing = false
  local pending_clients = {}

  local destroyers = {
    election = raw.election_destroy,
    observer = raw.observer_destroy,
    client = raw.client_destroy,
  }

  -- Destroys h; false when the library refused (ESTATE: a client's
  -- children still open, or a handle of the parent in a child of fork()).
  local function destroy(kind, h)
    local ok, err = pcall(destroyers[kind], h)
    return ok or code_of(err) ~= ESTATE
  end

  local function retry_pending_clients()
    for i = #pending_clients, 1, -1 do
      if destroy("client", pending_clients[i]) then table.remove(pending_clients, i) end
    end
  end

  -- Destroys the buried handles; returns how many were freed.
  local function collect()
    if #graveyard == 0 and #pending_clients == 0 then return 0 end
    local list = graveyard
    graveyard = {}
    local freed = 0
    for _, clients in ipairs({ false, true }) do
      for _, g in ipairs(list) do
        if (g[1] == "client") == clients then
          if destroy(g[1], g[2]) then
            freed = freed + 1
          elseif clients and state_closing then
            -- a child not finalized yet: only while the state closes (a
            -- child keeps its client object alive otherwise)
            pending_clients[#pending_clients + 1] = g[2]
          else
            graveyard[#graveyard + 1] = g
          end
        end
      end
    end
    retry_pending_clients()
    return freed
  end

  local function collect_eagerly()
    if not raw.lazy_collect then collect() end
  end

  -- Destroys what the collector left; returns how many handles it freed.
  -- Blocks.
  function M.collect() return collect() end

  local function bury(kind, h)
    raw.disown(h)
    if state_closing then
      if kind == "client" then
        if not destroy(kind, h) then pending_clients[#pending_clients + 1] = h end
      else
        destroy(kind, h)
        retry_pending_clients()
      end
      return
    end
    graveyard[#graveyard + 1] = { kind, h }
  end

  local finalizers = {
    election = function(h)
      pcall(raw.resign, h) -- ESTATE when not a candidate: nothing to leave
      bury("election", h)
    end,
    observer = function(h) bury("observer", h) end,
    client = function(h) bury("client", h) end,
  }

  -- Lua 5.4 finalizes the objects (their __gc, below). LuaJIT finalizes no
  -- table, so there the handle itself gets the finalizer (raw.gc).
  local function owned(kind, h)
    if raw.gc then return raw.gc(h, finalizers[kind]) end
    return h
  end

  local function gc_method(kind)
    if raw.gc then return nil end
    return function(self)
      if self._h then
        finalizers[kind](self._h)
        self._h = nil
      end
    end
  end

  M._keeper = raw.keeper(function()
    state_closing = true
    collect()
  end)

  local INT_MAX = 2147483647

  -- A timeout in ms for the C API: nil gives `default`; negative, infinite
  -- or past C's int (24.8 days) means no limit (-1); a fraction rounds up.
  local function timeout_ms(t, default)
    if t == nil then return default end
    if type(t) ~= "number" then raise(EINVAL, "timeout must be a number of ms, not " .. type(t)) end
    if t ~= t then raise(EINVAL, "timeout is NaN") end
    if t < 0 or t > INT_MAX then return -1 end
    return math.ceil(t)
  end

  local function closed_error(what)
    raise(M.ECLOSED, what .. " is closed")
  end

  -- Friendly option names, Python's keywords: each configuration key
  -- without "zk." or "election.", dots as underscores. Keys with a dot are
  -- libzkelect's own and passed to zkelect_conf_set as they are; any other
  -- key is a mistake and an error.
  local options = {
    -- BEGIN gen/vocab.py options
    { "hosts", "zk.hosts" },
    { "session_timeout_ms", "zk.session.timeout.ms" },
    { "connect_timeout_ms", "zk.connect.timeout.ms" },
    { "auth", "zk.auth" },
    { "acl", "election.acl" },
    { "priority", "election.priority" },
    { "priority_holddown_ms", "election.priority.holddown.ms" },
    { "transfer_drain_ms", "transfer.drain.ms" },
    { "lease_warn_percent", "lease.warn.percent" },
    { "leadership", "leadership" },
    { "lease_margin_ms", "lease.margin.ms" },
    { "session_nodes_max_bytes", "zk.session.nodes.max.bytes" },
    { "events_queue_max", "events.queue.max" },
    { "log_level", "zk.log.level" },
    { "probe_ticktime", "zk.probe.ticktime" },
    { "tls_ca", "zk.tls.ca" },
    { "tls_cert", "zk.tls.cert" },
    { "tls_key", "zk.tls.key" },
    { "tls_key_password", "zk.tls.key.password" },
    { "tls_hostname_verify", "zk.tls.hostname.verify" },
    { "hosts_follow", "zk.hosts.follow" },
    { "crash_guard", "crash.guard" },
    { "crash_guard_delay_ms", "crash.guard.delay.ms" },
    { "sasl_mechanism", "zk.sasl.mechanism" },
    { "sasl_user", "zk.sasl.user" },
    { "sasl_password_file", "zk.sasl.password.file" },
    { "sasl_service", "zk.sasl.service" },
    { "sasl_host", "zk.sasl.host" },
    { "crash_guard_socket", "crash.guard.socket" },
    { "balance_group", "balance.group" },
    { "balance_moves_max", "balance.moves.max" },
    -- END gen/vocab.py options
  }
  local option_keys, option_names = {}, {}
  for i, o in ipairs(options) do
    option_keys[o[1]] = o[2]
    option_names[i] = o[1]
  end
  option_names = table.concat(option_names, ", ")

  local function make_conf(opts)
    local conf = raw.conf_new()
    local ok, err = pcall(function()
      for k, v in pairs(opts) do
        local key = option_keys[k] or (type(k) == "string" and k:find(".", 1, true) and k)
        if not key then
          raise(EINVAL, string.format(
            "unknown option %q (options: %s, or a libzkelect key such as "
            .. "\"zk.session.timeout.ms\")", tostring(k), option_names))
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
    return e
  end

  -- The event as a table; the C event is freed even if reading it fails.
  local function take_event(ev)
    if ev == nil then return nil end
    local ok, t = pcall(event_table, ev)
    raw.event_destroy(ev)
    if not ok then error(t, 0) end
    return t
  end

  local function participants_list(p)
    local list = {}
    for i = 0, raw.participants_count(p) - 1 do
      list[#list + 1] = {
        id = raw.participants_id(p, i),
        node = raw.participants_node(p, i),
        token = raw.participants_token(p, i),
        ctime_ms = raw.participants_ctime_ms(p, i),
        priority = tonumber(raw.participants_priority(p, i)),
      }
    end
    return list
  end

  local function take_participants(p)
    local ok, list = pcall(participants_list, p)
    raw.participants_destroy(p)
    if not ok then error(list, 0) end
    return list
  end

  -- An elector's or observer's next event (nil when none came within ms:
  -- nil or 0, do not wait; < 0, no limit; or when woken), through the
  -- back end's next_event of its kind.
  local function next_event_of(child, ms, next_event)
    local h = child:_handle()
    local t = timeout_ms(ms, 0)
    if t ~= 0 then collect() else collect_eagerly() end
    return take_event(next_event(h, t))
  end

  -- Destroys an elector's or observer's handle; false when already closed.
  local function close_child(child, destroy)
    if not child._h then return false end
    collect()
    local h = child._h
    child._h = nil
    child._client._children[child] = nil
    destroy(h)
    return true
  end

  -- A snapshot's JSON text (docs/monitoring.md); the snapshot is freed even
  -- if reading it fails.
  local function take_stats(s)
    local ok, json = pcall(raw.stats_json, s)
    raw.stats_destroy(s)
    if not ok then error(json, 0) end
    return json
  end

  -------------------------------------------------------------------------
  -- Client: one ZooKeeper session

  local Client = {}
  Client.__index = Client

  -- zkelect.connect{hosts=, ...}: a new session. Does not wait for the
  -- connection; host names in `hosts` are resolved here (DNS).
  function M.connect(opts)
    if type(opts) ~= "table" then raise(EINVAL, "zkelect.connect: options table expected") end
    collect_eagerly()
    local conf = make_conf(opts)
    local ok, h = pcall(raw.client_new, conf)
    raw.conf_destroy(conf)
    if not ok then error(h, 0) end
    return setmetatable({ _h = owned("client", h),
                          _children = setmetatable({}, { __mode = "k" }) }, Client)
  end

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
    return unless({ M.ETIMEDOUT }, raw.client_await_connected, h, t) ~= nil
  end

  function Client:is_connected() return raw.client_is_connected(self:_handle()) == 1 end
  function Client:session_id() return raw.client_session_id(self:_handle()) end
  function Client:session_timeout_ms() return raw.client_session_timeout_ms(self:_handle()) end

  local function counter_names()
    local t = {}
    for i = 0, M.COUNTER__COUNT - 1 do
      t[i] = raw.counter_name(i)
    end
    return t
  end

  -- A counter by name ("terms_won") or number.
  function Client:counter(which)
    local h = self:_handle()
    local n = which
    if type(which) == "string" then
      n = nil
      for i, name in pairs(counter_names()) do
        if name == which then n = i end
      end
      if not n then raise(EINVAL, "unknown counter " .. which) end
    end
    return raw.client_counter(h, n)
  end

  function Client:counters()
    local h = self:_handle()
    local t = {}
    for i, name in pairs(counter_names()) do
      t[name] = raw.client_counter(h, i)
    end
    return t
  end

  -- The client's figures as a JSON object (a string): session, counters
  -- and each elector's snapshot under "elections". Since 1.2.
  function Client:stats()
    local h = self:_handle()
    collect_eagerly()
    return take_stats(raw.client_stats(h))
  end

  -- The candidates on any path, in queue order. Blocks.
  function Client:participants(path)
    local h = self:_handle()
    collect()
    return take_participants(raw.client_participants(h, path))
  end

  -- Ask the current leader of the election at path, from outside it, to
  -- hand leadership to the candidate whose id is target, the leader waiting
  -- at most ms (1 to 600000) for it to be next in line (docs/semantics.md,
  -- "A transfer asked from outside"). true once the target leads; raises
  -- otherwise: ENOLEADER, ENOCANDIDATE, ENOTSUP or ESTATE (nothing
  -- changed), ETIMEDOUT or ETARGET_LOST (the next in line leads). Blocks.
  function Client:transfer(path, target, ms)
    local h = self:_handle()
    local t = timeout_ms(ms, 0)  -- nil: 0, which the library refuses (EINVAL)
    collect()
    raw.client_transfer(h, path, target, t)
    return true
  end

  -- A fenced write's batch of ops (Elector:fenced_commit's list).
  local function fenced_batch(ops)
    if type(ops) ~= "table" then raise(EINVAL, "ops must be a list of operations") end
    collect()
    local batch = raw.fenced_ops_new()
    for i, op in ipairs(ops) do
      local kind = type(op) == "table" and op[1] or nil
      if kind == "set" then
        raw.fenced_ops_set(batch, op[2], op[3] or "", op[4] or -1)
      elseif kind == "create" then
        raw.fenced_ops_create(batch, op[2], op[3] or "", op[4] == "ephemeral" and 1 or 0)
      elseif kind == "delete" then
        raw.fenced_ops_delete(batch, op[2], op[3] or -1)
      else
        raise(EINVAL, "operation " .. i .. ": not {\"set\"|\"create\"|\"delete\", path, ...}")
      end
    end
    return batch
  end

  -- A fenced write by a process that does not hold the candidacy
  -- (docs/fencing.md): ops (Elector:fenced_commit's list) committed in one
  -- ZooKeeper multi only while node, the leader's node (its full path: the
  -- election path, "/", the ELECTED event's node), stands and is the node
  -- of the term whose fencing token is token, such as a command of zkelect
  -- run ($ZKELECT_NODE, $ZKELECT_TOKEN). Give it only what an ELECTED
  -- said: it checks that the node is that term's, not that it ever led.
  -- Waits at most ms (> 0). Returns true, or raises EFENCED (the node is
  -- gone or is another term's; nothing committed) and the other errors of
  -- Elector:fenced_commit, never ENOTLEADER. Blocks. Since 1.2.
  function Client:fenced_commit(node, token, ops, ms)
    local h = self:_handle()
    local t = timeout_ms(ms, 0)  -- nil: 0, which the library refuses (EINVAL)
    local batch = fenced_batch(ops)
    raw.client_fenced_commit(h, node, token, batch, t)
    return true
  end

  -- Ends the client's electors and observers at once (their deletes sent
  -- together: zkelect_client_shutdown, within one session timeout), closes
  -- them, then the session. Blocks. When the library refuses the last step
  -- (ESTATE: a handle made with the raw functions is still open) the error
  -- is raised and the client stays open, its session ended.
  function Client:close()
    if not self._h or self._closing then return end
    collect()
    -- ECLOSED after an earlier close that raised; ETIMEDOUT leaves the
    -- rest to the session's end: neither keeps the handles from closing.
    pcall(raw.client_shutdown, self._h, -1)
    -- An elector that owns this client closes it when closed: _closing
    -- tells it this close is already under way.
    self._closing = true
    local ok, err = pcall(function()
      for child in pairs(self._children) do child:close() end
    end)
    self._closing = nil
    if not ok then error(err, 0) end
    ok, err = pcall(raw.client_destroy, self._h)
    if not ok and code_of(err) == ESTATE then
      -- LuaJIT: an elector or observer dropped without close leaves the
      -- weak _children before its handle's finalizer runs (weak keys are
      -- cleared in one phase of a cycle, finalizers run in a later one),
      -- so its handle may be neither closed above nor buried yet. A full
      -- cycle runs the pending finalizers, which bury it; collect()
      -- destroys it. (Lua 5.4 clears such keys only after the finalizer:
      -- there the retry meets the same refusal.)
      collectgarbage("collect")
      collect()
      ok, err = pcall(raw.client_destroy, self._h)
    end
    if not ok then error(err, 0) end
    self._h = nil
  end
  Client.__close = Client.close
  Client.__gc = gc_method("client")

  -------------------------------------------------------------------------
  -- Elector: one candidacy

  local Elector = {}
  Elector.__index = Elector

  local function new_elector(client, path, id, owns_client)
    local h = client:_handle()
    collect_eagerly()
    local e = setmetatable({ _h = owned("election", raw.election_new(h, path, id)),
                             _client = client, _owns = owns_client, path = path, id = id },
                           Elector)
    client._children[e] = true
    return e
  end

  -- client:elector(path, id): an idle candidacy on this session.
  function Client:elector(path, id)
    return new_elector(self, path, id, false)
  end

  -- zkelect.elector{hosts=, path=, id=, ...}: an elector on a session of its
  -- own (closed with it).
  function M.elector(opts)
    if type(opts) ~= "table" or opts.path == nil or opts.id == nil then
      raise(EINVAL, "zkelect.elector: {hosts=, path=, id=} expected")
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

  function Elector:volunteer() raw.volunteer(self:_handle()) end
  function Elector:resign() raw.resign(self:_handle()) end
  -- Back to the back of the line in one call (resign, then volunteer,
  -- nothing between); ESTATE when not a candidate.
  function Elector:requeue() raw.requeue(self:_handle()) end

  -- Lock-free; false once closed. The one call meant for every request.
  function Elector:is_leader()
    local h = self._h
    return h ~= nil and raw.is_leader(h) == 1
  end

  -- The lease time left in ms while leading (whole ms), else 0 (also once
  -- closed): how much longer is_leader() stays true unless a renewal pushes
  -- the deadline later. Lock-free.
  function Elector:lease_left_ms()
    local h = self._h
    if h == nil then return 0 end
    return tonumber(raw.lease_left_ms(h))
  end

  -- true if leading now and the lease runs at least ms more (rounded up),
  -- from one reading of the deadline and the clock: no other candidate can
  -- be elected within ms plus the lease margin unless this one resigns. 0
  -- or less asks the same as is_leader(); false once closed. Lock-free.
  function Elector:is_leader_for(ms)
    if type(ms) ~= "number" then raise(EINVAL, "ms must be a number, not " .. type(ms)) end
    if ms ~= ms then raise(EINVAL, "ms is NaN") end
    local h = self._h
    if h == nil then return false end
    local t = ms <= 0 and 0 or (ms > INT_MAX and INT_MAX or math.ceil(ms))
    return raw.is_leader_for(h, t) == 1
  end

  -- true once leading, false when ms ran out (nil, < 0 or past 24.8 days:
  -- no limit; any number of ms, 1e3 and 0.5 included). Blocks.
  function Elector:await_leader(ms)
    local h = self:_handle()
    local t = timeout_ms(ms, -1)
    collect()
    return unless({ M.ETIMEDOUT }, raw.await_leader, h, t) ~= nil
  end

  -- Hand this leader's leadership to the candidate of the same path whose
  -- id is target, waiting at most ms (> 0) for it to be next in line
  -- (docs/semantics.md, "Transferring leadership"). true once the target is
  -- first; raises otherwise: ENOCANDIDATE or ENOTLEADER (nothing changed),
  -- ETIMEDOUT or ETARGET_LOST (leadership went to the next in line, as
  -- after a resign). Stays a candidate, at the back of the line. Blocks.
  function Elector:transfer(target, ms)
    local h = self:_handle()
    local t = timeout_ms(ms, 0)  -- nil: 0, which the library refuses (EINVAL)
    collect()
    raw.transfer(h, target, t)
    return true
  end

  -- A fenced write (docs/fencing.md, "Fenced ZooKeeper writes"): ops in
  -- one ZooKeeper multi behind a check of this candidacy's node, committed
  -- whole and only while it leads its term. ops is a list of
  -- {"set", path, data, version}, {"create", path, data, "ephemeral"} and
  -- {"delete", path, version} (data a string; version nil: any). Waits at
  -- most ms (> 0). Returns true, or raises ENOTLEADER (nothing sent),
  -- EFENCED (the term is over; nothing committed), EZK or EAUTH (an
  -- operation refused, its 0-based index in the message; nothing
  -- committed), ECONNLOSS, ESESSION_EXPIRED or ETIMEDOUT (the outcome is
  -- unknown: read what it wrote). Blocks. Since 1.2.
  function Elector:fenced_commit(ops, ms)
    local h = self:_handle()
    local t = timeout_ms(ms, 0)  -- nil: 0, which the library refuses (EINVAL)
    local batch = fenced_batch(ops)
    raw.fenced_commit(h, batch, t)
    return true
  end

  -- The next event as a table, or nil when none came within ms (nil or 0:
  -- do not wait; < 0: no limit) or wake() was called.
  function Elector:next_event(ms) return next_event_of(self, ms, raw.next_event) end

  -- Readable while events wait (level-triggered), for poll loops (luv,
  -- cqueues). Owned by the library: never read or close it.
  function Elector:event_fd() return raw.event_fd(self:_handle()) end
  function Elector:wake() raw.wake(self:_handle()) end

  -- The leader's participant id, or nil when nobody is a candidate. Blocks
  -- (asks ZooKeeper).
  function Elector:leader_id()
    local h = self:_handle()
    collect()
    return unless({ M.ENOLEADER }, raw.leader_id, h)
  end

  -- The fencing token of this term, or nil when not leading.
  function Elector:fencing_token()
    return unless({ M.ENOTLEADER }, raw.fencing_token, self:_handle())
  end

  -- The candidates of this election, in queue order. Blocks.
  function Elector:participants()
    local h = self:_handle()
    collect()
    return take_participants(raw.participants(h))
  end

  -- This candidacy's figures as a JSON object (a string): state, term,
  -- queue position, losses by reason, keepalive and failover histograms.
  -- Since 1.2.
  function Elector:stats()
    local h = self:_handle()
    collect_eagerly()
    return take_stats(raw.election_stats(h))
  end

  function Elector:client() return self._client end

  -- Leaves the election and frees the handle; blocks until ZooKeeper
  -- acknowledged the deletion of the node (at most the session timeout).
  -- An elector made by zkelect.elector closes its session too.
  function Elector:close()
    if close_child(self, raw.election_destroy) and self._owns and not self._client._closing then
      self._client:close()
    end
  end
  Elector.__close = Elector.close
  Elector.__gc = gc_method("election")

  -------------------------------------------------------------------------
  -- Observer: who leads, without taking part

  local Observer = {}
  Observer.__index = Observer

  function Client:observer(path)
    local h = self:_handle()
    local o = setmetatable({ _h = owned("observer", raw.observer_new(h, path)), _client = self,
                             path = path }, Observer)
    self._children[o] = true
    return o
  end

  function Observer:_handle()
    if not self._h then closed_error("observer") end
    return self._h
  end

  function Observer:next_event(ms) return next_event_of(self, ms, raw.observer_next_event) end
  function Observer:event_fd() return raw.observer_event_fd(self:_handle()) end
  function Observer:wake() raw.observer_wake(self:_handle()) end

  function Observer:close() close_child(self, raw.observer_destroy) end
  Observer.__close = Observer.close
  Observer.__gc = gc_method("observer")

  M.Client, M.Elector, M.Observer = Client, Elector, Observer

  -- Every configuration key the library knows, in a fixed order (the keys
  -- connect{} takes under its own names, and any other by its full name).
  -- Never blocks.
  function M.config_keys()
    local keys = {}
    for i = 0, 1023 do -- bounded: the library knows a handful
      local k = raw.conf_key(i)
      if k == nil then break end
      keys[#keys + 1] = k
    end
    return keys
  end

  return M
end
