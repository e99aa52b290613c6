-- redlock._check: the checks of the public functions' arguments (private to
-- redlock.lua).
local core = require "redlock_core"

-- The longest wait the raw module takes: a number of Lua's holds it exactly.
local MAX_MS = 2 ^ 53

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

-- A number checked by the C library's rule for arg (redlock_arg_check),
-- whose message is the same in every language: the whole milliseconds (or
-- permits) the calls take. (depth: helpers between the public function and
-- the one that called this. The callers keep their frames, no tail call,
-- so that the count holds.)
local function checked(n, fname, value, arg, what, depth)
  if type(value) ~= "number" then
    argerror(n, fname, "number expected, got " .. type(value), 1 + depth)
  end
  local rc, out = core.redlock_arg_check(arg, what, value)
  if rc ~= core.REDLOCK_OK then
    argerror(n, fname, core.redlock_errmsg(), 1 + depth)
  end
  return out
end

-- A lease in milliseconds: the whole milliseconds it takes.
local function check_lease(n, fname, value, depth)
  local ms = checked(n, fname, value, core.REDLOCK_ARG_LEASE, "lease", 1 + (depth or 0))
  return ms
end

-- A wait in milliseconds: the whole milliseconds it takes (at most MAX_MS,
-- which is as long as it takes).
local function check_wait(n, fname, value, depth)
  local ms = checked(n, fname, value, core.REDLOCK_ARG_WAIT, "wait", 1 + (depth or 0))
  return math.min(ms, MAX_MS)
end

-- A lease or nil (a kept lock).
local function check_kept_lease(n, fname, value, depth)
  if value ~= nil then
    local ms = check_lease(n, fname, value, 1 + (depth or 0))
    return ms
  end
end

-- A semaphore's permits: from 1 to REDLOCK_MAX_PERMITS.
local function check_permits(n, fname, value)
  local permits = checked(n, fname, value, core.REDLOCK_ARG_PERMITS, "permits", 1)
  return permits
end

local function check_name(n, fname, value)
  if type(value) ~= "string" then
    argerror(n, fname, "string expected, got " .. type(value), 1)
  end
  if value == "" then
    argerror(n, fname, "resource name is empty", 1)
  end
end

return {
  MAX_MS = MAX_MS,
  argerror = argerror,
  check_self = check_self,
  check_lease = check_lease,
  check_wait = check_wait,
  check_kept_lease = check_kept_lease,
  check_permits = check_permits,
  check_name = check_name,
}
