"""The Lua binding inside a real nginx (Debian's lua module, OpenResty's
runtime), driving the engine over cosockets: a worker is never blocked by a
lock call, concurrent requests exclude each other, nothing grows over many
requests, multi-locks work, fair locks serve concurrent requests in the
order they came, a phase without cosockets gets an error, kept
locks are renewed by the worker's timer until unlock, never after, and
their loss is told from the timer by the time their validity runs out; a
waiting request is woken by the release, and the worker's subscribers and
their timer go once nobody waits. rediss:// nodes over the cosockets' TLS,
with nginx's trust (lua_ssl_trusted_certificate): locks work, certificate
problems are "tls" errors naming the node, client certificates are sent.

Run by CTest with REDLOCK_NGINX, REDLOCK_NGINX_NDK_MODULE,
REDLOCK_NGINX_LUA_MODULE and REDLOCK_LUA_DIR (redlock.lua and redlock_core.so built for LuaJIT) in the
environment (REDLOCK_ prefixed: nginx reads NGINX itself). Starts its own redis-server nodes and nginx.
"""

import http.client
import os
import re
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
NODES_SCRIPT = ROOT / "scripts" / "redis-nodes.sh"
KEPT_LEASE_MS = 900    # watchdog_lease_ms of the kept locks' client: renewed every 300 ms
MANY_LEASE_MS = 3000   # the same, of the many kept locks' client

