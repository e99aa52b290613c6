-- redlock._wakes: inside nginx, the waits that releases end (private to
-- redlock.lua).
local core = require "redlock_core"
local cosocket = require "redlock._cosocket"
local lifetime = require "redlock._ctx"

local ngx = rawget(_G, "ngx")
local now_ms = core.redlock_now_ms
local READ_CHUNK, NEVER = cosocket.READ_CHUNK, cosocket.NEVER
local secure, new_semaphore = cosocket.secure, cosocket.new_semaphore
local finalizer = lifetime.finalizer

---------------------------------------------------------------------------
-- Inside nginx: waits ended by releases.
--
-- A lock call that found the lock held elsewhere pauses (retry_delay_ms +-
-- retry_jitter_ms) before its next attempt; the release itself may end the
-- pause. Releases publish their token on a channel per key, and the library
-- says who is woken when (redlock_engine.h's wake-ups, the rule its blocking
-- calls follow): this code only moves bytes and wakes the calls it names.
--
-- A cosocket belongs to the request (or timer) that made it, and the calls
-- waiting are in many requests: so the subscriber connections, one per node,
-- belong to a timer of their own, one per client in each worker, running
-- while calls wait (and for a linger after, as the library says). Its main
-- light thread subscribes and writes; one light thread per node connects and
-- reads, and posts the semaphore of each call the library says to wake (the
-- same worker: the call's own coroutine then tries again). A call registers
-- in the client's redlock_waiters when its first attempt finds the lock held
-- elsewhere, and leaves when it ends. Its timed retries stay.

local SUB_READ_TIMEOUT = 86400000   -- a subscriber waits for its next message this long (ms)

local watch_loop

-- The client's wake-up state in this worker, or nil when out of memory.
local function wakes_of(d)
  local w = d.wakes
  if not w then
    local rc, waiters = core.redlock_waiters_new(d.ctx.ptr)
    if rc ~= core.REDLOCK_OK then
      return nil
    end
    -- runs: the waiting calls by id; subs: the subscribers by node.
    w = { waiters = waiters, runs = {}, last_id = 0, subs = {}, sem = new_semaphore(),
          running = false, sub_ids = 0,
          _finalizer = finalizer(function() core.redlock_waiters_free(waiters) end) }
    d.wakes = w
  end
  return w
end

-- Registers a run whose lock waits for a release; without the timer (it
-- cannot start, the worker exits) the run keeps its timed retries only.
local function wait_for_release(d, run)
  local w = not ngx.worker.exiting() and wakes_of(d)
  if not w then
    return
  end
  w.last_id = w.last_id + 1
  if core.redlock_waiters_add(w.waiters, w.last_id, run.op) ~= core.REDLOCK_OK then
    return
  end
  run.wait_id = w.last_id
  w.runs[run.wait_id] = run
  if w.running then
    w.sem:post(1)
  elseif ngx.timer.at(0, watch_loop, d) then
    w.running = true
  else
    core.redlock_waiters_remove(w.waiters, run.wait_id, nil, now_ms())
    w.runs[run.wait_id] = nil
    run.wait_id = nil
  end
end

-- The run's lock is done (op not yet freed: a lock refused to the end says
-- so in its message when a node refused the subscription).
local function stop_waiting(d, run, op)
  local w = d.wakes
  core.redlock_waiters_remove(w.waiters, run.wait_id, op, now_ms())
  w.runs[run.wait_id] = nil
  run.wait_id = nil
  w.sem:post(1)
end

-- Wakes the runs the library names: each tries again at once.
local function wake_woken(w)
  while true do
    local id = core.redlock_waiters_next(w.waiters)
    if id == 0 then
      return
    end
    local run = w.runs[id]
    if run then
      core.redlock_op_wake(run.op, now_ms())
      run.sem:post(1)
    end
  end
end

-- What a subscriber read; false when it is to be closed (the stream broke,
-- or the node refused the subscription).
local function heard(w, sub, data)
  local s = sub.sub
  local broken = core.redlock_sub_received(s, data) ~= core.REDLOCK_OK
  while not broken do
    local event = core.redlock_sub_next(s)
    if event == 0 then
      break
    end
    broken = event < 0 or core.redlock_waiters_event(w.waiters, sub.node, event,
      core.redlock_sub_channel(s), core.redlock_sub_text(s)) == 1
  end
  wake_woken(w)
  return not broken
