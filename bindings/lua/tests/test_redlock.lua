-- Tests of the Lua binding against five local Redis nodes.
--     <lua> test_redlock.lua MODULE_DIR REDIS_NODES_SCRIPT
-- MODULE_DIR holds redlock.lua and redlock_core.so built for this interpreter.
local module_dir, nodes_script = arg[1], arg[2]
assert(module_dir and nodes_script, "usage: test_redlock.lua MODULE_DIR REDIS_NODES_SCRIPT")
local here = arg[0]:match("^(.*)/[^/]*$") or "."
package.path = here .. "/?.lua;" .. package.path

local t = require "runner"
t.use_module(module_dir)
local redlock = require "redlock"
local core = require "redlock_core"

local nodes = t.start_nodes(nodes_script, 5)

-- A fresh resource name for each use, so tests do not meet each other's keys.
local counter = 0
local function fresh(prefix)
  counter = counter + 1
  return ("%s-%d-%d"):format(prefix or "res", counter, os.time())
end

local function client(options)
  return assert(redlock.new(nodes.uris, options))
end

-- The library answers once a quorum has: a node that was slow may miss a
-- write, so the keys are checked on a quorum of nodes, not on each one.
local QUORUM = 3

-- How many nodes pass test(i).
local function nodes_where(test)
  local n = 0
  for i = 1, #nodes.uris do
    if test(i) then
      n = n + 1
    end
  end
  return n
end

-- How many nodes hold `value` under `key` (any value when nil).
local function holders(key, value)
  return nodes_where(function(i)
    local got = nodes.get(i, key)
    return got ~= "" and (value == nil or got == value)
  end)
end

-- How many nodes hold `key` shared by readers, `token` among them.
local function readers(key, token)
  return nodes_where(function(i)
    local got = nodes.get(i, key)
    return got:sub(1, 16) == "redlock:readers " and got:find(" " .. token .. ":", 1, true) ~= nil
  end)
end

-- How many nodes keep `key` for more than ms.
local function ttl_over(key, ms)
  return nodes_where(function(i) return nodes.pttl(i, key) > ms end)
end

-- The argument checks, the health's none and the options' defaults: what
-- the binding reads from the C library (test_checks.lua).
require("test_checks")(t, { redlock = redlock, core = core, nodes = nodes, client = client,
                            fresh = fresh, holders = holders, QUORUM = QUORUM })