APP = r"""
local redlock, keeper = require "redlock", require "redlock._keeper"
local now_ms = require("redlock_core").redlock_now_ms   -- the library's clock
local state = ngx.shared.state
local app = {}
local client, keeping

local function new_client(extra)
  local uris = {}
  for uri in io.lines(NODES_FILE) do
    uris[#uris + 1] = uri
  end
  local options = { node_timeout_ms = 500, connect_timeout_ms = 500, retry_delay_ms = 20,
                    retry_jitter_ms = 10, key_prefix = "openresty:" }
  for k, v in pairs(extra or {}) do
    options[k] = v
  end
  return assert(redlock.new(uris, options))
end

local function get_client()
  client = client or new_client()
  return client
end
app.get_client = get_client

-- The client of the kept locks (another client than the one of /try).
local function get_keeping()
  keeping = keeping or new_client({ watchdog_lease_ms = KEPT_LEASE_MS })
  return keeping
end

-- The many kept locks' own client: a lease of 3 s, so that a worker busy
-- for a moment (a loaded machine) does not make a renewal late.
local many_keeping
local function get_many_keeping()
  many_keeping = many_keeping or new_client({ watchdog_lease_ms = 3000 })
  return many_keeping
end

-- Whether a lock was taken (ok, err of its try_lock); when it was not, the
-- answer is 409 with the error.
local function taken(ok, err)
  if not ok then
    ngx.status = 409
    ngx.say(tostring(err))
  end
  return ok
end

-- Takes the lock, counts the holders in a shared dict around a pause.
function app.work()
  local lock = get_client():get_lock(ngx.var.arg_name or "shared")
  if not taken(lock:try_lock(tonumber(ngx.var.arg_wait or 30000), 10000)) then
    return
  end
  if state:incr("inside", 1, 0) > 1 then
    state:incr("overlaps", 1, 0)
  end
  local pause = tonumber(ngx.var.arg_pause or 0.002)
  if pause > 0 then
    ngx.sleep(pause)
  end
  state:incr("inside", -1)
  local released, unlock_err = lock:unlock()
  if not released then
    ngx.status = 500
    ngx.say(tostring(unlock_err))
    return
  end
  state:incr("done", 1, 0)
  ngx.say("ok")
end

-- A read-write lock over cosockets: two readers, a writer kept out and then
-- alone, a reader kept out by it, its own downgrade.
function app.rw()
  local c = get_client()
  local name = "rw-" .. ngx.var.request_id
  local a, b, w = c:get_read_write_lock(name), c:get_read_write_lock(name),
    c:get_read_write_lock(name)
  local ra = a:read_lock():try_lock(0, 5000)
  local rb = b:read_lock():try_lock(0, 5000)
  local wr, _, wr_code = w:write_lock():try_lock(0, 1000)
  ngx.say("readers ", tostring(ra), " ", tostring(rb), "; writer ", tostring(wr), " ",
    wr_code or "")
  assert(a:read_lock():unlock())
  assert(b:read_lock():unlock())
  local wa = w:write_lock():try_lock(0, 5000)
  local rr, _, rr_code = a:read_lock():try_lock(0, 1000)
  local down = w:read_lock():try_lock(0, 5000)
  assert(w:write_lock():unlock())
  local joined = a:read_lock():try_lock(0, 5000)
  ngx.say("writer ", tostring(wa), "; reader ", tostring(rr), " ", rr_code or "",
    "; downgrade ", tostring(down), "; joined ", tostring(joined))
  assert(w:read_lock():unlock())
  assert(a:read_lock():unlock())
end

-- A semaphore of two permits over cosockets: two taken, a third refused and
-- none available; another number refused; a release, then one available and
-- taken; a waiter let in by a release, not before; with_permit; a kept
-- permit renewed past two leases by the worker's timer.
function app.sem()
  local c = get_client()
  local name = "sem-" .. ngx.var.request_id
  local sem = c:get_semaphore(name, 2)
  local free = sem:available_permits()
  local one, two = sem:try_acquire(0, 5000), sem:try_acquire(0, 5000)
  local third, _, third_code = sem:try_acquire(0, 1000)
  ngx.say("available ", free, "; taken ", tostring(one ~= nil), " ", tostring(two ~= nil),
    "; third ", tostring(third), " ", third_code or "", "; available ",
    sem:available_permits())
  local other, _, other_code = c:get_semaphore(name, 3):try_acquire(0, 1000)
  ngx.say("three permits ", tostring(other), " ", other_code or "")
  assert(one:release())
  local after = sem:available_permits()
  local again = sem:try_acquire(0, 5000)
  ngx.say("released: available ", after, "; taken ", tostring(again ~= nil), "; its own id ",
    tostring(#again:id() == 32 and again:id() ~= one:id()))
  local released = false
  local waiter = ngx.thread.spawn(function()
    local permit = sem:acquire(5000)
    return permit, released
  end)
  ngx.sleep(0.2)
  released = true
  assert(two:release())
  local _, waited, after_release = ngx.thread.wait(waiter)
  ngx.say("waiter ", tostring(waited ~= nil), " after the release ", tostring(after_release))
  assert(waited:release())
  assert(again:release())
  ngx.say("with_permit ", sem:with_permit(5000, function() return sem:available_permits() end),
    "; available ", sem:available_permits())
  local kept = get_keeping():get_semaphore(name .. "-kept", 1)
  local permit = assert(kept:try_acquire(0))
  ngx.sleep(2.5 * KEPT_LEASE_MS / 1000)
  local rival, _, rival_code = c:get_semaphore(name .. "-kept", 1):try_acquire(0, 1000)
  ngx.say("kept lost ", tostring(permit:lost()), " valid ", tostring(permit:validity_ms() > 0),
    "; rival ", tostring(rival), " ", rival_code or "")
  assert(permit:release())
  ngx.say("released ", kept:available_permits())
end

-- A fair lock over cosockets: the plain lock of its name (each refuses the
-- other), no fence; with_lock on it and on a read lock; kept, renewed past
-- two leases by the worker's timer.
function app.fair()
  local c, other = get_client(), new_client({ fencing = 1 })
  local name = "fair-" .. ngx.var.request_id
  local fair = other:get_fair_lock(name)
  local taken = fair:try_lock(0, 5000)
  local plain, _, plain_code = c:get_lock(name):try_lock(0, 1000)
  local rival, _, rival_code = c:get_fair_lock(name):try_lock(0, 1000)
  ngx.say("fair ", tostring(taken), " fence ", tostring(fair:fence()), "; plain ",
    tostring(plain), " ", plain_code or "", "; fair ", tostring(rival), " ",
    rival_code or "", "; locked ", tostring(c:get_lock(name):is_locked()))
  assert(fair:unlock())
  local lock = c:get_lock(name)
  assert(lock:try_lock(0, 5000))
  local refused, _, refused_code = fair:try_lock(0, 1000)
  assert(lock:unlock())
  ngx.say("plain held: fair ", tostring(refused), " ", refused_code or "")
  local inside = fair:with_lock(5000, function(word)
    return word .. " " .. tostring(c:get_lock(name):try_lock(0, 1000))
  end, "fair")
  local rw = other:get_read_write_lock(name .. "-rw")
  local read = rw:read_lock():with_lock(5000, function()
    local reader = c:get_read_write_lock(name .. "-rw"):read_lock()
    local joined = reader:try_lock(0, 1000)
    assert(reader:unlock())
    return ("read %s %s"):format(tostring(joined),
      tostring(c:get_read_write_lock(name .. "-rw"):write_lock():try_lock(0, 1000)))
  end)
  ngx.say("with_lock ", inside, "; ", read, "; locked ", tostring(fair:is_locked()))
  local kept = get_keeping():get_fair_lock(name .. "-kept")
  assert(kept:try_lock(0))
  ngx.sleep(2.5 * KEPT_LEASE_MS / 1000)
  local late, _, late_code = c:get_fair_lock(name .. "-kept"):try_lock(0, 1000)
  ngx.say("kept lost ", tostring(kept:lost()), " valid ", tostring(kept:validity_ms() > 0),
    "; rival ", tostring(late), " ", late_code or "")
  assert(kept:unlock())
  ngx.say("released ", tostring(kept:is_locked()))
  other:close()
end

-- Fair locks across requests: ?op=hold takes the fair lock of ?name (and
-- keeps it after the request), op=release releases it, op=wait waits for it
-- with a client whose timed retries come after the test's end (only a
-- release can let it in), says its turn among the holders of ?name once it
-- has it, then releases it.
local fair_held, fair_waiting = {}, nil
function app.fair_turns()
  local op, name = ngx.var.arg_op, ngx.var.arg_name
  if op == "hold" then
    fair_held[name] = get_client():get_fair_lock(name)
    assert(fair_held[name]:try_lock(0, 30000))
    ngx.say("held")
  elseif op == "release" then
    assert(fair_held[name]:unlock())
    ngx.say("released")
  else
    fair_waiting = fair_waiting or new_client({ retry_delay_ms = 300000, retry_jitter_ms = 0 })
    local lock = fair_waiting:get_fair_lock(name)
    if not taken(lock:try_lock(70000, 10000)) then
      return
    end
    local turn = state:incr("turn:" .. name, 1, 0)
    ngx.sleep(0.05)
    assert(lock:unlock())
    ngx.say(turn)
  end
end

function app.multi()
  local lock = get_client():get_multi_lock({ "m1", "m2", "m3" })
  if not taken(lock:try_lock(0, 10000)) then
    return
  end
  ngx.say("held ", lock:token())
  local other = get_client():get_lock("m2")
  local taken, _, other_code = other:try_lock(0, 1000)
  ngx.say("m2 alone: ", tostring(taken), " ", other_code or "")
  assert(lock:extend(20000))
  ngx.say("validity ", lock:validity_ms() > 19000)
  assert(lock:unlock())
  ngx.say("m2 after: ", tostring(other:try_lock(0, 1000)))
  assert(other:unlock())
end

-- The queries over cosockets: another client's lock seen from the nodes,
-- its time left, and forced open.
function app.inspect()
  local name = "inspected"
  local holder = get_client():get_lock(name)
  assert(holder:try_lock(0, 10000))
  local client = new_client({})
  local other = client:get_lock(name)
  local left = other:remain_time_to_live()
  ngx.say("locked ", tostring(other:is_locked()), " ", tostring(left > 8000 and left <= 10000))
  ngx.say("forced ", tostring(other:force_unlock()), " ", tostring(other:is_locked()), " ",
          other:remain_time_to_live())
  local ok, _, code = holder:unlock()
  ngx.say("holder ", tostring(ok), " ", code or "")
  client:close()
end

-- The rules every language follows (docs/locks.md), over cosockets: one
-- line of observations per rule, as tests/cross/contender.lua prints them.
function app.rules()
  local base = "rules-" .. ngx.var.arg_run
  local c = new_client({ watchdog_lease_ms = KEPT_LEASE_MS })
  local other = new_client({})
  local function yes(cond) return cond and "yes" or "no" end
  local function word(ok, err, code)
    assert(ok or type(err) == "string" and err:sub(1, #code + 2) == code .. ": ")
    return ok and "ok" or code
  end
  local function closed(fn, ...)
    local ok, problem = pcall(fn, ...)
    return not ok and tostring(problem):find("the Redlock client is closed", 1, true)
      and "closed" or "open"
  end

  local kept = c:get_lock(base .. ":kept")
  assert(kept:lock())
  local again = kept:try_lock(1000, 150)
  local holds = kept:hold_count()
  local ttl = kept:remain_time_to_live()
  local kept_lease = c:get_lock(base .. ":kept-lease")
  assert(kept_lease:try_lock(0, nil))
  ngx.sleep(1.2)
  ngx.say(("reentry-kept again=%s holds=%d ttl_kept=%s held=%s lost=%s unlock=%s,%s"):format(
    yes(again), holds, yes(ttl > 150), yes(kept:validity_ms() > 0), yes(kept:lost()),
    word(kept:unlock()), word(kept:unlock())))
  ngx.say(("kept-lease held=%s lost=%s unlock=%s"):format(yes(kept_lease:validity_ms() > 0),
    yes(kept_lease:lost()), word(kept_lease:unlock())))

  local leased = c:get_lock(base .. ":leased")
  assert(leased:try_lock(0, 300))
  again = leased:try_lock()
  holds = leased:hold_count()
  ttl = leased:remain_time_to_live()
  ngx.sleep(0.45)
  local lost = leased:lost()
  ngx.say(("reentry-lease again=%s holds=%d ttl_first=%s lost=%s unlock=%s,%s"):format(
    yes(again), holds, yes(ttl <= 300), yes(lost), word(leased:unlock()),
    word(leased:unlock())))

  local fresh = c:get_lock(base .. ":afresh")
  assert(fresh:try_lock(0, 300) and fresh:try_lock(0, 300))
  ngx.sleep(0.45)
  lost = fresh:lost()
  local afresh = word(fresh:try_lock())
  ngx.say(("afresh lost=%s again=%s holds=%d lost=%s unlock=%s"):format(yes(lost), afresh,
    fresh:hold_count(), yes(fresh:lost()), word(fresh:unlock())))

  local holder = other:get_lock(base .. ":wait")
  assert(holder:try_lock(0, 400))
  local waiter = c:get_lock(base .. ":wait")
  local started = now_ms()
  local tried = word(waiter:try_lock())
  local once = now_ms() - started < 300
  local locked = word(waiter:lock(5000))
  ngx.say(("wait try=%s once=%s lock=%s waited=%s"):format(tried, yes(once), locked,
                                                           yes(now_ms() - started >= 300)))
  waiter:unlock()

  local multi = c:get_multi_lock({ base .. ":ma", base .. ":mb", base .. ":mc" })
  local free = not multi:is_locked()
  local b, d = other:get_lock(base .. ":mb"), other:get_lock(base .. ":mc")
  assert(b:try_lock(0, 3000))
  assert(d:try_lock(0, 8000))
  local left = multi:remain_time_to_live()
  ngx.say(("multi free=%s locked=%s longest=%s"):format(yes(free), yes(multi:is_locked()),
                                                        yes(left > 7000 and left <= 8000)))
  b:unlock()
  d:unlock()

  local closing = new_client({})
  local held = closing:get_lock(base .. ":closed")
  assert(held:try_lock(0, 10000))
  closing:close()
  local released = not other:get_lock(base .. ":closed"):is_locked()
  ngx.say(("closed released=%s get=%s try=%s unlock=%s"):format(yes(released),
    closed(closing.get_lock, closing, "x"), closed(held.try_lock, held),
    closed(held.unlock, held)))
  c:close()
  other:close()
end

-- A refusal printed as OpenResty code prints errors: err is a string that
-- starts with its code's word, the code's word the third value.
function app.refused()
  local name = "refused-" .. ngx.var.request_id
  local holder = get_client():get_lock(name)
  assert(holder:try_lock(0, 5000))
  local other = new_client({})
  local ok, err, code = other:get_lock(name):try_lock(0, 1000)
  ngx.say("failed: ", err)
  ngx.say(tostring(ok), " ", code)
  assert(holder:unlock())
  other:close()
end

-- Fences over cosockets: two holders in turn, the second's larger.
function app.fence()
  local client = new_client({ fencing = 1 })
  local fences = {}
  for i = 1, 2 do
    local lock = client:get_lock("fenced")
    assert(lock:try_lock(0, 10000))
    fences[i] = lock:fence("fenced")
    assert(lock:unlock())
  end
  ngx.say("fences ", tostring(fences[1] >= 1), " ", fences[2] - fences[1])
  client:close()
end

-- Kept locks, by name, across requests.
local kept = {}

-- A kept lock whose on_lost records, in the shared dict, when and where it ran.
local function kept_lock(name)
  local lock = get_keeping():get_lock(name)
  lock:on_lost(function(l, _, code)
    state:set("lost_at:" .. name, now_ms())
    state:set("lost_how:" .. name, ("%s %s %s"):format(code, ngx.get_phase(),
                                                       tostring(l == lock)))
  end)
  return lock
end

-- Takes a kept lock, holds it for ?ms in this request, then unlocks it.
function app.hold()
  local name = ngx.var.arg_name
  local lock = kept_lock(name)
  assert(lock:try_lock(0))
  local lease = lock:validity_ms()
  ngx.sleep(tonumber(ngx.var.arg_ms) / 1000)
  local left, lost = lock:validity_ms(), lock:lost()
  local ok, _, code = lock:unlock()
  ngx.say(lease, " ", left, " ", tostring(lost), " ", tostring(ok), " ", code or "")
end

-- Takes a kept lock and keeps it after this request ends.
function app.keep()
  local name = ngx.var.arg_name
  local lock = kept_lock(name)
  if not taken(lock:try_lock(0)) then
    return
  end
  kept[name] = lock
  ngx.say("kept ", lock:validity_ms())
end

-- The library's time, the kept lock's validity, and whether it was lost.
function app.status()
  local lock = kept[ngx.var.arg_name]
  local now = now_ms()
  ngx.say(now, " ", lock:validity_ms(), " ", tostring(lock:lost()))
end

-- Unlocks a kept lock; with ?busy, first waits for a renewal under way and
-- unlocks while it is.
function app.release()
  local name = ngx.var.arg_name
  local lock = kept[name]
  kept[name] = nil
  local busy = false
  if ngx.var.arg_busy then
    local deadline = now_ms() + 3000
    while not keeper.busy(lock._state.hold) and now_ms() < deadline do
      ngx.sleep(0.002)
    end
    busy = keeper.busy(lock._state.hold)
  end
  local started = now_ms()
  local ok, _, code = lock:unlock()
  ngx.say(tostring(ok), " ", code or "-", " ", tostring(busy), " ",
          now_ms() - started, " ", tostring(not keeper.busy(lock._state.hold)))
end

-- What the on_lost callback recorded.
-- Many kept locks at once: /many?op=keep&n=N takes N kept locks m1..mN
-- (and keeps them after the request), op=lost says which are lost, and
-- op=release unlocks them all.
local many = {}
function app.many()
  local op, n = ngx.var.arg_op, tonumber(ngx.var.arg_n)
  if op == "keep" then
    for i = 1, n do
      local lock = get_many_keeping():get_lock("m" .. i)
      assert(lock:try_lock(0))
      many[i] = lock
    end
    ngx.say("kept ", n)
  elseif op == "lost" then
    local lost = {}
    for i = 1, n do
      if many[i]:lost() then
        lost[#lost + 1] = tostring(i)
      end
    end
    ngx.say("lost ", table.concat(lost, ","))
  else
    local failed = 0
    for i = 1, n do
      if not many[i]:unlock() then
        failed = failed + 1
      end
    end
    many = {}
    ngx.say("failed ", failed)
  end
end

function app.lost()
  local name = ngx.var.arg_name
  ngx.say(state:get("lost_at:" .. name) or "-", " ", state:get("lost_how:" .. name) or "-")
end

-- Another client's attempt with no wait; a success records when, and releases.
function app.try()
  local name = ngx.var.arg_name
  local lock = get_client():get_lock(name)
  local ok, _, code = lock:try_lock(0, 1000)
  if not ok then
    ngx.say(code)
    return
  end
  state:add("taken_at:" .. name, now_ms())
  assert(lock:unlock())
  ngx.say("taken ", state:get("taken_at:" .. name))
end

-- A client whose waits pause 5 s between attempts: only a release can end
-- one sooner.
local slow
local function get_slow()
  slow = slow or new_client({ retry_delay_ms = 5000, retry_jitter_ms = 0 })
  return slow
end

-- Holds ?name for ?ms, records when it lets go, and unlocks.
function app.hold_then_release()
  local name = ngx.var.arg_name
  local lock = get_client():get_lock(name)
  assert(lock:try_lock(0, 10000))
  ngx.sleep(tonumber(ngx.var.arg_ms) / 1000)
  state:set("released_at:" .. name, now_ms())
  assert(lock:unlock())
  ngx.say("released")
end

-- Waits for ?name with the slow client; says how many ms after the release
-- it had the lock.
function app.wait_for_release()
  local name = ngx.var.arg_name
  local lock = get_slow():get_lock(name)
  local ok, err = lock:try_lock(10000, 10000)
  local taken_at = now_ms()
  if not taken(ok, err) then
    return
  end
  assert(lock:unlock())
  ngx.say(taken_at - state:get("released_at:" .. name))
end

-- Events to a function of the app's, at every level: a lock cycle, then a
-- ping and the health; the events last, one a line.
function app.events()
  local seen = {}
  local c = new_client({ log_level = "debug", log = function(level, event, message)
    seen[#seen + 1] = level .. " " .. event .. " " .. message
  end })
  local lock = c:get_lock("evented")
  assert(lock:try_lock(0, 10000))
  assert(lock:unlock())
  -- A lock and its release return once a quorum answered, so a node may not
  -- have answered yet; the health is read after the ping, which waits for all.
  local answered = c:ping()
  local health = c:health()
  ngx.say(answered, " ", #health, " ", health[1].state, " ", health[1].commands)
  for _, line in ipairs(seen) do
    ngx.say(line)
  end
  c:close()
end

-- The default sink, ngx.log: a client of the nodes and one more on ?port,
-- where nothing listens; a lock cycle, then that node's state.
function app.down()
  local uris = {}
  for uri in io.lines(NODES_FILE) do
    uris[#uris + 1] = uri
  end
  uris[#uris + 1] = "redis://127.0.0.1:" .. ngx.var.arg_port
  local c = assert(redlock.new(uris, { key_prefix = "openresty:" }))
  local lock = c:get_lock("down")
  assert(lock:try_lock(0, 10000))
  assert(lock:unlock())
  ngx.say(c:health()[#uris].state)
  c:close()
end

-- rediss:// nodes (TLS_DIR/<?nodes>.uris): one attempt, with the server
-- name ?name, the check off with ?verify=0, a client certificate with
-- ?cert=1. Says "locked", or the error's name and message.
function app.tls()
  local uris = {}
  for uri in io.lines(TLS_DIR .. "/" .. ngx.var.arg_nodes .. ".uris") do
    uris[#uris + 1] = uri
  end
  local options = { node_timeout_ms = 2000, connect_timeout_ms = 2000, key_prefix = "tls:",
                    tls_server_name = ngx.var.arg_name, tls_verify = ngx.var.arg_verify }
  if ngx.var.arg_cert then
    options.tls_cert_file = TLS_DIR .. "/certs/client.crt"
    options.tls_key_file = TLS_DIR .. "/certs/client.key"
  end
  local client = assert(redlock.new(uris, options))
  local lock = client:get_lock("job")
  local ok, err = lock:try_lock(1000, 10000)
  if ok then
    ngx.say("locked ", lock:token())
    assert(lock:unlock())
  else
    ngx.say(err)   -- "tls: ...": the code's word first
  end
  client:close()
end

-- The worker's timers: running, then pending.
function app.timers()
  ngx.say(ngx.timer.running_count(), " ", ngx.timer.pending_count())
end

function app.stats()
  collectgarbage()
  collectgarbage()
  ngx.say(state:get("done") or 0, " ", state:get("overlaps") or 0, " ",
          math.floor(collectgarbage("count")))
end

return app
"""

