-- redlock._lock: the Lock class (a lock of one resource or several, of any
-- kind) and what the client's other classes share with it (private to
-- redlock.lua).
local core = require "redlock_core"
local errors = require "redlock._errors"
local check = require "redlock._check"
local events = require "redlock._events"
local lifetime = require "redlock._ctx"
local cosocket = require "redlock._cosocket"
local calls = require "redlock._calls"
local keeper = require "redlock._keeper"

local unpack = table.unpack or unpack
local function pack(...)
  return { n = select("#", ...), ... }
end
local MAX_MS = check.MAX_MS
local make_error, fail = errors.make_error, errors.fail
local argerror, check_self = check.argerror, check.check_self
local check_lease, check_wait, check_kept_lease = check.check_lease, check.check_wait,
                                                  check.check_kept_lease
local drain_events = events.drain_events
local finalizer, drop_handle = lifetime.finalizer, lifetime.drop_handle
local blocking_allowed, no_cosockets_error = cosocket.blocking_allowed,
                                             cosocket.no_cosockets_error
local acquire, handle_call, query_call = calls.acquire, calls.handle_call, calls.query_call
local check_hold, poll_lost, extend_kept = keeper.check_hold, keeper.poll_lost,
                                           keeper.extend_kept
local keep_lock, stop_keeping = keeper.keep_lock, keeper.stop_keeping

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
-- lease_ms (nil: kept); returns them as the calls take them.
local function check_try(fname, wait_ms, lease_ms)
  if wait_ms == nil then
    wait_ms = 0
  end
  return check_wait(1, fname, wait_ms, 1), check_kept_lease(2, fname, lease_ms, 1)
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
    return acquire_fn(self, try_name, check_try(try_name, wait_ms, lease_ms))
  end
  class[wait_name] = function(self, lease_ms)
    check_self(self, class, wait_name)
    return acquire_fn(self, wait_name, MAX_MS, check_kept_lease(1, wait_name, lease_ms))
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
  lease_ms = check_lease(1, "extend", lease_ms)
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

local function check_open(self, fname)
  if self._ctx.closed then
    error(fname .. ": the Redlock client is closed", 3)
  end
  poll_lost(self._ctx)
end

-- Checks with_lock's and with_permit's lease_ms (argument n) and fn (n + 1);
-- returns lease_ms as the calls take it.
local function check_lease_fn(n, fname, lease_ms, fn)
  lease_ms = check_kept_lease(n, fname, lease_ms, 1)
  if type(fn) ~= "function" then
    argerror(n + 1, fname, "function expected, got " .. type(fn), 1)
  end
  return lease_ms
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

--- Runs fn(...) holding this lock, as client:with_lock does with a new
-- lock of a name: waits until it is taken (as lock:lock(lease_ms)), and
-- releases it afterwards, also when fn raises an error (which is raised
-- again). Any kind of lock: a fair lock, a read-write lock's half, a
-- multi-lock. On a lock this object holds already, a reentry: one hold is
-- taken and given back. fn's results, or nil and an error.
function Lock:with_lock(lease_ms, fn, ...)
  check_self(self, Lock, "with_lock")
  check_open(self, "with_lock")
  lease_ms = check_lease_fn(1, "with_lock", lease_ms, fn)
  return run_holding(self, "with_lock", lease_ms, fn, ...)
end

return {
  Lock = Lock,
  new_lock = new_lock,
  take = take,
  define_acquires = define_acquires,
  check_open = check_open,
  check_lease_fn = check_lease_fn,
  run_holding = run_holding,
}