t.test("lock, token in the keys, unlock", function()
  local c = client()
  local name = fresh()
  local lock = c:get_lock(name)
  t.eq(lock:token(), nil, "token before locking")
  t.eq(lock:validity_ms() <= 0, true, "not valid before locking")
  t.eq(lock:try_lock(0, 10000), true, "try_lock")
  local token = lock:token()
  t.ok(token:match("^%x+$") and #token == 32 and token == token:lower(), "32 lowercase hex")
  local validity = lock:validity_ms()
  t.ok(validity > 0 and validity <= 10000, "validity within the lease, got " .. validity)
  t.ok(holders(name, token) >= 3, "a quorum of nodes holds the token")
  t.ok(ttl_over(name, 5000) >= QUORUM and ttl_over(name, 10000) == 0, "the keys' ttl is the lease")
  t.eq(lock:unlock(), true, "unlock")
  t.ok(lock:validity_ms() <= 0, "not valid after unlock")
  t.eq(lock:token(), nil, "no token after unlock")
  t.ok(holders(name) < QUORUM, "released on a quorum of nodes")
  c:close()
end)

t.test("a second client is refused with nil, 'locked'", function()
  local c1, c2 = client(), client()
  local name = fresh()
  local mine = c1:get_lock(name)
  assert(mine:try_lock(0, 10000))
  local theirs = c2:get_lock(name)
  local err = t.fails("locked", theirs:try_lock(0, 10000))
  t.eq(type(err), "string", "a string, as in every cosocket library")
  t.eq(err:sub(1, 8), "locked: ", "starting with the code's word")
  t.ok(err:find("held by someone else", 1, true), "message: " .. err)
  t.eq(redlock.ELOCKED, core.REDLOCK_ELOCKED, "the C code, published")
  t.eq("error: " .. err, "error: " .. tostring(err), "concatenation")
  -- The same lock object of the same client is refused too: not reentrant.
  t.fails("locked", c1:get_lock(name):try_lock(0, 1000))
  assert(mine:unlock())
  t.eq(theirs:try_lock(0, 10000), true, "taken once released")
  assert(theirs:unlock())
end)

t.test("waiting: taken once the holder's lease runs out", function()
  local c1, c2 = client(), client({ retry_delay_ms = 50, retry_jitter_ms = 20 })
  local name = fresh()
  assert(c1:get_lock(name):try_lock(0, 400))
  local lock = c2:get_lock(name)
  t.fails("locked", lock:try_lock(0, 5000))
  local started = t.now_ms()
  t.eq(lock:try_lock(5000, 5000), true, "try_lock with a wait")
  local waited = t.now_ms() - started
  t.ok(waited < 4000, "waited about the rest of the lease, not the whole wait: " .. waited)
  assert(lock:unlock())
end)

t.test("expiry: the lease runs out, extend and unlock say notheld", function()
  local c = client()
  local name = fresh()
  local lock = c:get_lock(name)
  assert(lock:try_lock(0, 200))
  t.sleep_ms(400)
  t.ok(lock:validity_ms() <= 0, "validity after the lease")
  t.eq(holders(name), 0, "the keys expired on the nodes")
  t.fails("notheld", lock:extend(1000))
  t.fails("notheld", lock:unlock())
  t.fails("notheld", lock:unlock())
  local other = client():get_lock(name)
  t.eq(other:try_lock(0, 1000), true, "someone else takes it")
  assert(other:unlock())
  -- The lock object can be taken again once its old handle has expired.
  t.eq(lock:try_lock(0, 1000), true, "relocked")
  assert(lock:unlock())
end)

t.test("extend renews the lease", function()
  local c = client()
  local name = fresh()
  local lock = c:get_lock(name)
  assert(lock:try_lock(0, 500))
  t.eq(lock:extend(10000), true, "extend")
  t.ok(lock:validity_ms() > 5000, "validity after extend: " .. lock:validity_ms())
  t.ok(ttl_over(name, 5000) >= QUORUM, "the nodes' ttl after extend")
  t.sleep_ms(700)
  t.fails("locked", client():get_lock(name):try_lock(0, 1000))
  t.eq(lock:unlock(), true, "unlock after the first lease")
  t.fails("notheld", lock:extend(1000))
end)

t.test("multi-lock: all resources or none", function()
  local c1, c2 = client(), client()
  local a, b, d = fresh("a"), fresh("b"), fresh("d")
  local multi = c1:get_multi_lock({ a, b })
  t.eq(multi:try_lock(0, 10000), true, "multi try_lock")
  local token = multi:token()
  t.ok(holders(a, token) >= QUORUM and holders(b, token) >= QUORUM, "both keys hold the token")
  t.fails("locked", c2:get_lock(b):try_lock(0, 1000))
  t.fails("locked", c2:get_multi_lock({ d, a }):try_lock(0, 1000))
  t.ok(holders(d) < QUORUM, "the free resource was not left taken")
  t.eq(multi:extend(20000), true, "multi extend")
  t.ok(ttl_over(a, 10000) >= QUORUM and ttl_over(b, 10000) >= QUORUM,
       "extend covers every resource")
  t.eq(multi:unlock(), true, "multi unlock")
  t.ok(holders(a) < QUORUM and holders(b) < QUORUM, "released after unlock")
  local single = c2:get_lock(b)
  t.eq(single:try_lock(0, 1000), true, "free after the multi unlock")
  assert(single:unlock())
end)

t.test("read-write lock: readers together, the writer alone, downgrade, no upgrade", function()
  local c1, c2, c3 = client(), client(), client()
  local name = fresh("rw")
  local r1, r2 = c1:get_read_write_lock(name), c2:get_read_write_lock(name)
  t.eq(r1:read_lock(), r1:read_lock(), "the same read lock on every call")
  t.eq(r1:read_lock():try_lock(0, 10000), true, "first reader")
  t.eq(r2:read_lock():try_lock(0, 10000), true, "second reader beside it")
  t.ok(readers(name, r1:read_lock():token()) >= QUORUM and readers(name, r2:read_lock():token()) >= QUORUM,
       "the key is shared by both")
  local w3 = c3:get_read_write_lock(name)
  t.fails("locked", w3:write_lock():try_lock(0, 1000))
  t.fails("locked", c3:get_lock(name):try_lock(0, 1000))
  t.fails("inval", r1:write_lock():try_lock(0, 1000))   -- no upgrade
  assert(r1:read_lock():unlock())
  t.fails("locked", w3:write_lock():try_lock(0, 1000))    -- the second reader still reads
  assert(r2:read_lock():unlock())
  t.eq(w3:write_lock():try_lock(0, 10000), true, "the writer once both readers left")
  t.fails("locked", r1:read_lock():try_lock(0, 1000))
  t.eq(w3:read_lock():try_lock(0, 10000), true, "its own read lock beside it: a downgrade")
  assert(w3:write_lock():unlock())
  t.ok(readers(name, w3:read_lock():token()) >= QUORUM, "its reader stays")
  t.eq(r1:read_lock():try_lock(0, 10000), true, "readers join after the downgrade")
  assert(r1:read_lock():unlock())
  assert(w3:read_lock():unlock())
  t.ok(holders(name) < QUORUM, "released")
end)

t.test("with_lock returns fn's results and releases", function()
  local c, other = client(), client()
  local name = fresh()
  local seen
  local r1, r2, r3, r4 = c:with_lock(name, 5000, function(x, y)
    seen = { other:get_lock(name):try_lock(0, 1000) }
    return x + y, nil, "three"
  end, 1, 2)
  t.eq(r1, 3, "first result")
  t.eq(r2, nil, "second result")
  t.eq(r3, "three", "third result")
  t.eq(r4, nil, "no fourth result")
  t.eq(seen[1], nil, "refused to others while fn runs")
  t.eq(seen[3], "locked", "others see 'locked'")
  t.ok(holders(name) < QUORUM, "released after fn returned")
  t.eq(select("#", c:with_lock(name, 1000, function() end)), 0, "no results from fn")
end)

t.test("with_lock releases when fn raises, and raises again", function()
  local c = client()
  local name = fresh()
  local ok, err = pcall(c.with_lock, c, name, 5000, function() error("boom") end)
  t.eq(ok, false, "pcall result")
  t.ok(tostring(err):find("boom", 1, true), "the message is fn's: " .. tostring(err))
  t.ok(holders(name) < QUORUM, "released after the error")
  local thrown = { reason = "a table" }
  ok, err = pcall(c.with_lock, c, name, 5000, function() error(thrown) end)
  t.eq(err, thrown, "the very error value")
  local lock = client():get_lock(name)
  t.eq(lock:try_lock(0, 400), true, "free for others")
  -- Held by someone else: with_lock waits until it is acquired.
  local started = t.now_ms()
  local r = c:with_lock(name, 300, function() return t.now_ms() - started end)
  t.ok(r >= 300, "fn ran once the other lease ran out: " .. tostring(r))
  t.fails("notheld", lock:unlock())
end)

t.test("with_lock reports a lock lost before the release", function()
  local c = client()
  t.fails("notheld", c:with_lock(fresh(), 150, function() t.sleep_ms(400); return "done" end))
end)

t.test("a quorum of nodes down: nil, 'noquorum', within the deadlines", function()
  nodes.stop_node(1)
  nodes.stop_node(2)
  local c = client({ node_timeout_ms = 100, connect_timeout_ms = 200 })
  -- Three of five nodes are a quorum still.
  local lock = c:get_lock(fresh())
  t.eq(lock:try_lock(0, 5000), true, "locked on three nodes")
  assert(lock:unlock())
  nodes.stop_node(3)
  local started = t.now_ms()
  local err = t.fails("noquorum", c:get_lock(fresh()):try_lock(0, 5000))
  local took = t.now_ms() - started
  nodes.start_node(1)
  nodes.start_node(2)
  nodes.start_node(3)
  nodes.record()
  t.ok(err:find("127.0.0.1:", 1, true), "names the nodes: " .. err)
  t.ok(took < 2000, "failed within about one deadline, took " .. took .. " ms")
end)

t.test("close: releases what is held; every later call raises", function()
  local c = client()
  local name, kept_name = fresh(), fresh("kept")
  local lock = c:get_lock(name)
  assert(lock:try_lock(0, 10000))
  local kept = c:get_lock(kept_name)
  assert(kept:lock())
  c:close()
  c:close()
  t.eq(holders(name), 0, "released by close")
  t.eq(holders(kept_name), 0, "the kept lock too")
  t.raises("get_lock: the Redlock client is closed", c.get_lock, c, "x")
  t.raises("with_lock: the Redlock client is closed", c.with_lock, c, "x", 100, print)
  t.raises("extend: the Redlock client is closed", lock.extend, lock, 10000)
  t.raises("unlock: the Redlock client is closed", lock.unlock, lock)
  t.raises("unlock: the Redlock client is closed", kept.unlock, kept)
  t.raises("try_lock: the Redlock client is closed", lock.try_lock, lock, 0, 1000)
  t.raises("ping: the Redlock client is closed", c.ping, c)
  -- What is read without the nodes answers from what is left.
  t.eq(lock:validity_ms(), 0, "no validity")
  t.eq(lock:lost(), false, "released in time: not lost")
  t.eq(lock:hold_count(), 0, "no holds")
end)

t.test("garbage collection leaves held locks to expire", function()
  local name = fresh()
  do
    local c = client()
    local lock = c:get_lock(name)
    assert(lock:try_lock(0, 700))
  end
  -- Client and lock are unreachable now: collect them (twice, as finalized
  -- objects go in the cycle after their finalizer ran).
  collectgarbage()
  collectgarbage()
  t.ok(holders(name) >= QUORUM, "the collected lock was not released")
  t.fails("locked", client():get_lock(name):try_lock(0, 1000))
  t.sleep_ms(900)
  t.eq(holders(name), 0, "expired at the end of its lease")
  -- Many clients and locks collected in any order do not crash.
  for _ = 1, 20 do
    local c = client()
    for _ = 1, 3 do
      local l = c:get_lock(fresh())
      assert(l:try_lock(0, 1000))
    end
    c:close()
  end
  collectgarbage()
  collectgarbage()
end)

-- Node i refuses writes with an OOM error (maxmemory 1, noeviction), or not.
local function refuse_writes(refuse, ...)
  for _, i in ipairs({ ... }) do
    t.eq(nodes.cli(i, "CONFIG", "SET", "maxmemory-policy", "noeviction"), "OK", "policy")
    t.eq(nodes.cli(i, "CONFIG", "SET", "maxmemory", refuse and "1" or "0"), "OK", "maxmemory")
  end
end

t.test("a wait is one C call: Redis errors on a majority are retried while it lasts", function()
  local c = client({ retry_delay_ms = 50, retry_jitter_ms = 20 })
  local lock = c:get_lock(fresh())
  refuse_writes(true, 1, 2, 3)
  local ok, problem = pcall(function()
    local err = t.fails("redis", lock:try_lock(0, 5000))
    t.ok(err:find("OOM", 1, true), "names the error: " .. err)
    -- The library tries again until the wait is over, then reports the error.
    local started = t.now_ms()
    t.fails("redis", lock:try_lock(400, 5000))
    local waited = t.now_ms() - started
    t.ok(waited >= 350, "did not end early: " .. waited .. " ms")
    -- Errors that clear while the wait lasts: acquired.
    for i = 1, 3 do
      nodes.cli_later(500, i, "CONFIG", "SET", "maxmemory", "0")
    end
    started = t.now_ms()
    t.eq(lock:try_lock(10000, 5000), true, "acquired once the nodes accept writes")
    waited = t.now_ms() - started
    t.ok(waited >= 300 and waited < 9000, "waited for the nodes: " .. waited .. " ms")
    assert(lock:unlock())
  end)
  refuse_writes(false, 1, 2, 3)
  assert(ok, problem)
end)

---------------------------------------------------------------------------
-- Kept locks: try_lock with no lease.

local now_ms = core.redlock_now_ms   -- the library's clock

-- Looks at a kept lock (or permit) every fifth of its lease for ms: it must
-- stay valid and not lost; also(), if given, runs at each look. How many
-- looks there were.
local function kept_throughout(lock, lease, ms, also)
  local until_ms, checks = now_ms() + ms, 0
  while now_ms() < until_ms do
    t.sleep_ms(math.floor(lease / 5))
    t.ok(lock:validity_ms() > 0, "validity stays above 0")
    t.eq(lock:lost(), false, "not lost")
    if also then
      also()
    end
    checks = checks + 1
  end
  return checks
end

-- EVALSHA calls on every node: the library's extends and releases (a
-- single-key acquire is a SET; a refused one is followed by releases too).
local function script_calls()
  local total = 0
  for i = 1, #nodes.uris do
    total = total + nodes.calls(i, "evalsha")
  end
  return total