# The start of every configuration here (test_resty_lock.py's too): the
# modules, the files in the test's folder, the binding on Lua's paths, and
# the shared dict `state`; the rest says what is inside http {.
CONF_START = r"""
load_module {ndk};
load_module {lua};
{user}
worker_processes {workers};
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 2048; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/body;
  proxy_temp_path {tmp}/proxy;
  fastcgi_temp_path {tmp}/fastcgi;
  uwsgi_temp_path {tmp}/uwsgi;
  scgi_temp_path {tmp}/scgi;
  lua_package_path "{module}/?.lua;{tmp}/?.lua;;";
  lua_package_cpath "{module}/?.so;;";
  lua_shared_dict state 1m;
"""

CONF = CONF_START + r"""
  {tls_trust}
  init_worker_by_lua_block {{ NODES_FILE = "{nodes}"; KEPT_LEASE_MS = {kept_lease};
                              TLS_DIR = "{tls_dir}" }}
  server {{
    listen 127.0.0.1:{port};
    keepalive_requests 100000;
    location = /work {{ content_by_lua_block {{ require("app").work() }} }}
    location = /multi {{ content_by_lua_block {{ require("app").multi() }} }}
    location = /rw {{ content_by_lua_block {{ require("app").rw() }} }}
    location = /sem {{ content_by_lua_block {{ require("app").sem() }} }}
    location = /fair {{ content_by_lua_block {{ require("app").fair() }} }}
    location = /fair_turns {{ content_by_lua_block {{ require("app").fair_turns() }} }}
    location = /inspect {{ content_by_lua_block {{ require("app").inspect() }} }}
    location = /fence {{ content_by_lua_block {{ require("app").fence() }} }}
    location = /rules {{ content_by_lua_block {{ require("app").rules() }} }}
    location = /stats {{ content_by_lua_block {{ require("app").stats() }} }}
    location = /ping {{ content_by_lua_block {{ ngx.say("pong") }} }}
    location = /hold {{ content_by_lua_block {{ require("app").hold() }} }}
    location = /keep {{ content_by_lua_block {{ require("app").keep() }} }}
    location = /status {{ content_by_lua_block {{ require("app").status() }} }}
    location = /release {{ content_by_lua_block {{ require("app").release() }} }}
    location = /lost {{ content_by_lua_block {{ require("app").lost() }} }}
    location = /many {{ content_by_lua_block {{ require("app").many() }} }}
    location = /try {{ content_by_lua_block {{ require("app").try() }} }}
    location = /refused {{ content_by_lua_block {{ require("app").refused() }} }}
    location = /hold_then_release {{ content_by_lua_block {{ require("app").hold_then_release() }} }}
    location = /wait_for_release {{ content_by_lua_block {{ require("app").wait_for_release() }} }}
    location = /timers {{ content_by_lua_block {{ require("app").timers() }} }}
    location = /events {{ content_by_lua_block {{ require("app").events() }} }}
    location = /down {{ content_by_lua_block {{ require("app").down() }} }}
    location = /tls {{ content_by_lua_block {{ require("app").tls() }} }}
    location = /filter {{
      content_by_lua_block {{ ngx.say("body") }}
      header_filter_by_lua_block {{
        local lock = require("app").get_client():get_lock("filtered")
        local ok, err = lock:try_lock(0, 1000)
        ngx.header["X-Lock"] = tostring(ok) .. " " .. tostring(err)
      }}
    }}
  }}
}}
"""


