-- take_lock.lua NAME NODE... - with the installed redlock rock, takes the
-- lock NAME, sees a second client refused, releases it, and sees the second
-- client take it; the same through redlock.resty_lock.
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
-- lua-resty-lock's API, installed beside it.
local resty_lock = require "redlock.resty_lock"
local first = assert(resty_lock:new("installed", { client = client, timeout = 0 }))
local second = assert(resty_lock:new("installed", { client = rival, timeout = 0 }))
assert(first:lock(name) == 0)
assert(select(2, second:lock(name)) == "timeout")
assert(first:unlock() == 1)
assert(second:lock(name) == 0 and second:unlock() == 1)
print("installed redlock rock takes and releases locks: " .. _VERSION)
