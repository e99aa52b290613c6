-- redlock._cosocket: inside nginx, the connections of the cosocket driver
-- (private to redlock.lua; redlock._drive drives an operation over them).
local core = require "redlock_core"
local errors = require "redlock._errors"
local lifetime = require "redlock._ctx"

local ngx = rawget(_G, "ngx")
local make_error = errors.make_error
local release_ctx = lifetime.release_ctx

-- What this module gives; start_delivery is redlock._drive's (which requires
-- this module, hence set by it): the delivery of the releases owed.
local M = { start_delivery = nil }

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
        M.start_delivery(d.ctx)
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

-- A new ngx.semaphore, for the layers above (ngx.semaphore is loaded by
-- driver_of, which comes first).
local function new_semaphore()
  return semaphore.new()
end

-- Whether flag is set in bits, the engine's action bits, in a way Lua 5.1
-- and LuaJIT can read (they have no bit operators).
local function has(bits, flag)
  return bits % (flag + flag) >= flag
end

local function wait(run, at, now)
  local ms = math.max(0, math.min(at - now, 1000))
  run.waiting = at
  run.sem:wait(ms / 1000)
  run.waiting = nil
end

M.READ_CHUNK = READ_CHUNK
M.NEVER = NEVER
M.blocking_allowed = blocking_allowed
M.no_cosockets_error = no_cosockets_error
M.driver_of = driver_of
M.secure = secure
M.close_io = close_io
M.keep = keep
M.attach = attach
M.flush = flush
M.take_sem = take_sem
M.give_sem = give_sem
M.new_semaphore = new_semaphore
M.wait = wait
M.has = has
return M
