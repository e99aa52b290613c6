-- take_lock.lua NAME NODE... - with the installed redlock rock, takes the
-- lock NAME, sees a second client refused, releases it, and sees the second
-- client take it.
local name = arg[1]
local nodes = { select(2, ...) }
local redlock = require "redlock"
local client = assert(redlock.new(nodes))
local rival = assert(redlock.new(nodes))
local lock = client:get_lock(name)
assert(lock:try_lock(0, 10000))
assert(lock:validity_ms() > 0)
local ok, err, code = rival:get_lock(name):try_lock(0, 10000)
assert(not ok and code == "locked" and err:find("^locked: "), err)
assert(lock:unlock())
local other = rival:get_lock(name)
assert(other:try_lock(0, 10000))
assert(other:unlock())
print("installed redlock rock takes and releases locks: " .. _VERSION)
