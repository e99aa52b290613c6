-- The bench cycle (bench/README.md) through the redlock Lua binding, as a
-- function of the options: ours.lua runs it under a plain LuaJIT, and
-- openresty.py inside an nginx worker (the binding over cosockets, or the
-- cosocket floor of floor_cosocket.lua). LuaJIT,
-- because timing needs its ffi: plain Lua has no clock finer than a second.
local ffi = require "ffi"
local redlock = require "redlock"

ffi.cdef [[
struct bench_timespec { long tv_sec; long tv_nsec; };
struct bench_timeval { long tv_sec; long tv_usec; };
struct bench_rusage { struct bench_timeval utime, stime; long rest[14]; };
int clock_gettime(int clk, struct bench_timespec *ts);
int getrusage(int who, struct bench_rusage *ru);
]]

local CLOCK_MONOTONIC, RUSAGE_SELF = 1, 0
local ts, ru = ffi.new("struct bench_timespec"), ffi.new("struct bench_rusage")

local function now_ns()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) * 1e9 + tonumber(ts.tv_nsec)
end

local function cpu_us()
  ffi.C.getrusage(RUSAGE_SELF, ru)
  return tonumber(ru.utime.tv_sec) * 1e6 + tonumber(ru.utime.tv_usec),
         tonumber(ru.stime.tv_sec) * 1e6 + tonumber(ru.stime.tv_usec)
end

-- The binding's lock of opt's resources: its lock and unlock functions
-- (each true on success), and the function that closes its client.
local function binding(nodes, opt)
  local lease, keys = tonumber(opt.lease), tonumber(opt.keys)
  local client = assert(redlock.new(nodes, { node_timeout_ms = math.floor(lease / 20) }))
  local names = {}
  for i = 0, keys - 1 do names[#names + 1] = opt.prefix .. ":" .. i end
  local lock = keys == 1 and client:get_lock(names[1]) or client:get_multi_lock(names)
  return function() return lock:try_lock(0, lease) end,
         function() return lock:unlock() end,
         function() client:close() end
end

-- Runs the cycles for opt (string values: nodes, cycles, warmup, lease,
-- keys, prefix) and returns the JSON line of figures, named client. make
-- (nodes, opt) gives the lock, unlock and close functions: the binding's
-- when nil.
return function(opt, client_name, make)
  local nodes = {}
  for uri in (opt.nodes or ""):gmatch("[^,]+") do nodes[#nodes + 1] = uri end
  local keys = tonumber(opt.keys)
  local lock, unlock, close = (make or binding)(nodes, opt)

  local function cycle()
    local t0 = now_ns()
    if not lock() then return nil end
    local t1 = now_ns()
    if not unlock() then return nil end
    return t1 - t0, now_ns() - t0
  end

  for _ = 1, tonumber(opt.warmup) do cycle() end
  local lock_ns, cycle_ns, ok, failed = {}, {}, 0, 0
  local u0, s0 = cpu_us()
  local w0 = now_ns()
  for _ = 1, tonumber(opt.cycles) do
    local l, c = cycle()
    if l then
      ok = ok + 1
      lock_ns[ok], cycle_ns[ok] = ("%d"):format(l), ("%d"):format(c)
    else
      failed = failed + 1
    end
  end
  local wall = (now_ns() - w0) / 1e9
  local u1, s1 = cpu_us()
  close()
  return ('{"client": "%s", "mode": "cycle", "n": %d, "keys": %d, "threads": 1, '
    .. '"ok": %d, "failed": %d, "cpu_user_us": %d, "cpu_sys_us": %d, "wall_s": %.6f, '
    .. '"lock_ns": [%s], "cycle_ns": [%s]}\n'):format(client_name, #nodes, keys, ok, failed,
    u1 - u0, s1 - s0, wall, table.concat(lock_ns, ","), table.concat(cycle_ns, ","))
end