def free_port():
    return int(subprocess.run([str(NODES_SCRIPT), "free-port"], check=True,
                              capture_output=True, text=True).stdout)


class Nginx:
    """An nginx of `workers` workers running `conf` (a format string of the
    keys CONF uses) with `app` as app.lua; test_resty_lock.py gives its own."""

    def __init__(self, tmp: Path, nodes_file: Path, workers: int, tls_dir: Path = None,
                 app: str = APP, conf: str = CONF):
        env = os.environ
        self.tmp = tmp
        self.timeouts_expected = False
        self.expected = []  # what error lines are expected to hold (a lock lost on purpose)
        self.tls_failures_expected = False
        self.port = free_port()
        (tmp / "app.lua").write_text(app)
        (tmp / "nginx.conf").write_text(conf.format(
            ndk=env["REDLOCK_NGINX_NDK_MODULE"], lua=env["REDLOCK_NGINX_LUA_MODULE"],
            user="user root;" if os.getuid() == 0 else "", workers=workers, tmp=tmp,
            module=env["REDLOCK_LUA_DIR"], nodes=nodes_file, port=self.port,
            kept_lease=KEPT_LEASE_MS, tls_dir=tls_dir or "",
            # What the README tells OpenResty users to write: nginx's trust.
            tls_trust=(f"lua_ssl_trusted_certificate {tls_dir}/certs/ca.crt; "
                       "lua_ssl_verify_depth 2;") if tls_dir else ""))
        self.process = subprocess.Popen(
            [env["REDLOCK_NGINX"], "-p", str(tmp), "-c", str(tmp / "nginx.conf"), "-e",
             str(tmp / "error.log"), "-g", "daemon off;"])
        deadline = time.monotonic() + 10
        while True:
            try:
                self.get("/ping")
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("nginx did not start: " + self.errors())
                time.sleep(0.02)

    def connection(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def get(self, path, conn=None):
        c = conn or self.connection()
        c.request("GET", path)
        r = c.getresponse()
        body = r.read().decode()
        if conn is None:
            c.close()
        return r.status, body, r

    def workers(self):
        out = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True,
                             text=True).stdout.split()
        return [int(pid) for pid in out]

    def log(self):
        log = self.tmp / "error.log"
        return log.read_text() if log.exists() else ""

    def errors(self):
        """The log's errors, but for the read timeouts of stopped nodes and
        the TLS failures a test causes (nginx logs each one)."""
        log = self.tmp / "error.log"
        lines = log.read_text().splitlines() if log.exists() else []
        tls = ("lua ssl certificate", "SSL_do_handshake() failed", "peer closed connection in SSL")
        return "\n".join(line for line in lines
                         if any(f"[{lvl}]" in line for lvl in ("error", "alert", "crit", "emerg"))
                         and not (self.timeouts_expected and "lua tcp socket read timed out" in line)
                         and not any(expected in line for expected in self.expected)
                         and not (self.tls_failures_expected and any(t in line for t in tls)))

    def stop(self):
        self.process.send_signal(signal.SIGQUIT)
        self.process.wait(timeout=20)


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    path = tmp_path_factory.mktemp("nodes")
    subprocess.run([str(NODES_SCRIPT), "start", str(path), "5"], check=True,
                   stdout=subprocess.DEVNULL)
    yield path
    subprocess.run([str(NODES_SCRIPT), "stop", str(path)], check=True)


