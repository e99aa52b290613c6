-- The least a client over nginx's cosockets can wait for one lock+unlock
-- cycle: what bench/c/floor.c does, with one cosocket per node. Each cycle
-- makes a fresh token, sends SET key token NX PX lease to all N nodes and
-- ends the phase when N/2+1 replies are in, then the compare-and-delete
-- script (EVALSHA) the same way. Replies are read node after node, with no
-- light thread per node (cheaper than any client that must take the first
-- quorum to answer); those after their phase ended are read at the next.
-- No deadlines, retries or errors beyond counting: a lower bound for the
-- binding's cosocket driver, not a client. cycle.lua runs it (openresty.py
-- --floor 1).
local RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', "
  .. "KEYS[1]) else return 0 end"

local function command(...)
  local args = { ... }
  local parts = { "*" .. #args .. "\r\n" }
  for _, a in ipairs(args) do
    a = tostring(a)
    parts[#parts + 1] = "$" .. #a .. "\r\n" .. a .. "\r\n"
  end
  return table.concat(parts)
end

return function(nodes, opt)
  local socks, owed = {}, {}
  for i, uri in ipairs(nodes) do
    local host, port = uri:match("^redis://([^:/]+):?(%d*)")
    local sock = ngx.socket.tcp()
    assert(sock:connect(host, tonumber(port) or 6379))
    assert(sock:send(command("SCRIPT", "LOAD", RELEASE)))
    socks[i], owed[i] = sock, 0
  end
  local sha
  for _, sock in ipairs(socks) do
    assert(sock:receive())              -- $40
    sha = assert(sock:receive())
  end
  local quorum = math.floor(#socks / 2) + 1

  -- opt.floor "pooled": as the binding must inside nginx, each phase takes
  -- its connections from the keepalive pool and gives them back, and reads
  -- each node in a light thread of its own.
  local phase
  if opt.floor == "pooled" then
    for i, sock in ipairs(socks) do
      sock:setkeepalive(60000)
      owed[i] = nil
    end
    local addr = {}
    for i, uri in ipairs(nodes) do
      local host, port = uri:match("^redis://([^:/]+):?(%d*)")
      addr[i] = { host, tonumber(port) or 6379 }
    end
    local sem = require("ngx.semaphore").new()
    local function read(sock, good, state)
      local line = sock:receive()
      if line == good then
        state.count = state.count + 1
        if state.count == quorum then
          sem:post(1)
        end
      end
      sock:setkeepalive(60000)
    end
    phase = function(payload, good)
      local state = { count = 0 }
      for i = 1, #addr do
        local sock = ngx.socket.tcp()
        sock:connect(addr[i][1], addr[i][2])
        sock:send(payload)
        ngx.thread.spawn(read, sock, good, state)
      end
      sem:wait(5)
      return state.count >= quorum
    end
  end

  -- Sends payload to every node; true once a quorum answered good.
  phase = phase or function(payload, good)
    for i, sock in ipairs(socks) do
      sock:send(payload)
      owed[i] = owed[i] + 1
    end
    local count = 0
    for i, sock in ipairs(socks) do
      if count >= quorum then
        break
      end
      local line
      while owed[i] > 0 do
        line = sock:receive()
        owed[i] = owed[i] - 1
      end
      if line == good then
        count = count + 1
      end
    end
    return count >= quorum
  end

  local key, lease, token = opt.prefix .. ":0", opt.lease, nil
  return function()
    token = ("%08x%08x%08x"):format(math.random(0, 0x7fffffff), math.random(0, 0x7fffffff),
                                    math.random(0, 0x7fffffff))
    return phase(command("SET", key, token, "NX", "PX", lease), "+OK")
  end, function()
    return phase(command("EVALSHA", sha, 1, key, token), ":1")
  end, function()
    for _, sock in ipairs(socks) do
      sock:close()
    end
  end
end
