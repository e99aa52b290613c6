-- redlock._calls: the calls to the nodes, each the C library's blocking
-- call outside nginx, or an operation of its engine over cosockets inside
-- (private to redlock.lua).
local core = require "redlock_core"
local errors = require "redlock._errors"
local events = require "redlock._events"
local cosocket = require "redlock._cosocket"
local driving = require "redlock._drive"

local unpack = table.unpack or unpack
local function pack(...)
  return { n = select("#", ...), ... }
end
local now_ms = core.redlock_now_ms
local make_error, fail = errors.make_error, errors.fail
local drain_events = events.drain_events
local blocking_allowed, no_cosockets_error = cosocket.blocking_allowed,
                                             cosocket.no_cosockets_error
local drive = driving.drive

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

return {
  acquire = acquire,
  handle_call = handle_call,
  query_call = query_call,
  count_call = count_call,
}
