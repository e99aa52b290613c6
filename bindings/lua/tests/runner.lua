-- A small test runner for the Lua binding, with no rocks needed: runs under
-- Lua 5.4 and LuaJIT alike, starts and stops local Redis nodes through
-- scripts/redis-nodes.sh, and reads keys back with redis-cli.
local runner = {}

local tests = {}

--- The binding built in module_dir (redlock.lua, redlock_core.so) comes
-- first for require.
function runner.use_module(module_dir)
  package.path = module_dir .. "/?.lua;" .. package.path
  package.cpath = module_dir .. "/?.so;" .. package.cpath
end

--- Registers a test.
function runner.test(name, fn)
  tests[#tests + 1] = { name = name, fn = fn }
end

--- Output of a shell command and whether it exited with status 0.
function runner.sh(command)
  local pipe = assert(io.popen(command .. '; echo "exit=$?"'))
  local out = pipe:read("*a")
  pipe:close()
  local body, status = out:match("^(.-)exit=(%d+)%s*$")
  return body, status == "0"
end

local function quote(text)
  return "'" .. text:gsub("'", "'\\''") .. "'"
end
runner.quote = quote

--- Milliseconds from some fixed point, from the wall clock.
function runner.now_ms()
  return tonumber((runner.sh("date +%s%3N")))
end

function runner.sleep_ms(ms)
  runner.sh(("sleep %.3f"):format(ms / 1000))
end

--- Nodes: starts n redis-server processes in a fresh temporary folder
-- (extra: more arguments of the script, quoted: "--tls DIR" for TLS nodes;
-- env: variables of the script's environment, { REDIS_NO_SCRIPTING = "acl" }).
-- Returns an object with uris, sockets, stop_node(i), start_node(i), record(),
-- get(i, key), pttl(i, key) and stop(); commands go over the unix sockets.
function runner.start_nodes(script, n, extra, env)
  local dir = assert(runner.sh("mktemp -d")):gsub("%s+$", "")
  local vars = {}
  for name, value in pairs(env or {}) do
    vars[#vars + 1] = name .. "=" .. quote(value)
  end
  local out, ok = runner.sh(("env %s bash %s start %s %d %s"):format(
    table.concat(vars, " "), quote(script), quote(dir), n, extra or ""))
  local nodes = { dir = dir, uris = {}, sockets = {} }
  function nodes.stop()
    runner.sh(("bash %s stop %s; rm -rf %s"):format(quote(script), quote(dir), quote(dir)))
  end
  if not ok then
    nodes.stop()
    error("could not start redis nodes: " .. out)
  end
  for uri in out:gmatch("%S+") do
    nodes.uris[#nodes.uris + 1] = uri
  end
  for line in io.lines(dir .. "/sockets") do
    nodes.sockets[#nodes.sockets + 1] = line
  end
  function nodes.stop_node(i)
    assert(select(2, runner.sh(("bash %s stop-node %s %d"):format(quote(script), quote(dir), i))))
  end
  function nodes.start_node(i)
    assert(select(2, runner.sh(("bash %s start-node %s %d"):format(quote(script), quote(dir), i))))
  end
  --- Writes the group's records of the servers running now (a node started
  -- again is a new server, empty: without this, restart_records holds it
  -- back for max_lease_ms).
  function nodes.record()
    assert(select(2, runner.sh(("bash %s record %s"):format(quote(script), quote(dir)))))
  end
  local function cli(i, ...)
    local words = { "redis-cli", "-s", quote(nodes.sockets[i]:gsub("^unix://", "")) }
    for _, word in ipairs({ ... }) do
      words[#words + 1] = quote(word)
    end
    local reply = assert(runner.sh(table.concat(words, " ") .. " 2>&1"))
    return (reply:gsub("%s+$", ""))
  end
  --- Runs a command on node i with redis-cli; its output.
  nodes.cli = cli
  --- Runs a command on node i after `ms` milliseconds, in the background.
  function nodes.cli_later(ms, i, ...)
    local words = { "redis-cli", "-s", quote(nodes.sockets[i]:gsub("^unix://", "")) }
    for _, word in ipairs({ ... }) do
      words[#words + 1] = quote(word)
    end
    assert(select(2, runner.sh(("(sleep %.3f; %s) >/dev/null 2>&1 & true"):format(
      ms / 1000, table.concat(words, " ")))))
  end
  --- The value of key on node i ("" when absent).
  function nodes.get(i, key) return cli(i, "GET", key) end
  --- The key's remaining time to live on node i, in ms (-2 when absent).
  function nodes.pttl(i, key) return tonumber(cli(i, "PTTL", key)) end
  function nodes.set(i, key, value) return cli(i, "SET", key, value) end
  --- How many times node i ran `command` (lowercase), from INFO commandstats.
  function nodes.calls(i, command)
    local stats = cli(i, "INFO", "commandstats")
    return tonumber(stats:match("cmdstat_" .. command .. ":calls=(%d+)")) or 0
  end
  --- CLIENT PAUSE ms ALL on node i: it accepts connections and answers
  -- nothing (its keys do not expire) until ms have passed.
  function nodes.pause(i, ms)
    assert(cli(i, "CLIENT", "PAUSE", tostring(ms), "ALL") == "OK", "CLIENT PAUSE")
  end
  return nodes
end

-- Assertions. Each raises with the caller's position.
function runner.eq(actual, expected, what)
  if actual ~= expected then
    error(("%s: expected %s, got %s"):format(what or "value", tostring(expected),
                                              tostring(actual)), 2)
  end
end

function runner.ok(cond, what)
  if not cond then
    error((what or "condition") .. " is false", 2)
  end
  return cond
end

--- Asserts fn(...) raises an error whose message contains `pattern` (plain).
function runner.raises(pattern, fn, ...)
  local ok, err = pcall(fn, ...)
  if ok then
    error("expected an error containing '" .. pattern .. "'", 2)
  end
  if not tostring(err):find(pattern, 1, true) then
    error(("expected an error containing '%s', got: %s"):format(pattern, tostring(err)), 2)
  end
  return err
end

--- Asserts the results are nil, err, code: err a string that starts with
-- "name: ", code that name; returns err.
function runner.fails(name, ok, err, code)
  if ok ~= nil then
    error(("expected nil, '%s' error; got %s"):format(name, tostring(ok)), 2)
  end
  if type(err) ~= "string" or err:sub(1, #name + 2) ~= name .. ": " or code ~= name then
    error(("expected a '%s' error, got %s, %s"):format(name, tostring(err), tostring(code)), 2)
  end
  return err
end

--- Runs every test in order, prints a line for each, and exits with 1 if any
-- failed. `teardown` runs at the end whatever happened.
function runner.run(teardown)
  local failed = 0
  for _, t in ipairs(tests) do
    local ok, err = xpcall(t.fn, debug.traceback)
    if ok then
      print("ok     " .. t.name)
    else
      failed = failed + 1
      print("FAILED " .. t.name .. "\n" .. tostring(err))
    end
  end
  if teardown then
    teardown()
  end
  print(("%d tests, %d failed (%s)"):format(#tests, failed, jit and jit.version or _VERSION))
  os.exit(failed == 0 and 0 or 1, true)
end

return runner
