--- redlock.resty_lock: the API of OpenResty's lua-resty-lock (`new`, `lock`,
-- `unlock`, `expire`, and the options `exptime`, `timeout`, `step`, `ratio`
-- and `max_step`) over a Redlock: the lock is held on a quorum of the
-- configured Redis nodes, so it excludes every worker of every nginx that
-- uses the same nodes, not only the workers of one server. Code written for
-- lua-resty-lock changes its `require "resty.lock"` into
-- `require "redlock.resty_lock"`; docs/resty-lock.md says what else differs.
--
--     local resty_lock = require "redlock.resty_lock"
--     local lock, err = resty_lock:new("my_locks", { exptime = 10, timeout = 2 })
--     local elapsed, err = lock:lock("orders:42")   -- seconds waited, or nil, "timeout"
--     if elapsed then ... lock:unlock() end
--
-- The nodes, in this order: `opts.client` (a client of `redlock.new`), the
-- nodes and options given once to `configure(nodes, options)`, or the
-- environment variable REDLOCK_NODES. A client made here is made once per
-- process (per nginx worker), on the first call that needs it, never in
-- nginx's master (the init phase).
--
-- The dictionary name only names a set of locks: the resource of
-- `lock(key)` is `<dict_name>:<key>`; no shared dict is needed. The wait of
-- `lock` is the library's (over cosockets inside nginx, woken by the
-- holder's release); `step`, `ratio` and `max_step` are checked and kept
-- but not used. Failures return `nil, err` as lua-resty-lock does, bad
-- options included; an error of the library comes with its code's word as
-- a third value (`nil, "noquorum: ...", "noquorum"`).
local redlock = require "redlock"
local core = require "redlock_core"

local ngx = rawget(_G, "ngx")
local now_ms = core.redlock_now_ms
local MAX_TTL_MS = core.REDLOCK_MAX_TTL_MS

local _M = { _VERSION = redlock._VERSION }
local mt = { __index = _M }

-- What configure() was given, and the client made from it (or from
-- REDLOCK_NODES) in this process.
local configured
local default_client

local DEFAULTS = { exptime = 30, timeout = 5, step = 0.001, ratio = 2, max_step = 0.5 }

-- Whole milliseconds of `seconds`, from min_ms to MAX_TTL_MS; or nil.
local function to_ms(seconds, min_ms)
  if type(seconds) ~= "number" or seconds ~= seconds then
    return nil
  end
  local ms = math.floor(seconds * 1000 + 0.5)
  if ms < min_ms or ms > MAX_TTL_MS then
    return nil
  end
  return ms
end

local function bad_seconds(name, value, min_ms)
  return ("bad %s: a number of seconds from %g to %g expected, got %s"):format(
    name, min_ms / 1000, MAX_TTL_MS / 1000, tostring(value))
end

--- Sets the nodes (an array of URIs, or one string of comma-separated URIs
-- as REDLOCK_NODES holds them) and the options of redlock.new for every
-- lock object made without opts.client. Callable in init_by_lua*: nothing
-- connects, and each worker makes its own client on first use. Returns
-- true, or nil and the error of redlock.new (a bad URI or option).
function _M.configure(nodes, options)
  if type(nodes) == "string" then
    nodes = redlock.split_nodes(nodes)
  end
  local client, err, code = redlock.new(nodes, options)
  if not client then
    return nil, err, code
  end
  client:close()
  configured = { nodes = nodes, options = options }
  default_client = nil   -- lock objects made already keep the client they have
  return true
end

-- The client for lock objects made without opts.client; or nil and why.
local function shared_client()
  if default_client then
    return default_client
  end
  if ngx and ngx.get_phase() == "init" then
    return nil, "unsupported: no lock in nginx's init phase (the master process); "
      .. "take locks in the workers", "unsupported"
  end
  local nodes, options
  if configured then
    nodes, options = configured.nodes, configured.options
  else
    local text = os.getenv("REDLOCK_NODES")
    if not text or text == "" then
      return nil, "no nodes: call configure(nodes, options), give opts.client, or set "
        .. "REDLOCK_NODES (in nginx.conf: env REDLOCK_NODES;)", "inval"
    end
    nodes = redlock.split_nodes(text)
  end
  local err, code
  default_client, err, code = redlock.new(nodes, options)
  return default_client, err, code
end

-- The client of lock object self, the shared one made when it has none;
-- or nil and why.
local function client_of(self)
  if not self.client then
    local err, code
    self.client, err, code = shared_client()
    if not self.client then
      return nil, err, code
    end
  end
  return self.client
end

