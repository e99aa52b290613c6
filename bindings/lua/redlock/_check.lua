-- redlock._check: the checks of the public functions' arguments (private to
-- redlock.lua).
local core = require "redlock_core"

local MAX_TTL_MS = core.REDLOCK_MAX_TTL_MS
local MAX_MS = 2 ^ 53
local MAX_PERMITS = core.REDLOCK_MAX_PERMITS

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
