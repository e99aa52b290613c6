--- redlock: distributed locks over N independent Redis masters (Redlock).
--
-- A thin layer over the native module `redlock_core` (the C API through SWIG)
-- that speaks Lua: methods, `nil, err` returns and garbage collection.
--
--     local redlock = require "redlock"
--     local client = assert(redlock.new({ "redis://10.0.0.1", "redis://10.0.0.2",
--                                          "redis://10.0.0.3" }, { key_prefix = "app:" }))
--     local lock = client:get_lock("orders:42")
--     local ok, err, code = lock:try_lock(1000, 10000)   -- wait up to 1 s, hold for 10 s
--     if ok then ... lock:unlock() elseif code == "locked" then ... end
--
-- With no lease, try_lock keeps the lock: the library renews it until
-- unlock, and lock:lost() and lock:on_lost(fn) tell when it was lost (see
-- "Kept locks" below).
--
-- The rules every language of the library follows (docs/locks.md):
--   * Reentry keeps the first terms: taking a lock again through the Lock
--     object that holds it counts a hold (lock:hold_count()) and changes
--     neither the keys' TTL nor the renewal; each hold needs its unlock, the
--     last one releases. Taking again after the hold was lost starts afresh
--     (a new acquisition; lost() and unlock() tell the loss until then).
--   * lock:lost() is true whenever the keys can have expired while held: a
--     kept lock whose renewal failed, or any lock whose validity ran out
--     before its unlock.
--   * The default wait: lock:lock() and client:with_lock() wait until
--     acquired; lock:try_lock() with no wait makes one attempt.
--   * A multi-lock is locked when any of its resources is, for the longest
--     of their times to live (the C library's redlock_inspect_multi).
--
-- Times are whole milliseconds. Failures the caller must expect return
-- `nil, err, code`: err a string that starts with the code's word
-- ("locked: the resource is held by someone else (lock 'x': 0 of 5 nodes
-- agreed, ...)"), code that word alone ("locked", "noquorum", "notheld",
-- ...), as in every cosocket library. Misuse (wrong types, negative times,
-- a closed client) raises a Lua error instead.
--
-- A lock collected while held is not released: the nodes are not contacted
-- from a finalizer, and the key expires at the end of its lease.
--
-- Events (acquired, released, no_quorum, node_down, lost, ...) go to
-- ngx.log inside nginx, and elsewhere to the function given as the option
-- `log` (see "Events" below); client:health() tells what the client knows of
-- each node, and client:ping() asks them.
local core = require "redlock_core"

local redlock = { _VERSION = core.redlock_version_string() }

local unpack = table.unpack or unpack
local function pack(...)
  return { n = select("#", ...), ... }
end
local ngx = rawget(_G, "ngx")

local MAX_TTL_MS = core.REDLOCK_MAX_TTL_MS
local MAX_MS = 2 ^ 53
local MAX_PERMITS = core.REDLOCK_MAX_PERMITS

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

-- An error is a string, as in every cosocket library: the code's word
-- ("locked", "noquorum", "notheld": error_names), ": ", the description and
-- the C library's detail (which nodes, and why). Every failure returns nil,
-- the error and the code's word: the word needs no parsing.

-- The error for status `code`, with the C library's detail for this thread's
-- last failure unless `detail` is given; and the code's word.
local function make_error(code, detail)
  detail = detail or core.redlock_errmsg()
  local name = error_names[code] or "unknown"
  local message = name .. ": " .. core.redlock_strerror(code)
  if detail ~= "" then
    message = message .. " (" .. detail .. ")"
  end
  return message, name
end

-- The code's word of an error of ours ("locked" of "locked: ...").
local function code_of(err)
  return type(err) == "string" and err:match("^(%l+): ") or nil
end

-- What a call that failed returns: nil, the error and the code's word.
local function fail(err)
  return nil, err, code_of(err)
end

---------------------------------------------------------------------------
-- Events: the C library's (redlock_ctx_set_log), and those of the renewal
-- inside nginx, which is Lua's own.
--
-- The C hook only queues the events (swig/lua.i: it may run on the client's
-- own thread, where Lua must not be entered); they come out here on the Lua
-- thread, at the start and the end of every call into the client or its
-- locks, and go to the client's sink: the option `log`, a function called as
-- log(level, event, message) with level "debug", "info", "warn" or "error";
-- inside nginx without one, ngx.log (DEBUG, INFO, WARN, ERR), "redlock: "
-- followed by the event's name and message. The option `log_level` is the
-- least level sent: by default "info" for a `log` function, and inside
-- nginx the level of its error_log (as ngx.errlog tells it; "warn" when it
-- cannot). A sink that raises an error is reported (ngx.log or stderr), not
-- raised into the call.

local LOG_LEVELS = { debug = core.REDLOCK_LOG_DEBUG, info = core.REDLOCK_LOG_INFO,
                     warn = core.REDLOCK_LOG_WARN, error = core.REDLOCK_LOG_ERROR }
local LEVEL_NAMES = {}
for name, level in pairs(LOG_LEVELS) do
  LEVEL_NAMES[level] = name
end

-- Where messages about the binding itself go: nginx's error log, or stderr.
local function report(what, problem)
  if ngx then
    ngx.log(ngx.ERR, "redlock: ", what, " failed: ", problem)
  else
    io.stderr:write("redlock: ", what, " failed: ", tostring(problem), "\n")
  end
end

-- The least level nginx logs, as one of ours (nil: nothing of ours).
local function nginx_level()
  local ok, errlog = pcall(require, "ngx.errlog")
  local level = ok and errlog.get_sys_filter_level and select(2, pcall(errlog.get_sys_filter_level))
  if not level then
    return core.REDLOCK_LOG_WARN
  end
  if level >= ngx.DEBUG then
    return core.REDLOCK_LOG_DEBUG
  elseif level >= ngx.INFO then
    return core.REDLOCK_LOG_INFO
  elseif level >= ngx.WARN then
    return core.REDLOCK_LOG_WARN
  elseif level >= ngx.ERR then
    return core.REDLOCK_LOG_ERROR
  end
end

local function nginx_sink(level, event, message)
  local nginx = { debug = ngx.DEBUG, info = ngx.INFO, warn = ngx.WARN, error = ngx.ERR }
  ngx.log(nginx[level], "redlock: ", event, " ", message)
end

-- Control bytes (below 0x20, and 0x7f) as the C library escapes them in its
-- events: \n, \r, \t, else \xNN. An event is one line of a log, always.
local ESCAPES = { ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }
local function escape(text)
  return (tostring(text):gsub("[%c\127]", function(c)
    return ESCAPES[c] or ("\\x%02x"):format(c:byte())
  end))
end

-- Sends one event to ctx's sink, if it has one and the level reaches it
-- (the C library escapes control bytes already; escaped here too).
local function emit(ctx, level, event, message)
  if ctx.sink and level >= ctx.log_level then
    event, message = escape(event), escape(message)
    local ok, problem = pcall(ctx.sink, LEVEL_NAMES[level] or tostring(level), event, message)
    if not ok then
      report("the log function", problem)
    end
  end
end

-- Sends the events the C library queued for ctx to its sink.
local function drain_events(ctx)
  local q = ctx.events
  if not q or ctx.draining then
    return
  end
  ctx.draining = true   -- a sink that calls into the client does not drain again
  while true do
    local level = core.redlock_lua_log_pop(q)
    if level == 0 then
      break
    end
    emit(ctx, level, core.redlock_lua_log_event(q), core.redlock_lua_log_message(q))
  end
  ctx.draining = false
end

-- Argument checks. The error points at the caller of the public function;
-- depth says how many helpers lie between that function and argerror.
local function argerror(n, fname, msg, depth)
  error(("bad argument #%d to '%s' (%s)"):format(n, fname, msg), 3 + (depth or 0))
end

-- self is of class, or of a kind of it (_kind_of: a permit is a Lock).
local function check_self(self, class, fname)
  local mt = getmetatable(self)
  if mt ~= class and not (type(mt) == "table" and rawget(mt, "_kind_of") == class) then
    error(("calling '%s' on bad self (%s expected, got %s)"):format(
      fname, class.__name, type(self)), 3)
  end
end

-- Why value is not a whole number of units (milliseconds, permits) from
-- min to max, or nil.
local function whole_problem(value, min, max, units)
  if type(value) ~= "number" then
    return "number expected, got " .. type(value)
  end
  if value ~= math.floor(value) or value < min or value > max then
    return ("whole number of %s from %d to %d expected, got %s"):format(
      units, min, max, tostring(value))
  end
end

-- (depth: helpers between the public function and this one.)
local function check_lease(n, fname, value, depth)
  local problem = whole_problem(value, 1, MAX_TTL_MS, "milliseconds")
  if problem then argerror(n, fname, problem, 1 + (depth or 0)) end
end

local function check_wait(n, fname, value, depth)
  local problem = whole_problem(value, 0, MAX_MS, "milliseconds")
  if problem then argerror(n, fname, problem, 1 + (depth or 0)) end
end

-- A lease or nil (a kept lock).
local function check_kept_lease(n, fname, value, depth)
  if value ~= nil then
    check_lease(n, fname, value, 1 + (depth or 0))
  end
end

-- A semaphore's permits: from 1 to REDLOCK_MAX_PERMITS.
local function check_permits(n, fname, value)
  local problem = whole_problem(value, 1, MAX_PERMITS, "permits")
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
  -- After the ctx: nothing can queue an event any more.
  core.redlock_lua_log_free(ctx.events)
  ctx.events = nil
end

-- Frees the lock's C handle. A kept lock's renewal ends with it: outside
-- nginx redlock_handle_free stops the C thread's renewal (waiting for an
-- extension under way), after which its lost record can go; inside nginx
-- no extension is under way here (see stop_keeping).
local function drop_handle(state)
  if state.handle then
    local hold = state.hold
    if hold then
      hold.kept, hold.handle = false, nil
    end
    core.redlock_handle_free(state.handle)
    if hold and hold.watch then
      core.redlock_lua_watch_free(hold.watch)
      hold.watch = nil
    end
    state.handle = nil
    state.ctx.handles = state.ctx.handles - 1
    state.ctx.held[state] = nil
    release_ctx(state.ctx)
  end
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
--
-- rediss:// nodes: the cosocket's own TLS (sslhandshake) with the library's
-- settings (redlock_ctx_tls_*: its checks of the tls_* options included),
-- as far as nginx can apply them per call: its trust is nginx's
-- (lua_ssl_trusted_certificate, lua_ssl_verify_depth), so tls_ca_file and
-- tls_ca_dir are checked but not used here, nor is the lowest protocol
-- version (lua_ssl_protocols). The certificate is checked by name
-- (tls_server_name, or the node's host, which must then be a name: nginx
-- checks no IP address); tls_verify 0 checks nothing; the client's
-- certificate and key are sent with setclientcert.

