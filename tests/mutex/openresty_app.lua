-- The OpenResty contender's handler (client_openresty.py): one attempt per
-- request, through the Lua binding over cosockets, the counter bumped over a
-- cosocket too; the record (client.c's JSON fields) is the response body.
local ffi = require "ffi"
local redlock = require "redlock"

ffi.cdef [[
struct mutex_timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk, struct mutex_timespec *ts);
]]
local CLOCK_REALTIME = 0
local ts = ffi.new("struct mutex_timespec")

-- CLOCK_REALTIME in ns, as a decimal string (a double would round it).
local function now_ns()
  ffi.C.clock_gettime(CLOCK_REALTIME, ts)
  return ("%d%09d"):format(tonumber(ts.tv_sec), tonumber(ts.tv_nsec))
end

local app = {}
local client

local function call(sock, ...)
  local args = { ... }
  local parts = { ("*%d\r\n"):format(#args) }
  for _, arg in ipairs(args) do
    parts[#parts + 1] = ("$%d\r\n%s\r\n"):format(#arg, arg)
  end
  assert(sock:send(table.concat(parts)))
  local line = assert(sock:receive("*l"))
  if line:sub(1, 1) == "$" and line ~= "$-1" then
    return assert(sock:receive("*l"))
  elseif line:sub(1, 1) == "-" then
    error(line)
  end
  return nil
end

local function bump(port, resource)
  local sock = ngx.socket.tcp()
  sock:settimeouts(1000, 1000, 1000)
  assert(sock:connect("127.0.0.1", port))
  local value = call(sock, "GET", "counter:" .. resource)
  ngx.sleep(0.002)
  call(sock, "SET", "counter:" .. resource, tostring((tonumber(value) or 0) + 1))
  sock:setkeepalive()
end

-- A reader's look: GET, then the writer's pause.
local function peek(port, resource)
  local sock = ngx.socket.tcp()
  sock:settimeouts(1000, 1000, 1000)
  assert(sock:connect("127.0.0.1", port))
  call(sock, "GET", "counter:" .. resource)
  ngx.sleep(0.002)
  sock:setkeepalive()
end

local CODES = { locked = "locked", noquorum = "noquorum", expired = "expired", redis = "redis",
                notheld = "notheld" }

function app.op()
  local args = ngx.req.get_uri_args()
  if not client then
    local nodes = {}
    -- A comma followed by "scheme://" starts the next URI (a Sentinel URI
    -- has commas of its own).
    local list = args.nodes .. ",x://"
    local from = 1
    while true do
      local at = list:find(",%s*[%a][%w+.-]*://", from)
      if not at then break end
      nodes[#nodes + 1] = list:sub(from, at - 1)
      from = at + 1
    end
    local options = { node_timeout_ms = 100, max_lease_ms = tonumber(args.lease) }
    -- The run's other options, NAME=VALUE,... (fencing=1, say).
    for name, value in (args.options or ""):gmatch("([^,=]+)=([^,]*)") do
      options[name] = value
    end
    app.fencing = options.fencing == "1"
    -- The library's events to the worker's stderr (the client's log), with
    -- the time to the ms.
    local holder = args.holder
    options.log = function(_, event, message)
      local ms = math.floor(tonumber(now_ns():sub(1, -7)))
      io.stderr:write(("%s.%03d %s %s %s\n"):format(os.date("%H:%M:%S", math.floor(ms / 1000)),
                                                    ms % 1000, holder, event, message))
    end
    options.log_level = "info"
    client = assert(redlock.new(nodes, options))
  end
  local resource = args.resource
  local fields = { ('"holder": "%s"'):format(args.holder), '"lang": "openresty"',
                   ('"resource": "%s"'):format(resource) }
  local mode = args.mode
  local lock
  if mode then
    fields[#fields + 1] = ('"mode": "%s"'):format(mode)
    local rw = client:get_read_write_lock(resource)
    lock = mode == "read" and rw:read_lock() or rw:write_lock()
  else
    lock = client:get_lock(resource)
  end
  local asked = now_ns()
  local ok, _, code = lock:try_lock(tonumber(args.wait), tonumber(args.lease))
  if not ok then
    fields[#fields + 1] = ('"start_ns": %s, "end_ns": %s, "validity_ms": 0, "ok": false, '
      .. '"result": "%s"'):format(asked, now_ns(), CODES[code] or "error")
  else
    local start = now_ns()
    local validity = lock:validity_ms()
    local reader = mode == "read"
    local done = pcall(reader and peek or bump, tonumber(args.counter), resource)
    local finish = now_ns()
    if app.fencing then
      -- Read while held (nil once unlocked); null when the lock has none.
      local fence = lock:fence()
      fields[#fields + 1] = ('"fence": %s'):format(fence and ("%d"):format(fence) or "null")
    end
    local released, _, unlock_code = lock:unlock()
    fields[#fields + 1] = ('"start_ns": %s, "end_ns": %s, "validity_ms": %d, "%s": %s, '
      .. '"ok": true, "result": "ok", "unlock": "%s"'):format(start, finish, validity,
      reader and "read" or "wrote", tostring(done),
      released and "ok" or (CODES[unlock_code] or "error"))
  end
  ngx.say("{" .. table.concat(fields, ", ") .. "}")
end

return app
