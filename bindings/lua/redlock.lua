--- redlock: distributed locks over N independent Redis masters (Redlock).
--
-- A thin layer over the native module `redlock_core` (the C API through SWIG)
-- that speaks Lua: methods, `nil, err` returns and garbage collection.
--
--     local redlock = require "redlock"
--     local client = assert(redlock.new({ "redis://10.0.0.1", "redis://10.0.0.2",
--                                          "redis://10.0.0.3" }, { key_prefix = "app:" }))
--     local lock = client:get_lock("orders:42")
--     local ok, err = lock:try_lock(1000, 10000)   -- wait up to 1 s, hold for 10 s
--     if ok then ... lock:unlock() elseif err.name == "locked" then ... end
--
-- Times are whole milliseconds. Failures the caller must expect return
-- `nil, err`, err being a table { code = <C status>, name = "locked" |
-- "noquorum" | "notheld" | ..., message = <description and node detail> }
-- whose tostring() is "name: message". Misuse (wrong types, negative times,
-- a closed client) raises a Lua error instead.
--
-- A lock collected while held is not released: the nodes are not contacted
-- from a finalizer, and the key expires at the end of its lease.
local core = require "redlock_core"

local redlock = { _VERSION = core.redlock_version_string() }

local unpack = table.unpack or unpack
local ngx = rawget(_G, "ngx")

local MAX_TTL_MS = core.REDLOCK_MAX_TTL_MS
local MAX_MS = 2 ^ 53

-- Error names from the header's codes: REDLOCK_ELOCKED is "locked" and is
-- also published as redlock.ELOCKED.
local error_names = {}
for key, value in pairs(core) do
  local suffix = type(key) == "string" and key:match("^REDLOCK_(E%u+)$")
  if suffix then
    error_names[value] = suffix:sub(2):lower()
    redlock[suffix] = value
  end
end

local Error = {}
Error.__tostring = function(err) return err.name .. ": " .. err.message end
Error.__concat = function(a, b) return tostring(a) .. tostring(b) end

-- The error for status `code`, with the C library's detail for this thread's
-- last failure unless `detail` is given.
local function make_error(code, detail)
  detail = detail or core.redlock_errmsg()
  local message = core.redlock_strerror(code)
  if detail ~= "" then
    message = message .. " (" .. detail .. ")"
  end
  return setmetatable({ code = code, name = error_names[code] or "unknown", message = message },
                      Error)
end

-- Argument checks. The error points at the caller of the public function;
-- depth says how many helpers lie between that function and argerror.
local function argerror(n, fname, msg, depth)
  error(("bad argument #%d to '%s' (%s)"):format(n, fname, msg), 3 + (depth or 0))
end

local function check_self(self, class, fname)
  if getmetatable(self) ~= class then
    error(("calling '%s' on bad self (%s expected, got %s)"):format(
      fname, class.__name, type(self)), 3)
  end
end

-- Why value is not a whole number of milliseconds from min to max, or nil.
local function ms_problem(value, min, max)
  if type(value) ~= "number" then
    return "number expected, got " .. type(value)
  end
  if value ~= math.floor(value) or value < min or value > max then
    return ("whole number of milliseconds from %d to %d expected, got %s"):format(
      min, max, tostring(value))
  end
end

local function check_lease(n, fname, value)
  local problem = ms_problem(value, 1, MAX_TTL_MS)
  if problem then argerror(n, fname, problem, 1) end
end

local function check_wait(n, fname, value)
  local problem = ms_problem(value, 0, MAX_MS)
  if problem then argerror(n, fname, problem, 1) end
end

local function check_name(n, fname, value)
  if type(value) ~= "string" then
    argerror(n, fname, "string expected, got " .. type(value), 1)
  end
  if value == "" then
    argerror(n, fname, "resource name is empty", 1)
  end
end

-- An object whose collection runs fn: a userdata in Lua 5.1 and LuaJIT,
-- where tables have no __gc, a table elsewhere.
local function finalizer(fn)
  if newproxy then
    local proxy = newproxy(true)
    getmetatable(proxy).__gc = fn
    return proxy
  end
  return setmetatable({}, { __gc = fn })