local COSOCKET_PHASES = { rewrite = true, access = true, content = true, timer = true,
                          ssl_cert = true, ssl_session_fetch = true, ssl_client_hello = true }
local READ_CHUNK = 16384
local NEVER = 2 ^ 62           -- the engine's INT64_MAX, as far as Lua's numbers tell
local IDLE_MS = 50000          -- a pooled socket is kept this long (setkeepalive)
local semaphore = ngx and COSOCKET_PHASES[ngx.get_phase()] ~= nil and require("ngx.semaphore")
local ctx_ids = 0
local now_ms = core.redlock_now_ms
local op_drive = core.redlock_op_drive

-- What the engine asks of a run (redlock_op_drive's bits), and a test of one
-- that Lua 5.1 and LuaJIT can read (they have no bit operators).
local CONNECT, WRITE, AWAITS = core.REDLOCK_DRIVE_CONNECT, core.REDLOCK_DRIVE_WRITE,
                               core.REDLOCK_DRIVE_AWAITS
local DONE, TAIL = core.REDLOCK_DRIVE_DONE, core.REDLOCK_DRIVE_TAIL
local function has(bits, flag)
  return bits % (flag + flag) >= flag
end

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
    d.tls, d.tls_ip = {}, {}
    for i = 0, n - 1 do
      d.idle[i] = {}
      local host = core.redlock_ctx_node_host(ctx.ptr, i)
      d.addr[i] = host and { host, core.redlock_ctx_node_port(ctx.ptr, i) }
                  or { "unix:" .. core.redlock_ctx_node_path(ctx.ptr, i) }
      d.tls[i] = core.redlock_ctx_node_tls(ctx.ptr, i) == 1
                 and core.redlock_ctx_node_server_name(ctx.ptr, i) or nil
      d.tls_ip[i] = core.redlock_ctx_node_server_ip(ctx.ptr, i) == 1
    end
    ctx.drv = d
  end
  return d
end

-- The client's TLS settings for cosockets, made once: the library's own
-- (redlock_ctx_tls_*, from its tls_* options), applied as nginx allows: the
-- check on or off, and the client certificate (ngx.ssl's cdata). nil and
-- why when they cannot be made.
local function tls_settings(d)
  if d.tls_settings or d.tls_failure then
    return d.tls_settings, d.tls_failure
  end
  local ptr = d.ctx.ptr
  if core.redlock_ctx_tls_check(ptr) ~= core.REDLOCK_OK then
    d.tls_failure = core.redlock_errmsg()
    return nil, d.tls_failure
  end
  local settings = { verify = core.redlock_ctx_tls_verify(ptr) == 1 }
  if (core.redlock_ctx_tls_ca_file(ptr) or core.redlock_ctx_tls_ca_dir(ptr)) and not d.warned then
    d.warned = true
    ngx.log(ngx.WARN, "redlock: tls_ca_file and tls_ca_dir are not used inside nginx: the ",
            "nodes' certificates are checked against lua_ssl_trusted_certificate")
  end
  local cert_file, key_file = core.redlock_ctx_tls_cert_file(ptr), core.redlock_ctx_tls_key_file(ptr)
  local function read(name, path)
    local f, err = io.open(path, "rb")
    if not f then
      return nil, ("%s '%s': %s"):format(name, path, err:gsub("^[^:]*: ", ""))
    end
    local text = f:read("*a")
    f:close()
    return text
  end
  local failure
  if cert_file then
    local ssl = require "ngx.ssl"
    local cert_pem, key_pem
    cert_pem, failure = read("tls_cert_file", cert_file)
    if cert_pem then
      key_pem, failure = read("tls_key_file", key_file)
    end
    if key_pem then
      local err
      settings.cert, err = ssl.parse_pem_cert(cert_pem)
      failure = not settings.cert and "tls_cert_file: cannot load the certificate (" .. tostring(err) .. ")"
      if settings.cert then
        settings.key, err = ssl.parse_pem_priv_key(key_pem)
        failure = not settings.key and "tls_key_file: cannot load the private key (" .. tostring(err) .. ")"
      end
    end
  end
  if failure then
    d.tls_failure = failure
    return nil, failure
  end
  d.tls_settings = settings
  return settings
end

-- The TLS handshake of a new cosocket to node (a rediss:// node), whose
-- certificate must carry name (an IP address when is_ip): true, or nil and
-- why.
local function secure(d, sock, name, is_ip)
  local settings, failure = tls_settings(d)
  if not settings then
    return nil, failure
  end
  if settings.verify and is_ip then
    return nil, ("TLS: inside nginx a certificate is checked by name only, and %s is an "
                 .. "address: set tls_server_name to the name in the nodes' certificates"):format(name)
  end
  if settings.cert then
    local ok, err = sock:setclientcert(settings.cert, settings.key)
    if not ok then
      return nil, "TLS: cannot use the client certificate (" .. tostring(err) .. ")"
    end
  end
  local ok, err = sock:sslhandshake(false, name, settings.verify)
  if ok and sock:getreusedtimes() then
    return true
  elseif ok then
    -- lua-nginx-module 0.10.23 reports success for a handshake that ended
    -- within its first step and failed the check (the socket is closed
    -- then), and keeps the reason to its error log.
    return nil, "TLS handshake or certificate check failed (nginx's error log says why)"
  end
  -- lua-nginx-module says "<verify result>: <reason>" for a certificate that
  -- failed the check.
  local reason = tostring(err):match("^%d+: (.*)$")
  if reason then
    return nil, "TLS certificate check failed: " .. reason
  elseif err == "certificate host mismatch" then
    return nil, ("TLS certificate check failed: hostname mismatch (it is not for %s)"):format(name)
  end
  return nil, "TLS handshake failed: " .. tostring(err)
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
  if not io.dead and replied and run.waiting
      and core.redlock_op_react(run.op, io.conn, replied, run.waiting) == 0 then
    return
  end
  run.sem:post(1)
end

-- Opens the socket of a connection: a pooled one from its keepalive pool,
-- which does not wait (unless nginx closed it meanwhile), a new one by
-- connecting (and the TLS handshake of a rediss:// node). False when it
-- failed, the engine told.
local function open(d, io)
  local conn = io.conn
  local sock = ngx.socket.tcp()
  sock:settimeouts(d.connect_timeout, d.node_timeout, d.node_timeout)
  local addr = io.addr
  local ok, err = sock:connect(addr[1], addr[2], { pool = io.pool })
  local tls = ok and not io.pooled and d.tls[io.node]
  if tls and not io.freed then
    -- A new connection to a rediss:// node: connected once TLS is.
    ok, err = secure(d, sock, core.redlock_conn_server_name(conn),
                     core.redlock_conn_server_ip(conn) == 1)
  end
  if io.freed then
    sock:close()
    return false
  end
  if not ok then
    sock:close()
    if tls then
      core.redlock_conn_tls_failed(conn, err, now_ms())
    else
      core.redlock_conn_lost(conn, "cannot connect: " .. tostring(err), now_ms())
    end
    io.dead = true
    return false
  elseif io.pooled and sock:getreusedtimes() == 0 then
    -- The pooled socket was closed while idle: the engine tries the
    -- command again on a new connection.
    sock:close()
    core.redlock_conn_lost(conn, "connection lost: closed while idle", now_ms())
    io.dead = true
    return false
  end
  io.sock, io.tls = sock, tls
  if not io.pooled then
    core.redlock_conn_connected(conn, now_ms())
  end
  return true
end

local start_delivery

-- The reader of one connection: connects a new one first (and wakes its
-- run then, which writes), then reads while replies are owed. It ends when
-- none is, or the socket does.
local function reader(d, io)
  local conn = io.conn
  if not io.sock then
    if not open(d, io) and io.freed then
      io.reader = nil
      return
    end
    poke(io)
  end
  local owed = io.dead and 0 or core.redlock_conn_reading(conn)
  while owed > 0 and not io.freed do
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
      io.tls = nil
      owed = core.redlock_conn_feed_reading(conn, data, now)
      if owed < 0 then
        io.dead = true
      end
      poke(io, now)
    elseif io.tls and err ~= "timeout" then
      -- A TLS 1.3 node refuses a session (a client certificate required)
      -- after the handshake: the connection is cut before any reply.
      core.redlock_conn_tls_failed(conn, ("TLS session refused: the node cut it before any "
        .. "reply (%s); does it require a client certificate (tls_cert_file)?"):format(err), now)
      io.dead = true
      poke(io)
      break
    else
      -- A read timeout is the node's timeout: the connection is given up,
      -- and the engine decides what its unanswered commands mean.
      core.redlock_conn_lost(conn, err == "timeout"
        and ("no answer within %d ms"):format(d.node_timeout)
        or "connection lost: " .. tostring(err), now)
      io.dead = true
      poke(io)
      break
    end
  end
  io.reader = nil
  if io.released then
    if io.dead or io.freed then
      close_io(d, io)
      -- What it still owed may be releases owed now: delivered in time.
      if not d.ctx.closed and core.redlock_ctx_owes(d.ctx.ptr) == 1 then
        start_delivery(d.ctx)
      end
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

-- The last idle connection to node that fits the operation (on a Cluster
-- node: one to the master of its slot).
local function take_idle(d, op, node, now)
  local pool = d.idle[node]
  for i = #pool, 1, -1 do
    local io = pool[i]
    -- (Not one whose Sentinel node's master moved since: not poolable.)
    if now >= io.idle_until or core.redlock_conn_broken(io.conn) ~= 0
        or core.redlock_conn_poolable(io.conn) ~= 1 then
      table.remove(pool, i)
      free_conn(d, io)
    elseif core.redlock_op_fits(op, node, io.conn) == 1 then
      table.remove(pool, i)
      return io
    end
  end
end

-- Gives the run's operation a connection to node: an idle one, or a new one
-- unless the engine says none may be made now (it then fails the node).
local function attach(d, run, node, now)
  local io = core.redlock_op_wants_fresh(run.op, node) == 0 and take_idle(d, run.op, node, now)
      or nil
  if io then
    io.pooled = true
    core.redlock_op_attach(run.op, node, io.conn, now)
  else
    local conn = core.redlock_op_connect(run.op, node, now)
    if not conn then
      return
    end
    d.seq = d.seq + 1
    d.live = d.live + 1
    -- Where it goes: the node's address, or for a Sentinel node its master
    -- or one of its sentinels, as the engine chose for this connection.
    local host = core.redlock_conn_host(conn)
    io = { conn = conn, node = node, pool = ("redlock:%d:%d:%d"):format(d.id, node, d.seq),
           addr = host and { host, core.redlock_conn_port(conn) } or d.addr[node] }
  end
  io.run, io.released = run, false
  run.ios[#run.ios + 1] = io
  if not io.pooled then
    spawn_reader(d, io)
  elseif open(d, io) then
    -- Its command goes out now, and its reader only reads.
    write(io)
    spawn_reader(d, io)
  end
  -- (A pooled socket closed while idle: the engine wants another connection,
  -- and its next redlock_op_drive says so.)
end

-- Writes what the engine queued on each connection of the run (the calling
-- coroutine is the only writer), and sees that each connection that owes
-- replies has a reader. False when a socket failed (the engine was told).
local function flush(d, run)
  local ok = true
  for _, io in ipairs(run.ios) do
    if io.sock and not io.dead and not io.freed then
      ok = write(io) and ok
      if not io.reader and not io.dead and not io.freed and core.redlock_conn_owed(io.conn) > 0 then
        spawn_reader(d, io)
      end
    end
  end
  return ok
end

-- Semaphores of finished runs, for the next (one for each run under way
-- otherwise: a new one is no small allocation).
local spare_sems = {}

local function take_sem()
  local n = #spare_sems
  if n == 0 then
    return semaphore.new()
  end
  local sem = spare_sems[n]
  spare_sems[n] = nil
  return sem
end

local function give_sem(sem)
  while sem:count() > 0 do
    sem:wait(0)
  end
  if #spare_sems < 64 then
    spare_sems[#spare_sems + 1] = sem
  end
end

local function wait(run, at, now)
  local ms = math.max(0, math.min(at - now, 1000))
  run.waiting = at
  run.sem:wait(ms / 1000)
  run.waiting = nil
end

---------------------------------------------------------------------------
-- Inside nginx: waits ended by releases.
--
-- A lock call that found the lock held elsewhere pauses (retry_delay_ms +-
-- retry_jitter_ms) before its next attempt; the release itself may end the
-- pause. Releases publish their token on a channel per key, and the library
-- says who is woken when (redlock_engine.h's wake-ups, the rule its blocking
-- calls follow): this code only moves bytes and wakes the calls it names.
--
-- A cosocket belongs to the request (or timer) that made it, and the calls
-- waiting are in many requests: so the subscriber connections, one per node,
-- belong to a timer of their own, one per client in each worker, running
-- while calls wait (and for a linger after, as the library says). Its main
-- light thread subscribes and writes; one light thread per node connects and
-- reads, and posts the semaphore of each call the library says to wake (the
-- same worker: the call's own coroutine then tries again). A call registers
-- in the client's redlock_waiters when its first attempt finds the lock held
-- elsewhere, and leaves when it ends. Its timed retries stay.

local SUB_READ_TIMEOUT = 86400000   -- a subscriber waits for its next message this long (ms)

local watch_loop

-- The client's wake-up state in this worker, or nil when out of memory.
local function wakes_of(d)
  local w = d.wakes
  if not w then
    local rc, waiters = core.redlock_waiters_new(d.ctx.ptr)
    if rc ~= core.REDLOCK_OK then
      return nil
    end
    -- runs: the waiting calls by id; subs: the subscribers by node.
    w = { waiters = waiters, runs = {}, last_id = 0, subs = {}, sem = semaphore.new(),
          running = false, sub_ids = 0,
          _finalizer = finalizer(function() core.redlock_waiters_free(waiters) end) }
    d.wakes = w
  end
  return w
end

-- Registers a run whose lock waits for a release; without the timer (it
-- cannot start, the worker exits) the run keeps its timed retries only.
local function wait_for_release(d, run)
  local w = not ngx.worker.exiting() and wakes_of(d)
  if not w then
    return
  end
  w.last_id = w.last_id + 1
  if core.redlock_waiters_add(w.waiters, w.last_id, run.op) ~= core.REDLOCK_OK then
    return
  end
  run.wait_id = w.last_id
  w.runs[run.wait_id] = run
  if w.running then
    w.sem:post(1)
  elseif ngx.timer.at(0, watch_loop, d) then
    w.running = true
  else
    core.redlock_waiters_remove(w.waiters, run.wait_id, nil, now_ms())
    w.runs[run.wait_id] = nil
    run.wait_id = nil
  end
end

-- The run's lock is done (op not yet freed: a lock refused to the end says
-- so in its message when a node refused the subscription).
local function stop_waiting(d, run, op)
  local w = d.wakes
  core.redlock_waiters_remove(w.waiters, run.wait_id, op, now_ms())
  w.runs[run.wait_id] = nil
  run.wait_id = nil
  w.sem:post(1)
end

-- Wakes the runs the library names: each tries again at once.
local function wake_woken(w)
  while true do
    local id = core.redlock_waiters_next(w.waiters)
    if id == 0 then
      return
    end
    local run = w.runs[id]
    if run then
      core.redlock_op_wake(run.op, now_ms())
      run.sem:post(1)
    end
  end
end

-- What a subscriber read; false when it is to be closed (the stream broke,
-- or the node refused the subscription).
local function heard(w, sub, data)
  local s = sub.sub
  local broken = core.redlock_sub_received(s, data) ~= core.REDLOCK_OK
  while not broken do
    local event = core.redlock_sub_next(s)
    if event == 0 then
      break
    end
    broken = event < 0 or core.redlock_waiters_event(w.waiters, sub.node, event,
      core.redlock_sub_channel(s), core.redlock_sub_text(s)) == 1
  end
  wake_woken(w)
  return not broken
end

-- A subscriber's reader: connects, then reads until the connection fails
-- (or the timer's main thread kills it). It never closes or frees anything:
-- it marks the subscriber dead, and the main thread does.
local function sub_reader(d, w, sub)
  local sock = sub.sock
  sock:settimeouts(d.connect_timeout, d.node_timeout, SUB_READ_TIMEOUT)
  -- The node's server now (a Sentinel node's master, once named).
  local host = core.redlock_ctx_node_host(d.ctx.ptr, sub.node)
  local addr = host and { host, core.redlock_ctx_node_port(d.ctx.ptr, sub.node) }
               or d.addr[sub.node]
  if not sock:connect(addr[1], addr[2], { pool = sub.pool })
      or (d.tls[sub.node] and not secure(d, sock, d.tls[sub.node], d.tls_ip[sub.node])) then
    sub.dead = true
  else
    sub.connected = true
  end
  w.sem:post(1)
  while sub.connected do
    local data, err = sock:receiveany(READ_CHUNK)
    if (data and not heard(w, sub, data)) or (not data and err ~= "timeout") then
      sub.dead = true
      w.sem:post(1)
      return
    end
  end
end

-- Ends a subscriber: its reader, its socket, its state. failed: it broke or
-- was refused (a new one comes after the library's pause).
local function drop_sub(w, sub, failed)
  if sub.reader then
    ngx.thread.kill(sub.reader)
  end
  sub.sock:close()
  core.redlock_sub_free(sub.sub)
  w.subs[sub.node] = nil
  core.redlock_waiters_closed(w.waiters, sub.node, failed and 1 or 0, now_ms())
end

local function start_sub(d, w, node)
  local rc, s = core.redlock_sub_new(d.ctx.ptr, node)
  if rc == core.REDLOCK_OK then
    -- A pool of its own: never a connection pooled by the lock calls.
    w.sub_ids = w.sub_ids + 1
    local sub = { node = node, sub = s, sock = ngx.socket.tcp(),
                  pool = ("redlock-sub:%d:%d:%d"):format(d.id, node, w.sub_ids) }
    w.subs[node] = sub
    sub.reader = ngx.thread.spawn(sub_reader, d, w, sub)
  end
end

-- The timer's main thread: keeps the subscribers what the waiting calls
-- need until nobody has waited for the library's linger, the client is
-- closed or the worker exits.
local function watch_releases(premature, d)
  local w = d.wakes
  while not premature and not d.ctx.closed and not ngx.worker.exiting() do
    local now = now_ms()
    local idle_at = core.redlock_waiters_idle_at(w.waiters)
    if now >= idle_at then
      return
    end
    local next_at = math.min(idle_at, now + 1000)
    for node = 0, d.n - 1 do
      local sub = w.subs[node]
      if sub and sub.dead then
        drop_sub(w, sub, true)
        sub = nil
      end
      if not sub and idle_at >= NEVER then
        local at = core.redlock_waiters_connect_at(w.waiters, node)
        if now >= at then
          start_sub(d, w, node)
        else
          next_at = math.min(next_at, at)
        end
      elseif sub and sub.connected then
        core.redlock_waiters_match(w.waiters, node, sub.sub)
        local out = core.redlock_sub_output(sub.sub)
        if #out > 0 then
          if sub.sock:send(out) then
            core.redlock_sub_wrote(sub.sub, #out)
          else
            sub.dead = true
          end
        end
      end
    end
    w.sem:wait(math.max(1, next_at - now_ms()) / 1000)
  end
end

watch_loop = function(premature, d)
  local w = d.wakes
  local ok, problem = xpcall(function() watch_releases(premature, d) end, debug.traceback)
  for _, sub in pairs(w.subs) do
    drop_sub(w, sub, false)
  end
  w.running = false
  if not ok then
    -- Waiting calls keep their timed retries; the next one starts it again.
    ngx.log(ngx.ERR, "redlock: the release watch timer failed: ", problem)
  end
end

local function attach_wanted(d, run, now)
  local op = run.op
  local node = core.redlock_op_next_wanted(op, 0)
  while node >= 0 do
    attach(d, run, node, now)
    node = core.redlock_op_next_wanted(op, node + 1)
  end
end

-- Drives op to its end in this coroutine, doing what the engine says
-- (redlock_op_drive); returns its status, its message and a lock's handle,
-- or, from an operation that gives none, its answer (redlock_op_answer,
-- then redlock_op_available): { locked, ttl_ms, deleted, available }.
local function drive(ctx, op, before_free)
  local d = driver_of(ctx)
  local run = { d = d, op = op, sem = take_sem(), ios = {}, may_wait = true }
  while true do
    local now = now_ms()
    local what, at = op_drive(op, now)
    while has(what, CONNECT) do
      attach_wanted(d, run, now)
      what, at = op_drive(op, now)
    end
    -- A write that failed changed the operation: it is driven again at once.
    local written = not has(what, WRITE) or flush(d, run)
    if has(what, DONE) then
      if run.wait_id then
        stop_waiting(d, run, op)
      end
      -- Decided at a quorum; while TAIL, every node reachable in time still
      -- gets the command.
      if not has(what, TAIL) then
        break
      end
    elseif run.may_wait and has(what, AWAITS) then
      run.may_wait = false
      wait_for_release(d, run)
    end
    if written then
      wait(run, at, now)
    end
  end
  local status, message = core.redlock_op_status(op), core.redlock_op_message(op)
  local handle = core.redlock_op_take_handle(op)
  if not handle then
    handle = { core.redlock_op_answer(op) }
    handle[4] = core.redlock_op_available(op)
  end
  while core.redlock_op_take_conn(op) do
  end
  if before_free then
    before_free(op)   -- a renewal reads each lock's outcome from it
  end
  core.redlock_op_free(op)
  give_sem(run.sem)
  run.sem = nil
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
-- this worker, while the client is open, when the engine says
-- (redlock_ctx_owed_at); a run that leaves more owed wakes it. A worker that
-- is exiting stops at once: its owed keys end with their leases, and a
-- loop here would hold nginx's graceful shutdown back.
local function deliver_loop(premature, ctx)
  local d = ctx.drv
  while not premature and not ctx.closed and not ngx.worker.exiting() do
    local now = now_ms()
    local at = core.redlock_ctx_owed_at(ctx.ptr, now)
    if at >= NEVER then
      break
    elseif at > now then
      d.deliver_sem:wait(math.min(at - now, 1000) / 1000)
    else
      local rc, op = core.redlock_op_deliver(ctx.ptr, now)
      if rc == core.REDLOCK_OK then
        drive(ctx, op)
        drain_events(ctx)
      end
    end
  end
  d.delivering = false
end

start_delivery = function(ctx)
  local d = ctx.drv
  if d.delivering then
    if d.deliver_sem:count() < 0 then
      d.deliver_sem:post(1)
    end
  else
    d.deliver_sem = d.deliver_sem or semaphore.new()
    d.delivering = ngx.timer.at(0, deliver_loop, ctx) and true or false
  end
end

local function engine_call(ctx, make, ...)
  local rc, op = make(...)
  if rc ~= core.REDLOCK_OK then
    return rc, nil, make_error(rc)
  end
  local status, message, handle = drive(ctx, op)
  drain_events(ctx)
  if status ~= core.REDLOCK_OK then
    return status, nil, make_error(status, message)
  end
  return status, handle
end

-- A blocking call's results, once the events it queued went to the sink.
local function drained(ctx, ...)
  drain_events(ctx)
  return ...
end

-- Takes lock (a Lock) for a lease of lease_ms, waiting up to wait_ms:
-- status, then the handle or (third) the error. The lock's kind says how:
-- _permits, a permit of the semaphore _names[1] of that many permits;
-- _mode, a read-write lock's REDLOCK_READ or REDLOCK_WRITE of _names[1],
-- whose other half (_pair), when the caller holds it, makes a downgrade (or
-- an upgrade refused); _fair, the fair lock of _names[1]; else the plain
-- lock of its one name, or the multi-lock of its names.
local function acquire(ctx, lock, lease_ms, wait_ms)
  local names, permits, mode = lock._names, lock._permits, lock._mode
  local held = lock._pair and lock._pair._state.handle
  local blocking = blocking_allowed()
  if blocking then
    if permits then
      return drained(ctx, core.redlock_acquire_permit(ctx.ptr, names[1], permits, lease_ms,
        wait_ms))
    elseif mode then
      return drained(ctx, core.redlock_lock_rw(ctx.ptr, names[1], mode, held, lease_ms,
        wait_ms))
    elseif lock._fair then
      return drained(ctx, core.redlock_lock_fair(ctx.ptr, names[1], lease_ms, wait_ms))
    elseif #names == 1 then
      return drained(ctx, core.redlock_lock(ctx.ptr, names[1], lease_ms, wait_ms))
    end
    return drained(ctx, core.redlock_lock_multi(ctx.ptr, names, lease_ms, wait_ms))
  elseif blocking == false then
    return core.REDLOCK_EUNSUPPORTED, nil, no_cosockets_error("try_lock")
  end
  -- A wait that pauses listens for the release (a fair lock's waiter, for
  -- its turn on its own channel): the channels are the operation's keys.
  if permits then
    return engine_call(ctx, core.redlock_op_acquire_permit, ctx.ptr, names[1], permits,
      lease_ms, wait_ms, now_ms())
  elseif mode then
    return engine_call(ctx, core.redlock_op_lock_rw, ctx.ptr, names[1], mode, held, lease_ms,
      wait_ms, now_ms())
  elseif lock._fair then
    return engine_call(ctx, core.redlock_op_lock_fair, ctx.ptr, names[1], lease_ms, wait_ms,
      now_ms())
  end
  return engine_call(ctx, core.redlock_op_lock, ctx.ptr, names, lease_ms, wait_ms, now_ms())
end

-- Unlock or extend of a handle: status, and the error when it failed.
local function handle_call(ctx, what, handle, lease_ms)
  local blocking = blocking_allowed()
  local rc, _, err
  if blocking then
    rc = what == "unlock" and core.redlock_unlock(handle) or core.redlock_extend(handle, lease_ms)
    drain_events(ctx)
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

-- Asks the nodes about one resource (force: forces it open): status, then
-- locked, ttl_ms and deleted as redlock_inspect and redlock_force_unlock
-- give them, or the error.
local function query_call(ctx, name, force, what)
  local blocking = blocking_allowed()
  local rc, locked, ttl, deleted, err
  if blocking then
    if force then
      rc, deleted = core.redlock_force_unlock(ctx.ptr, name)
    else
      rc, locked, ttl = core.redlock_inspect(ctx.ptr, name)
    end
    drain_events(ctx)
  elseif blocking == false then
    return core.REDLOCK_EUNSUPPORTED, no_cosockets_error(what)
  else
    local make = force and core.redlock_op_force_unlock or core.redlock_op_inspect
    local answer
    rc, answer, err = engine_call(ctx, make, ctx.ptr, name, now_ms())
    if answer then
      locked, ttl, deleted = answer[1], answer[2], answer[3]
    end
  end
  if rc ~= core.REDLOCK_OK then
    return rc, err or make_error(rc)
  end
  return rc, nil, locked == 1, math.floor(ttl or -2), math.floor(deleted or 0)
end

-- A count the nodes are asked for (redlock_ctx_ping's nodes that answered,
-- redlock_permits_available's permits): call(ctx.ptr, ...) outside nginx,
-- else make(ctx.ptr, ..., now) over cosockets, whose answer has it at
-- index. The count, or nil and the error.
local function count_call(ctx, what, call, make, index, ...)
  local blocking = blocking_allowed()
  local rc, count, err
  if blocking then
    rc, count = call(ctx.ptr, ...)
    drain_events(ctx)
  elseif blocking == false then
    return fail(no_cosockets_error(what))
  else
    local args = pack(ctx.ptr, ...)
    args.n = args.n + 1
    args[args.n] = now_ms()
    local answer
    rc, answer, err = engine_call(ctx, make, unpack(args, 1, args.n))
    count = answer and answer[index]
  end
  if rc ~= core.REDLOCK_OK then
    return fail(err or make_error(rc))
  end
  return math.floor(count)
end

---------------------------------------------------------------------------
-- Kept locks: renewed until unlocked, and the loss told.
--
-- A lock taken with no lease is kept: its lease is the client's option
-- watchdog_lease_ms, and it is extended every third of the lease (the lease
-- of the lock, or of the last extend) until it is unlocked. A failed
-- extension is tried again after retry_delay_ms while validity remains.
-- When an extension finds the lock gone, or the validity runs out first,
-- the lock is lost: lost() is true from the moment its validity reaches 0
-- at the latest, and its on_lost callback runs once.
--
-- Outside nginx the C library keeps it (redlock_handle_watch: the client's
-- own thread renews it). A Lua state cannot be entered from that thread, so
-- its lost callback only writes a record (swig/lua.i) that poll_lost reads:
-- callbacks run on the Lua thread, at the start of the next call into the
-- client or any of its locks.
--
-- Inside nginx the keeper does it: one ngx.timer per client in each worker,
-- running while the client has kept locks. The rules are the C library's
-- (redlock_keep, the ones its own thread follows): for each lock the keeper
-- asks its keep what to do, runs the extension it asks for (a light thread
-- each, over the cosocket driver), marks it lost when the keep says so, and
-- runs the callbacks (a light thread each). The events renewal_failed and
-- lost come from the keep.
-- One timer rather than one per lock: a timer that waits between renewals
-- counts against lua_max_running_timers (256 by default) for as long as its
-- lock is kept, and one loop can watch every deadline, as the C thread does.
--
-- One kept acquisition is a `hold`:
--   lock, ctx, handle  the Lock (the callback gets it), its client, its handle
--   kept               renewal goes on (false once unlocked, lost or let go)
--   lost, err, detail  latched once lost; err is what the callback gets
--   told               the callback was run (or there was none)
--   watch              outside nginx: the C record of the loss
--   keep               inside nginx: its redlock_keep (when to extend it,
--                      whether it is lost), freed with the hold
--   busy               inside nginx: a semaphore while an extension is under
--                      way, posted when it ends

local WATCH_WAIT = 1    -- the keeper looks at its locks at least this often (s)

local function lost_error(code, detail)
  return (error_names[code] or "unknown") .. ": the kept lock was lost: " .. detail
end

local function keeper_of(ctx)
  local d = driver_of(ctx)
  local k = d.keeper
  if not k then
    k = { holds = {}, sem = semaphore.new(), running = false }
    d.keeper = k
  end
  return k
end

-- Marks hold lost (once) with the error its callback gets (the C library
-- told the event).
local function lose(hold, code, detail)
  if not hold.lost then
    hold.lost, hold.kept = true, false
    hold.err, hold.detail = lost_error(code, detail), detail
    if hold.ctx.drv and hold.ctx.drv.keeper then
      hold.ctx.drv.keeper.sem:post(1)   -- the keeper tells it now
    end
  end
end

-- Inside nginx: what hold's keep says to do now (core.REDLOCK_KEEP_*), and
-- when to ask again; latches the loss it tells.
local function ask_keep(hold)
  local what, at = core.redlock_keep_next(hold.keep, now_ms())
  drain_events(hold.ctx)
  if what == core.REDLOCK_KEEP_LOST then
    lose(hold, core.redlock_keep_status(hold.keep), core.redlock_keep_message(hold.keep))
  end
  return what, at
end

-- Whether hold was lost; latches it when it is found lost now: outside
-- nginx when the C thread recorded it, or while kept when its validity has
-- run out (the C thread marks it too, a moment later); inside nginx when
-- its validity has run out while kept (the keep then says lost, and why).
local function check_hold(hold)
  if hold.lost then
    return true
  end
  if hold.watch then
    local status = core.redlock_lua_watch_status(hold.watch)
    if status ~= 0 then
      lose(hold, status, core.redlock_lua_watch_message(hold.watch))
    elseif hold.kept and core.redlock_handle_validity_ms(hold.handle) <= 0 then
      lose(hold, core.REDLOCK_EEXPIRED,
           "its validity ran out 0 ms ago before an extension succeeded")
    end
  elseif hold.kept and core.redlock_handle_validity_ms(hold.handle) <= 0 then
    ask_keep(hold)
  end
  return hold.lost
end

-- Runs hold's callback, if its lock has one, protected: an error in it is
-- logged (nginx's error log, or stderr), never raised into other code.
local function tell(hold)
  hold.told = true
  local fn = hold.lock._state.on_lost
  if fn then
    local ok, problem = xpcall(function() fn(hold.lock, hold.err, code_of(hold.err)) end,
                               debug.traceback)
    if not ok then
      report("an on_lost callback", problem)
    end
  end
end

-- Outside nginx: runs the callbacks of the client's kept locks found lost.
local function poll_lost(ctx)
  drain_events(ctx)
  local kept = ctx.kept
  if not kept or ctx.telling then
    return
  end
  local due
  for hold in pairs(kept) do
    if check_hold(hold) then
      kept[hold] = nil
      if not hold.told then
        due = due or {}
        due[#due + 1] = hold
      end
    elseif not hold.kept then
      kept[hold] = nil
    end
  end
  if due then
    -- A callback may call into the client again: no telling inside it.
    ctx.telling = true
    for _, hold in ipairs(due) do
      tell(hold)
    end
    ctx.telling = false
  end
end

-- Inside nginx: wakes every coroutine waiting on sem.
local function post_all(sem)
  local waiting = -sem:count()
  if waiting > 0 then
    sem:post(waiting)
  end
end

-- Inside nginx: waits until no extension of hold is under way.
local function wait_idle(hold)
  while hold.busy do
    hold.busy:wait(WATCH_WAIT)
  end
end

-- Inside nginx: extends a kept lock over the cosocket driver: a renewal
-- (lease_ms nil: the one its keep asked for) or the owner's extend, whose
-- end its keep is told as well. Returns the status and, when it failed, the
-- error. Nothing else extends it meanwhile (busy).
local function extend_kept(ctx, hold, lease_ms)
  wait_idle(hold)
  if not hold.kept then
    return core.REDLOCK_ENOTHELD, make_error(core.REDLOCK_ENOTHELD, hold.detail
                                             and "the kept lock was lost: " .. hold.detail
                                             or "the lock was released")
  end
  local busy = semaphore.new()
  hold.busy = busy
  local rc, op
  if lease_ms then
    rc, op = core.redlock_op_extend(hold.handle, lease_ms, now_ms())
  else
    -- When it cannot start, the keep knows already.
    rc, op = core.redlock_keep_extend(hold.keep, now_ms())
  end
  local status, message = rc, nil
  if rc == core.REDLOCK_OK then
    -- Whatever happens, busy ends: unlock waits for it.
    local ok, drove, detail = pcall(drive, ctx, op)
    if ok then
      status, message = drove, detail
    else
      status, message = core.REDLOCK_ESYSTEM, "the extension failed: " .. tostring(drove)
    end
  else
    message = core.redlock_errmsg()
  end
  if rc == core.REDLOCK_OK or lease_ms then
    core.redlock_keep_extended(hold.keep, status, message or "", now_ms())
  end
  drain_events(ctx)
  local lost = core.redlock_keep_status(hold.keep)
  if hold.kept and lost ~= core.REDLOCK_OK then
    lose(hold, lost, core.redlock_keep_message(hold.keep))
  end
  hold.busy = nil   -- from here the keeper may free the keep
  post_all(busy)
  ctx.drv.keeper.sem:post(1)
  if hold.lost then
    return core.REDLOCK_ENOTHELD, make_error(core.REDLOCK_ENOTHELD,
                                             "the kept lock was lost: " .. hold.detail)
  elseif status ~= core.REDLOCK_OK then
    return status, make_error(status, message)
  end
  return status
end

-- Inside nginx: renews the holds whose keeps asked for it, all in one
-- renewal (redlock_renewal: one command per node for all their keys, each
-- lock decided on its own), each hold busy until it ends; its keep is told
-- its lock's outcome and says whether it is lost.
local function renew(ctx, holds, renewal)
  local busy = semaphore.new()
  for _, hold in ipairs(holds) do
    hold.busy = busy
  end
  local rc, op = core.redlock_renewal_start(renewal, now_ms())
  if rc == core.REDLOCK_OK then
    local told = false
    local _, problem = pcall(drive, ctx, op, function(done)
      core.redlock_renewal_ended(renewal, done, now_ms())
      told = true
    end)
    if not told then
      -- The drive failed before the end: each lock's renewal failed.
      core.redlock_renewal_ended(renewal, nil, now_ms())
      report("a renewal", problem)
    end
  end
  core.redlock_renewal_free(renewal)
  drain_events(ctx)
  for _, hold in ipairs(holds) do
    local lost = core.redlock_keep_status(hold.keep)
    if hold.kept and lost ~= core.REDLOCK_OK then
      lose(hold, lost, core.redlock_keep_message(hold.keep))
    end
    hold.busy = nil   -- from here the keeper may free the keep
  end
  post_all(busy)
  ctx.drv.keeper.sem:post(1)
end

-- Inside nginx: the holds whose keeps asked for an extension, in renewals
-- of as many as one holds (redlock_renewal_add says when one is full).
local function batch_renewals(holds)
  local batches = {}
  local renewal, batch
  for _, hold in ipairs(holds) do
    local rc = renewal and core.redlock_renewal_add(renewal, hold.keep)
    if rc ~= core.REDLOCK_OK then
      if renewal then
        batches[#batches + 1] = { renewal, batch }
      end
      rc, renewal = core.redlock_renewal_new()
      batch = {}
      core.redlock_renewal_add(renewal, hold.keep)
    end
    batch[#batch + 1] = hold
  end
  if renewal then
    batches[#batches + 1] = { renewal, batch }
  end
  return batches
end

local function run_callback(hold)
  tell(hold)
end

-- The keeper: one timer per client in each worker, while it has kept locks.
-- Once the client is closed or the worker exits, it renews no more; it
-- still tells the losses when the validity runs out, then ends.
local function keep_watching(premature, ctx)
  local k = ctx.drv.keeper
  while true do
    local now = now_ms()
    local stopping = premature or ctx.closed or ngx.worker.exiting()
    local first = now + WATCH_WAIT * 1000
    local renewals, lost = {}, {}
    for hold in pairs(k.holds) do
      if hold.kept and (stopping or hold.busy) then
        -- No renewal now: only whether its validity ran out.
        check_hold(hold)
        first = math.min(first, now + core.redlock_handle_validity_ms(hold.handle))
      elseif hold.kept then
        local what, at = ask_keep(hold)
        if what == core.REDLOCK_KEEP_EXTEND then
          renewals[#renewals + 1] = hold
        end
        first = math.min(first, at)
      end
      if hold.lost and not hold.told then
        lost[#lost + 1] = hold
      end
      -- Its keep goes once no extension of it runs.
      if not hold.kept and not hold.busy then
        k.holds[hold] = nil
        core.redlock_keep_free(hold.keep)
        hold.keep = nil
      end
    end
    -- Light threads run at once until they first wait, so they start after
    -- the walk over k.holds (a callback may take a new kept lock).
    for _, b in ipairs(batch_renewals(renewals)) do
      ngx.thread.spawn(renew, ctx, b[2], b[1])
    end
    for _, hold in ipairs(lost) do
      hold.told = true
      ngx.thread.spawn(run_callback, hold)
    end
    if next(k.holds) == nil then
      break
    end
    k.sem:wait(math.max(1, first - now_ms()) / 1000)
  end
end

local function keep_loop(premature, ctx)
  local ok, problem = xpcall(function() keep_watching(premature, ctx) end,
                              debug.traceback)
  ctx.drv.keeper.running = false
  if not ok then
    -- The next kept lock starts the keeper again, for all of them.
    ngx.log(ngx.ERR, "redlock: the renewal timer failed: ", problem)
  end
end

-- Inside nginx: hands a kept lock to the keeper (starting its timer).
-- A worker that exits keeps no new lock: nothing would renew it.
local function start_keeping(ctx, hold)
  if ngx.worker.exiting() then
    return fail("process exiting")
  end
  local k = keeper_of(ctx)
  k.holds[hold] = true
  if k.running then
    k.sem:post(1)
    return true
  end
  local ok, err = ngx.timer.at(0, keep_loop, ctx)
  if not ok then
    k.holds[hold] = nil
    return fail(err)
  end
  k.running = true
  return true
end

-- Makes the lock just acquired (state.handle) kept. Returns true, or nil and
-- an error, the lock then released again.
local function keep_lock(lock, state, lease_ms, blocking)
  local ctx, handle = state.ctx, state.handle
  local hold = { lock = lock, ctx = ctx, handle = handle, kept = true, lost = false }
  local rc, problem
  if blocking then
    rc, hold.watch = core.redlock_lua_watch_new(handle)
    if rc == core.REDLOCK_OK then
      ctx.kept[hold] = true
    else
      problem = make_error(rc)
    end
  else
    local rc, keep = core.redlock_keep_new(handle, now_ms())
    if rc ~= core.REDLOCK_OK then
      problem = make_error(rc)
    else
      hold.keep = keep
      local ok, err = start_keeping(ctx, hold)
      if not ok then
        core.redlock_keep_free(keep)
        hold.keep = nil
        problem = make_error(core.REDLOCK_ESYSTEM, "cannot start the renewal timer: "
                             .. tostring(err))
      end
    end
  end
  if problem then
    hold.kept = false
    handle_call(ctx, "unlock", handle)
    return fail(problem)
  end
  state.hold = hold
  return true
end

-- Stops the renewal of the lock's kept hold before its release, and waits
-- for an extension under way (inside nginx): no extension follows.
local function stop_keeping(state)
  local hold = state.hold
  if hold and hold.kept then
    hold.kept = false
    if not hold.watch then
      hold.ctx.drv.keeper.sem:post(1)
    end
  end
  if hold and not hold.watch then
    wait_idle(hold)
  end
end

---------------------------------------------------------------------------
-- Lock: one resource, or several taken together.

local Lock = { __name = "redlock lock" }
Lock.__index = Lock

-- class: Lock, or a kind of it (Permit).
local function new_lock(ctx, names, class)
  local state = { ctx = ctx }
  -- A collected lock's loss is told to nobody: its callback would get a
  -- lock that is gone.
  local finalize = finalizer(function()
    if state.hold then
      state.hold.told = true
    end
    drop_handle(state)
  end)
  return setmetatable({ _ctx = ctx, _state = state, _names = names, _finalizer = finalize },
                      class or Lock)
end

-- Milliseconds of validity left (0 or less when not held); a lost kept
-- lock has none, even if an extension under way succeeds after the loss.
local function validity_of(state)
  local left = core.redlock_handle_validity_ms(state.handle)
  if left > 0 and state.hold and check_hold(state.hold) then
    return 0
  end
  return left
end

-- Taking again the lock that state holds (reentry): counts a hold and keeps
-- the first terms (the C library's redlock_handle_reenter). true, or false
-- when the hold was lost: the caller then acquires afresh.
local function reenter(state)
  local hold = state.hold
  if hold and check_hold(hold) then
    return false
  end
  return core.redlock_handle_reenter(state.handle) == core.REDLOCK_OK
end

-- Checks try_lock's and try_acquire's wait_ms (nil: 0, one attempt) and
-- lease_ms (nil: kept); returns wait_ms.
local function check_try(fname, wait_ms, lease_ms)
  if wait_ms == nil then
    wait_ms = 0
  end
  check_wait(1, fname, wait_ms, 1)
  check_kept_lease(2, fname, lease_ms, 1)
  return wait_ms
end

-- The common part of try_lock and lock, once their arguments are checked.
local function take(self, fname, wait_ms, lease_ms)
  local kept = lease_ms == nil
  local state = self._state
  if state.ctx.closed then
    error(fname .. ": the Redlock client is closed", 3)
  end
  poll_lost(state.ctx)
  -- A hold that was lost stays (lost() and unlock() tell it) until a new
  -- acquisition, which starts afresh, replaces it.
  if state.handle and reenter(state) then
    return true
  end
  local lease = kept and state.ctx.watchdog_lease or lease_ms
  local rc, handle, err = acquire(state.ctx, self, lease, wait_ms)
  if rc ~= core.REDLOCK_OK then
    return fail(err or make_error(rc))
  end
  if state.handle then
    stop_keeping(state)
    drop_handle(state)
  end
  state.hold = nil
  state.was_lost = false
  state.handle = handle
  state.ctx.handles = state.ctx.handles + 1
  state.ctx.held[state] = true
  if kept then
    local ok, keep_err = keep_lock(self, state, lease, blocking_allowed())
    if not ok then
      drop_handle(state)
      return fail(keep_err)
    end
  end
  return true
end

-- Defines class's methods try_name(wait_ms, lease_ms) and wait_name(lease_ms)
-- (a wait without end), which check their arguments and then acquire with
-- acquire_fn(self, fname, wait_ms, lease_ms).
local function define_acquires(class, try_name, wait_name, acquire_fn)
  class[try_name] = function(self, wait_ms, lease_ms)
    check_self(self, class, try_name)
    return acquire_fn(self, try_name, check_try(try_name, wait_ms, lease_ms), lease_ms)
  end
  class[wait_name] = function(self, lease_ms)
    check_self(self, class, wait_name)
    check_kept_lease(1, wait_name, lease_ms)
    return acquire_fn(self, wait_name, MAX_MS, lease_ms)
  end
end

--- lock:try_lock(wait_ms, lease_ms): tries to acquire the lock, waiting up
-- to wait_ms (nil or 0: one attempt), for a lease of lease_ms. With no
-- lease_ms the lock is kept: its lease is the client's watchdog_lease_ms and
-- it is renewed until unlock. Returns true, or nil and an error ("locked"
-- when someone else holds it). When this Lock holds it already, it counts
-- one more hold (each needs its unlock) and keeps the first terms: the lease
-- and the renewal stay as the first acquisition made them ("notheld" when
-- that hold was lost).
--
-- lock:lock(lease_ms): waits until the lock is acquired, for a lease of
-- lease_ms (nil: kept, as try_lock). A wait without end still ends with
-- "noquorum" once the nodes have failed for the client's
-- unavailable_timeout_ms. Returns true, or nil and an error; reentry as
-- try_lock.
define_acquires(Lock, "try_lock", "lock", take)

--- How many times this Lock holds the lock: 1 after its acquisition, plus
-- each reentry not yet unlocked; 0 when not held.
function Lock:hold_count()
  check_self(self, Lock, "hold_count")
  local handle = self._state.handle
  return handle and core.redlock_handle_holds(handle) or 0
end

--- Releases the lock. Returns true, or nil and an error: "notheld" when it
-- had expired or been lost (the critical section may not have been
-- exclusive) or was never taken. The lock is not held afterwards either way.
-- A kept lock's renewal stops before the release is sent. With several
-- holds (reentry) it gives back one; the last one releases.
function Lock:unlock()
  check_self(self, Lock, "unlock")
  local state = self._state
  if state.ctx.closed then
    error("unlock: the Redlock client is closed", 2)
  end
  poll_lost(state.ctx)
  if not state.handle then
    return fail(make_error(core.REDLOCK_ENOTHELD, "this lock is not acquired"))
  end
  local _, left = core.redlock_handle_leave(state.handle)
  if left and left > 0 then
    return true
  end
  if blocking_allowed() == false then
    return fail(no_cosockets_error("unlock"))
  end
  local hold = state.hold
  if hold then
    check_hold(hold)
    stop_keeping(state)
  end
  local handle = state.handle
  local _, err = handle_call(state.ctx, "unlock", handle)
  if hold and hold.watch then
    -- Lost on the C thread between the check and the unlock: told now.
    poll_lost(state.ctx)
  end
  -- Whether its keys could have expired before the release (lost() after it).
  state.was_lost = core.redlock_handle_lost(handle) == 1
  drop_handle(state)
  if hold and hold.lost then
    return fail(make_error(core.REDLOCK_ENOTHELD, "the kept lock had been lost before unlock: "
                           .. hold.detail))
  elseif err then
    return fail(err)
  end
  return true
end

--- Renews the lease to lease_ms from now (a kept lock's renewals use it
-- from then on). Returns true, or nil and an error ("notheld" when the lock
-- has expired, was lost or was released).
function Lock:extend(lease_ms)
  check_self(self, Lock, "extend")
  check_lease(1, "extend", lease_ms)
  local state = self._state
  if state.ctx.closed then
    error("extend: the Redlock client is closed", 2)
  end
  poll_lost(state.ctx)
  local handle = state.handle
  if not handle then
    return fail(make_error(core.REDLOCK_ENOTHELD, "this lock is not acquired"))
  end
  local hold = state.hold
  if hold and check_hold(hold) then
    return fail(make_error(core.REDLOCK_ENOTHELD, "the kept lock was lost: " .. hold.detail))
  end
  local _, err
  if hold and hold.kept and not hold.watch and blocking_allowed() == nil then
    _, err = extend_kept(state.ctx, hold, lease_ms)
  else
    _, err = handle_call(state.ctx, "extend", handle, lease_ms)
  end
  if err then
    return fail(err)
  end
  return true
end

--- Milliseconds of validity left; 0 or less when not held (or lost).
function Lock:validity_ms()
  check_self(self, Lock, "validity_ms")
  poll_lost(self._state.ctx)
  return validity_of(self._state)
end

--- Whether this lock was lost: its keys can have expired while it was held
-- (a kept lock's renewal failed for good, or the validity of any lock, kept
-- or with a lease, ran out before its unlock). True from the moment its
-- validity reaches 0 at the latest, until it is taken again.
function Lock:lost()
  check_self(self, Lock, "lost")
  local state = self._state
  poll_lost(state.ctx)
  if state.hold ~= nil and check_hold(state.hold) then
    return true
  end
  if state.handle then
    return core.redlock_handle_lost(state.handle) == 1
  end
  return state.was_lost == true
end

--- Sets the function called when a kept lock of this object is lost, as
-- fn(lock, err) (err.name "notheld": the nodes say it is no longer ours;
-- "expired": its validity ran out before an extension succeeded). It runs
-- once per loss: inside nginx from the renewal timer, at once; outside
-- nginx at the start of the next call into the client or any of its locks.
-- nil removes it. An error in fn is logged, not raised.
function Lock:on_lost(fn)
  check_self(self, Lock, "on_lost")
  if fn ~= nil and type(fn) ~= "function" then
    argerror(1, "on_lost", "function or nil expected, got " .. type(fn))
  end
  self._state.on_lost = fn
  poll_lost(self._state.ctx)
  return true
end

-- What the nodes say of the lock, held by anyone: ttl_ms as
-- redlock_inspect_multi gives it (-2: not locked, -1: no expiry: a
-- multi-lock is locked when any of its resources is, for the longest), or
-- nil and the error. Inside nginx one query per resource over the cosocket
-- driver, merged by the C library's rule (redlock_inspect_merge).
local function inspect(self, what)
  local state = self._state
  if state.ctx.closed then
    error(what .. ": the Redlock client is closed", 3)
  end
  poll_lost(state.ctx)
  local ctx = state.ctx
  local blocking = blocking_allowed()
  if blocking then
    local rc, locked, ttl = core.redlock_inspect_multi(ctx.ptr, self._names)
    drain_events(ctx)
    if rc ~= core.REDLOCK_OK then
      return fail(make_error(rc))
    end
    return locked == 1 and math.floor(ttl) or -2
  end
  local answer = -2
  for _, name in ipairs(self._names) do
    local rc, err, locked, ttl = query_call(ctx, name, false, what)
    if rc ~= core.REDLOCK_OK then
      return fail(err)
    end
    answer = core.redlock_inspect_merge(answer, locked and ttl or -2)
  end
  return math.floor(answer)
end

-- Runs query_call for each of the lock's resources; fn(locked, ttl_ms,
-- deleted) sees each answer. true, or nil and the first error.
local function each_resource(self, force, what, fn)
  local state = self._state
  if state.ctx.closed then
    error(what .. ": the Redlock client is closed", 3)
  end
  poll_lost(state.ctx)
  for _, name in ipairs(self._names) do
    local rc, err, locked, ttl, deleted = query_call(state.ctx, name, force, what)
    if rc ~= core.REDLOCK_OK then
      return fail(err)
    end
    fn(locked, ttl, deleted)
  end
  return true
end

--- Whether the lock is held, by anyone: asks the nodes (a quorum of them
-- has it under one token). A multi-lock is locked when any of its
-- resources is. Returns true or false, or nil and an error ("noquorum" when
-- too few nodes answer to tell).
function Lock:is_locked()
  check_self(self, Lock, "is_locked")
  local ttl, err = inspect(self, "is_locked")
  if not ttl then
    return fail(err)
  end
  return ttl ~= -2
end

--- Milliseconds for which a quorum of the nodes still has the lock,
-- whoever holds it (Redisson's remainTimeToLive): -2 when nobody holds it,
-- -1 when its key has no expiry; for a multi-lock the longest of its
-- resources'. Or nil and an error.
function Lock:remain_time_to_live()
  check_self(self, Lock, "remain_time_to_live")
  return inspect(self, "remain_time_to_live")
end

--- Deletes the lock on every node whatever its token, and wakes the clients
-- waiting for it: for an operator whose lock holder is known to be gone.
-- DANGEROUS: a holder still alive goes on as if it held the lock while
-- another takes it. Returns true when a lock was deleted on some node, false
-- when there was none, or nil and an error ("noquorum" when too few nodes
-- answered to be sure it is gone).
function Lock:force_unlock()
  check_self(self, Lock, "force_unlock")
  local deleted = 0
  local ok, err = each_resource(self, true, "force_unlock", function(_, _, n)
    deleted = deleted + n
  end)
  if not ok then
    return fail(err)
  end
  return deleted > 0
end

--- The token stored in the Redis keys (32 hex characters), or nil when the
-- lock has not been acquired or has been released.
function Lock:token()
  check_self(self, Lock, "token")
  poll_lost(self._state.ctx)
  local handle = self._state.handle
  return handle and core.redlock_handle_token(handle) or nil
end

--- The fencing token of the current acquisition (client option fencing):
-- larger for every later holder of the resource. Send it with each write to
-- the storage the lock protects, and have the storage refuse one older than
-- the newest it has seen. For a multi-lock, the fence of resource `name`
-- (the first resource's without one). nil when not held or taken without
-- fencing; an error for a name the lock does not have.
function Lock:fence(name)
  check_self(self, Lock, "fence")
  local index = 0
  if name ~= nil then
    index = nil
    for i, mine in ipairs(self._names) do
      if mine == name then
        index = i - 1
      end
    end
    if index == nil then
      argerror(1, "fence", "not a resource of this lock: " .. tostring(name))
    end
  end
  local handle = self._state.handle
  if not handle then
    return nil
  end
  local rc, fence = core.redlock_handle_fence(handle, index)
  if rc ~= 0 or fence == 0 then
    return nil
  end
  return fence
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

-- The sink and the least level of a new client's events, from the options
-- `log` and `log_level` (see "Events" above): sink nil when none.
local function log_options(options)
  local sink, level = options.log, options.log_level
  if sink ~= nil and type(sink) ~= "function" then
    argerror(2, "new", "option 'log': function expected, got " .. type(sink), 1)
  end
  if level ~= nil and not LOG_LEVELS[level] then
    argerror(2, "new", "option 'log_level': \"debug\", \"info\", \"warn\" or \"error\" "
             .. "expected, got " .. tostring(level), 1)
  end
  if not sink and ngx then
    return nginx_sink, level and LOG_LEVELS[level] or nginx_level()
  end
  return sink, LOG_LEVELS[level or "info"]
end

--- The node URIs of one string (an environment variable such as
-- REDLOCK_NODES, a setting): a comma followed by "scheme://" starts the next
-- URI, so the commas between a Sentinel URI's sentinels stay in it.
function redlock.split_nodes(text)
  if type(text) ~= "string" then
    argerror(1, "split_nodes", "string expected, got " .. type(text))
  end
  local uris = {}
  while #text > 0 do
    local n = core.redlock_uri_list_next(text)
    uris[#uris + 1] = text:sub(1, n):match("^%s*(.-)%s*$")
    text = text:sub(n + 2)
  end
  return uris
end

--- Makes a client for the nodes (an array of redis://, rediss://, unix:// or
-- redis-sentinel:// URIs) with
-- options named as in the C API (node_timeout_ms, key_prefix, ...), and
-- `log` and `log_level` for its events (see "Events" above). Does no
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
    if name ~= "log" and name ~= "log_level" then
      texts[name] = option_text(name, value)
    end
  end
  local sink, log_level = log_options(options or {})

  local rc, ptr = core.redlock_ctx_new(nodes)
  if rc ~= core.REDLOCK_OK then
    return fail(make_error(rc))
  end
  -- kept: outside nginx, the kept locks whose loss poll_lost looks for
  -- (weak: a lock collected while kept stops being renewed).
  -- held: the states of the locks holding a handle, which close() releases.
  local ctx = { ptr = ptr, handles = 0, closed = false,
                held = setmetatable({}, { __mode = "k" }),
                kept = not ngx and setmetatable({}, { __mode = "k" }) or nil }
  local function failed(code)
    local err = make_error(code)
    core.redlock_ctx_free(ptr)
    return fail(err)
  end
  for name, text in pairs(texts) do
    rc = core.redlock_ctx_set_option(ptr, name, text)
    if rc ~= core.REDLOCK_OK then
      return failed(rc)
    end
  end
  local _, lease = core.redlock_ctx_get_option(ptr, "watchdog_lease_ms")
  ctx.watchdog_lease = tonumber(lease)
  if sink and log_level then
    ctx.sink, ctx.log_level = sink, log_level
    rc, ctx.events = core.redlock_lua_log_new(ptr, log_level)
    if rc ~= core.REDLOCK_OK then
      return failed(rc)
    end
  end
  return setmetatable({ _ctx = ctx, _finalizer = finalizer(function()
    ctx.closed = true
    release_ctx(ctx)
  end) }, Client)
end

local function check_open(self, fname)
  if self._ctx.closed then
    error(fname .. ": the Redlock client is closed", 3)
  end
  poll_lost(self._ctx)
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
    return fail(make_error(rc))
  end
  return value
end

local HEALTH_NUMBERS = { "for_ms", "retry_in_ms", "guard_ms", "commands", "failures",
                         "timeouts" }

local function unescape(value)
  return (value:gsub("%%(%x%x)", function(hex) return string.char(tonumber(hex, 16)) end))
end

--- What the client knows of each node, in the order of the URIs: an array
-- of tables { node = "host:port", state = "unknown" | "up" | "slow" | "down"
-- | "guarded" | "auth_refused" | "permission_denied", last_error = text or
-- nil, rtt_ms = a recent round trip or nil before any, commands, failures,
-- timeouts (counts since the client was made), for_ms, retry_in_ms,
-- guard_ms, run_id, version }.
-- No I/O: what the calls so far have seen (client:ping() refreshes it).
function Client:health()
  check_self(self, Client, "health")
  check_open(self, "health")
  local text = core.redlock_swig_health(self._ctx.ptr)
  if not text then
    return fail(make_error(core.REDLOCK_ENOMEM, "out of memory"))
  end
  local nodes = {}
  for line in text:gmatch("[^\n]+") do
    local node = {}
    for key, value in line:gmatch("(%S-)=(%S*)") do
      node[key] = unescape(value)
    end
    for _, key in ipairs(HEALTH_NUMBERS) do
      node[key] = tonumber(node[key])
    end
    local rtt = tonumber(node.rtt_ms)
    node.rtt_ms = rtt >= 0 and rtt or nil
    node.last_error = node.last_error ~= "" and node.last_error or nil
    nodes[#nodes + 1] = node
  end
  return nodes
end

--- Sends PING to every node at once and waits for each (up to its
-- deadline): the number of nodes that answered and count towards a quorum,
-- or nil and an error ("noquorum" when fewer than a quorum did; health()
-- then says which nodes failed and why).
function Client:ping()
  check_self(self, Client, "ping")
  check_open(self, "ping")
  return count_call(self._ctx, "ping", core.redlock_ctx_ping, core.redlock_op_ping, 3)
end

--- A lock on one resource (not acquired yet).
function Client:get_lock(name)
  check_self(self, Client, "get_lock")
  check_open(self, "get_lock")
  check_name(1, "get_lock", name)
  return new_lock(self._ctx, { name })
end

local ReadWriteLock = { __name = "redlock read-write lock" }
ReadWriteLock.__index = ReadWriteLock

--- A read-write lock on one resource (not acquired yet): its read_lock() is
-- held by any number of readers, its write_lock() by one writer alone (and
-- a plain lock of the same name excludes it). Each is a Lock; holding the
-- write lock, the read lock of the same object may be taken too (a
-- downgrade), but holding the read lock, its write lock is refused with
-- "inval" (no upgrade).
function Client:get_read_write_lock(name)
  check_self(self, Client, "get_read_write_lock")
  check_open(self, "get_read_write_lock")
  check_name(1, "get_read_write_lock", name)
  local read = new_lock(self._ctx, { name })
  local write = new_lock(self._ctx, { name })
  read._mode, read._pair = core.REDLOCK_READ, write
  write._mode, write._pair = core.REDLOCK_WRITE, read
  return setmetatable({ _read = read, _write = write }, ReadWriteLock)
end

--- The read lock (the same Lock on every call).
function ReadWriteLock:read_lock()
  check_self(self, ReadWriteLock, "read_lock")
  return self._read
end

--- The write lock (the same Lock on every call).
function ReadWriteLock:write_lock()
  check_self(self, ReadWriteLock, "write_lock")
  return self._write
end

--- The fair lock of one resource (not acquired yet): its waiters get it in
-- the order they arrived, across clients (docs/kinds.md). A Lock: it is the
-- plain lock of its name (the same key: a plain lock of the name excludes it,
-- and is taken without waiting its turn), with no fence.
function Client:get_fair_lock(name)
  check_self(self, Client, "get_fair_lock")
  check_open(self, "get_fair_lock")
  check_name(1, "get_fair_lock", name)
  local lock = new_lock(self._ctx, { name })
  lock._fair = true
  return lock
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
  local copy, seen = {}, {}
  for i, name in ipairs(names) do
    if type(name) ~= "string" or name == "" then
      argerror(1, "get_multi_lock", ("name %d: non-empty string expected, got %s"):format(
        i, type(name) == "string" and "empty string" or type(name)))
    end
    -- A resource named twice would be one key counted twice: refused here,
    -- where the mistake is made, not at the first try_lock.
    if seen[name] then
      argerror(1, "get_multi_lock", ("name %d: %q is listed twice (as name %d)"):format(
        i, name, seen[name]))
    end
    seen[name] = i
    copy[i] = name
  end
  return new_lock(self._ctx, copy)
end

-- Checks with_lock's and with_permit's lease_ms (argument n) and fn (n + 1).
local function check_lease_fn(n, fname, lease_ms, fn)
  check_kept_lease(n, fname, lease_ms, 1)
  if type(fn) ~= "function" then
    argerror(n + 1, fname, "function expected, got " .. type(fn), 1)
  end
end

-- Runs fn(...) holding lock (a Lock, or a new permit), taken as
-- lock:lock(lease_ms) takes it, and releases it afterwards, also when fn
-- raises an error (which is raised again): fn's results, or nil and an error.
local function run_holding(lock, fname, lease_ms, fn, ...)
  local ok, err = take(lock, fname, MAX_MS, lease_ms)
  if not ok then
    return fail(err)
  end
  local results = pack(pcall(fn, ...))
  local released, unlock_err = Lock.unlock(lock)
  if not results[1] then
    error(results[2], 0)
  end
  if not released then
    return fail(unlock_err)
  end
  return unpack(results, 2, results.n)
end

--- Runs fn(...) while holding the lock on `name`, waiting until it is
-- acquired (as lock:lock()), and releases it afterwards, also when fn raises
-- an error (which is raised again). With lease_ms nil the lock is kept
-- (renewed while fn runs). Returns fn's results, or nil and an error when
-- the lock could not be taken ("noquorum" once the nodes have failed for
-- unavailable_timeout_ms), or when it was lost before the release (then fn
-- did run, but perhaps not alone).
function Client:with_lock(name, lease_ms, fn, ...)
  check_self(self, Client, "with_lock")
  check_open(self, "with_lock")
  check_name(1, "with_lock", name)
  check_lease_fn(2, "with_lock", lease_ms, fn)
  return run_holding(new_lock(self._ctx, { name }), "with_lock", lease_ms, fn, ...)
end

--- Runs fn(...) holding this lock, as client:with_lock does with a new
-- lock of a name: waits until it is taken (as lock:lock(lease_ms)), and
-- releases it afterwards, also when fn raises an error (which is raised
-- again). Any kind of lock: a fair lock, a read-write lock's half, a
-- multi-lock. On a lock this object holds already, a reentry: one hold is
-- taken and given back. fn's results, or nil and an error.
function Lock:with_lock(lease_ms, fn, ...)
  check_self(self, Lock, "with_lock")
  check_open(self, "with_lock")
  check_lease_fn(1, "with_lock", lease_ms, fn)
  return run_holding(self, "with_lock", lease_ms, fn, ...)
end

---------------------------------------------------------------------------
-- Semaphores: at most `permits` holders of a name at once, each with a
-- permit of its own (the C library's redlock_acquire_permit).

local Semaphore = { __name = "redlock semaphore" }
Semaphore.__index = Semaphore

-- A permit is a Lock of its own handle (extended, released, kept and lost
-- as a lock is), taken once: it has none of a lock's calls that take it
-- again or ask the nodes about the name's lock.
local Permit = { __name = "redlock permit", _kind_of = Lock,
                 release = Lock.unlock, unlock = Lock.unlock, extend = Lock.extend,
                 validity_ms = Lock.validity_ms, lost = Lock.lost, on_lost = Lock.on_lost }
Permit.__index = Permit

--- A semaphore of `permits` permits (1 to 10000) on the resource `name`: at
-- most that many permits held at once, by all its clients together (each
-- must give the same number: a node that holds the semaphore under another
-- refuses with "inval", naming both). Not a lock: a lock of the same name
-- does not exclude it. Nothing is taken yet.
function Client:get_semaphore(name, permits)
  check_self(self, Client, "get_semaphore")
  check_open(self, "get_semaphore")
  check_name(1, "get_semaphore", name)
  check_permits(2, "get_semaphore", permits)
  return setmetatable({ _ctx = self._ctx, _name = name, _permits = permits }, Semaphore)
end

-- A new permit of the semaphore, not taken yet.
local function new_permit(self)
  local permit = new_lock(self._ctx, { self._name }, Permit)
  permit._permits = self._permits
  return permit
end

-- The common part of try_acquire and acquire: the permit, or nil and an error.
local function take_permit(self, fname, wait_ms, lease_ms)
  check_open(self, fname)
  local permit = new_permit(self)
  local ok, err = take(permit, fname, wait_ms, lease_ms)
  if not ok then
    return fail(err)
  end
  permit._id = core.redlock_handle_token(permit._state.handle)
  return permit
end

--- semaphore:try_acquire(wait_ms, lease_ms): tries to take a permit,
-- waiting up to wait_ms (nil or 0: one attempt) for a lease of lease_ms;
-- with no lease_ms the permit is kept (renewed until released, as a lock
-- with no lease). Returns the permit, or nil and an error ("locked" when
-- every permit stayed taken).
--
-- semaphore:acquire(lease_ms): waits until a permit is taken, for a lease
-- of lease_ms (nil: kept), as lock:lock() waits. Returns the permit, or nil
-- and an error.
define_acquires(Semaphore, "try_acquire", "acquire", take_permit)

--- How many permits could be taken now: the number free on a permit's
-- quorum of the nodes (for display: it may be stale at once). Or nil and
-- an error ("noquorum" when too few nodes answer, "inval" when they hold
-- the semaphore under another number of permits).
function Semaphore:available_permits()
  check_self(self, Semaphore, "available_permits")
  check_open(self, "available_permits")
  return count_call(self._ctx, "available_permits", core.redlock_permits_available,
                    core.redlock_op_permits, 4, self._name, self._permits)
end

--- Runs fn(...) holding a permit, waiting until one is taken (as acquire),
-- and releases it afterwards, also when fn raises an error (which is raised
-- again); as client:with_lock does with a lock.
function Semaphore:with_permit(lease_ms, fn, ...)
  check_self(self, Semaphore, "with_permit")
  check_open(self, "with_permit")
  check_lease_fn(1, "with_permit", lease_ms, fn)
  return run_holding(new_permit(self), "with_permit", lease_ms, fn, ...)
end

--- The permit's id (the token of its handle: 32 hex characters), the
-- same after its release.
function Permit:id()
  check_self(self, Permit, "id")
  return self._id
end

--- Closes the client (docs/locks.md, "A closed client"): releases every
-- lock still held through it, best effort (a node that does not answer
-- keeps its key until the lease ends; inside nginx, from a phase without
-- cosockets, the locks are left to expire), ends their renewal and closes
-- the connections. Every later call on the client or its locks raises
-- "<call>: the Redlock client is closed"; what is read without the nodes
-- (lost(), validity_ms(), hold_count()) answers from what is left.
-- Calling it again does nothing.
function Client:close()
  check_self(self, Client, "close")
  local ctx = self._ctx
  if ctx.closed then
    return
  end
  poll_lost(ctx)   -- and the events so far
  local held = {}
  for state in pairs(ctx.held) do
    held[#held + 1] = state
  end
  for _, state in ipairs(held) do
    if state.handle then
      stop_keeping(state)
      local handle = state.handle
      handle_call(ctx, "unlock", handle)
      state.was_lost = core.redlock_handle_lost(handle) == 1
      drop_handle(state)
    end
  end
  ctx.closed = true
  if ctx.drv and ctx.drv.keeper then
    ctx.drv.keeper.sem:post(1)
  end
  if ctx.drv and ctx.drv.wakes then
    ctx.drv.wakes.sem:post(1)   -- its subscribers close
  end
  release_ctx(ctx)
end

return redlock