--- Makes a lock object: resty_lock:new(dict_name, opts) (or
-- resty_lock.new(dict_name, opts)). opts: exptime (seconds, default 30),
-- timeout (seconds, default 5, at most exptime; 0: one attempt), step,
-- ratio, max_step (numbers above 0, not used), client (a redlock client).
-- Returns the object, or nil and an error.
function _M.new(...)
  local dict_name, opts = ...
  if type(dict_name) == "table" then   -- called with a colon
    dict_name, opts = select(2, ...)
  end
  if type(dict_name) ~= "string" or dict_name == "" then
    return nil, "bad dict_name: a non-empty string expected, got " .. type(dict_name)
  end
  if opts ~= nil and type(opts) ~= "table" then
    return nil, "bad opts: a table expected, got " .. type(opts)
  end
  opts = opts or {}
  for name in pairs(opts) do
    if DEFAULTS[name] == nil and name ~= "client" then
      return nil, "bad opts: unknown option " .. tostring(name)
    end
  end
  local exptime = opts.exptime or DEFAULTS.exptime
  local exptime_ms = to_ms(exptime, 1)
  if not exptime_ms then
    return nil, bad_seconds("exptime", exptime, 1)
  end
  local timeout = opts.timeout or DEFAULTS.timeout
  local timeout_ms = to_ms(timeout, 0)
  if not timeout_ms then
    return nil, bad_seconds("timeout", timeout, 0)
  end
  local self = { prefix = dict_name .. ":", exptime_ms = exptime_ms,
                 timeout_ms = math.min(timeout_ms, exptime_ms) }
  for _, name in ipairs({ "step", "ratio", "max_step" }) do
    local value = opts[name] or DEFAULTS[name]
    if type(value) ~= "number" or not (value > 0 and value < math.huge) then
      return nil, ("bad %s: a number above 0 expected, got %s"):format(name, tostring(value))
    end
    self[name] = value
  end
  local client = opts.client
  if client ~= nil then
    local cmt = getmetatable(client)
    if type(cmt) ~= "table" or cmt.__name ~= "redlock client" then
      return nil, "bad client: a client of redlock.new expected, got " .. type(client)
    end
    self.client = client
  elseif not (ngx and ngx.get_phase() == "init") then
    local made, err, code = client_of(self)
    if not made then
      return nil, err, code
    end
  end
  return setmetatable(self, mt)
end

--- Takes the lock of `key` for exptime seconds, waiting up to timeout
-- seconds for its holder to release it. Returns the seconds waited (0 when
-- the first attempt took it), or nil and "timeout" (still held by another
-- when the timeout passed), "locked" (this object holds a lock already),
-- "nil key", or the library's error and its code.
function _M.lock(self, key)
  if key == nil then
    return nil, "nil key"
  end
  if type(key) == "number" then
    key = tostring(key)
  elseif type(key) ~= "string" then
    return nil, "bad key: a string expected, got " .. type(key)
  end
  if self.held then
    return nil, "locked"
  end
  local client, client_err, client_code = client_of(self)
  if not client then
    return nil, client_err, client_code
  end
  local lock = client:get_lock(self.prefix .. key)
  local started = now_ms()
  local ok, err, code = lock:try_lock(0, self.exptime_ms)
  local waited = false
  if not ok and self.timeout_ms > 0 then
    -- Not taken at once: the library's wait, for what is left of the timeout.
    waited = true
    local left = self.timeout_ms - (now_ms() - started)
    if left > 0 then
      ok, err, code = lock:try_lock(left, self.exptime_ms)
    end
  end
  if not ok then
    if code == "locked" then
      return nil, "timeout"
    end
    return nil, err, code
  end
  self.held = lock
  if not waited then
    return 0
  end
  -- Above 0 whenever the lock was not taken at once: someone else held it.
  return math.max(now_ms() - started, 1) / 1000
end

--- Releases the lock. Returns 1, or nil and "unlocked" (no lock held), or
-- the library's error and its code: "notheld" when the lock had expired or
-- been lost before (the object holds no lock afterwards either way).
function _M.unlock(self)
  local lock = self.held
  if not lock then
    return nil, "unlocked"
  end
  local ok, err, code = lock:unlock()
  if lock:hold_count() == 0 then   -- still held after "unsupported" (a phase)
    self.held = nil
  end
  if not ok then
    return nil, err, code
  end
  return 1
end

--- Sets the lock's expiry to `timeout` seconds from now (nil: exptime).
-- Returns true, or nil and "unlocked" (no lock held), or the library's error
-- and its code ("notheld" when it had expired or been lost).
function _M.expire(self, timeout)
  local lock = self.held
  if not lock then
    return nil, "unlocked"
  end
  local ms = self.exptime_ms
  if timeout ~= nil then
    ms = to_ms(timeout, 1)
    if not ms then
      return nil, bad_seconds("timeout", timeout, 1)
    end
  end
  local ok, err, code = lock:extend(ms)
  if not ok then
    return nil, err, code
  end
  return true
end

return _M
