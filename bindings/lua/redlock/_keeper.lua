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
    k = { holds = {}, sem = new_semaphore(), running = false }
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
  local busy = new_semaphore()
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
  local busy = new_semaphore()
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

return {
  check_hold = check_hold,
  poll_lost = poll_lost,
  extend_kept = extend_kept,
  keep_lock = keep_lock,
  stop_keeping = stop_keeping,
}
