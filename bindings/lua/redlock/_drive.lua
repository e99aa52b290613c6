-- redlock._drive: inside nginx, an operation of the engine driven to its
-- end over the cosocket driver, and the releases owed delivered after
-- (private to redlock.lua).
local core = require "redlock_core"
local cosocket = require "redlock._cosocket"
local wakes = require "redlock._wakes"
local events = require "redlock._events"

local ngx = rawget(_G, "ngx")
local now_ms = core.redlock_now_ms
local op_drive = core.redlock_op_drive

-- What the engine asks of a run (redlock_op_drive's bits).
local CONNECT, WRITE, AWAITS = core.REDLOCK_DRIVE_CONNECT, core.REDLOCK_DRIVE_WRITE,
                               core.REDLOCK_DRIVE_AWAITS
local DONE, TAIL = core.REDLOCK_DRIVE_DONE, core.REDLOCK_DRIVE_TAIL
local has = cosocket.has

local NEVER = cosocket.NEVER
local driver_of, attach, flush, wait = cosocket.driver_of, cosocket.attach, cosocket.flush,
                                       cosocket.wait
local take_sem, give_sem, new_semaphore = cosocket.take_sem, cosocket.give_sem,
                                          cosocket.new_semaphore
local close_io, keep = cosocket.close_io, cosocket.keep
local wait_for_release, stop_waiting = wakes.wait_for_release, wakes.stop_waiting
local drain_events = events.drain_events

local start_delivery

local function attach_wanted(d, run, now)
  local op = run.op
  local node = core.redlock_op_next_wanted(op, 0)
  while node >= 0 do
    attach(d, run, node, now)
    node = core.redlock_op_next_wanted(op, node + 1)
  end
end

-- Drives op to its end in this coroutine, doing what the engine says
-- (redlock_op_drive); returns its status, its message and a lock's handle,
-- or, from an operation that gives none, its answer (redlock_op_answer,
-- then redlock_op_available): { locked, ttl_ms, deleted, available }.
local function drive(ctx, op, before_free)
  local d = driver_of(ctx)
  local run = { d = d, op = op, sem = take_sem(), ios = {}, may_wait = true }
  while true do
    local now = now_ms()
    local what, at = op_drive(op, now)
    while has(what, CONNECT) do
      attach_wanted(d, run, now)
      what, at = op_drive(op, now)
    end
    -- A write that failed changed the operation: it is driven again at once.
    local written = not has(what, WRITE) or flush(d, run)
    if has(what, DONE) then
      if run.wait_id then
        stop_waiting(d, run, op)
      end
      -- Decided at a quorum; while TAIL, every node reachable in time still
      -- gets the command.
      if not has(what, TAIL) then
        break
      end
    elseif run.may_wait and has(what, AWAITS) then
      run.may_wait = false
      wait_for_release(d, run)
    end
    if written then
      wait(run, at, now)
    end
  end
  local status, message = core.redlock_op_status(op), core.redlock_op_message(op)
  local handle = core.redlock_op_take_handle(op)
  if not handle then
    handle = { core.redlock_op_answer(op) }
    handle[4] = core.redlock_op_available(op)
  end
  while core.redlock_op_take_conn(op) do
  end
  if before_free then
    before_free(op)   -- a renewal reads each lock's outcome from it
  end
  core.redlock_op_free(op)
  give_sem(run.sem)
  run.sem = nil
  for _, io in ipairs(run.ios) do
    io.run = nil
    if not io.freed then
      if io.reader then
        -- Replies are still owed: the reader pools or closes it after them.
        io.released = true
      elseif io.dead or not io.sock then
        close_io(d, io, "closed by the client")
      else
        keep(d, io)
      end
    end
  end
  if core.redlock_ctx_owes(ctx.ptr) == 1 then
    start_delivery(ctx)
  end
  return status, message, handle
end

-- Delivers the releases owed to nodes that did not answer, from a timer of
-- this worker, while the client is open, when the engine says
-- (redlock_ctx_owed_at); a run that leaves more owed wakes it. A worker that
-- is exiting stops at once: its owed keys end with their leases, and a
-- loop here would hold nginx's graceful shutdown back.
local function deliver_loop(premature, ctx)
  local d = ctx.drv
  while not premature and not ctx.closed and not ngx.worker.exiting() do
    local now = now_ms()
    local at = core.redlock_ctx_owed_at(ctx.ptr, now)
    if at >= NEVER then
      break
    elseif at > now then
      d.deliver_sem:wait(math.min(at - now, 1000) / 1000)
    else
      local rc, op = core.redlock_op_deliver(ctx.ptr, now)
      if rc == core.REDLOCK_OK then
        drive(ctx, op)
        drain_events(ctx)
      end
    end
  end
  d.delivering = false
end

start_delivery = function(ctx)
  local d = ctx.drv
  if d.delivering then
    if d.deliver_sem:count() < 0 then
      d.deliver_sem:post(1)
    end
  else
    d.deliver_sem = d.deliver_sem or new_semaphore()
    d.delivering = ngx.timer.at(0, deliver_loop, ctx) and true or false
  end
end

-- A connection's reader that leaves releases owed starts the delivery too.
cosocket.start_delivery = start_delivery

return {
  drive = drive,
}