end

-- The C context outlives every handle made from it: it is freed once the
-- client is closed (or collected) and its last handle is freed.
-- Inside nginx its connections go first: the idle ones at once, the others
-- when their readers end.
local function release_ctx(ctx)
  if not (ctx.closed and ctx.handles == 0 and ctx.ptr) or ctx.releasing then
    return
  end
  local d = ctx.drv
  if d then
    ctx.releasing = true
    for node, pool in pairs(d.idle) do
      for _, io in ipairs(pool) do
        io.freed = true
        core.redlock_conn_free(io.conn)
        d.live = d.live - 1
      end
      d.idle[node] = {}
    end
    ctx.releasing = false
    if d.live > 0 then
      return
    end
  end
  core.redlock_ctx_free(ctx.ptr)
  ctx.ptr = nil
end

local function drop_handle(state)
  if state.handle then
    core.redlock_handle_free(state.handle)
    state.handle = nil
    state.ctx.handles = state.ctx.handles - 1
    release_ctx(state.ctx)
  end
end

local function attempt(ctx, names, lease_ms, wait_ms)
  if #names == 1 then
    return core.redlock_lock(ctx.ptr, names[1], lease_ms, wait_ms)
  end
  return core.redlock_lock_multi(ctx.ptr, names, lease_ms, wait_ms)
end

---------------------------------------------------------------------------
-- Inside nginx: the engine driven over cosockets.
--
-- In a phase with cosockets (rewrite, access, content, timer, ssl_*) every
-- call drives the library's engine (redlock_engine.h) itself: one cosocket
-- per node, all nodes in flight at once, the pauses between attempts are
-- ngx.sleep, and the worker serves other requests meanwhile. The engine
-- decides everything else (votes, retries, what a late reply means); this
-- code moves bytes and wakes it when it asked to be woken.
--
-- Per connection, one light thread reads (and connects) and the calling
-- coroutine alone writes (cosockets are full duplex). Idle connections are
-- kept per worker, each in a keepalive pool of its own name, so that the
-- engine's state of a connection (handshake done) always goes with its
-- socket; only a connection with no reply owed goes back to its pool.

local COSOCKET_PHASES = { rewrite = true, access = true, content = true, timer = true,
                          ssl_cert = true, ssl_session_fetch = true, ssl_client_hello = true }
local READ_CHUNK = 16384
local IDLE_MS = 50000          -- a pooled socket is kept this long (setkeepalive)
local DELIVER_PERIOD = 0.1     -- releases owed to nodes are tried again this often
local semaphore = ngx and COSOCKET_PHASES[ngx.get_phase()] ~= nil and require("ngx.semaphore")
local ctx_ids = 0
local now_ms = core.redlock_now_ms

-- nil when this call may use cosockets; otherwise true (outside nginx: the
-- blocking C call), or false (inside nginx in a phase without them).
local function blocking_allowed()
  if not ngx then
    return true
  end
  if COSOCKET_PHASES[ngx.get_phase()] then
    return nil
  end
  return false
end

local function no_cosockets_error(what)
  return make_error(core.REDLOCK_EUNSUPPORTED, ("%s cannot run in nginx's %s phase, which has "
    .. "no cosockets; run it from a 0-delay ngx.timer.at callback"):format(what, ngx.get_phase()))
end

-- The driver's state for one client in this worker.
local function driver_of(ctx)
  local d = ctx.drv
  if not d then
    semaphore = semaphore or require("ngx.semaphore")
    ctx_ids = ctx_ids + 1
    local n = core.redlock_ctx_node_count(ctx.ptr)
    d = { ctx = ctx, n = n, id = ctx_ids, seq = 0, idle = {}, addr = {}, live = 0 }
    local _, text = core.redlock_ctx_get_option(ctx.ptr, "pool_size")
    d.pool_size = tonumber(text)
    _, text = core.redlock_ctx_get_option(ctx.ptr, "connect_timeout_ms")
    d.connect_timeout = tonumber(text)
    _, text = core.redlock_ctx_get_option(ctx.ptr, "node_timeout_ms")
    d.node_timeout = tonumber(text)
    for i = 0, n - 1 do
      d.idle[i] = {}
      local host = core.redlock_ctx_node_host(ctx.ptr, i)
      d.addr[i] = host and { host, core.redlock_ctx_node_port(ctx.ptr, i) }
                  or { "unix:" .. core.redlock_ctx_node_path(ctx.ptr, i) }
    end
    ctx.drv = d
  end
  return d
