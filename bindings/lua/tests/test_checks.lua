-- Tests of what the Lua binding checks and decodes through the C library:
-- the rules of arguments (one message each, the same in every language),
-- lists of node URIs, the health's "none" as nil, the options and their
-- defaults. Registered by test_redlock.lua, which passes what they share.
local LEASE = "lease must be a time above 0 ms and at most 2147483647 ms, not "
local WAIT = "wait must be a finite time of 0 ms or more, not "
local PERMITS = "permits must be a whole number from 1 to 10000, not "

return function(t, shared)
  local redlock, core, nodes = shared.redlock, shared.core, shared.nodes
  local client, fresh, holders, QUORUM = shared.client, shared.fresh, shared.holders,
                                         shared.QUORUM

  t.test("the same bad input has the same message as in every language", function()
    local c = client()
    local lock = c:get_lock(fresh())
    -- Milliseconds here: the inputs of the other languages' tests.
    for _, case in ipairs({ { 0, -1000, 2, LEASE .. "-1000 ms" }, { 0, 0, 2, LEASE .. "0 ms" },
                            { 0, 2592000000, 2, LEASE .. "2592000000 ms" },
                            { 0, 0 / 0, 2, LEASE .. "NaN" }, { -1000, 100, 1, WAIT .. "-1000 ms" },
                            { 0 / 0, 100, 1, WAIT .. "NaN" } }) do
      local err = t.raises("bad argument", lock.try_lock, lock, case[1], case[2])
      t.ok(err:find(("bad argument #%d to 'try_lock' (%s)"):format(case[3], case[4]), 1, true),
           err)
    end
    t.raises("bad argument #2 to 'get_semaphore' (" .. PERMITS .. "0)", c.get_semaphore, c,
             "x", 0)
    -- A time is rounded up to a whole millisecond; a wait beyond 2^53 is as long as it takes.
    t.eq(lock:try_lock(0.5, 1000.2), true, "taken with a fraction")
    t.ok(lock:validity_ms() <= 1001, "a lease of 1001 ms")
    assert(lock:unlock())
    local rc, ms = core.redlock_arg_check(core.REDLOCK_ARG_LEASE, nil, 1.1 * 1000)
    t.eq(rc, core.REDLOCK_OK, "checked")
    t.eq(ms, 1100, "1.1 s is 1100 ms")
    c:close()
  end)

  t.test("health: no value is nil, every field typed by the library", function()
    local c = assert(redlock.new({ "redis://127.0.0.1:1",
                                   "redis-sentinel://127.0.0.1:1/?sentinelMasterId=m" }))
    local health = c:health()
    local master, group = health[1], health[2]
    t.eq(master.state, "unknown", "not contacted")
    t.eq(master.rtt_ms, nil, "no round trip yet")
    t.eq(master.last_error, nil, "no error")
    t.eq(master.server, "127.0.0.1:1", "a master's server is its address")
    t.eq(group.kind, "sentinel", "a Sentinel group")
    t.eq(group.server, nil, "no master named yet")
    t.eq(type(master.conns), "number", "conns")
    t.eq(type(master.for_ms), "number", "for_ms")
    t.eq(type(master.run_id), "string", "run_id")
    c:close()
  end)

  t.test("options: defaults from the library's table, booleans for 0 or 1", function()
    local defaults = redlock.option_defaults()
    t.eq(defaults.watchdog_lease_ms, "30000", "the lease of a kept lock")
    t.eq(defaults.drift_factor, "0.01", "drift_factor")
    local n = 0
    for _ in pairs(defaults) do
      n = n + 1
    end
    t.eq(n, core.redlock_option_count(), "every option")
    local c = client({ fencing = true, restart_guard = false })
    t.eq(c:get_option("fencing"), "1", "true is 1")
    t.eq(c:get_option("restart_guard"), "0", "false is 0")
    for name, value in pairs(defaults) do
      if name ~= "sentinel_password" and name ~= "fencing" and name ~= "restart_guard" then
        t.eq(c:get_option(name), value, name)   -- a fresh client's
      end
    end
    c:close()
    t.raises("option 'pool_size': string or number expected, got boolean", redlock.new,
             nodes.uris, { pool_size = true })
  end)

  t.test("split_nodes: a comma followed by scheme:// starts the next URI", function()
    local uris = redlock.split_nodes("redis-sentinel://s1,s2:26380?sentinelMasterId=a, "
                                     .. "redis://m1:6379,rediss://m2")
    t.eq(#uris, 3)
    t.eq(uris[1], "redis-sentinel://s1,s2:26380?sentinelMasterId=a")
    t.eq(uris[2], "redis://m1:6379")
    t.eq(uris[3], "rediss://m2")
    t.eq(#redlock.split_nodes(""), 0)
    t.eq(#redlock.split_nodes(" \t"), 0)
    uris = redlock.split_nodes("  redis://a ,\tredis://b  ")
    t.eq(uris[1] .. "|" .. uris[2], "redis://a|redis://b", "without the spaces around them")
    -- An empty URI: the library's message, the same in every language.
    t.raises("bad argument #1 to 'split_nodes' (URI 1 of the list of nodes is empty)",
             redlock.split_nodes, " ,redis://a")
  end)

  t.test("bad arguments raise Lua errors", function()
    local c = client()
    local lock = c:get_lock(fresh())
    t.raises("bad argument #1 to 'new' (table of node URIs expected, got nil)", redlock.new)
    t.raises("bad argument #1 to 'new' (node 2: string expected, got number)",
             redlock.new, { nodes.uris[1], 42 })
    t.raises("bad argument #2 to 'new' (table of options expected, got string)",
             redlock.new, nodes.uris, "key_prefix")
    t.raises("option 'node_timeout_ms': string or number expected, got table",
             redlock.new, nodes.uris, { node_timeout_ms = {} })
    t.raises("bad argument #1 to 'get_lock' (string expected, got nil)", c.get_lock, c)
    t.raises("bad argument #1 to 'get_lock' (resource name is empty)", c.get_lock, c, "")
    t.raises("calling 'get_lock' on bad self", c.get_lock, "name")
    t.raises("bad argument #1 to 'get_multi_lock' (table of names expected, got string)",
             c.get_multi_lock, c, "a")
    t.raises("bad argument #1 to 'get_multi_lock' (no resource names)", c.get_multi_lock, c, {})
    t.raises("name 2: non-empty string expected, got boolean",
             c.get_multi_lock, c, { "a", true })
    t.raises('bad argument #1 to \'get_multi_lock\' (name 3: "a" is listed twice (as name 1))',
             c.get_multi_lock, c, { "a", "b", "a" })
    t.raises("bad argument #1 to 'try_lock' (number expected, got boolean)", lock.try_lock, lock,
             true)
    t.raises("bad argument #1 to 'try_lock' (" .. WAIT .. "-1 ms)", lock.try_lock, lock, -1, 100)
    t.raises("bad argument #2 to 'try_lock' (" .. LEASE .. "-5 ms)", lock.try_lock, lock, 0, -5)
    t.raises("bad argument #2 to 'try_lock' (" .. LEASE .. "0 ms)", lock.try_lock, lock, 0, 0)
    t.raises("bad argument #2 to 'try_lock' (" .. LEASE .. "0 ms)", lock.try_lock, lock, 0, 0.0004)
    t.raises("bad argument #2 to 'try_lock' (" .. LEASE .. "2147483648 ms)",
             lock.try_lock, lock, 0, core.REDLOCK_MAX_TTL_MS + 1)
    t.raises("bad argument #1 to 'try_lock' (" .. WAIT .. "NaN)", lock.try_lock, lock, 0 / 0, 100)
    t.raises("bad argument #2 to 'try_lock' (number expected, got string)", lock.try_lock, lock, 0, "100")
    t.raises("calling 'try_lock' on bad self", lock.try_lock, nil, 0, 100)
    t.raises("bad argument #1 to 'extend' (" .. LEASE .. "-1 ms)", lock.extend, lock, -1)
    t.raises("bad argument #3 to 'with_lock' (function expected, got nil)", c.with_lock, c, "x", 100)
    t.raises("bad argument #2 to 'with_lock' (number expected, got function)",
             c.with_lock, c, "x", function() end)
    -- The position is the caller's.
    local err = t.raises("bad argument", function() lock:try_lock(-1, 100) end)
    t.ok(err:find("test_checks.lua:", 1, true), "error position: " .. err)
    -- Taking a lock twice through one Lock is a reentry: it counts a hold.
    assert(lock:try_lock(0, 5000))
    t.eq(lock:try_lock(0, 5000), true, "reentry")
    t.eq(lock:hold_count(), 2, "two holds")
    assert(lock:unlock())
    assert(lock:unlock())
    t.eq(lock:hold_count(), 0, "released")
    t.raises("bad argument #1 to 'lock'", lock.lock, lock, -5)
    -- The raw module checks too, and never crashes.
    t.raises("bad argument #1 to 'redlock_ctx_new' (item 2 is boolean, string expected)",
             core.redlock_ctx_new, { "redis://127.0.0.1", false })
    t.raises("bad argument #1 to 'redlock_ctx_new' (table expected, got string)",
             core.redlock_ctx_new, "redis://127.0.0.1")
    t.raises("bad argument #3 to 'redlock_lock' (whole number of milliseconds expected)",
             core.redlock_lock, nil, "x", 2 ^ 60, 0)
    t.raises("bad argument #4 to 'redlock_lock' (whole number of milliseconds expected)",
             core.redlock_lock, nil, "x", 1000, 0.5)
    t.eq(core.redlock_lock(nil, "x", 1000, 0), core.REDLOCK_EINVAL, "NULL ctx")
  end)

  t.test("kept: bad arguments", function()
    local c = client()
    local lock = c:get_lock(fresh())
    t.raises("bad argument #1 to 'on_lost' (function or nil expected, got string)",
             lock.on_lost, lock, "f")
    t.raises("calling 'lost' on bad self", lock.lost, nil)
    t.eq(lock:on_lost(nil), true, "nil removes the callback")
    t.eq(lock:lost(), false, "a lock never taken is not lost")
    t.raises("bad argument #1 to 'try_lock' (number expected, got string)",
             lock.try_lock, lock, "0")
    t.eq(c:get_option("watchdog_lease_ms"), "30000", "the default lease of kept locks")
    t.eq(lock:try_lock(), true, "kept with the default lease, no wait")
    t.ok(lock:validity_ms() > 29000, "validity of 30 s")
    assert(lock:unlock())
  end)

  t.test("semaphore: bad input", function()
    local c = client()
    for bad, text in pairs({ [0] = "0", [-1] = "-1", [core.REDLOCK_MAX_PERMITS + 1] = "10001",
                             [1.5] = "1.5", [math.huge] = "infinity" }) do
      t.raises("bad argument #2 to 'get_semaphore' (" .. PERMITS .. text .. ")",
               c.get_semaphore, c, "x", bad)
    end
    t.raises("bad argument #2 to 'get_semaphore' (" .. PERMITS .. "NaN)",
             c.get_semaphore, c, "x", 0 / 0)
    t.raises("bad argument #2 to 'get_semaphore' (number expected, got string)",
             c.get_semaphore, c, "x", "2")
    t.raises("bad argument #2 to 'get_semaphore' (number expected, got nil)", c.get_semaphore, c, "x")
    t.raises("bad argument #1 to 'get_semaphore' (resource name is empty)", c.get_semaphore, c, "", 2)
    t.raises("calling 'get_semaphore' on bad self", c.get_semaphore, "x", 2)
    local err = t.raises("bad argument", function() c:get_semaphore("x", 0) end)
    t.ok(err:find("test_checks.lua:", 1, true), "error position: " .. err)
    t.ok(c:get_semaphore("x", core.REDLOCK_MAX_PERMITS), "the most permits")
    local sem = c:get_semaphore(fresh("sem-bad"), 2)
    t.raises("bad argument #1 to 'try_acquire' (" .. WAIT .. "-1 ms)", sem.try_acquire, sem, -1)
    t.raises("bad argument #2 to 'try_acquire' (" .. LEASE .. "0 ms)", sem.try_acquire, sem, 0, 0)
    t.raises("bad argument #2 to 'try_acquire' (number expected, got string)", sem.try_acquire, sem,
             0, "100")
    t.raises("bad argument #1 to 'acquire' (" .. LEASE .. "-1.5 ms)", sem.acquire, sem, -1.5)
    t.raises("bad argument #1 to 'with_permit' (" .. LEASE .. "-5 ms)", sem.with_permit, sem,
             -5, print)
    t.raises("bad argument #2 to 'with_permit' (function expected, got nil)", sem.with_permit, sem,
             100)
    t.raises("calling 'try_acquire' on bad self", sem.try_acquire, nil, 0, 100)
    t.raises("calling 'available_permits' on bad self", sem.available_permits, c)
    local permit = assert(sem:try_acquire(0, 5000))
    t.raises("bad argument #1 to 'extend' (" .. LEASE .. "0 ms)", permit.extend, permit, 0)
    t.raises("bad argument #1 to 'on_lost' (function or nil expected", permit.on_lost, permit, 1)
    t.raises("calling 'id' on bad self", permit.id, sem)
    t.raises("on bad self (redlock lock expected", permit.release, sem)
    t.eq(permit.try_lock, nil, "a permit is not taken again")
    t.eq(permit.force_unlock, nil, "nor does it touch the name's lock")
    assert(permit:release())
    -- The raw module: a whole number reaches the C library, which checks it.
    t.eq(core.redlock_acquire_permit(c._ctx.ptr, "x", 0, 1000, 0), core.REDLOCK_EINVAL, "0 permits")
    t.eq(core.redlock_errmsg(), PERMITS .. "0")
    local rc, n = core.redlock_permits_available(c._ctx.ptr, "x", core.REDLOCK_MAX_PERMITS + 1)
    t.eq(rc, core.REDLOCK_EINVAL, "10001 permits")
    t.eq(n, 0, "none available")
    t.raises("bad argument #3 to 'redlock_acquire_permit' (whole number of permits expected)",
             core.redlock_acquire_permit, nil, "x", 1.5, 1000, 0)
    t.raises("bad argument #3 to 'redlock_permits_available' (whole number of permits expected)",
             core.redlock_permits_available, nil, "x", 2 ^ 40)
    c:close()
    t.raises("the Redlock client is closed", c.get_semaphore, c, "x", 2)
    t.raises("the Redlock client is closed", sem.try_acquire, sem, 0, 100)
    t.raises("the Redlock client is closed", sem.available_permits, sem)
    t.raises("the Redlock client is closed", sem.with_permit, sem, 100, print)
  end)

  t.test("fair lock and with_lock: bad input", function()
    local c = client()
    t.raises("bad argument #1 to 'get_fair_lock' (resource name is empty)", c.get_fair_lock, c, "")
    t.raises("bad argument #1 to 'get_fair_lock' (string expected, got nil)", c.get_fair_lock, c)
    t.raises("calling 'get_fair_lock' on bad self", c.get_fair_lock, "x")
    local err = t.raises("bad argument", function() c:get_fair_lock(42) end)
    t.ok(err:find("test_checks.lua:", 1, true), "error position: " .. err)
    local name = fresh("fair-bad")
    local fair = c:get_fair_lock(name)
    t.raises("bad argument #1 to 'try_lock' (" .. WAIT .. "-1 ms)", fair.try_lock, fair, -1)
    t.raises("bad argument #2 to 'try_lock' (" .. LEASE .. "0 ms)", fair.try_lock, fair, 0, 0)
    t.raises("bad argument #1 to 'lock' (" .. LEASE .. "0 ms)", fair.lock, fair, 0)
    t.raises("bad argument #1 to 'with_lock' (" .. LEASE .. "-5 ms)", fair.with_lock, fair,
             -5, print)
    t.raises("bad argument #2 to 'with_lock' (function expected, got nil)", fair.with_lock, fair,
             100)
    t.raises("bad argument #2 to 'with_lock' (function expected, got string)", fair.with_lock,
             fair, nil, "fn")
    t.raises("calling 'with_lock' on bad self", fair.with_lock, c, 100, print)
    err = t.raises("bad argument", function() fair:with_lock(0, print) end)
    t.ok(err:find("test_checks.lua:", 1, true), "error position: " .. err)
    local permit = assert(c:get_semaphore(name .. "-sem", 1):try_acquire(0, 1000))
    t.eq(permit.with_lock, nil, "a permit is taken once: with_permit, not with_lock")
    assert(permit:release())
    -- A key of another type where the queue lives: the nodes' error.
    local queue_key = "local k = KEYS[1] .. '\\0queue' redis.call('del', k) "
    for i = 1, #nodes.uris do
      nodes.cli(i, "EVAL", queue_key .. "return redis.call('rpush', k, 'x')", "1", name)
    end
    err = t.fails("wrongtype", fair:try_lock(0, 1000))
    t.ok(err:find("queue of " .. name, 1, true), "names the queue: " .. err)
    for i = 1, #nodes.uris do
      nodes.cli(i, "EVAL", queue_key .. "return 0", "1", name)
    end
    t.eq(fair:try_lock(0, 1000), true, "taken once the queue's key is gone")
    assert(fair:unlock())
    -- The raw module: the C library checks what reaches it.
    t.eq(core.redlock_lock_fair(c._ctx.ptr, "x", 0, 0), core.REDLOCK_EINVAL, "a lease of 0")
    t.raises("bad argument #3 to 'redlock_lock_fair' (whole number of milliseconds expected)",
             core.redlock_lock_fair, c._ctx.ptr, "x", 1.5, 0)
    t.raises("bad argument #5 to 'redlock_op_lock_fair' (whole number of milliseconds expected)",
             core.redlock_op_lock_fair, c._ctx.ptr, "x", 1000, 0, 0.5)
    c:close()
    t.raises("get_fair_lock: the Redlock client is closed", c.get_fair_lock, c, "x")
    t.raises("with_lock: the Redlock client is closed", fair.with_lock, fair, 100, print)
    err = t.raises("the Redlock client is closed", function() fair:with_lock(100, print) end)
    t.ok(err:find("test_checks.lua:", 1, true), "error position: " .. err)
  end)

  t.test("get_option reads the options back", function()
    local prefix = fresh("prefix") .. ":é:"
    local c = client({ key_prefix = prefix, retry_delay_ms = 25 })
    t.eq(c:get_option("key_prefix"), prefix, "key_prefix")
    t.eq(c:get_option("retry_delay_ms"), "25", "retry_delay_ms")
    t.eq(c:get_option("retry_jitter_ms"), "100", "a default")
    local err = t.fails("inval", c:get_option("no_such_option"))
    t.ok(err:find("no_such_option", 1, true), "names the option: " .. err)
    t.raises("bad argument #1 to 'get_option' (option name expected, got nil)", c.get_option, c)
    t.raises("calling 'get_option' on bad self", c.get_option, "key_prefix")
    c:close()
    t.raises("the Redlock client is closed", c.get_option, c, "key_prefix")
  end)

  t.test("new: options, unix sockets, and errors as nil, err", function()
    local prefix = fresh("prefix") .. ":"
    local c = client({ key_prefix = prefix, node_timeout_ms = 200, drift_factor = 0.02,
                       pool_size = "4" })
    local lock = c:get_lock("job")
    assert(lock:try_lock(0, 5000))
    t.ok(holders(prefix .. "job", lock:token()) >= QUORUM, "the key carries key_prefix")
    assert(lock:unlock())

    local over_unix = assert(redlock.new(nodes.sockets))
    local ulock = over_unix:get_lock(fresh())
    t.eq(ulock:try_lock(0, 5000), true, "locked over unix sockets")
    assert(ulock:unlock())

    t.fails("inval", redlock.new({ "rediss://127.0.0.1:0" }))
    t.fails("inval", redlock.new({ nodes.uris[1], nodes.uris[1] }))
    t.fails("inval", redlock.new({}))
    t.fails("inval", redlock.new({ "nonsense" }))
    local err = t.fails("inval", redlock.new(nodes.uris, { no_such_option = 1 }))
    t.ok(err:find("no_such_option", 1, true), "names the option: " .. err)
    t.fails("inval", redlock.new(nodes.uris, { node_timeout_ms = "soon" }))
    -- A name too long for the C library: an error value, not a raised error.
    t.fails("inval", c:get_lock(("x"):rep(5000)):try_lock(0, 1000))
  end)
end