end

-- A subscriber's reader: connects, then reads until the connection fails
-- (or the timer's main thread kills it). It never closes or frees anything:
-- it marks the subscriber dead, and the main thread does.
local function sub_reader(d, w, sub)
  local sock = sub.sock
  sock:settimeouts(d.connect_timeout, d.node_timeout, SUB_READ_TIMEOUT)
  -- The node's server now (a Sentinel node's master, once named).
  local host = core.redlock_ctx_node_host(d.ctx.ptr, sub.node)
  local addr = host and { host, core.redlock_ctx_node_port(d.ctx.ptr, sub.node) }
               or d.addr[sub.node]
  if not sock:connect(addr[1], addr[2], { pool = sub.pool })
      or (d.tls[sub.node] and not secure(d, sock, d.tls[sub.node], d.tls_ip[sub.node])) then
    sub.dead = true
  else
    sub.connected = true
  end
  w.sem:post(1)
  while sub.connected do
    local data, err = sock:receiveany(READ_CHUNK)
    if (data and not heard(w, sub, data)) or (not data and err ~= "timeout") then
      sub.dead = true
      w.sem:post(1)
      return
    end
  end
end

-- Ends a subscriber: its reader, its socket, its state. failed: it broke or
-- was refused (a new one comes after the library's pause).
local function drop_sub(w, sub, failed)
  if sub.reader then
    ngx.thread.kill(sub.reader)
  end
  sub.sock:close()
  core.redlock_sub_free(sub.sub)
  w.subs[sub.node] = nil
  core.redlock_waiters_closed(w.waiters, sub.node, failed and 1 or 0, now_ms())
end

local function start_sub(d, w, node)
  local rc, s = core.redlock_sub_new(d.ctx.ptr, node)
  if rc == core.REDLOCK_OK then
    -- A pool of its own: never a connection pooled by the lock calls.
    w.sub_ids = w.sub_ids + 1
    local sub = { node = node, sub = s, sock = ngx.socket.tcp(),
                  pool = ("redlock-sub:%d:%d:%d"):format(d.id, node, w.sub_ids) }
    w.subs[node] = sub
    sub.reader = ngx.thread.spawn(sub_reader, d, w, sub)
  end
end

-- The timer's main thread: keeps the subscribers what the waiting calls
-- need until nobody has waited for the library's linger, the client is
-- closed or the worker exits.
local function watch_releases(premature, d)
  local w = d.wakes
  while not premature and not d.ctx.closed and not ngx.worker.exiting() do
    local now = now_ms()
    local idle_at = core.redlock_waiters_idle_at(w.waiters)
    if now >= idle_at then
      return
    end
    local next_at = math.min(idle_at, now + 1000)
    for node = 0, d.n - 1 do
      local sub = w.subs[node]
      if sub and sub.dead then
        drop_sub(w, sub, true)
        sub = nil
      end
      if not sub and idle_at >= NEVER then
        local at = core.redlock_waiters_connect_at(w.waiters, node)
        if now >= at then
          start_sub(d, w, node)
        else
          next_at = math.min(next_at, at)
        end
      elseif sub and sub.connected then
        core.redlock_waiters_match(w.waiters, node, sub.sub)
        local out = core.redlock_sub_output(sub.sub)
        if #out > 0 then
          if sub.sock:send(out) then
            core.redlock_sub_wrote(sub.sub, #out)
          else
            sub.dead = true
          end
        end
      end
    end
    w.sem:wait(math.max(1, next_at - now_ms()) / 1000)
  end
end

watch_loop = function(premature, d)
  local w = d.wakes
  local ok, problem = xpcall(function() watch_releases(premature, d) end, debug.traceback)
  for _, sub in pairs(w.subs) do
    drop_sub(w, sub, false)
  end
  w.running = false
  if not ok then
    -- Waiting calls keep their timed retries; the next one starts it again.
    ngx.log(ngx.ERR, "redlock: the release watch timer failed: ", problem)
  end
end

return {
  wait_for_release = wait_for_release,
  stop_waiting = stop_waiting,
}