end

-- Frees a connection's engine state (what it still owed is settled first).
local function free_conn(d, io)
  if not io.freed then
    io.freed = true
    core.redlock_conn_free(io.conn)
    d.live = d.live - 1
    release_ctx(d.ctx)
  end
end

-- Closes a connection the driver gives up: its socket, then its state.
local function close_io(d, io, why)
  if io.sock then
    io.sock:close()
    io.sock = nil
  end
  if not io.freed and why then
    core.redlock_conn_lost(io.conn, why, now_ms())
  end
  free_conn(d, io)
end

-- A connection with nothing owed goes back to its keepalive pool (its
-- socket) and to the idle list (its state).
local function keep(d, io)
  local pool = d.idle[io.node]
  if io.sock and not io.freed and not d.ctx.closed and #pool < d.pool_size
      and core.redlock_conn_poolable(io.conn) == 1 and core.redlock_conn_owed(io.conn) == 0 then
    local ok = io.sock:setkeepalive(IDLE_MS)
    io.sock = nil
    if ok then
      io.idle_until = now_ms() + IDLE_MS - 1000
      pool[#pool + 1] = io
      return
    end
  end
  close_io(d, io, "closed by the client")
end

-- Writes what the engine queued on a connection; false when the socket
-- failed. Only one coroutine writes to a connection: the run's while it has
-- one, its reader after that.
local function write(io)
  local out = core.redlock_conn_output(io.conn)
  if #out == 0 then
    return true
  end
  local sent, err = io.sock:send(out)
  if io.freed then
    return false
  elseif not sent then
    core.redlock_conn_lost(io.conn, "connection lost: " .. tostring(err), now_ms())
    io.dead = true
    return false
  end
  core.redlock_conn_wrote(io.conn, #out)
  return true
end

-- Wakes the run of a connection, if it has one, after an event. A reply
-- only wakes it when the operation then has something for it to do: it is
-- decided, it wants to be woken at another time (a new round, a pause), or
-- the reply queued a command.
local function poke(io, replied)
  local run = io.run
  if not run then
    return
  end
  if not io.dead and replied and run.waiting then
    local op = run.op
    core.redlock_op_step(op, replied)
    if core.redlock_op_done(op) == 0 and core.redlock_op_wake_at(op) == run.waiting
        and #core.redlock_conn_output(io.conn) == 0 then
      return
    end
  end
  run.may_want = run.may_want or io.dead
  run.sem:post(1)
end

-- The reader of one connection: connects it if it has no socket yet, then
-- reads while replies are owed. It ends when none is, or the socket does.
local function reader(d, io)
  local conn = io.conn
  if not io.sock then
    local sock = ngx.socket.tcp()
    sock:settimeouts(d.connect_timeout, d.node_timeout, d.node_timeout)
    local addr = d.addr[io.node]
    local ok, err = sock:connect(addr[1], addr[2], { pool = io.pool })
    if io.freed then
      sock:close()
      io.reader = nil
      return
    end
    if not ok then
      core.redlock_conn_lost(conn, "cannot connect: " .. tostring(err), now_ms())
      io.dead = true
    elseif io.pooled and sock:getreusedtimes() == 0 then
      -- The pooled socket was closed while idle: the engine tries the
      -- command again on a new connection.
      sock:close()
      core.redlock_conn_lost(conn, "connection lost: closed while idle", now_ms())
      io.dead = true
    else
      io.sock = sock
      if not io.pooled then
        core.redlock_conn_connected(conn, now_ms())
      end
    end
    poke(io)
  end
  while not io.dead and not io.freed and core.redlock_conn_broken(conn) == 0
      and core.redlock_conn_owed(conn) > 0 do
    -- Once the run let go of it, the reader also writes: a late reply may
    -- queue a command (the release of an acquire that came too late).
    if io.released and not write(io) then
      break
    end
    local data, err = io.sock:receiveany(READ_CHUNK)
    if io.freed then
      break
    end
    local now = now_ms()
    if data then
      if core.redlock_conn_received(conn, data, now) ~= core.REDLOCK_OK then
        io.dead = true
      end
      poke(io, now)
    else
      -- A read timeout is the node's timeout: the connection is given up,
      -- and the engine decides what its unanswered commands mean.
      core.redlock_conn_lost(conn, err == "timeout"
        and ("no answer within %d ms"):format(d.node_timeout)
        or "connection lost: " .. tostring(err), now)
      io.dead = true
      poke(io)
    end
  end
  io.reader = nil
  if io.released then
    if io.dead or io.freed then
      close_io(d, io)
    else
      keep(d, io)
    end
  elseif io.dead then
    -- The engine let go of it; the run frees it.
    if io.sock then
      io.sock:close()
      io.sock = nil
    end
  end
end

-- The reader runs at once until it first waits; one that ends before that
-- leaves no thread behind.
local function spawn_reader(d, io)
  io.reader = true
  local thread = ngx.thread.spawn(reader, d, io)
  if io.reader then
    io.reader = thread
  end
end

local function take_idle(d, node, now)
  local pool = d.idle[node]
  while #pool > 0 do
    local io = table.remove(pool)
    if now < io.idle_until and core.redlock_conn_broken(io.conn) == 0 then
      return io
    end
    free_conn(d, io)
  end
end

local function attach(d, run, node, now)
  local io = take_idle(d, node, now)
  if io then
    io.pooled = true
  else
    local wait = core.redlock_ctx_node_connect_wait(d.ctx.ptr, node, now)
    if wait > 0 then
      core.redlock_op_no_conn(run.op, node,
        ("unreachable, next connection attempt in %d ms"):format(wait), now)
      return
    end
    local rc, conn = core.redlock_conn_new(d.ctx.ptr, node)
    if rc ~= core.REDLOCK_OK then
      core.redlock_op_no_conn(run.op, node, "out of memory", now)
      return
    end
    d.seq = d.seq + 1
    d.live = d.live + 1
    io = { conn = conn, node = node, pool = ("redlock:%d:%d:%d"):format(d.id, node, d.seq) }
  end
  io.run, io.released = run, false
  run.ios[#run.ios + 1] = io
  core.redlock_op_attach(run.op, node, io.conn, now)
  spawn_reader(d, io)
end

-- Writes what the engine queued on each connection of the run (the calling
-- coroutine is the only writer), and sees that each connection that owes
-- replies has a reader.
local function flush(d, run)
  for _, io in ipairs(run.ios) do
    if io.sock and not io.dead and not io.freed then
      write(io)
      if not io.reader and not io.dead and not io.freed and core.redlock_conn_owed(io.conn) > 0 then
        spawn_reader(d, io)
      end
    end
  end
end

local function wait(run, at, now)
  local ms = math.max(0, math.min(at - now, 1000))
  run.waiting = at
  run.sem:wait(ms / 1000)
  run.waiting = nil
end

-- The first deadline of a connection of the finished run still connecting.
local function tail(run, now)
  local first
  for node = 0, run.d.n - 1 do
    local deadline = core.redlock_op_deadline(run.op, node)
    local conn = core.redlock_op_conn(run.op, node)
    if conn and core.redlock_conn_sending(conn) == 1 and deadline > now
        and (not first or deadline < first) then
      first = deadline
    end
  end
  return first
end

local start_delivery

local function attach_wanted(d, run, now)
  for node = 0, d.n - 1 do
    if core.redlock_op_wants_conn(run.op, node) == 1 then
      attach(d, run, node, now)
    end
  end
end

-- Drives op to its end in this coroutine; returns its status, its message
-- and (a lock's) handle.
local function drive(ctx, op)
  local d = driver_of(ctx)
  local run = { d = d, op = op, sem = semaphore.new(), ios = {}, may_want = true }
  local at = 0
  while true do
    local now = now_ms()
    -- Only a new round (it starts in a step at a time the run was to wake
    -- at) or a connection lost makes the operation want connections.
    if run.may_want or now >= at then
      run.may_want = false
      attach_wanted(d, run, now)
      core.redlock_op_step(op, now)
      attach_wanted(d, run, now)
    end
    core.redlock_op_step(op, now)
    flush(d, run)
    if core.redlock_op_done(op) == 1 then
      break
    end
    at = core.redlock_op_wake_at(op)
    wait(run, at, now)
  end
  -- Decided at a quorum; every node reachable in time still gets the command.
  at = tail(run, now_ms())
  while at do
    wait(run, at, now_ms())
    flush(d, run)
    at = tail(run, now_ms())
  end
  local status, message = core.redlock_op_status(op), core.redlock_op_message(op)
  local handle = core.redlock_op_take_handle(op)
  while core.redlock_op_take_conn(op) do
  end
  core.redlock_op_free(op)
  for _, io in ipairs(run.ios) do
    io.run = nil
    if not io.freed then
      if io.reader then
        -- Replies are still owed: the reader pools or closes it after them.
        io.released = true
      elseif io.dead or not io.sock then
        close_io(d, io, "closed by the client")
      else
        keep(d, io)
      end
    end
  end
  if core.redlock_ctx_owes(ctx.ptr) == 1 then
    start_delivery(ctx)
  end
  return status, message, handle
end

-- Delivers the releases owed to nodes that did not answer, from a timer of
-- this worker, while the client is open.
local function deliver_loop(premature, ctx)
  while not premature and not ctx.closed and core.redlock_ctx_owes(ctx.ptr) == 1 do
    local rc, op = core.redlock_op_deliver(ctx.ptr, now_ms())
    if rc == core.REDLOCK_OK then
      drive(ctx, op)
    end
    ngx.sleep(DELIVER_PERIOD)
  end
  ctx.drv.delivering = false
end

start_delivery = function(ctx)
  local d = ctx.drv
  if not d.delivering then
    d.delivering = ngx.timer.at(0, deliver_loop, ctx) and true or false
  end
end

local function engine_call(ctx, make, ...)
  local rc, op = make(...)
  if rc ~= core.REDLOCK_OK then
    return rc, nil, make_error(rc)
  end
  local status, message, handle = drive(ctx, op)
  if status ~= core.REDLOCK_OK then
    return status, nil, make_error(status, message)
  end
  return status, handle
end

local function acquire(ctx, names, lease_ms, wait_ms)
  local blocking = blocking_allowed()
  if blocking then
    if #names == 1 then
      return core.redlock_lock(ctx.ptr, names[1], lease_ms, wait_ms)
    end
    return core.redlock_lock_multi(ctx.ptr, names, lease_ms, wait_ms)
  elseif blocking == false then
    return core.REDLOCK_EUNSUPPORTED, nil, no_cosockets_error("try_lock")
  end
  return engine_call(ctx, core.redlock_op_lock, ctx.ptr, names, lease_ms, wait_ms, now_ms())
end

-- Unlock or extend of a handle: status, and the error when it failed.
local function handle_call(ctx, what, handle, lease_ms)
  local blocking = blocking_allowed()
  local rc, _, err
  if blocking then
    rc = what == "unlock" and core.redlock_unlock(handle) or core.redlock_extend(handle, lease_ms)
  elseif blocking == false then
    return core.REDLOCK_EUNSUPPORTED, no_cosockets_error(what)
  elseif what == "unlock" then
    rc, _, err = engine_call(ctx, core.redlock_op_unlock, handle, now_ms())
  else
    rc, _, err = engine_call(ctx, core.redlock_op_extend, handle, lease_ms, now_ms())
  end
  if rc ~= core.REDLOCK_OK then
    return rc, err or make_error(rc)
  end
  return rc
end

---------------------------------------------------------------------------
-- Lock: one resource, or several taken together.

local Lock = { __name = "redlock lock" }
Lock.__index = Lock

local function new_lock(ctx, names)
  local state = { ctx = ctx }
  return setmetatable({ _state = state, _names = names,
                        _finalizer = finalizer(function() drop_handle(state) end) }, Lock)
end

--- Tries to acquire the lock, waiting up to wait_ms (0: one attempt), for a
-- lease of lease_ms. Returns true, or nil and an error ("locked" when someone
-- else holds it).
function Lock:try_lock(wait_ms, lease_ms)
  check_self(self, Lock, "try_lock")
  check_wait(1, "try_lock", wait_ms)
  check_lease(2, "try_lock", lease_ms)
  local state = self._state
  if state.ctx.closed then
    error("try_lock: the client is closed", 2)
  end
  if state.handle then
    if core.redlock_handle_validity_ms(state.handle) > 0 then
      error("try_lock: the lock is already held; unlock it first", 2)
    end
    drop_handle(state)
  end
  local rc, handle, err = acquire(state.ctx, self._names, lease_ms, wait_ms)
  if rc ~= core.REDLOCK_OK then
    return nil, err or make_error(rc)
  end
  state.handle = handle
  state.ctx.handles = state.ctx.handles + 1
  return true
end

--- Releases the lock. Returns true, or nil and an error: "notheld" when it
-- had expired or been lost (the critical section may not have been
-- exclusive) or was never taken. The lock is not held afterwards either way.
function Lock:unlock()
  check_self(self, Lock, "unlock")
  local state = self._state
  if not state.handle then
    return nil, make_error(core.REDLOCK_ENOTHELD, "this lock is not acquired")
  end
  local _, err = handle_call(state.ctx, "unlock", state.handle)
  drop_handle(state)
  if err then
    return nil, err
  end
  return true
end

--- Renews the lease to lease_ms from now. Returns true, or nil and an error
-- ("notheld" when the lock has expired, was lost or was released).
function Lock:extend(lease_ms)
  check_self(self, Lock, "extend")
  check_lease(1, "extend", lease_ms)
  local handle = self._state.handle
  if not handle then
    return nil, make_error(core.REDLOCK_ENOTHELD, "this lock is not acquired")
  end
  local _, err = handle_call(self._state.ctx, "extend", handle, lease_ms)
  if err then
    return nil, err
  end
  return true
end

--- Milliseconds of validity left; 0 or less when not held.
function Lock:validity_ms()
  check_self(self, Lock, "validity_ms")
  return core.redlock_handle_validity_ms(self._state.handle)
end

--- The token stored in the Redis keys (32 hex characters), or nil when the
-- lock has not been acquired or has been released.
function Lock:token()
  check_self(self, Lock, "token")
  local handle = self._state.handle
  return handle and core.redlock_handle_token(handle) or nil
end

---------------------------------------------------------------------------
-- Client: the nodes and their connections.

local Client = { __name = "redlock client" }
Client.__index = Client

local function option_text(name, value)
  local kind = type(value)
  if kind == "string" then
    return value
  elseif kind == "number" and value == math.floor(value) and math.abs(value) <= MAX_MS then
    return ("%d"):format(value)
  elseif kind == "number" then
    return tostring(value)
  end
  argerror(2, "new", ("option '%s': string or number expected, got %s"):format(name, kind), 1)
end

--- Makes a client for the nodes (an array of redis:// or unix:// URIs) with
-- options named as in the C API (node_timeout_ms, key_prefix, ...). Does no
-- network I/O. Returns the client, or nil and an error.
function redlock.new(nodes, options)
  if type(nodes) ~= "table" then
    argerror(1, "new", "table of node URIs expected, got " .. type(nodes))
  end
  for i, uri in ipairs(nodes) do
    if type(uri) ~= "string" then
      argerror(1, "new", ("node %d: string expected, got %s"):format(i, type(uri)))
    end
  end
  if options ~= nil and type(options) ~= "table" then
    argerror(2, "new", "table of options expected, got " .. type(options))
  end
  local texts = {}
  for name, value in pairs(options or {}) do
    if type(name) ~= "string" then
      argerror(2, "new", "option names must be strings, got " .. type(name))
    end
    texts[name] = option_text(name, value)
  end

  local rc, ptr = core.redlock_ctx_new(nodes)
  if rc ~= core.REDLOCK_OK then
    return nil, make_error(rc)
  end
  local ctx = { ptr = ptr, handles = 0, closed = false }
  for name, text in pairs(texts) do
    rc = core.redlock_ctx_set_option(ptr, name, text)
    if rc ~= core.REDLOCK_OK then
      local err = make_error(rc)
      core.redlock_ctx_free(ptr)
      return nil, err
    end
  end
  return setmetatable({ _ctx = ctx, _finalizer = finalizer(function()
    ctx.closed = true
    release_ctx(ctx)
  end) }, Client)
end

local function check_open(self, fname)
  if self._ctx.closed then
    error(fname .. ": the client is closed", 3)
  end
end

--- The current value of a library option, as a string; or nil and an error.
function Client:get_option(name)
  check_self(self, Client, "get_option")
  check_open(self, "get_option")
  if type(name) ~= "string" then
    argerror(1, "get_option", "option name expected, got " .. type(name))
  end
  local rc, value = core.redlock_ctx_get_option(self._ctx.ptr, name)
  if rc ~= core.REDLOCK_OK then
    return nil, make_error(rc)
  end
  return value
end

--- A lock on one resource (not acquired yet).
function Client:get_lock(name)
  check_self(self, Client, "get_lock")
  check_open(self, "get_lock")
  check_name(1, "get_lock", name)
  return new_lock(self._ctx, { name })
end

--- A lock on several distinct resources, acquired all together or not at all.
function Client:get_multi_lock(names)
  check_self(self, Client, "get_multi_lock")
  check_open(self, "get_multi_lock")
  if type(names) ~= "table" then
    argerror(1, "get_multi_lock", "table of names expected, got " .. type(names))
  end
  if #names == 0 then
    argerror(1, "get_multi_lock", "no resource names")
  end
  local copy = {}
  for i, name in ipairs(names) do
    if type(name) ~= "string" or name == "" then
      argerror(1, "get_multi_lock", ("name %d: non-empty string expected, got %s"):format(
        i, type(name) == "string" and "empty string" or type(name)))
    end
    copy[i] = name
  end
  return new_lock(self._ctx, copy)
end

local function pack(...)
  return { n = select("#", ...), ... }
end

--- Runs fn(...) while holding the lock on `name`, waiting up to lease_ms for
-- it, and releases it afterwards, also when fn raises an error (which is
-- raised again). Returns fn's results, or nil and an error when the lock
-- could not be taken, or when it was lost before the release (then fn did
-- run, but perhaps not alone).
function Client:with_lock(name, lease_ms, fn, ...)
  check_self(self, Client, "with_lock")
  check_open(self, "with_lock")
  check_name(1, "with_lock", name)
  check_lease(2, "with_lock", lease_ms)
  if type(fn) ~= "function" then
    argerror(3, "with_lock", "function expected, got " .. type(fn))
  end
  local lock = new_lock(self._ctx, { name })
  local ok, err = lock:try_lock(lease_ms, lease_ms)
  if not ok then
    return nil, err
  end
  local results = pack(pcall(fn, ...))
  local released, unlock_err = lock:unlock()
  if not results[1] then
    error(results[2], 0)
  end
  if not released then
    return nil, unlock_err
  end
  return unpack(results, 2, results.n)
end

--- Closes the client: no new locks can be made or taken. Locks still held
-- stay usable until they are unlocked or collected; the connections close
-- with the last of them.
function Client:close()
  check_self(self, Client, "close")
  self._ctx.closed = true
  release_ctx(self._ctx)
end

return redlock
