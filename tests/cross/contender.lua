-- contender.lua MODULE_DIR MODE NODES NAMES - one contender of the
-- cross-language tests, on the redlock module found in MODULE_DIR.
-- NODES and NAMES are comma-separated; several names make a multi-lock.
-- MODE "try": one attempt, released at once when taken; "hold": one attempt,
-- held until a line arrives on standard input.
-- Prints "acquired" then "released", or "refused", or "error: ...".
local dir, mode, nodes_csv, names_csv = ...
package.path = dir .. "/?.lua;" .. package.path
package.cpath = dir .. "/?.so;" .. package.cpath
local redlock = require "redlock"

local function split(text)
  local items = {}
  for item in text:gmatch("[^,]+") do items[#items + 1] = item end
  return items
end

local client = assert(redlock.new(split(nodes_csv)))
local names = split(names_csv)
local lock = #names == 1 and client:get_lock(names[1]) or client:get_multi_lock(names)
local ok, err = lock:try_lock(0, 30000)
if not ok then
  print(err.name == "locked" and "refused" or ("error: " .. tostring(err)))
  os.exit(0)
end
print("acquired")
io.stdout:flush()
if mode == "hold" then io.read("l") end
local released, uerr = lock:unlock()
print(released and "released" or ("error: " .. tostring(uerr)))
client:close()
