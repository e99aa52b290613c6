-- fair_waiter.lua MODULE_DIR NODES NAME LABEL FILE - one waiter of the fair
-- lock test of test_redlock.lua, in a process of its own (a blocking call
-- blocks its whole Lua state). NODES is comma-separated. Waits up to 20 s for
-- the fair lock of NAME; holding it, appends a line to FILE: LABEL, or
-- "LABEL <error>" when it was not taken; then releases it.
local dir, nodes_csv, name, label, file = ...
package.path = dir .. "/?.lua;" .. package.path
package.cpath = dir .. "/?.so;" .. package.cpath
local redlock = require "redlock"

local uris = {}
for uri in nodes_csv:gmatch("[^,]+") do
  uris[#uris + 1] = uri
end
local lock = assert(redlock.new(uris)):get_fair_lock(name)
local ok, err = lock:try_lock(20000, 5000)
local out = assert(io.open(file, "a"))
out:write(ok and label or (label .. " " .. tostring(err)), "\n")
out:close()
if ok then
  assert(lock:unlock())
end