end

t.test("kept: held past three leases, free at once after unlock, never extended after", function()
  local LEASE = 750
  local c, rival = client({ watchdog_lease_ms = LEASE }), client()
  t.eq(c:get_option("watchdog_lease_ms"), "750", "the option")
  local name = fresh("kept")
  local lock = c:get_lock(name)
  local told = 0
  lock:on_lost(function() told = told + 1 end)
  t.eq(lock:try_lock(0), true, "try_lock with no lease")
  local validity = lock:validity_ms()
  t.ok(validity > 0 and validity <= LEASE, "the lease is watchdog_lease_ms: " .. validity)
  t.ok(ttl_over(name, 0) >= QUORUM and ttl_over(name, LEASE) == 0, "the keys' ttl is the lease")
  local checks = kept_throughout(lock, LEASE, 3 * LEASE + math.floor(LEASE / 2), function()
    t.fails("locked", rival:get_lock(name):try_lock(0, 1000))
  end)
  t.ok(checks >= 10, "checked throughout: " .. checks)
  t.ok(ttl_over(name, math.floor(LEASE / 3)) >= QUORUM, "the keys' ttl renewed on a quorum")
  -- The renewals show in the nodes' script calls.
  local calls = script_calls()
  t.sleep_ms(LEASE)
  t.ok(script_calls() - calls >= 2 * QUORUM, "renewals seen in the script calls")
  t.eq(lock:unlock(), true, "unlock")
  t.eq(lock:lost(), false, "an unlocked lock is not lost")
  local theirs = rival:get_lock(name)
  t.eq(theirs:try_lock(0, 1000), true, "another client gets it at once")
  assert(theirs:unlock())
  -- Nothing extends it after the unlock: no script call, no key, for more
  -- than two renewal periods.
  t.sleep_ms(100)
  local after = script_calls()
  t.sleep_ms(LEASE)
  t.eq(script_calls(), after, "script calls after unlock")
  t.eq(holders(name), 0, "no key came back")
  t.eq(told, 0, "no loss told")
end)

t.test("an explicit lease is not renewed", function()
  local c = client({ watchdog_lease_ms = 600 })
  local name = fresh("leased")
  local lock = c:get_lock(name)
  local told = false
  lock:on_lost(function() told = true end)
  t.eq(lock:try_lock(0, 500), true, "try_lock with a lease")
  t.eq(lock:lost(), false, "not lost")
  t.sleep_ms(700)
  t.ok(lock:validity_ms() <= 0, "validity ran out: " .. lock:validity_ms())
  t.eq(lock:lost(), true, "lost: its keys can have expired while held")
  t.eq(told, false, "no callback: no renewal failed")
  t.eq(holders(name), 0, "the keys expired")
  local other = client():get_lock(name)
  t.eq(other:try_lock(0, 1000), true, "free for others")
  assert(other:unlock())
end)

