-- libredlock from LuaJIT (the redlock Lua binding) through the bench cycle
-- (bench/README.md), the blocking driver. Run with package.path and
-- package.cpath pointing at the binding's LuaJIT build and at this folder.
local cycle = require "cycle"

local opt = { cycles = "1000", warmup = "100", lease = "10000", keys = "1", prefix = "bench" }
for i = 1, #arg, 2 do
  local name = arg[i]:match("^%-%-(.+)$")
  if not name or not arg[i + 1] then
    io.stderr:write("usage: ours.lua --nodes URI[,URI...] [--cycles N] [--warmup N] [--lease MS] [--keys K]\n")
    os.exit(64)
  end
  opt[name] = arg[i + 1]
end
io.write(cycle(opt, "ours-lua"))
