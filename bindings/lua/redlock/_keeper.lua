-- redlock._keeper: kept locks, renewed until unlocked, and their loss told
-- (private to redlock.lua).
local core = require "redlock_core"
local errors = require "redlock._errors"
local events = require "redlock._events"
local cosocket = require "redlock._cosocket"
local driving = require "redlock._drive"
local calls = require "redlock._calls"

local ngx = rawget(_G, "ngx")
local now_ms = core.redlock_now_ms
local error_names, make_error, code_of, fail = errors.error_names, errors.make_error,
                                               errors.code_of, errors.fail
local report, drain_events = events.report, events.drain_events
local driver_of, new_semaphore = cosocket.driver_of, cosocket.new_semaphore
local drive = driving.drive
local handle_call = calls.handle_call

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
-- running while the client has kept locks, over the C library's keeper
-- (redlock_keeper: when each lock is due, which renewals go together, how
-- many run at once, which locks were lost; the rules its own thread follows).
-- The timer drives it, runs each renewal it hands out (a light thread each,
-- over the cosocket driver), marks lost the locks it reports, and runs their
-- callbacks (a light thread each). The events renewal_failed and lost come
-- from it.
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
--   keeper, id         inside nginx: the client's keeper (below) and the
--                      hold's id in it
--   removed            inside nginx: out of the keeper (its renewal under
--                      way, if any, still ends first)
--
-- A client's keeper, inside nginx:
--   ptr                its redlock_keeper (nil once freed, with no hold left)
--   holds              the holds in it, by id, until removed and idle
--   untold             the holds lost whose callback is still to run
--   last_id, running   the last id given; whether its timer runs
--   sem                wakes the timer (a lock added, lost or removed, a
--                      renewal ended)
--   changed            posted to all when an extension ended

local WATCH_WAIT = 1    -- the keeper looks at its locks at least this often (s)

