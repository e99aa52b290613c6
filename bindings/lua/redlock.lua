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
local function release_ctx(ctx)
  if ctx.closed and ctx.handles == 0 and ctx.ptr then
    core.redlock_ctx_free(ctx.ptr)
    ctx.ptr = nil
  end
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

-- The OpenResty wait below is the only place in this file that retries; with
-- a plain Lua or LuaJIT interpreter (and in phases that cannot yield), one C
-- call waits the whole wait_ms and the library alone decides what to retry.
--
-- RETRYABLE mirrors the one source of truth, retryable() in core/op.c (the
-- codes for which another attempt may succeed); keep the two equal. The ABI
-- has no call that answers it (a future `int redlock_retryable(int code)`
-- would replace this table), so it is written out here, once. Likewise the
-- pause is drawn as retry_pause_ms() in core/op.c draws it: retry_delay_ms
-- +- retry_jitter_ms, both read back from the library (redlock.new), never
-- defaulted here; `int64_t redlock_ctx_retry_pause_ms(const redlock_ctx *)`
-- would replace that. The cosocket driver of the engine will replace both.
local RETRYABLE = {
  [core.REDLOCK_ELOCKED] = true,
  [core.REDLOCK_ENOQUORUM] = true,
  [core.REDLOCK_EEXPIRED] = true,
  [core.REDLOCK_EREDIS] = true,
}
redlock._retryable = RETRYABLE -- for the test that compares it with core/op.c
local YIELDING_PHASES = { rewrite = true, access = true, content = true, timer = true }

-- In an OpenResty phase that may yield, the pauses between attempts are
-- ngx.sleep, so the worker serves other requests while a lock is awaited.
-- Elsewhere the C library waits (and blocks) by itself.
local function acquire(ctx, names, lease_ms, wait_ms)
  if wait_ms == 0 or not (ngx and YIELDING_PHASES[ngx.get_phase()]) then
    return attempt(ctx, names, lease_ms, wait_ms)
  end
  ngx.update_time()
  local deadline = ngx.now() * 1000 + wait_ms
  while true do
    local rc, handle = attempt(ctx, names, lease_ms, 0)
    if not RETRYABLE[rc] then
      return rc, handle
    end
    ngx.update_time()
    local left = deadline - ngx.now() * 1000
    if left <= 0 then
      return rc
    end
    local pause = ctx.retry_delay_ms + math.random(-ctx.retry_jitter_ms, ctx.retry_jitter_ms)
    ngx.sleep(math.max(0, math.min(pause, left)) / 1000)
  end
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
  local rc, handle = acquire(state.ctx, self._names, lease_ms, wait_ms)
  if rc ~= core.REDLOCK_OK then
    return nil, make_error(rc)
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
  local rc = core.redlock_unlock(state.handle)
  local err = rc ~= core.REDLOCK_OK and make_error(rc)
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
  local rc = core.redlock_extend(handle, lease_ms)
  if rc ~= core.REDLOCK_OK then
    return nil, make_error(rc)
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
  -- The OpenResty wait (acquire) pauses as the library would: its options,
  -- read back from it once they are all set.
  for _, name in ipairs({ "retry_delay_ms", "retry_jitter_ms" }) do
    local got, text = core.redlock_ctx_get_option(ptr, name)
    if got ~= core.REDLOCK_OK then
      local err = make_error(got)
      core.redlock_ctx_free(ptr)
      return nil, err
    end
    ctx[name] = math.floor(tonumber(text))
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
