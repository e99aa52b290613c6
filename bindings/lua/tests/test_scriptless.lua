-- Plain locks on nodes that run no scripts (docs/servers.md): Valkey 9.1
-- with its Lua engine unloaded (REDIS_NO_SCRIPTING=lua) or a server whose
-- ACL refuses @scripting (acl, the default on other servers). A lock of one
-- resource is taken, extended, fenced, kept and released with no script
-- run; what needs a script fails at once with "unsupported", naming
-- scripting.
--     <lua> test_scriptless.lua MODULE_DIR REDIS_NODES_SCRIPT
local module_dir, nodes_script = arg[1], arg[2]
assert(module_dir and nodes_script, "usage: test_scriptless.lua MODULE_DIR REDIS_NODES_SCRIPT")
package.path = (arg[0]:match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path
local t = require "runner"
t.use_module(module_dir)
local redlock = require "redlock"

local N = 3
local how = os.getenv("REDIS_NO_SCRIPTING")
if how == nil or how == "" then
  how = (os.getenv("REDIS_SERVER") or ""):find("valkey", 1, true) and "lua" or "acl"
end
local nodes = t.start_nodes(nodes_script, N, nil, { REDIS_NO_SCRIPTING = how })

local counter = 0
local function fresh(prefix)
  counter = counter + 1
  return ("%s-%d-%d"):format(prefix, counter, os.time())
end

-- Generous deadlines: the machine running the tests may be busy.
local function client(options)
  options = options or {}
  options.node_timeout_ms, options.connect_timeout_ms = 2000, 2000
  return assert(redlock.new(nodes.uris, options))
end

-- How many nodes hold key (with value, when given).
local function holders(key, value)
  local n = 0
  for i = 1, N do
    local got = nodes.get(i, key)
    if got ~= "" and (value == nil or got == value) then
      n = n + 1
    end
  end
  return n
end

-- Whether no node holds key: the call returns at a quorum, and the last
-- node may answer a moment later.
local function released_everywhere(key)
  for _ = 1, 50 do
    if holders(key) == 0 then
      return true
    end
    t.sleep_ms(20)
  end
  return false
end

-- The scripts and functions the nodes ran, from INFO commandstats: calls
-- that did not fail (a refusal by the ACL is no call; one for want of the
-- Lua engine is a failed call).
local SCRIPTS = { eval = true, evalsha = true, eval_ro = true, evalsha_ro = true, fcall = true,
                  fcall_ro = true }
local function scripts_run()
  local ran = 0
  for i = 1, N do
    for line in nodes.cli(i, "INFO", "commandstats"):gmatch("[^\r\n]+") do
      local command, calls, failed = line:match("^cmdstat_([%w_]+):calls=(%d+),.*failed_calls=(%d+)")
      if SCRIPTS[command] then
        ran = ran + tonumber(calls) - tonumber(failed)
      end
    end
  end
  return ran
end

t.test("a plain lock: try_lock with a lease, extend, held, unlock, gone", function()
  local c = client()
  local name = fresh("plain")
  local lock = c:get_lock(name)
  t.eq(lock:try_lock(0, 5000), true, "try_lock")
  t.ok(lock:hold_count() == 1 and lock:validity_ms() > 0, "held")
  t.eq(lock:is_locked(), true, "locked, say the nodes")
  t.ok(holders(name, lock:token()) >= 2, "a quorum holds the token")
  t.eq(lock:extend(20000), true, "extend")
  t.ok(lock:validity_ms() > 5000, "validity after extend: " .. lock:validity_ms())
  t.eq(lock:unlock(), true, "unlock")
  t.eq(lock:hold_count(), 0, "not held")
  t.ok(released_everywhere(name), "the key is gone on every node")
  for _, node in ipairs(c:health()) do
    t.eq(node.scripting, "no", "health of " .. node.node)
  end
  t.eq(scripts_run(), 0, "scripts run")
  c:close()
end)

t.test("fences increase from holder to holder", function()
  local name = fresh("fenced")
  local fences = {}
  for _, c in ipairs({ client({ fencing = 1 }), client({ fencing = 1 }) }) do
    local lock = c:get_lock(name)
    t.eq(lock:try_lock(0, 5000), true, "try_lock")
    fences[#fences + 1] = lock:fence()
    assert(lock:unlock())
    c:close()
  end
  t.ok(fences[1] >= 1 and fences[2] > fences[1],
       ("fences %s, %s"):format(tostring(fences[1]), tostring(fences[2])))
end)

t.test("a kept lock outlives its lease until unlocked", function()
  local LEASE = 600
  local c, rival = client({ watchdog_lease_ms = LEASE }), client()
  local name = fresh("kept")
  local lock = c:get_lock(name)
  t.eq(lock:try_lock(0), true, "try_lock with no lease")
  local until_ms = t.now_ms() + math.floor(2.5 * LEASE)
  while t.now_ms() < until_ms do
    t.fails("locked", rival:get_lock(name):try_lock(0, 5000))
    t.ok(lock:validity_ms() > 0, "validity stays above 0")
    t.eq(lock:lost(), false, "not lost")
    t.sleep_ms(100)
  end
  t.eq(lock:unlock(), true, "unlock")
  t.ok(released_everywhere(name), "the key is gone on every node")
  c:close()
  rival:close()
end)

-- Asserts the results are the "unsupported" error, naming scripting, within
-- a second of started.
local function refused(started, ok, err, code)
  t.fails("unsupported", ok, err, code)
  t.ok(err:find("scripting", 1, true), "names scripting: " .. err)
  t.ok(t.now_ms() - started < 1000, "at once")
end

t.test("a multi-lock, a read-write lock and a semaphore are refused", function()
  local c = client()
  -- A fresh client finds out by the nodes' refusals; then it knows.
  for _ = 1, 2 do
    refused(t.now_ms(), c:get_multi_lock({ fresh("a"), fresh("b") }):try_lock(0, 5000))
    local rw = c:get_read_write_lock(fresh("rw"))
    refused(t.now_ms(), rw:read_lock():try_lock(0, 5000))
    refused(t.now_ms(), rw:write_lock():try_lock(0, 5000))
    refused(t.now_ms(), c:get_semaphore(fresh("sem"), 2):try_acquire(0, 5000))
    local lock = c:get_lock(fresh("still"))
    t.eq(lock:try_lock(0, 5000), true, "a plain lock still works")
    assert(lock:unlock())
  end
  c:close()
end)

t.test("no script ran", function()
  t.eq(scripts_run(), 0, "scripts run")
end)

t.run(nodes.stop)
