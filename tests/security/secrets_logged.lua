-- No event the Lua binding hands to its log function, at any level, shows a
-- password or a whole token; nor does client:health(). A session with a
-- password: locks, a kept lock renewed then lost, nodes paused, stopped and
-- restarted, a wrong password, ping.
--     lua5.4 secrets_logged.lua MODULE_DIR RUNNER_DIR REDIS_NODES_SCRIPT
local module_dir, runner_dir, nodes_script = arg[1], arg[2], arg[3]
assert(module_dir and runner_dir and nodes_script,
       "usage: secrets_logged.lua MODULE_DIR RUNNER_DIR REDIS_NODES_SCRIPT")
package.path = module_dir .. "/?.lua;" .. runner_dir .. "/?.lua;" .. package.path
package.cpath = module_dir .. "/?.so;" .. package.cpath

local t = require "runner"
local redlock = require "redlock"

local PASSWORD, ENCODED = "Lua-p@ss:w/rd x#9", "Lua-p%40ss%3Aw%2Frd%20x%239"
local SECRETS = { PASSWORD, ENCODED, "w/rd x#9", "w%2Frd" }

local nodes = t.start_nodes(nodes_script, 3)
local function set_password(i)
  t.eq(nodes.cli(i, "CONFIG", "SET", "requirepass", PASSWORD), "OK", "requirepass")
end
-- CLIENT PAUSE ms ALL on node i, with the password.
local function pause(i, ms)
  local _, ok = t.sh(("redis-cli -u %s -a %s --no-auth-warning CLIENT PAUSE %d ALL"):format(
    t.quote(nodes.uris[i]), t.quote(PASSWORD), ms))
  assert(ok, "CLIENT PAUSE")
end

t.test("no event nor health shows a password or a whole token", function()
  for i = 1, 3 do
    set_password(i)
  end
  local right, wrong = {}, {}
  for i, uri in ipairs(nodes.uris) do
    right[i] = uri:gsub("redis://", "redis://:" .. ENCODED:gsub("%%", "%%%%") .. "@")
    wrong[i] = uri:gsub("redis://", "redis://:x" .. ENCODED:gsub("%%", "%%%%") .. "@")
  end
  local lines = {}
  local function log(level, event, message)
    lines[#lines + 1] = level .. " " .. event .. " " .. message
  end
  local c = assert(redlock.new(right, { log = log, log_level = "debug", watchdog_lease_ms = 900,
                                        node_timeout_ms = 300, retry_delay_ms = 20 }))
  local refused = assert(redlock.new(wrong, { log = log, log_level = "debug" }))
  local tokens = {}
  local lock = c:get_lock("secret")
  assert(lock:try_lock(0, 30000))
  tokens[#tokens + 1] = lock:token()
  assert(lock:extend(30000))
  t.eq(c:ping(), 3, "ping")
  local _, _, code = refused:get_lock("secret"):try_lock(0, 1000)
  t.eq(code, "auth", "a wrong password")
  local kept = c:get_lock("kept")
  assert(kept:try_lock(0))
  tokens[#tokens + 1] = kept:token()
  pause(1, 2500)
  pause(2, 2500)
  local deadline = t.now_ms() + 4000
  while not kept:lost() and t.now_ms() < deadline do
    t.sleep_ms(20)
  end
  t.eq(kept:lost(), true, "lost")
  t.sleep_ms(2600)
  nodes.stop_node(3)
  t.eq(c:ping(), 2, "two of three")
  nodes.start_node(3)
  set_password(3)
  t.sleep_ms(1100)
  c:ping()
  assert(lock:unlock())
  local health = {}
  for _, client in ipairs({ c, refused }) do
    for _, node in ipairs(client:health()) do
      for key, value in pairs(node) do
        health[#health + 1] = key .. "=" .. tostring(value)
      end
    end
  end
  local seen = {}
  for _, line in ipairs(lines) do
    seen[line:match("^%S+ (%S+)")] = true
    for _, secret in ipairs(SECRETS) do
      t.ok(not line:find(secret, 1, true), "the password in: " .. line)
    end
    t.ok(not line:find(("%x"):rep(32)), "a whole token in: " .. line)
  end
  for _, name in ipairs({ "acquired", "extended", "released", "auth_refused", "renewal_failed",
                          "lost", "node_down", "node_back", "node_restarted" }) do
    t.ok(seen[name], "no " .. name .. " event")
  end
  local text = table.concat(health, " ")
  for _, secret in ipairs(SECRETS) do
    t.ok(not text:find(secret, 1, true), "the password in the health")
  end
  for _, token in ipairs(tokens) do
    t.ok(not text:find(token, 1, true), "a token in the health")
  end
  t.ok(text:find("auth_refused", 1, true), "the refused client's health")
  c:close()
  refused:close()
end)

t.test("a URI error shows nothing before the last @", function()
  local c, err, code = redlock.new({ "redis://:Xy@SecretTail/9@host/x" })
  t.eq(c, nil, "refused")
  t.eq(code, "inval", "inval")
  local message = tostring(err)
  t.ok(not message:find("Xy", 1, true) and not message:find("Secret", 1, true),
       "the credentials in: " .. message)
  t.ok(message:find("'redis://***@host/x': db must be a number", 1, true), "named: " .. message)
end)

t.test("events escape a name's control bytes", function()
  local uris = {}
  for i, uri in ipairs(nodes.uris) do
    uris[i] = uri:gsub("redis://", "redis://:" .. ENCODED:gsub("%%", "%%%%") .. "@")
  end
  local lines = {}
  local c = assert(redlock.new(uris, { log_level = "debug", log = function(_, event, message)
    lines[#lines + 1] = event .. " " .. message
  end }))
  local lock = c:get_lock("job\n[error] lost\27[31m\127")
  assert(lock:try_lock(0, 10000))
  assert(lock:unlock())
  c:close()
  local acquired = false
  for _, line in ipairs(lines) do
    t.ok(not line:find("[%c\127]"), "a control byte in: " .. line)
    acquired = acquired or line:find("resource=job\\n[error] lost\\x1b[31m\\x7f", 1, true)
  end
  t.ok(acquired, "no acquired event with the name escaped: " .. table.concat(lines, " | "))
end)

t.run(nodes.stop)
