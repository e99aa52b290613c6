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
-- "Kept locks" in redlock/_keeper.lua).
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
-- `log` (see "Events" in redlock/_events.lua); client:health() tells what
-- the client knows of each node, and client:ping() asks them.
--
-- The layers beneath, each a private module of its own (redlock/_*.lua):
-- _errors (the errors), _events (the events), _check (argument checks), _ctx
-- (when the C context and handles are freed), _cosocket (inside nginx: the
-- connections over cosockets), _wakes (waits ended by releases), _drive (an
-- operation driven over them, and the owed releases delivered), _calls (each
-- call, blocking or over cosockets), _keeper (kept locks) and _lock (the
-- Lock class). This file is the API: the client and its other classes.
local core = require "redlock_core"
local errors = require "redlock._errors"
local check = require "redlock._check"
local events = require "redlock._events"
local lifetime = require "redlock._ctx"
local calls = require "redlock._calls"
local keeper = require "redlock._keeper"
local locks = require "redlock._lock"

local redlock = { _VERSION = core.redlock_version_string() }

-- The error codes: redlock.ELOCKED is REDLOCK_ELOCKED, whose error's word is
-- "locked" (redlock._errors).
for name, value in pairs(errors.codes) do
  redlock[name] = value
end

local ngx = rawget(_G, "ngx")
local MAX_MS = check.MAX_MS
local make_error, fail = errors.make_error, errors.fail
local argerror, check_self = check.argerror, check.check_self
local check_name, check_permits = check.check_name, check.check_permits
local LOG_LEVELS, nginx_sink, nginx_level = events.LOG_LEVELS, events.nginx_sink,
                                            events.nginx_level
local finalizer, release_ctx, drop_handle = lifetime.finalizer, lifetime.release_ctx,
                                            lifetime.drop_handle
local handle_call, count_call = calls.handle_call, calls.count_call
local poll_lost, stop_keeping = keeper.poll_lost, keeper.stop_keeping
local Lock, new_lock, take = locks.Lock, locks.new_lock, locks.take
local define_acquires, check_open = locks.define_acquires, locks.check_open
local check_lease_fn, run_holding = locks.check_lease_fn, locks.run_holding

---------------------------------------------------------------------------
-- Client: the nodes and their connections.

local Client = { __name = "redlock client" }
Client.__index = Client

-- An option's value as the text the library takes; a boolean where the
-- library's table says the option is one (0 or 1).
local function option_text(name, value)
  local kind = type(value)
  if kind == "string" then
    return value
  elseif kind == "number" and value == math.floor(value) and math.abs(value) <= MAX_MS then
    return ("%d"):format(value)
  elseif kind == "number" then
    return tostring(value)
  elseif kind == "boolean" and core.redlock_option_type(name) == core.REDLOCK_TYPE_BOOL then
    return value and "1" or "0"
  end
  argerror(2, "new", ("option '%s': string or number expected, got %s"):format(name, kind), 1)
end

-- The sink and the least level of a new client's events, from the options
-- `log` and `log_level` (see "Events" in redlock/_events.lua): sink nil
-- when none.
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
-- The C library splits it, and refuses an empty URI: a Lua error, as for
-- any bad argument.
function redlock.split_nodes(text)
  if type(text) ~= "string" then
    argerror(1, "split_nodes", "string expected, got " .. type(text))
  end
  local uris = {}
  for i = 1, core.redlock_uri_list_count(text) do
    local rc, uri = core.redlock_uri_list_item(text, i - 1)
    if rc ~= core.REDLOCK_OK then
      argerror(1, "split_nodes", core.redlock_errmsg())
    end
    uris[i] = uri
  end
  return uris
end

--- Every option of the C library (docs/options.md) with its default, as the
-- text an option takes: a table of name = default, read from the library.
function redlock.option_defaults()
  local defaults = {}
  for i = 0, core.redlock_option_count() - 1 do
    local name = core.redlock_option_name(i)
    local _, default = core.redlock_option_default(name)
    defaults[name] = default
  end
  return defaults
end

--- Makes a client for the nodes (an array of redis://, rediss://, unix:// or
-- redis-sentinel:// URIs) with
-- options named as in the C API (node_timeout_ms, key_prefix, ...), and
-- `log` and `log_level` for its events (see "Events" in
-- redlock/_events.lua). Does no network I/O. Returns the client, or nil and
-- an error.
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

-- The fields of a node's health, in their order (redlock_health_field).
local HEALTH_FIELDS = {}
while core.redlock_health_field(#HEALTH_FIELDS) do
  HEALTH_FIELDS[#HEALTH_FIELDS + 1] = core.redlock_health_field(#HEALTH_FIELDS)
end

-- One field of node i's health (from 0) in text, as the C library decodes
-- and types it: nil where the node has no value; or nil and the code of a
-- failure.
local function health_value(text, i, field)
  local kind = core.redlock_health_type(text, i, field)
  if kind < 0 then
    return nil, kind
  elseif kind == core.REDLOCK_TYPE_NONE then
    return nil
  end
  local rc, value = core.redlock_health_value(text, i, field)
  if rc ~= core.REDLOCK_OK then
    return nil, rc
  end
  return kind == core.REDLOCK_TYPE_TEXT and value or tonumber(value)
end

--- What the client knows of each node, in the order of the URIs: an array
-- of tables, one key per field of the C library's health (docs/logging.md):
-- node = "host:port", state = "unknown" | "up" | "slow" | "down" |
-- "guarded" | "auth_refused" | "permission_denied", last_error = text or
-- nil, rtt_ms = a recent round trip or nil before any, commands, failures,
-- timeouts (counts since the client was made), for_ms, retry_in_ms,
-- guard_ms, run_id, version, kind, server (nil before a Sentinel group's
-- master is named), conns, ... The library types each field and says where
-- a node has none (nil), as for every language.
-- No I/O: what the calls so far have seen (client:ping() refreshes it).
function Client:health()
  check_self(self, Client, "health")
  check_open(self, "health")
  local text = core.redlock_swig_health(self._ctx.ptr)
  if not text then
    return fail(make_error(core.REDLOCK_ENOMEM, "out of memory"))
  end
  local nodes = {}
  for i = 1, core.redlock_health_nodes(text) do
    local node = {}
    for _, field in ipairs(HEALTH_FIELDS) do
      local value, code = health_value(text, i - 1, field)
      if code then
        return fail(make_error(code))
      end
      node[field] = value
    end
    nodes[i] = node
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
  lease_ms = check_lease_fn(2, "with_lock", lease_ms, fn)
  return run_holding(new_lock(self._ctx, { name }), "with_lock", lease_ms, fn, ...)
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
  permits = check_permits(2, "get_semaphore", permits)
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
  lease_ms = check_lease_fn(1, "with_permit", lease_ms, fn)
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