@pytest.fixture
def nginx_factory(tmp_path, nodes):
    if not all(os.environ.get(v) for v in ("REDLOCK_NGINX", "REDLOCK_NGINX_NDK_MODULE",
                                          "REDLOCK_NGINX_LUA_MODULE", "REDLOCK_LUA_DIR")):
        pytest.skip("nginx with the lua module was not found by CMake")
    started = []

    def start(workers=1, tls_dir=None, **kwargs):
        n = Nginx(tmp_path / f"nginx{len(started)}", nodes / "uris", workers, tls_dir, **kwargs)
        started.append(n)
        return n

    for d in ("nginx0", "nginx1"):
        (tmp_path / d).mkdir()
    yield start
    for n in started:
        n.stop()
        assert n.errors() == "", n.errors()


@contextmanager
def paused(nodes, which):
    pids = [int((nodes / str(i) / "pid").read_text()) for i in which]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def test_a_worker_keeps_serving_while_a_lock_call_waits_on_stopped_nodes(nginx_factory, nodes):
    nginx = nginx_factory(workers=1)
    nginx.timeouts_expected = True
    assert nginx.get("/work?name=warm")[0] == 200
    latencies = []
    result = {}

    def waiter():
        started = time.monotonic()
        result["status"], result["body"], _ = nginx.get("/work?name=slow&wait=2000&pause=0")
        result["took"] = time.monotonic() - started

    with paused(nodes, [1, 2, 3]):
        thread = threading.Thread(target=waiter)
        thread.start()
        conn = nginx.connection()
        while thread.is_alive():
            started = time.monotonic()
            status, body, _ = nginx.get("/ping", conn)
            latencies.append(time.monotonic() - started)
            assert status == 200 and body == "pong\n"
            time.sleep(0.005)
        thread.join()
    assert result["status"] == 409 and "noquorum" in result["body"], result
    assert result["took"] >= 1.9, result
    assert len(latencies) > 100
    # With the blocking driver a ping waited for the lock call, up to the
    # node timeout (500 ms) at each attempt; over cosockets the worker is
    # never held for the call (a ping's worst is the machine's scheduling:
    # tens of ms on a busy one).
    assert max(latencies) < 0.250, sorted(latencies)[-5:]


def test_two_hundred_concurrent_requests_never_see_two_holders(nginx_factory):
    nginx = nginx_factory(workers=2)
    with ThreadPoolExecutor(max_workers=200) as pool:
        answers = list(pool.map(lambda _: nginx.get("/work?name=contended"), range(200)))
    statuses = [status for status, _, _ in answers]
    assert statuses == [200] * 200, [body for status, body, _ in answers if status != 200][:3]
    done, overlaps, _ = nginx.get("/stats")[1].split()
    assert int(done) == 200 and int(overlaps) == 0


