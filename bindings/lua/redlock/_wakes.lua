-- redlock._wakes: inside nginx, the waits that releases end (private to
-- redlock.lua).
local core = require "redlock_core"
local cosocket = require "redlock._cosocket"
local lifetime = require "redlock._ctx"

local ngx = rawget(_G, "ngx")
local now_ms = core.redlock_now_ms
local READ_CHUNK, NEVER = cosocket.READ_CHUNK, cosocket.NEVER
local secure, new_semaphore, has = cosocket.secure, cosocket.new_semaphore, cosocket.has
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

-- What the wake-ups ask of the timer (redlock_waiters_drive's bits).
local CONNECT, WRITE, CLOSE, WAKE = core.REDLOCK_WAITERS_CONNECT, core.REDLOCK_WAITERS_WRITE,
                                    core.REDLOCK_WAITERS_CLOSE, core.REDLOCK_WAITERS_WAKE

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

-- A subscriber's reader: connects, then reads until the connection fails,
-- the library says to close it, or the timer's main thread kills it. It
-- never closes anything: it marks the subscriber dead, and the main thread
-- reports it and closes it.
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
    w.sem:post(1)
    return
  end
  core.redlock_waiters_connected(w.waiters, sub.node)
  w.sem:post(1)
  while true do
    local data, err = sock:receiveany(READ_CHUNK)
    if not data and err ~= "timeout" then
      sub.dead = true
      w.sem:post(1)
      return
    elseif data then
      local rc = core.redlock_waiters_received(w.waiters, sub.node, data, now_ms())
      wake_woken(w)
      if rc ~= core.REDLOCK_OK then
        w.sem:post(1)   -- the library says to close it: the main thread does
        return
      end
    end
  end
end

-- Ends a subscriber: its reader, its socket.
local function drop_sub(w, sub)
  if sub.reader then
    ngx.thread.kill(sub.reader)
  end
  sub.sock:close()
  w.subs[sub.node] = nil
end

local function start_sub(d, w, node)
  -- A pool of its own: never a connection pooled by the lock calls.
  w.sub_ids = w.sub_ids + 1
  local sub = { node = node, sock = ngx.socket.tcp(),
                pool = ("redlock-sub:%d:%d:%d"):format(d.id, node, w.sub_ids) }
  w.subs[node] = sub
  sub.reader = ngx.thread.spawn(sub_reader, d, w, sub)
end

-- Writes what the library has each connected subscriber write.
local function flush(w)
  for node, sub in pairs(w.subs) do
    local out = core.redlock_waiters_output(w.waiters, node)
    if #out > 0 then
      if sub.sock:send(out) then
        core.redlock_waiters_wrote(w.waiters, node, #out)
      else
        sub.dead = true
      end
    end
  end
end

-- The timer's main thread: does what the library says for the waiting
-- calls until it has nothing left to tend, the client is closed or the
-- worker exits.
local function watch_releases(premature, d)
  local w = d.wakes
  while not premature and not d.ctx.closed and not ngx.worker.exiting() do
    for node, sub in pairs(w.subs) do
      if sub.dead then
        drop_sub(w, sub)
        core.redlock_waiters_lost(w.waiters, node, now_ms())
      end
    end
    local todo, at = core.redlock_waiters_drive(w.waiters, now_ms())
    if has(todo, CLOSE) then
      repeat
        local node = core.redlock_waiters_next_close(w.waiters)
        if node >= 0 and w.subs[node] then
          drop_sub(w, w.subs[node])
        end
      until node < 0
    end
    if has(todo, CONNECT) then
      repeat
        local node = core.redlock_waiters_next_connect(w.waiters)
        if node >= 0 then
          start_sub(d, w, node)
        end
      until node < 0
    end
    if has(todo, WRITE) then
      flush(w)
    end
    if has(todo, WAKE) then
      wake_woken(w)
    end
    if at >= NEVER and next(w.subs) == nil then
      return
    end
    local now = now_ms()
    w.sem:wait(math.max(1, math.min(at, now + 1000) - now) / 1000)
  end
end

watch_loop = function(premature, d)
  local w = d.wakes
  local ok, problem = xpcall(function() watch_releases(premature, d) end, debug.traceback)
  for node, sub in pairs(w.subs) do
    drop_sub(w, sub)
    core.redlock_waiters_lost(w.waiters, node, now_ms())
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