-- What the keeper asks of the timer (redlock_keeper_drive's bits).
local RUN, LOST, ENDED = core.REDLOCK_KEEPER_RUN, core.REDLOCK_KEEPER_LOST,
                         core.REDLOCK_KEEPER_ENDED
local has = cosocket.has

local function lost_error(code, detail)
  return (error_names[code] or "unknown") .. ": the kept lock was lost: " .. detail
end

-- Inside nginx: the client's keeper, made with its first kept lock; nil and
-- an error when it cannot be made.
local function keeper_of(ctx)
  local d = driver_of(ctx)
  local k = d.keeper
  if not k then
    local rc, ptr = core.redlock_keeper_new(ctx.ptr)
    if rc ~= core.REDLOCK_OK then
      return nil, make_error(rc)
    end
    k = { ptr = ptr, holds = {}, untold = {}, last_id = 0, sem = new_semaphore(),
          changed = new_semaphore(), running = false }
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
    local k = hold.keeper
    if k then
      k.untold[hold] = true
      k.sem:post(1)   -- the keeper tells it now
    end
  end
end

-- Inside nginx: takes hold out of its keeper (once); it stays among the
-- keeper's holds while a renewal of it runs.
local function remove_hold(hold)
  local k = hold.keeper
  if not hold.removed and k and k.ptr then
    hold.removed = true
    if core.redlock_keeper_remove(k.ptr, hold.id) ~= 1 then
      k.holds[hold.id] = nil
    end
    k.sem:post(1)
  end
end

-- Inside nginx: whether an extension of hold waits or runs.
local function busy(hold)
  local k = hold.keeper
  return k ~= nil and k.ptr ~= nil and core.redlock_keeper_busy(k.ptr, hold.id) == 1
end

-- Inside nginx: looks at hold's lock now (its validity has run out): the
-- keeper finds it lost, and why.
local function ask_keeper(hold)
  local k = hold.keeper
  if not (k and k.ptr) or hold.removed then
    return
  end
  core.redlock_keeper_drive(k.ptr, now_ms())
  drain_events(hold.ctx)
  local status = core.redlock_keeper_status(k.ptr, hold.id)
  if status ~= core.REDLOCK_OK then
    lose(hold, status, core.redlock_keeper_message(k.ptr, hold.id))
  end
  k.sem:post(1)   -- the timer takes what the keeper has to say
end

-- Whether hold was lost; latches it when it is found lost now: outside
-- nginx when the C thread recorded it, or while kept when its validity has
-- run out (the C thread marks it too, a moment later); inside nginx when
-- its validity has run out while kept (the keeper then says lost, and why).
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
    ask_keeper(hold)
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

-- Inside nginx: waits until no extension of hold waits or runs.
local function wait_idle(hold)
  while busy(hold) do
    hold.keeper.changed:wait(WATCH_WAIT)
  end
end

-- Inside nginx: an operation of k run over the cosocket driver, its end told
-- to k (given up when the drive failed first). Returns the drive's results,
-- or false and the problem.
local function run_kept(ctx, k, op)
  local told = false
  local ok, status, message = pcall(drive, ctx, op, function(done)
    core.redlock_keeper_op_ended(k.ptr, done, now_ms())
    told = true
  end)
  if not told then
    core.redlock_keeper_op_ended(k.ptr, op, now_ms())
  end
  drain_events(ctx)
  post_all(k.changed)
  k.sem:post(1)
  return ok, status, message
end

-- Inside nginx: the owner's extension of a kept lock by lease_ms, over the
-- cosocket driver, through the keeper (which plans the renewals from it).
-- Returns the status and, when it failed, the error. It waits for an
-- extension of the lock under way first: one at a time.
local function extend_kept(ctx, hold, lease_ms)
  wait_idle(hold)
  if not hold.kept then
    return core.REDLOCK_ENOTHELD, make_error(core.REDLOCK_ENOTHELD, hold.detail
                                             and "the kept lock was lost: " .. hold.detail
                                             or "the lock was released")
  end
  local k = hold.keeper
  -- When it cannot start, the keeper knows already.
  local rc, op = core.redlock_keeper_extend(k.ptr, hold.id, lease_ms, now_ms())
  local status, message = rc, nil
  if rc == core.REDLOCK_OK then
    local ok, drove, detail = run_kept(ctx, k, op)
    if ok then
      status, message = drove, detail
    else
      status, message = core.REDLOCK_ESYSTEM, "the extension failed: " .. tostring(drove)
    end
  else
    message = core.redlock_errmsg()
    drain_events(ctx)
  end
  local lost = core.redlock_keeper_status(k.ptr, hold.id)
  if hold.kept and lost ~= core.REDLOCK_OK then
    lose(hold, lost, core.redlock_keeper_message(k.ptr, hold.id))
  end
  if hold.lost then
    return core.REDLOCK_ENOTHELD, make_error(core.REDLOCK_ENOTHELD,
                                             "the kept lock was lost: " .. hold.detail)
  elseif status ~= core.REDLOCK_OK then
    return status, make_error(status, message)
  end
  return status
end

-- Inside nginx: a renewal the keeper handed out (one command per node for
-- all its locks, each decided on its own), run to its end.
local function renew(ctx, k, op)
  local ok, problem = run_kept(ctx, k, op)
  if not ok then
    report("a renewal", problem)
  end
end

local function run_callback(hold)
  tell(hold)
end

-- The keeper: one timer per client in each worker, while it has kept locks.
-- Once the client is closed or the worker exits, it renews no more; it
-- still tells the losses when the validity runs out, then ends.
local function keep_watching(premature, ctx)
  local k = ctx.drv.keeper
  -- A client closed and freed (ctx.ptr nil) has no kept lock left.
  while ctx.ptr do
    if premature or ctx.closed or ngx.worker.exiting() then
      core.redlock_keeper_halt(k.ptr)
    end
    local now = now_ms()
    local what, at = core.redlock_keeper_drive(k.ptr, now)
    drain_events(ctx)
    if has(what, LOST) then
      local id = core.redlock_keeper_next_lost(k.ptr)
      while id ~= 0 do
        local hold = k.holds[id]
        lose(hold, core.redlock_keeper_status(k.ptr, id), core.redlock_keeper_message(k.ptr, id))
        remove_hold(hold)
        id = core.redlock_keeper_next_lost(k.ptr)
      end
    end
    if has(what, ENDED) then
      local id = core.redlock_keeper_next_ended(k.ptr)
      while id ~= 0 do
        k.holds[id] = nil
        id = core.redlock_keeper_next_ended(k.ptr)
      end
      post_all(k.changed)
    end
    -- Light threads run at once until they first wait, so they start once
    -- the keeper was asked (a callback may take a new kept lock).
    if has(what, RUN) then
      local op = core.redlock_keeper_take_op(k.ptr)
      while op do
        ngx.thread.spawn(renew, ctx, k, op)
        op = core.redlock_keeper_take_op(k.ptr)
      end
    end
    local untold = k.untold
    k.untold = {}
    for hold in pairs(untold) do
      if not hold.told then
        hold.told = true
        ngx.thread.spawn(run_callback, hold)
      end
    end
    if next(k.holds) == nil and next(k.untold) == nil then
      break
    end
    k.sem:wait(math.max(1, math.min(at, now + WATCH_WAIT * 1000) - now_ms()) / 1000)
  end
  -- Nothing kept, nothing running: the next kept lock makes a new keeper.
  core.redlock_keeper_free(k.ptr)
  k.ptr = nil
  ctx.drv.keeper = nil
end

local function keep_loop(premature, ctx)
  local ok, problem = xpcall(function() keep_watching(premature, ctx) end,
                              debug.traceback)
  if ctx.drv.keeper then
    ctx.drv.keeper.running = false
  end
  if not ok then
    -- The next kept lock starts the keeper again, for all of them.
    ngx.log(ngx.ERR, "redlock: the renewal timer failed: ", problem)
  end
end

-- Inside nginx: hands a kept lock to the keeper (starting its timer).
-- A worker that exits keeps no new lock: nothing would renew it. Returns
-- true, or nil and an error.
local function start_keeping(ctx, hold)
  if ngx.worker.exiting() then
    return nil, make_error(core.REDLOCK_ESYSTEM, "cannot start the renewal timer: "
                           .. "process exiting")
  end
  local k, problem = keeper_of(ctx)
  if not k then
    return nil, problem
  end
  local id = k.last_id + 1
  local rc = core.redlock_keeper_add(k.ptr, id, hold.handle, now_ms())
  if rc ~= core.REDLOCK_OK then
    return nil, make_error(rc)
  end
  k.last_id = id
  hold.keeper, hold.id = k, id
  k.holds[id] = hold
  if k.running then
    k.sem:post(1)
    return true
  end
  local ok, err = ngx.timer.at(0, keep_loop, ctx)
  if not ok then
    remove_hold(hold)
    return nil, make_error(core.REDLOCK_ESYSTEM, "cannot start the renewal timer: "
                           .. tostring(err))
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
    local _
    _, problem = start_keeping(ctx, hold)
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
  end
  if hold and not hold.watch then
    remove_hold(hold)
    wait_idle(hold)
  end
end

return {
  check_hold = check_hold,
  poll_lost = poll_lost,
  extend_kept = extend_kept,
  keep_lock = keep_lock,
  stop_keeping = stop_keeping,
  busy = busy,
}