def test_no_growth_of_cosockets_or_memory_over_ten_thousand_requests(nginx_factory):
    nginx = nginx_factory(workers=1)
    worker = nginx.workers()[0]
    conn = nginx.connection()

    def run(n):
        for _ in range(n):
            status, body, _ = nginx.get("/work?name=steady&pause=0", conn)
            assert status == 200, body

    def fds():
        return len(os.listdir(f"/proc/{worker}/fd"))

    def rss_kb():
        for line in Path(f"/proc/{worker}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    run(2000)
    fds0, rss0, lua0 = fds(), rss_kb(), int(nginx.get("/stats", conn)[1].split()[2])
    run(10000)
    fds1, rss1, lua1 = fds(), rss_kb(), int(nginx.get("/stats", conn)[1].split()[2])
    assert fds1 <= fds0 + 2, (fds0, fds1)
    assert rss1 - rss0 < 2048, (rss0, rss1)
    assert lua1 - lua0 < 512, (lua0, lua1)


def answer(nginx_factory, path):
    """The lines a location answers (status 200), from a new nginx of one worker."""
    nginx = nginx_factory(workers=1)
    status, body, _ = nginx.get(path)
    assert status == 200, body
    return body.splitlines()


def test_an_error_is_a_string_that_starts_with_its_code(nginx_factory):
    failed, outcome = answer(nginx_factory, "/refused")
    assert failed.startswith("failed: locked: the resource is held by someone else (lock '"), \
        failed
    assert "nodes agreed" in failed, failed
    assert outcome == "nil locked"


def test_a_location_takes_read_and_write_locks(nginx_factory):
    assert answer(nginx_factory, "/rw") == [
        "readers true true; writer nil locked",
        "writer true; reader nil locked; downgrade true; joined true"]


def test_a_location_takes_permits_of_a_semaphore(nginx_factory):
    assert answer(nginx_factory, "/sem") == [
        "available 2; taken true true; third nil locked; available 0",
        "three permits nil inval",
        "released: available 1; taken true; its own id true",
        "waiter true after the release true",
        "with_permit 1; available 2",
        "kept lost false valid true; rival nil locked",
        "released 1",
    ]


def test_a_location_takes_fair_locks(nginx_factory):
    assert answer(nginx_factory, "/fair") == [
        "fair true fence nil; plain nil locked; fair nil locked; locked true",
        "plain held: fair nil locked",
        "with_lock fair nil; read true nil; locked false",
        "kept lost false valid true; rival nil locked",
        "released false",
    ]


def test_a_location_takes_a_multi_lock(nginx_factory):
    lines = answer(nginx_factory, "/multi")
    assert lines[0].startswith("held ") and len(lines[0]) == 5 + 32
    assert lines[1] == "m2 alone: nil locked"
    assert lines[2] == "validity true"
    assert lines[3] == "m2 after: true"


def test_a_location_asks_the_nodes_and_forces_a_lock_open(nginx_factory):
    assert answer(nginx_factory, "/inspect") == ["locked true true", "forced true false -2", "holder nil notheld"]


def test_the_rules_hold_inside_nginx_as_in_every_language(nginx_factory):
    # The lines tests/cross/test_parity.py expects of every language.
    assert answer(nginx_factory, "/rules?run=1") == [
        "reentry-kept again=yes holds=2 ttl_kept=yes held=yes lost=no unlock=ok,ok",
        "kept-lease held=yes lost=no unlock=ok",
        "reentry-lease again=yes holds=2 ttl_first=yes lost=yes unlock=ok,notheld",
        "afresh lost=yes again=ok holds=1 lost=no unlock=ok",
        "wait try=locked once=yes lock=ok waited=yes",
        "multi free=yes locked=yes longest=yes",
        "closed released=yes get=closed try=closed unlock=closed",
    ]


def test_a_location_gets_fences_that_grow(nginx_factory):
    assert answer(nginx_factory, "/fence") == ["fences true 1"]


def test_a_phase_without_cosockets_gets_an_error_that_says_so(nginx_factory):
    nginx = nginx_factory(workers=1)
    status, body, response = nginx.get("/filter")
    assert status == 200 and body == "body\n"
    header = response.getheader("X-Lock")
    assert header.startswith("nil unsupported: "), header
    assert "header_filter" in header and "ngx.timer.at" in header, header


def cli(nodes, i, *args):
    uri = (nodes / "uris").read_text().split()[i - 1]
    return subprocess.run(["redis-cli", "-u", uri, *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def script_calls(nodes):
    """EVALSHA calls on all five nodes: the library's extends and releases
    (a single-key acquire is a SET)."""
    total = 0
    for i in range(1, 6):
        for line in cli(nodes, i, "INFO", "commandstats").splitlines():
            if line.startswith("cmdstat_evalsha:"):
                total += int(line.split("calls=")[1].split(",")[0])
    return total


def holders(nodes, name):
    return [i for i in range(1, 6) if cli(nodes, i, "GET", "openresty:" + name) != ""]


def assert_never_extended_after(nodes, name):
    """No extension (no script call) for two renewal periods and more, and no key."""
    time.sleep(0.2)
    calls = script_calls(nodes)
    time.sleep(2 * KEPT_LEASE_MS / 3 / 1000 + 0.3)
    assert script_calls(nodes) == calls
    assert holders(nodes, name) == []


def test_a_kept_lock_is_renewed_past_three_leases_and_never_after_unlock(nginx_factory, nodes):
    nginx = nginx_factory(workers=1)
    hold_ms = int(3.6 * KEPT_LEASE_MS)
    result = {}

    def holder():
        result["status"], result["body"], _ = nginx.get(f"/hold?name=k1&ms={hold_ms}")

    thread = threading.Thread(target=holder)
    thread.start()
    time.sleep(0.05)
    refusals = []
    while thread.is_alive():
        refusals.append(nginx.get("/try?name=k1")[1].strip())
        time.sleep(0.05)
    thread.join()
    assert result["status"] == 200, result
    lease, left, lost, unlocked, err = (result["body"].split() + [""])[:5]
    assert 0 < int(lease) <= KEPT_LEASE_MS, result
    assert int(left) > 0 and lost == "false", result
    assert unlocked == "true", result
    # Refused throughout (the last try may come after the unlock).
    assert len(refusals) >= 3 * KEPT_LEASE_MS / 100, refusals
    assert set(refusals[:-1]) == {"locked"}, refusals
    assert nginx.get("/try?name=k1")[1].startswith("taken"), "free at once after unlock"
    assert_never_extended_after(nodes, "k1")
    assert nginx.get("/lost?name=k1")[1].strip() == "- -"


def test_unlock_waits_for_a_renewal_under_way_and_nothing_follows(nginx_factory, nodes):
    nginx = nginx_factory(workers=1)
    nginx.timeouts_expected = True
    status, body, _ = nginx.get("/keep?name=k2")
    assert status == 200, body
    # The request ended; the lock is renewed by the timer (its extensions
    # show in the nodes' script calls).
    calls = script_calls(nodes)
    time.sleep(1.5 * KEPT_LEASE_MS / 1000)
    assert script_calls(nodes) - calls >= 3 * 3
    _, left, lost = nginx.get("/status?name=k2")[1].split()
    assert int(left) > KEPT_LEASE_MS / 3 and lost == "false"
    # A majority paused for less than the node timeout: the next renewal
    # waits for them, and unlock is called while it does.
    for i in (1, 2, 3):
        assert cli(nodes, i, "CLIENT", "PAUSE", "400", "ALL") == "OK"
    ok, err, busy, took, idle = nginx.get("/release?name=k2&busy=1")[1].split()
    assert busy == "true", "unlock was called while a renewal was under way"
    assert idle == "true" and int(took) >= 20, "it waited for the renewal to end"
    assert ok == "true" and err == "-"
    time.sleep(0.5)
    assert_never_extended_after(nodes, "k2")
    assert nginx.get("/try?name=k2")[1].startswith("taken")
    assert nginx.get("/lost?name=k2")[1].strip() == "- -"


def test_a_kept_lock_lost_to_a_paused_majority_is_told_from_the_timer_in_time(nginx_factory,
                                                                               nodes):
    nginx = nginx_factory(workers=1)
    nginx.timeouts_expected = True
    nginx.expected.append("redlock: lost resource=k3 ")
    pause_ms = 2500
    status, body, _ = nginx.get("/keep?name=k3")
    assert status == 200, body
    time.sleep(KEPT_LEASE_MS / 2 / 1000)
    paused = time.monotonic()
    for i in (1, 2, 3):
        assert cli(nodes, i, "CLIENT", "PAUSE", str(pause_ms), "ALL") == "OK"
    # Another client tries without waiting until it takes the lock.
    rival = {}

    def rival_loop():
        while time.monotonic() - paused < pause_ms / 1000 + 3:
            if nginx.get("/try?name=k3")[1].startswith("taken"):
                rival["taken"] = True
                return
            time.sleep(0.02)

    thread = threading.Thread(target=rival_loop)
    thread.start()
    # Its validity once the pause holds (no extension can succeed now): the
    # lock is looked at for 200 ms only, so that only the timer can find the
    # loss when validity runs out.
    conn = nginx.connection()
    time.sleep(0.05)
    expiries = []
    while time.monotonic() - paused < 0.25:
        now, left, lost = nginx.get("/status?name=k3", conn)[1].split()
        assert int(left) > 0 and lost == "false"
        expiries.append(int(now) + int(left))
        time.sleep(0.01)
    expiry = expiries[-1]
    assert len(expiries) >= 5 and expiry - min(expiries) <= 2, expiries
    while nginx.get("/lost?name=k3", conn)[1].startswith("-"):
        assert time.monotonic() - paused < pause_ms / 1000, "told while the pause lasts"
        time.sleep(0.005)
    lost_at, how = nginx.get("/lost?name=k3", conn)[1].split(" ", 1)
    thread.join()
    assert how.strip() == "expired timer true", how
    # Told from the timer when validity reached 0, not before, not later
    # than 100 ms after.
    assert expiry - 5 <= int(lost_at) <= expiry + 100, (int(lost_at) - expiry)
    now, left, lost = nginx.get("/status?name=k3", conn)[1].split()
    assert int(left) <= 0 and lost == "true"
    # Before anyone else could take it.
    assert rival.get("taken"), "the rival never took it"
    status, taken_at, _ = nginx.get("/try?name=k3", conn)
    assert int(lost_at) < int(taken_at.split()[1])
    ok, err, *_ = nginx.get("/release?name=k3", conn)[1].split()
    assert (ok, err) == ("nil", "notheld")


def test_a_kept_lock_whose_keys_are_gone_is_lost_at_the_next_renewal(nginx_factory, nodes):
    nginx = nginx_factory(workers=1)
    nginx.expected.append("redlock: lost resource=k4 ")
    status, body, _ = nginx.get("/keep?name=k4")
    assert status == 200, body
    for i in range(1, 6):
        cli(nodes, i, "DEL", "openresty:k4")
    deleted = time.monotonic()
    while nginx.get("/lost?name=k4")[1].startswith("-"):
        assert time.monotonic() - deleted < KEPT_LEASE_MS / 1000, "lost within a lease"
        time.sleep(0.01)
    lost_at, how = nginx.get("/lost?name=k4")[1].split(" ", 1)
    assert how.strip() == "notheld timer true", how
    _, left, lost = nginx.get("/status?name=k4")[1].split()
    assert int(left) <= 0 and lost == "true"
    ok, err, *_ = nginx.get("/release?name=k4")[1].split()
    assert (ok, err) == ("nil", "notheld")


def test_events_go_to_a_log_function_and_health_and_ping_work(nginx_factory):
    nginx = nginx_factory(workers=1)
    status, body, _ = nginx.get("/events")
    assert status == 200, body
    summary, *events = body.splitlines()
    answered, count, state, commands = summary.split()
    assert (answered, count, state) == ("5", "5", "up") and int(commands) >= 1, summary
    names = [line.split()[1] for line in events]
    assert names[:2] == ["acquired", "released"], events
    assert events[0].startswith("debug acquired op=lock resource=evented owner="), events
    assert not re.search(r"[0-9a-f]{32}", body), body


def test_events_go_to_the_error_log_from_its_level(nginx_factory):
    nginx = nginx_factory(workers=1)
    port = free_port()
    nginx.expected.append("connect() failed (111: Connection refused)")   # the lua module's
    status, body, _ = nginx.get(f"/down?port={port}")
    assert (status, body.strip()) == (200, "down"), body
    log = nginx.log()
    assert re.search(rf"\[warn\].*redlock: node_down node=127\.0\.0\.1:{port} was=unknown", log), log
    assert "redlock: acquired" not in log   # debug: below the error_log's warn


def subscriber_connections(nodes):
    """Subscriber connections on each node: those whose last command was
    SUBSCRIBE or UNSUBSCRIBE (lock connections run SET, EVALSHA, INFO)."""
    return [sum(" cmd=subscribe " in line or " cmd=unsubscribe " in line
                for line in cli(nodes, i, "CLIENT", "LIST").splitlines()) for i in range(1, 6)]


def eventually(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_a_waiting_request_is_woken_by_the_release_not_by_its_timed_retry(nginx_factory):
    nginx = nginx_factory(workers=1)
    holder = {}

    def hold():
        holder["status"], holder["body"], _ = nginx.get("/hold_then_release?name=handoff&ms=800")

    thread = threading.Thread(target=hold)
    thread.start()
    time.sleep(0.2)
    # Its first attempt finds the lock held, and its next is 5 s away.
    status, body, _ = nginx.get("/wait_for_release?name=handoff")
    thread.join()
    assert holder["status"] == 200, holder
    assert status == 200, body
    assert int(body) < 1000, f"taken {body} ms after the release: not woken by it"


def test_waits_leave_no_subscriber_timer_or_socket_behind(nginx_factory, nodes):
    nginx = nginx_factory(workers=1)
    worker = nginx.workers()[0]

    def contend():
        with ThreadPoolExecutor(max_workers=20) as pool:
            answers = list(pool.map(lambda _: nginx.get("/work?name=waited&pause=0.01"),
                                    range(100)))
        assert [status for status, _, _ in answers] == [200] * 100, answers[:3]
        # The requests waited for each other: the worker subscribed, and its
        # subscribers linger (2 s) after the last wait, then go with their timer.
        assert subscriber_connections(nodes) == [1] * 5
        assert eventually(lambda: subscriber_connections(nodes) == [0] * 5)
        assert eventually(lambda: nginx.get("/timers")[1].split() == ["0", "0"])

    def fds():
        return len(os.listdir(f"/proc/{worker}/fd"))

    contend()
    fds0 = fds()
    for _ in range(3):
        contend()
    assert fds() <= fds0 + 2, (fds0, fds())
    done, overlaps, _ = nginx.get("/stats")[1].split()
    assert int(done) == 400 and int(overlaps) == 0


def test_subscribers_lost_are_made_again_after_a_pause(nginx_factory, nodes):
    nginx = nginx_factory(workers=1)
    holder, waiter = {}, {}

    def hold():
        holder["status"], holder["body"], _ = nginx.get("/hold_then_release?name=lost&ms=2500")

    def wait():
        waiter["status"], waiter["body"], _ = nginx.get("/wait_for_release?name=lost")

    threads = [threading.Thread(target=hold), threading.Thread(target=wait)]
    threads[0].start()
    time.sleep(0.2)
    threads[1].start()
    assert eventually(lambda: subscriber_connections(nodes) == [1] * 5)
    for i in range(1, 6):
        cli(nodes, i, "CLIENT", "KILL", "TYPE", "pubsub")
    time.sleep(0.5)
    assert subscriber_connections(nodes) == [0] * 5   # not at once: after 1 s
    assert eventually(lambda: subscriber_connections(nodes) == [1] * 5)
    for thread in threads:
        thread.join()
    assert holder["status"] == 200, holder
    assert waiter["status"] == 200, waiter
    assert int(waiter["body"]) < 1000, f"taken {waiter['body']} ms after the release"


# How many waiters a node queues for the fair lock KEYS[1] (live or not):
# its queue is kept beside the key (the key, a zero byte and "queue"), as the
# counter, then "ticket:id:expiry" for each waiter.
QUEUE_LENGTH = ("local v = redis.call('get', KEYS[1] .. '\\0queue') if not v then return 0 end "
                "local n = 0 for _ in string.gmatch(v, ' %d+:%x+:%d+') do n = n + 1 end "
                "return n")


def queued(nodes, name):
    """How many waiters each node queues for the fair lock of name."""
    return [int(cli(nodes, i, "EVAL", QUEUE_LENGTH, "1", "openresty:" + name))
            for i in range(1, 6)]


def waiter_channels(nodes, name):
    """The fair waiters' own channels of name that each node has subscribers for."""
    return [len(cli(nodes, i, "PUBSUB", "CHANNELS", f"openresty:{name}:waiter:*").split())
            for i in range(1, 6)]


def test_fair_waiters_in_three_requests_get_the_lock_in_the_order_they_came(nginx_factory,
                                                                             nodes):
    """Three requests wait, one after another, for a fair lock another request
    holds; each starts once the one before it is queued on every node. Their
    client's timed retries come after the end of their wait, so only the
    releases let them in: each is woken on its own channel, which the worker
    subscribed to."""
    nginx = nginx_factory(workers=1)
    name = "fair-order"
    assert nginx.get(f"/fair_turns?op=hold&name={name}")[1] == "held\n"
    answers = {}

    def wait(label):
        try:
            answers[label] = nginx.get(f"/fair_turns?op=wait&name={name}")[:2]
        except OSError as e:   # no answer within the connection's timeout
            answers[label] = e

    threads = []
    for i, label in enumerate(("first", "second", "third")):
        threads.append(threading.Thread(target=wait, args=(label,)))
        threads[-1].start()
        assert eventually(lambda: queued(nodes, name) == [i + 1] * 5, timeout=10), \
            queued(nodes, name)
    # Each waiter listens on its own channel, on every node.
    assert eventually(lambda: waiter_channels(nodes, name) == [3] * 5), waiter_channels(nodes, name)
    assert nginx.get(f"/fair_turns?op=release&name={name}")[1] == "released\n"
    for thread in threads:
        thread.join()
    assert answers == {"first": (200, "1\n"), "second": (200, "2\n"), "third": (200, "3\n")}
    assert queued(nodes, name) == [0] * 5
    assert eventually(lambda: waiter_channels(nodes, name) == [0] * 5)


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory):
    """Certificates, and TLS-only nodes: 3 valid (valid.uris), 1 whose
    certificate has expired (expired.uris), 1 requiring client certificates
    (mutual.uris)."""
    path = tmp_path_factory.mktemp("tls")
    certs = path / "certs"
    subprocess.run(["bash", str(ROOT / "tests" / "support" / "tls-certs.sh"), str(certs)],
                   check=True)
    kinds = {"valid": (3, [], {}),
             "expired": (1, [], {"NODES_TLS_CERT": str(certs / "expired.crt")}),
             "mutual": (1, ["--tls-auth-clients"], {})}
    for kind, (n, args, env) in kinds.items():
        subprocess.run([str(NODES_SCRIPT), "start", str(path / kind), str(n), "--tls",
                        str(certs), *args], check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, **env})
        (path / f"{kind}.uris").write_text((path / kind / "uris").read_text())
    yield path
    for kind in kinds:
        subprocess.run([str(NODES_SCRIPT), "stop", str(path / kind)], check=True)


def test_rediss_nodes_over_cosockets_with_nginx_trust(nginx_factory, tls_dir):
    nginx = nginx_factory(workers=1, tls_dir=tls_dir)
    nginx.tls_failures_expected = True
    ports = {kind: [uri.rsplit(":", 1)[1] for uri in (tls_dir / f"{kind}.uris").read_text().split()]
             for kind in ("valid", "expired", "mutual")}

    def attempt(query):
        status, body, _ = nginx.get("/tls?" + query)
        assert status == 200, body
        return body.strip()

    # The certificates are for localhost (and 127.0.0.1, which nginx does not check).
    assert attempt("nodes=valid&name=localhost").startswith("locked ")
    refused = attempt("nodes=valid")
    assert refused.startswith("tls: ") and "tls_server_name" in refused, refused
    # The reason is in the message, or, when lua-nginx-module 0.10.23 takes a
    # handshake done in one step for a success (see redlock.lua), in nginx's log.
    mismatch = attempt("nodes=valid&name=not-this-node.example")
    assert mismatch.startswith("tls: ") and "certificate check failed" in mismatch, mismatch
    assert all(f"127.0.0.1:{port}" in mismatch for port in ports["valid"]), mismatch
    assert "hostname mismatch" in mismatch or \
        'certificate does not match host "not-this-node.example"' in nginx.log(), mismatch
    expired = attempt("nodes=expired&name=localhost")
    assert expired.startswith("tls: ") and "certificate check failed" in expired, expired
    assert f"127.0.0.1:{ports['expired'][0]}" in expired
    assert "certificate has expired" in expired or \
        "(10: certificate has expired)" in nginx.log(), expired
    assert attempt("nodes=valid&name=anything.example&verify=0").startswith("locked ")
    assert attempt("nodes=mutual&name=localhost").startswith("tls: ")
    assert attempt("nodes=mutual&name=localhost&cert=1").startswith("locked ")
    # The pooled TLS connections serve the next request.
    for _ in range(5):
        assert attempt("nodes=valid&name=localhost").startswith("locked ")


def test_thousands_of_kept_locks_are_renewed_in_batches_each_decided_alone(nginx_factory,
                                                                           nodes):
    nginx = nginx_factory(workers=1)
    nginx.expected.append("redlock: lost resource=m8 ")
    n = 2000
    status, body, _ = nginx.get(f"/many?op=keep&n={n}")
    assert status == 200 and body.strip() == f"kept {n}", body
    # Several renewal waves (one about every second, the lease 3 s): none lost.
    time.sleep(4 * MANY_LEASE_MS / 3000)
    assert nginx.get(f"/many?op=lost&n={n}")[1].strip() == "lost"
    # Refused by two nodes of five a lock holds; by three, it is lost, alone.
    for i in (1, 2):
        cli(nodes, i, "DEL", "openresty:m7")
    for i in (1, 2, 3):
        cli(nodes, i, "DEL", "openresty:m8")
    time.sleep(MANY_LEASE_MS / 1000)
    assert nginx.get(f"/many?op=lost&n={n}")[1].strip() == "lost 8"
    assert nginx.get(f"/many?op=release&n={n}")[1].strip() == "failed 1"
    assert "renewal_failed" not in nginx.log()


def test_a_cluster_node_over_cosockets(tmp_path):
    """A Redis Cluster as the one node: locks on each slot's master, a
    multi-lock across slots, kept locks renewed (in batches by slot) past
    several leases, all over cosockets."""
    if not all(os.environ.get(v) for v in ("REDLOCK_NGINX", "REDLOCK_NGINX_NDK_MODULE",
                                          "REDLOCK_NGINX_LUA_MODULE", "REDLOCK_LUA_DIR")):
        pytest.skip("nginx with the lua module was not found by CMake")
    topo = ROOT / "scripts" / "redis-topo.sh"
    cluster = tmp_path / "cluster"
    uri = subprocess.run([str(topo), "cluster", str(cluster), "3", "0"], check=True,
                         stdout=subprocess.PIPE, text=True, timeout=120).stdout.strip()
    (tmp_path / "nginx").mkdir()
    (tmp_path / "uris").write_text(uri + "\n")
    nginx = None
    try:
        nginx = Nginx(tmp_path / "nginx", tmp_path / "uris", 1)
        for i in range(30):
            status, body, _ = nginx.get(f"/work?name=cluster{i}&pause=0")
            assert status == 200, body
        # m1, m2 and m3 hash to three slots (on two masters): the multi-lock
        # is taken, extended and released there one slot's part at a time.
        status, body, _ = nginx.get("/multi")
        assert status == 200, body
        assert body.splitlines()[1:] == ["m2 alone: nil locked", "validity true",
                                         "m2 after: true"]
        assert nginx.get("/many?op=keep&n=300")[1].strip() == "kept 300"
        time.sleep(2 * MANY_LEASE_MS / 1000)
        assert nginx.get("/many?op=lost&n=300")[1].strip() == "lost"
        masters = [line.split()[2] for line in subprocess.run(
            [str(topo), "addrs", str(cluster)], check=True, stdout=subprocess.PIPE,
            text=True).stdout.splitlines()]
        held = sum(int(subprocess.run(["redis-cli", "-p", addr.rsplit(":", 1)[1], "EVAL",
                                       "return #redis.call('keys', 'openresty:m*')", "0"],
                                      check=True, stdout=subprocess.PIPE,
                                      text=True).stdout.strip())
                   for addr in masters)
        assert held == 300
        assert nginx.get("/many?op=release&n=300")[1].strip() == "failed 0"
    finally:
        if nginx:
            nginx.stop()
        subprocess.run([str(topo), "stop", str(cluster)], check=True)
    assert nginx.errors() == "", nginx.errors()