t.test("kept: a majority paused, lost when validity runs out, told on the next call", function()
  local LEASE, PAUSE = 800, 2500
  local c = client({ watchdog_lease_ms = LEASE, retry_delay_ms = 50, retry_jitter_ms = 20 })
  local name = fresh("kept-paused")
  local lock = c:get_lock(name)
  local calls = {}
  lock:on_lost(function(l, err, code)
    calls[#calls + 1] = { lock = l, err = err, code = code, at = now_ms() }
  end)
  assert(lock:try_lock(0))
  t.sleep_ms(math.floor(LEASE / 2))   -- one renewal done
  local paused_at = now_ms()
  for i = 1, 3 do
    nodes.pause(i, PAUSE)
  end
  local expiry, lost_at, polls = nil, nil, 0
  while not lost_at do
    local now = now_ms()
    t.ok(now - paused_at < PAUSE - 200, "lost before the pause ends")
    local left = lock:validity_ms()
    if lock:lost() then
      lost_at = now_ms()
    else
      t.eq(#calls, 0, "no callback while not lost")
      t.ok(left > 0, "validity left while not lost: " .. left)
      expiry = now + left
      polls = polls + 1
      t.sleep_ms(10)
    end
  end
  t.ok(expiry and polls >= 5, "held for a while once paused: " .. polls .. " polls")
  t.ok(lost_at >= expiry - 5, ("not lost before validity ran out (%d ms early)"):format(
    expiry - lost_at))
  t.ok(lost_at <= expiry + 100, ("lost within 100 ms of validity reaching 0 (%d ms after)"):format(
    lost_at - expiry))
  t.ok(lost_at - paused_at <= LEASE + 100, "lost within a lease of the pause")
  t.eq(#calls, 1, "the callback ran once")
  t.ok(calls[1].at <= lost_at, "on the call that saw the loss")
  t.eq(calls[1].lock, lock, "the callback's lock")
  t.eq(calls[1].err:match("^(%l+): "), "expired", "the callback's error")
  t.eq(calls[1].code, "expired", "the callback's code")
  t.ok(calls[1].err:find("validity ran out", 1, true), "message: " .. calls[1].err)
  t.ok(lock:validity_ms() <= 0, "no validity once lost")
  local err = t.fails("notheld", lock:extend(1000))
  err = t.fails("notheld", lock:unlock())
  t.ok(err:find("lost", 1, true), "unlock's message: " .. err)
  t.eq(lock:lost(), true, "still lost after unlock")
  t.eq(#calls, 1, "told once")
  -- Once the pause is over the lock is free for others.
  t.sleep_ms(math.max(0, paused_at + PAUSE - now_ms()) + 50)
  local other = client():get_lock(name)
  t.eq(other:try_lock(2000, 1000), true, "free once the nodes answer")
  assert(other:unlock())
end)

t.test("kept: its keys deleted, lost at the next renewal with 'notheld'", function()
  local LEASE = 900
  local c = client({ watchdog_lease_ms = LEASE })
  local name = fresh("kept-deleted")
  local lock = c:get_lock(name)
  local seen
  lock:on_lost(function(_, err) seen = err end)
  assert(lock:try_lock(0))
  for i = 1, #nodes.uris do
    nodes.cli(i, "DEL", name)
  end
  local deadline = now_ms() + LEASE
  while not lock:lost() do
    t.ok(now_ms() < deadline, "lost within a lease")
    t.sleep_ms(20)
  end
  t.ok(seen, "the callback ran")
  t.eq(seen:match("^(%l+): "), "notheld", "the callback's error")
  t.ok(lock:validity_ms() <= 0, "no validity once lost")
  t.fails("notheld", lock:unlock())
  -- The lock object can be taken again, and kept again.
  local told = seen
  t.eq(lock:try_lock(0), true, "taken again")
  t.eq(lock:lost(), false, "not lost once taken again")
  t.eq(seen, told, "no new callback")
  assert(lock:unlock())
end)

t.test("with_lock with no lease keeps the lock while fn runs", function()
  local LEASE = 600
  local c, rival = client({ watchdog_lease_ms = LEASE }), client()
  local name = fresh("kept-with")
  local refused = {}
  local r = c:with_lock(name, nil, function(x)
    for _ = 1, 3 do
      t.sleep_ms(math.floor(LEASE / 2))
      refused[#refused + 1] = select(2, rival:get_lock(name):try_lock(0, 1000))
    end
    return x * 2
  end, 21)
  t.eq(r, 42, "fn's result: the lock was not lost")
  t.eq(#refused, 3, "checks")
  for _, err in ipairs(refused) do
    t.eq(err and err:match("^(%l+): "), "locked", "refused to others while fn ran, past its lease")
  end
  t.ok(holders(name) < QUORUM, "released after fn returned")
end)

t.test("kept: a lock collected while kept is no longer renewed", function()
  local LEASE = 600
  local name = fresh("kept-collected")
  do
    local c = client({ watchdog_lease_ms = LEASE })
    local lock = c:get_lock(name)
    assert(lock:try_lock(0))
  end
  collectgarbage()
  collectgarbage()
  local other = client({ retry_delay_ms = 50, retry_jitter_ms = 20 }):get_lock(name)
  t.fails("locked", other:try_lock(0, 1000))
  local started = now_ms()
  t.eq(other:try_lock(2 * LEASE, 1000), true, "taken once its lease ran out")
  t.ok(now_ms() - started < LEASE + 300, "within about a lease")
  assert(other:unlock())
end)

t.test("is_locked and remain_time_to_live ask the nodes about any holder", function()
  local name = fresh("inspect")
  local mine, theirs = client():get_lock(name), client():get_lock(name)
  t.eq(theirs:is_locked(), false, "free")
  t.eq(theirs:remain_time_to_live(), -2, "no time left when free")
  assert(mine:try_lock(0, 10000))
  t.eq(theirs:is_locked(), true, "held by another client")
  local left = theirs:remain_time_to_live()
  t.ok(left > 8000 and left <= 10000, "time left from the nodes: " .. tostring(left))
  t.eq(math.type and math.type(left) or "integer", "integer", "whole milliseconds")
  assert(mine:unlock())
  t.eq(theirs:is_locked(), false, "released")
  -- A foreign key on a minority of the nodes is a failed attempt, not a lock.
  nodes.cli(1, "SET", name, "someone", "PX", "10000")
  nodes.cli(2, "SET", name, "someone", "PX", "10000")
  t.eq(theirs:is_locked(), false, "a minority")
  nodes.cli(3, "SET", name, "someone")
  t.eq(theirs:is_locked(), true, "a quorum")
  t.eq(client():get_multi_lock({ fresh("free"), name }):is_locked(), true, "any resource")
end)

-- The rules every language follows (docs/locks.md).

t.test("rules: reentry of a kept lock with a short lease leaves it on its renewal", function()
  local c = client({ watchdog_lease_ms = 900 })
  local name = fresh("reenter-kept")
  local lock = c:get_lock(name)
  assert(lock:lock())
  t.eq(lock:try_lock(1000, 150), true, "reentry")
  t.eq(lock:hold_count(), 2, "two holds")
  t.eq(ttl_over(name, 150), 5, "the keys' TTL was not cut to the reentry's lease")
  t.sleep_ms(1500)
  t.eq(lock:lost(), false, "still renewed")
  t.ok(lock:validity_ms() > 0, "validity left")
  t.eq(holders(name) >= QUORUM, true, "held on the nodes")
  assert(lock:unlock())
  assert(lock:unlock())
  t.eq(holders(name), 0, "released")
end)

t.test("rules: reentry without a lease leaves a lease unrenewed, then lost", function()
  local c = client({ watchdog_lease_ms = 900 })
  local name = fresh("reenter-lease")
  local lock = c:get_lock(name)
  assert(lock:try_lock(0, 300))
  t.eq(lock:lock(), true, "reentry")
  t.eq(ttl_over(name, 300), 0, "the keys' TTL was not reset")
  t.sleep_ms(450)
  t.eq(lock:lost(), true, "lost once its lease ran out")
  assert(lock:unlock())
  t.fails("notheld", lock:unlock())
  t.eq(lock:lost(), true, "still lost after unlock")
  t.eq(lock:try_lock(0, 5000), true, "taken anew")
  t.eq(lock:lost(), false, "not lost once taken again")
  assert(lock:unlock())
  t.eq(lock:lost(), false, "released in time")
end)

t.test("rules: acquiring again after a loss starts afresh", function()
  local c, other = client(), client()
  local name = fresh("afresh")
  local lock = c:get_lock(name)
  assert(lock:try_lock(0, 300))
  assert(lock:try_lock(0, 300))
  t.sleep_ms(450)
  t.eq(lock:lost(), true, "lost once its lease ran out")
  t.eq(lock:try_lock(), true, "a new acquisition, not a reentry")
  t.eq(lock:hold_count(), 1, "held once: the lost holds are forgotten")
  t.eq(lock:lost(), false, "not lost")
  assert(lock:unlock())
  t.fails("notheld", lock:unlock())
  -- A new attempt that fails leaves the lost hold, and its loss, to tell.
  assert(lock:try_lock(0, 300))
  t.sleep_ms(450)
  local rival = other:get_lock(name)
  assert(rival:try_lock(0, 5000))
  t.fails("locked", lock:try_lock())
  t.eq(lock:lost(), true, "still lost")
  t.fails("notheld", lock:unlock())
  assert(rival:unlock())
end)

t.test("rules: lock() waits until acquired, try_lock() makes one attempt", function()
  local name = fresh("wait")
  local holder = client():get_lock(name)
  assert(holder:try_lock(0, 400))
  local lock = client({ retry_delay_ms = 50, retry_jitter_ms = 20 }):get_lock(name)
  local started = t.now_ms()
  t.fails("locked", lock:try_lock())
  t.ok(t.now_ms() - started < 300, "one attempt")
  t.eq(lock:lock(5000), true, "lock() waited")
  t.ok(t.now_ms() - started >= 300, "until the holder's lease ran out")
  assert(lock:unlock())
end)

t.test("rules: a multi-lock is locked when any resource is, for the longest", function()
  local a, b, c3 = fresh("ma"), fresh("mb"), fresh("mc")
  local multi = client():get_multi_lock({ a, b, c3 })
  t.eq(multi:is_locked(), false, "free")
  t.eq(multi:remain_time_to_live(), -2, "-2 when free")
  local other = client()
  local lb, lc = other:get_lock(b), other:get_lock(c3)
  assert(lb:try_lock(0, 3000))
  t.eq(multi:is_locked(), true, "one resource held")
  local left = multi:remain_time_to_live()
  t.ok(left > 2000 and left <= 3000, "its time: " .. left)
  assert(lc:try_lock(0, 8000))
  left = multi:remain_time_to_live()
  t.ok(left > 7000 and left <= 8000, "the longest: " .. left)
  assert(lb:unlock())
  assert(lc:unlock())
  t.eq(multi:is_locked(), false, "free again")
end)

t.test("force_unlock deletes any holder's lock; bad input is refused", function()
  local name = fresh("force")
  local c = client()
  local holder = c:get_lock(name)
  assert(holder:try_lock(0, 30000))
  t.eq(client():get_lock(name):force_unlock(), true, "deleted")
  t.eq(holder:is_locked(), false, "gone")
  t.fails("notheld", holder:extend(30000))
  t.eq(client():get_lock(name):force_unlock(), false, "nothing left to delete")
  for i = 1, 5 do
    nodes.cli(i, "RPUSH", name .. "-list", "item")
  end
  t.fails("wrongtype", c:get_lock(name .. "-list"):force_unlock())
  t.fails("wrongtype", c:get_lock(name .. "-list"):is_locked())
  t.eq(nodes.cli(1, "TYPE", name .. "-list"), "list", "left alone")
  t.raises("calling 'is_locked' on bad self", holder.is_locked, nil)
  local nowhere = assert(redlock.new({ "unix:///nonexistent/1.sock", "unix:///nonexistent/2.sock",
                                       "unix:///nonexistent/3.sock" }))
  t.fails("noquorum", nowhere:get_lock("x"):remain_time_to_live())
  t.fails("noquorum", nowhere:get_lock("x"):force_unlock())
end)

t.test("fence grows with every holder; per resource for a multi-lock", function()
  local name, other = fresh("fence"), fresh("fence-other")
  local a, b = client({ fencing = 1 }), client({ fencing = 1 })
  local last = 0
  for _, c in ipairs({ a, b, a }) do
    local lock = c:get_lock(name)
    assert(lock:try_lock(0, 10000))
    local fence = lock:fence()
    t.ok(fence > last, "larger than the one before: " .. tostring(fence))
    t.eq(math.type and math.type(fence) or "integer", "integer", "a whole number")
    t.eq(lock:fence(name), fence, "by name")
    last = fence
    assert(lock:unlock())
    t.eq(lock:fence(), nil, "none once released")
  end
  local both = a:get_multi_lock({ other, name })
  assert(both:try_lock(0, 10000))
  t.eq(both:fence(other), 1, "the new resource's first")
  t.eq(both:fence(name), last + 1, "the other resource's next")
  t.eq(both:fence(), 1, "the first resource's without a name")
  t.raises("not a resource of this lock", both.fence, both, "nope")
  assert(both:extend(20000))
  t.eq(both:fence(name), last + 1, "extend does not count")
  assert(both:unlock())
  local plain = client():get_lock(fresh("unfenced"))
  assert(plain:try_lock(0, 10000))
  t.eq(plain:fence(), nil, "nil without fencing")
  assert(plain:unlock())
end)

-- Semaphores: at most P permits of a name held at once.

t.test("semaphore: at most P permits held at once, a release lets another in", function()
  local P = 3
  local name = fresh("sem")
  local sems = {}
  for i = 1, P + 1 do
    sems[i] = client({ retry_delay_ms = 50, retry_jitter_ms = 20 }):get_semaphore(name, P)
  end
  t.eq(sems[1]:available_permits(), P, "all free")
  local permits, ids = {}, {}
  for i = 1, P do
    local permit, err = sems[i]:try_acquire(0, 10000)
    t.ok(permit, "permit " .. i .. ": " .. tostring(err))
    local id = permit:id()
    t.ok(id:match("^%x+$") and #id == 32, "a token for an id: " .. id)
    t.eq(ids[id], nil, "each permit its own id")
    permits[i], ids[id] = permit, true
    t.ok(permit:validity_ms() > 0 and permit:validity_ms() <= 10000, "its validity")
    t.eq(permit:lost(), false, "not lost")
  end
  t.eq(sems[P + 1]:available_permits(), 0, "none free")
  local err = t.fails("locked", sems[P + 1]:try_acquire(0, 10000))
  t.fails("locked", sems[1]:try_acquire(0, 10000))   -- a holder too: each permit is its own
  t.fails("locked", sems[P + 1]:try_acquire(300, 10000))
  -- Not a lock: a lock of the same name is another key.
  local lock = client():get_lock(name)
  t.eq(lock:try_lock(0, 1000), true, "a lock of the same name beside the permits")
  assert(lock:unlock())
  local second = permits[2]:id()
  t.eq(permits[2]:release(), true, "release")
  t.eq(permits[2]:id(), second, "the id stays after the release")
  t.fails("notheld", permits[2]:release())
  t.fails("notheld", permits[2]:extend(1000))
  t.eq(sems[P + 1]:available_permits(), 1, "one free after the release")
  local last = sems[P + 1]:try_acquire(0, 10000)
  t.ok(last, "another client gets the permit released")
  t.eq(sems[P + 1]:available_permits(), 0, "none free again")
  t.fails("locked", sems[2]:try_acquire(0, 1000))
  t.eq(permits[1]:extend(20000), true, "a permit's extend")
  t.ok(permits[1]:validity_ms() > 10000, "its validity after extend")
  t.eq(permits[1]:unlock(), true, "unlock is release")
  t.eq(permits[3]:release(), true, "release")
  t.eq(last:release(), true, "release")
  t.eq(sems[1]:available_permits(), P, "all free once released")
end)

t.test("semaphore: every client gives the same number of permits", function()
  local name = fresh("sem-size")
  local held = assert(client():get_semaphore(name, 3):try_acquire(0, 10000))
  local five = client():get_semaphore(name, 5)
  local err = t.fails("inval", five:try_acquire(0, 1000))
  t.ok(err:find("has 3 permits", 1, true) and err:find("not 5", 1, true),
       "names both numbers: " .. err)
  err = t.fails("inval", five:available_permits())
  t.ok(err:find("has 3 permits", 1, true) and err:find("not 5", 1, true),
       "names both numbers: " .. err)
  assert(held:release())
  -- The release answers once a permit's quorum (4 of 5) let go: no
  -- permit is held once the last node did too.
  local permits_kept = "return redis.call('exists', KEYS[1] .. '\\0permits')"
  local deadline = t.now_ms() + 10000
  while nodes_where(function(i)
    return tonumber(nodes.cli(i, "EVAL", permits_kept, "1", name)) == 1
  end) > 0 do
    t.ok(t.now_ms() < deadline, "every node lets go of the permit")
    t.sleep_ms(10)
  end
  local taken = five:try_acquire(0, 1000)
  t.ok(taken, "another number once no permit is held")
  assert(taken:release())
end)

t.test("semaphore: an expired permit is reclaimed, its stale release frees nothing", function()
  local name = fresh("sem-lease")
  local s1 = client():get_semaphore(name, 1)
  local s2 = client({ retry_delay_ms = 50, retry_jitter_ms = 20 }):get_semaphore(name, 1)
  local brief = assert(s1:try_acquire(0, 1500))
  t.fails("locked", s2:try_acquire(0, 1000))
  local next = s2:acquire(5000)
  t.ok(next, "acquire waited until the permit's lease ran out")
  t.eq(brief:lost(), true, "the first permit's lease had run out")
  t.ok(brief:validity_ms() <= 0, "no validity left")
  t.fails("notheld", brief:extend(1000))
  t.fails("notheld", brief:release())
  t.fails("locked", s1:try_acquire(0, 1000))   -- the stale release did not free the new one
  t.eq(s1:available_permits(), 0, "still taken")
  assert(next:release())
  t.eq(s1:available_permits(), 1, "free")
end)

t.test("semaphore: a kept permit is renewed past its lease until released", function()
  local LEASE = 600
  local c = client({ watchdog_lease_ms = LEASE })
  local name = fresh("sem-kept")
  local sem, rival = c:get_semaphore(name, 1), client():get_semaphore(name, 1)
  local permit = assert(sem:try_acquire(0))
  local told = 0
  t.eq(permit:on_lost(function() told = told + 1 end), true, "on_lost")
  t.ok(permit:validity_ms() <= LEASE, "the lease is watchdog_lease_ms: " .. permit:validity_ms())
  local checks = kept_throughout(permit, LEASE, 3 * LEASE)
  t.ok(checks >= 5, "checked throughout: " .. checks)
  t.fails("locked", rival:try_acquire(0, 1000))
  t.eq(permit:release(), true, "release")
  local theirs = rival:try_acquire(0, 1000)
  t.ok(theirs, "another client gets it at once")
  assert(theirs:release())
  -- acquire() with no lease keeps it too.
  local waited = assert(sem:acquire())
  t.ok(waited:validity_ms() > 0 and waited:validity_ms() <= LEASE, "kept")
  assert(waited:release())
  t.eq(told, 0, "no loss told")
end)

t.test("semaphore: a kept permit lost is told to its on_lost with the permit", function()
  local LEASE, PAUSE = 600, 2000
  local c = client({ watchdog_lease_ms = LEASE })
  local permit = assert(c:get_semaphore(fresh("sem-lost"), 2):try_acquire(0))
  local calls = {}
  permit:on_lost(function(p, err) calls[#calls + 1] = { permit = p, err = err } end)
  local paused_at = now_ms()
  for i = 1, #nodes.uris do
    nodes.pause(i, PAUSE)
  end
  while not permit:lost() do
    t.ok(now_ms() - paused_at < PAUSE, "lost while the nodes are paused")
    t.sleep_ms(20)
  end
  t.eq(#calls, 1, "told once")
  t.eq(calls[1].permit, permit, "the callback's permit")
  t.eq(calls[1].err:match("^(%l+): "), "expired", "the callback's error")
  t.fails("notheld", permit:release())
  t.sleep_ms(math.max(0, paused_at + PAUSE - now_ms()) + 50)
end)

t.test("semaphore: with_permit runs fn under a permit, released after fn and its error", function()
  local name = fresh("sem-with")
  local sem, other = client():get_semaphore(name, 1), client():get_semaphore(name, 1)
  local seen
  local r1, r2, r3 = sem:with_permit(5000, function(x, y)
    seen = { other:try_acquire(0, 1000) }
    seen.available = other:available_permits()
    return x + y, nil, "three"
  end, 1, 2)
  t.eq(r1, 3, "first result")
  t.eq(r2, nil, "second result")
  t.eq(r3, "three", "third result")
  t.eq(seen[1], nil, "refused to others while fn runs")
  t.eq(seen[3], "locked", "others see 'locked'")
  t.eq(seen.available, 0, "none available while fn runs")
  t.eq(other:available_permits(), 1, "released after fn returned")
  local ok, err = pcall(sem.with_permit, sem, 5000, function() error("boom") end)
  t.eq(ok, false, "pcall result")
  t.ok(tostring(err):find("boom", 1, true), "the message is fn's: " .. tostring(err))
  t.eq(other:available_permits(), 1, "released after the error")
  t.eq(sem:with_permit(nil, function() return "kept" end), "kept", "kept while fn runs")
  t.eq(other:available_permits(), 1, "released")
  local permit = assert(other:try_acquire(0, 300))
  t.eq(sem:with_permit(2000, function() return "waited" end), "waited", "waits for a permit")
  t.eq(permit:lost(), true, "the holder's lease had run out")
end)

-- Fair locks: the plain lock of their name, taken in the order the waiters
-- arrived.

-- How many waiters node i queues for the fair lock `key` (live or not): its
-- queue is kept beside the key (the key, a zero byte and "queue"), as the
-- counter, then "ticket:id:expiry" for each waiter.
local QUEUE_LENGTH = "local v = redis.call('get', KEYS[1] .. '\\0queue') if not v then "
  .. "return 0 end local n = 0 for _ in string.gmatch(v, ' %d+:%x+:%d+') do n = n + 1 end "
  .. "return n"
local function queue_length(i, key)
  return tonumber(nodes.cli(i, "EVAL", QUEUE_LENGTH, "1", key))
end

-- Waits (up to 10 s) until every node queues n waiters of the fair lock `key`.
local function wait_queued(key, n)
  local deadline = t.now_ms() + 10000
  while nodes_where(function(i) return queue_length(i, key) == n end) < #nodes.uris do
    t.ok(t.now_ms() < deadline, ("every node queues %d waiters of %s"):format(n, key))
    t.sleep_ms(20)
  end
end

-- The interpreter running these tests (for the waiters' processes).
local interpreter = arg[-1]
for i = -2, -10, -1 do
  interpreter = arg[i] or interpreter
end

t.test("fair lock: the plain lock of its name, each excluding the other", function()
  local c1, c2 = client(), client({ fencing = 1 })
  local name = fresh("fair")
  local fair = c2:get_fair_lock(name)
  t.eq(fair:try_lock(0, 5000), true, "taken")
  t.ok(holders(name, fair:token()) >= QUORUM, "the plain lock's key holds its token")
  t.eq(fair:fence(), nil, "a fair lock has no fence")
  t.fails("locked", c1:get_lock(name):try_lock(0, 1000))
  t.fails("locked", c1:get_fair_lock(name):try_lock(0, 1000))
  t.eq(c1:get_fair_lock(name):is_locked(), true, "locked, asked by another client")
  t.eq(fair:extend(8000), true, "extend")
  t.ok(ttl_over(name, 5000) >= QUORUM, "the keys' ttl is the new lease")
  t.eq(fair:try_lock(0, 1000), true, "reentry")
  t.eq(fair:hold_count(), 2, "two holds")
  t.eq(fair:unlock(), true, "one hold given back")
  t.ok(holders(name, fair:token()) >= QUORUM, "still held")
  t.eq(fair:unlock(), true, "the last hold releases")
  t.ok(holders(name) < QUORUM, "released")
  local plain = c1:get_lock(name)
  t.eq(plain:try_lock(0, 300), true, "a plain lock of the name once free")
  t.fails("locked", fair:try_lock(0, 1000))
  t.eq(fair:try_lock(5000, 5000), true, "a waiting fair lock takes it when the plain one ends")
  t.eq(plain:lost(), true, "the plain lock's lease had run out")
  assert(fair:unlock())
  t.eq(fair:is_locked(), false, "free")
end)

t.test("fair lock: waiters in other processes get it in the order they came", function()
  local name = fresh("fair-order")
  local file = nodes.dir .. "/" .. name
  local holder = client():get_fair_lock(name)
  assert(holder:try_lock(0, 30000))
  local labels = { "first", "second", "third" }
  for i, label in ipairs(labels) do
    -- Each starts once the one before it is queued on every node.
    assert(select(2, t.sh(("(%s %s %s %s %s %s %s) >/dev/null 2>&1 & true"):format(
      t.quote(interpreter), t.quote(here .. "/fair_waiter.lua"), t.quote(module_dir),
      t.quote(table.concat(nodes.uris, ",")), t.quote(name), label, t.quote(file)))))
    wait_queued(name, i)
  end
  t.ok(io.open(file) == nil, "nobody took it while it was held")
  t.eq(holder:unlock(), true, "released")
  local lines, deadline = {}, t.now_ms() + 30000
  while #lines < #labels do
    t.ok(t.now_ms() < deadline, "the waiters got it in time: " .. table.concat(lines, ", "))
    t.sleep_ms(50)
    lines = {}
    local f = io.open(file)
    if f then
      for line in f:lines() do
        lines[#lines + 1] = line
      end
      f:close()
    end
  end
  t.eq(table.concat(lines, ", "), table.concat(labels, ", "), "the order they were served in")
  wait_queued(name, 0)
end)

t.test("fair lock: kept, renewed past its lease until unlocked", function()
  local LEASE = 600
  local c = client({ watchdog_lease_ms = LEASE })
  local name = fresh("fair-kept")
  local fair = c:get_fair_lock(name)
  t.eq(fair:try_lock(0), true, "kept")
  local told = 0
  fair:on_lost(function() told = told + 1 end)
  t.ok(fair:validity_ms() <= LEASE, "the lease is watchdog_lease_ms: " .. fair:validity_ms())
  t.ok(kept_throughout(fair, LEASE, 3 * LEASE) >= 5, "looked at throughout")
  t.fails("locked", client():get_fair_lock(name):try_lock(0, 1000))
  t.fails("locked", client():get_lock(name):try_lock(0, 1000))
  t.eq(fair:unlock(), true, "unlock")
  t.ok(holders(name) < QUORUM, "released")
  t.eq(told, 0, "no loss told")
end)

t.test("with_lock on every kind of lock object, released after fn and after its error", function()
  local c, other = client(), client()
  local name = fresh("with")
  -- The plain lock's object: fn's results; reentry when it holds already.
  local lock = c:get_lock(name)
  local r1, r2, r3 = lock:with_lock(5000, function(x)
    return x * 2, nil, other:get_lock(name):try_lock(0, 1000) == nil
  end, 21)
  t.eq(r1, 42, "first result")
  t.eq(r2, nil, "second result")
  t.eq(r3, true, "refused to others while fn runs")
  t.eq(lock:hold_count(), 0, "released after fn")
  t.eq(lock:is_locked(), false, "free")
  local ok, err = pcall(lock.with_lock, lock, 5000, function() error("boom") end)
  t.eq(ok, false, "pcall result")
  t.ok(tostring(err):find("boom", 1, true), "the message is fn's: " .. tostring(err))
  t.eq(lock:is_locked(), false, "released after the error")
  assert(lock:try_lock(0, 5000))
  t.eq(lock:with_lock(nil, function() return lock:hold_count() end), 2, "a reentry")
  t.eq(lock:hold_count(), 1, "the reentry given back")
  t.eq(lock:is_locked(), true, "still held")
  assert(lock:unlock())
  -- The fair lock, kept (no lease) while fn runs: a plain lock refused.
  local fair = c:get_fair_lock(name)
  local lease = tonumber(c:get_option("watchdog_lease_ms"))
  local valid, refused = fair:with_lock(nil, function()
    return fair:validity_ms(), other:get_lock(name):try_lock(0, 1000) == nil
  end)
  t.ok(valid > 0 and valid <= lease, "kept while fn runs: " .. valid)
  t.eq(refused, true, "a plain lock refused while fn runs")
  t.eq(fair:is_locked(), false, "released")
  t.eq(select(2, pcall(fair.with_lock, fair, 5000, error, "fair boom")), "fair boom",
       "fn's error raised again")
  t.eq(fair:is_locked(), false, "released after the error")
  -- A read lock: another reader beside it, a writer refused.
  local rw = c:get_read_write_lock(name)
  local reader = other:get_read_write_lock(name):read_lock()
  local writer = other:get_read_write_lock(name):write_lock()
  local read, wrote = rw:read_lock():with_lock(5000, function()
    local joined = reader:try_lock(0, 1000)
    reader:unlock()
    return joined, writer:try_lock(0, 1000) == nil
  end)
  t.eq(read, true, "another reader beside it")
  t.eq(wrote, true, "the writer refused while fn runs")
  -- with_lock waits for the lock, as lock:lock() does.
  t.eq(writer:try_lock(0, 300), true, "the writer once fn ended")
  t.eq(rw:write_lock():with_lock(5000, function() return "waited" end), "waited",
       "the write lock's with_lock waited for the writer's lease")
  t.eq(writer:lost(), true, "the writer's lease had run out")
  -- A multi-lock: all its names held while fn runs.
  local b = fresh("with-b")
  local multi = c:get_multi_lock({ name, b })
  t.eq(multi:with_lock(5000, function()
    return other:get_lock(b):try_lock(0, 1000) == nil
  end), true, "each of its names held while fn runs")
  t.eq(multi:is_locked(), false, "released")
  -- A semaphore's permit, with with_permit.
  local sem = c:get_semaphore(name .. "-sem", 1)
  t.eq(sem:with_permit(5000, function()
    return other:get_semaphore(name .. "-sem", 1):try_acquire(0, 1000) == nil
  end), true, "the only permit held while fn runs")
  t.eq(sem:available_permits(), 1, "released")
end)

-- Events: a log function gets every event from the level asked for, on
-- this thread; no message shows a whole token.
local function recorder()
  local seen = {}
  local function log(level, event, message)
    seen[#seen + 1] = { level = level, event = event, message = message }
  end
  local function find(event)
    local found = {}
    for _, e in ipairs(seen) do
      if e.event == event then
        found[#found + 1] = e
      end
    end
    return found
  end
  return seen, log, find
end

t.test("events: a lock cycle goes to the log function", function()
  local seen, log, find = recorder()
  local c = client({ log = log, log_level = "debug" })
  local name = fresh("events")
  local lock = c:get_lock(name)
  assert(lock:try_lock(0, 10000))
  local owner = "owner=" .. lock:token():sub(1, 8)
  assert(lock:extend(10000))
  local other = client():get_lock(name)
  t.eq(other:try_lock(0, 1000), nil, "held")
  assert(lock:unlock())
  c:get_option("pool_size")   -- any call delivers what is queued
  local acquired = find("acquired")
  t.eq(#acquired, 1, "one acquired")
  t.eq(acquired[1].level, "debug", "acquired's level")
  t.ok(acquired[1].message:find("op=lock resource=" .. name .. " " .. owner .. " nodes=", 1, true),
       "acquired: " .. acquired[1].message)
  t.ok(find("extended")[1].message:find(owner, 1, true), "extended")
  t.ok(find("released")[1].message:find(owner, 1, true), "released")
  for _, e in ipairs(seen) do
    t.ok(not e.message:find(("%x"):rep(32)), "no whole token: " .. e.message)
  end
  c:close()
end)

t.test("events: below log_level nothing comes; bad options are refused", function()
  local seen, log = recorder()
  local c = client({ log = log, log_level = "warn" })
  assert(c:with_lock(fresh("quiet"), 10000, function() return true end))
  t.eq(#seen, 0, "no debug events at warn")
  t.raises("option 'log': function expected", redlock.new, nodes.uris, { log = 1 })
  t.raises("option 'log_level'", redlock.new, nodes.uris, { log = log, log_level = "loud" })
  local failing = client({ log = function() error("boom") end, log_level = "debug" })
  assert(failing:with_lock(fresh("boom"), 10000, function() return true end))
end)

t.test("health and ping; a stopped node is down, then back", function()
  local own = t.start_nodes(nodes_script, 3)
  local _, log, find = recorder()
  local c = assert(redlock.new(own.uris, { log = log, log_level = "debug" }))
  local health = c:health()
  t.eq(#health, 3, "a table per node")
  t.eq(health[1].state, "unknown", "not contacted yet")
  t.eq(c:ping(), 3, "every node answers")
  health = c:health()
  for i, node in ipairs(health) do
    t.eq(node.node, own.uris[i]:sub(#"redis://" + 1), "node " .. i)
    t.eq(node.state, "up", "up")
    t.ok(node.rtt_ms and node.rtt_ms >= 0, "a round trip")
    t.eq(node.last_error, nil, "no error")
    t.eq(#node.run_id, 40, "run_id")
    t.ok(node.commands >= 1 and node.failures == 0 and node.timeouts == 0, "counters")
  end
  own.stop_node(1)
  assert(c:with_lock(fresh("down"), 10000, function() return true end))
  local down = c:health()[1]
  t.eq(down.state, "down", "down at once")
  t.ok(down.last_error:find("connect", 1, true), "why: " .. down.last_error)
  t.eq(#find("node_down"), 1, "node_down told")
  t.eq(find("node_down")[1].level, "warn", "node_down's level")
  own.stop_node(2)
  local n, err = c:ping()
  t.eq(n, nil, "no quorum")
  t.eq(err:match("^(%l+): "), "noquorum", err)
  own.start_node(1)
  own.start_node(2)
  t.sleep_ms(1100)   -- the longest pause between connects to a node that failed
  -- Back, but restarted: under the restart guard their answers do not count.
  n, err = c:ping()
  t.eq(n, nil, "two of three are guarded")
  t.ok(err:find("restart_guard", 1, true), err)
  t.eq(c:health()[1].state, "guarded", "guarded")
  t.ok(c:health()[2].guard_ms > 0, "guarded for a while")
  -- Told once for each node that came back (node 3, slow on a loaded
  -- machine, may have been told back too).
  for i = 1, 2 do
    local address, told = own.uris[i]:sub(#"redis://" + 1), 0
    for _, e in ipairs(find("node_back")) do
      told = told + (e.message:find("node=" .. address .. " ", 1, true) and 1 or 0)
    end
    t.eq(told, 1, "node_back told for node " .. i)
  end
  t.eq(#find("node_restarted"), 2, "node_restarted told")
  c:close()
  own.stop()
end)

t.test("rediss:// nodes: TLS, certificate problems are 'tls' errors naming the node", function()
  local certs = nodes.dir .. "/certs"
  assert(select(2, t.sh(("bash %s %s"):format(t.quote(here .. "/../../../tests/support/tls-certs.sh"),
                                             t.quote(certs)))))
  local tls = t.start_nodes(nodes_script, 3, "--tls " .. t.quote(certs))
  local ok, err = pcall(function()
    local function tls_client(options)
      options.connect_timeout_ms, options.node_timeout_ms = 5000, 2000
      return assert(redlock.new(tls.uris, options))
    end
    local c = tls_client({ tls_ca_file = certs .. "/ca.crt" })
    local name = fresh("tls")
    local lock = c:get_lock(name)
    t.eq(lock:try_lock(0, 10000), true, "locked over TLS")
    t.eq(tls.get(1, name), lock:token(), "the key on a TLS node")
    assert(lock:unlock())
    c:close()

    local wrong = tls_client({ tls_ca_file = certs .. "/other-ca.crt" })
    local failure = t.fails("tls", wrong:get_lock(fresh("tls")):try_lock(0, 10000))
    for _, uri in ipairs(tls.uris) do
      t.ok(failure:find(uri:gsub("^rediss://", ""), 1, true), "names " .. uri)
    end
    t.ok(failure:find("TLS certificate check failed", 1, true), failure)
    wrong:close()

    local insecure = tls_client({ tls_ca_file = certs .. "/other-ca.crt", tls_verify = 0 })
    local any = insecure:get_lock(fresh("tls"))
    t.eq(any:try_lock(0, 10000), true, "tls_verify = 0 takes any certificate")
    assert(any:unlock())
    insecure:close()
  end)
  tls.stop()
  assert(ok, err)
end)

t.run(nodes.stop)
