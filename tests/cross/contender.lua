-- contender.lua MODULE_DIR MODE NODES NAMES [KIND] - one contender of the
-- cross-language tests, on the redlock module found in MODULE_DIR.
-- NODES and NAMES are comma-separated; several names make a multi-lock.
-- KIND (one name): "plain" (the default), "read" or "write" (a read-write
-- lock's), "fair", or "permits=N" (a permit of a semaphore of N).
-- MODE "try": one attempt, released at once when taken; "hold": one attempt,
-- held until a line arrives on standard input.
-- Prints "acquired" then "released", or "refused", or "error: ...".
-- MODE "rules": the scenarios of the rules every language follows
-- (docs/locks.md) on resources named after NAMES' first one; prints one line
-- of observations per rule, which test_parity.py compares across languages.
-- MODE "messages": the same bad inputs as every language's (milliseconds
-- here); prints each case and the library's message for it.
local dir, mode, nodes_csv, names_csv, kind = ...
package.path = dir .. "/?.lua;" .. package.path
package.cpath = dir .. "/?.so;" .. package.cpath
local redlock = require "redlock"
local core = require "redlock_core"

local function split(text)
  local items = {}
  for item in text:gmatch("[^,]+") do items[#items + 1] = item end
  return items
end

local function sleep_ms(ms)
  local deadline = core.redlock_now_ms() + ms
  while core.redlock_now_ms() < deadline do
    os.execute("sleep 0.05")
  end
end

local function yes(cond) return cond and "yes" or "no" end

-- ok, err and code of a call as one word: "ok", or the error's code word,
-- which err (a string) starts with.
local function word(ok, err, code)
  if ok then
    return "ok"
  end
  assert(type(err) == "string" and err:sub(1, #code + 2) == code .. ": ", tostring(err))
  return code
end

-- "closed" when fn(...) raises the closed client's error, else "open".
local function closed(fn, ...)
  local ok, problem = pcall(fn, ...)
  if ok then
    return "open"
  end
  assert(tostring(problem):find("the Redlock client is closed", 1, true), tostring(problem))
  return "closed"
end

if mode == "messages" then
  local c = assert(redlock.new(split(nodes_csv)))
  local lock = c:get_lock(split(names_csv)[1])
  -- The message of the error fn(...) raises: "bad argument #N to 'f' (...)".
  local function message(fn, ...)
    local ok, err = pcall(fn, ...)
    assert(not ok, "accepted")
    return tostring(err):match("%((.+)%)$")
  end
  print("negative-lease " .. message(lock.try_lock, lock, 0, -1000))
  print("zero-lease " .. message(lock.try_lock, lock, 0, 0))
  print("long-lease " .. message(lock.try_lock, lock, 0, 30 * 24 * 3600 * 1000))
  print("negative-wait " .. message(lock.try_lock, lock, -1000, 1000))
  print("zero-permits " .. message(c.get_semaphore, c, "s", 0))
  print("empty-uri " .. message(redlock.split_nodes, " ,redis://a"))
  c:close()
  os.exit(0)
end

if mode == "rules" then
  local base = split(names_csv)[1]
  local c = assert(redlock.new(split(nodes_csv), { watchdog_lease_ms = 900 }))
  local other = assert(redlock.new(split(nodes_csv)))

  -- Reentry of a kept lock with a short lease: the keys keep their lease,
  -- renewal goes on.
  local kept = c:get_lock(base .. ":kept")
  assert(kept:lock())
  local again = kept:try_lock(1000, 150)
  local holds = kept:hold_count()
  local ttl = kept:remain_time_to_live()
  local kept_lease = c:get_lock(base .. ":kept-lease")
  assert(kept_lease:try_lock(0, nil))
  sleep_ms(1200)
  print(("reentry-kept again=%s holds=%d ttl_kept=%s held=%s lost=%s unlock=%s,%s"):format(
    yes(again), holds, yes(ttl > 150), yes(kept:validity_ms() > 0),
    yes(kept:lost()), word(kept:unlock()), word(kept:unlock())))
  print(("kept-lease held=%s lost=%s unlock=%s"):format(yes(kept_lease:validity_ms() > 0),
    yes(kept_lease:lost()), word(kept_lease:unlock())))

  -- Reentry of a lease with no lease: not renewed, lost once it ran out.
  local leased = c:get_lock(base .. ":leased")
  assert(leased:try_lock(0, 300))
  again = leased:try_lock()
  holds = leased:hold_count()
  ttl = leased:remain_time_to_live()
  sleep_ms(450)
  local lost = leased:lost()
  print(("reentry-lease again=%s holds=%d ttl_first=%s lost=%s unlock=%s,%s"):format(
    yes(again), holds, yes(ttl <= 300), yes(lost), word(leased:unlock()),
    word(leased:unlock())))

  -- Acquiring again after a loss starts afresh.
  local fresh = c:get_lock(base .. ":afresh")
  assert(fresh:try_lock(0, 300) and fresh:try_lock(0, 300))
  sleep_ms(450)
  lost = fresh:lost()
  local afresh = word(fresh:try_lock())
  print(("afresh lost=%s again=%s holds=%d lost=%s unlock=%s"):format(yes(lost), afresh,
    fresh:hold_count(), yes(fresh:lost()), word(fresh:unlock())))

  -- The default wait: try_lock() once, lock() until acquired.
  local holder = other:get_lock(base .. ":wait")
  assert(holder:try_lock(0, 400))
  local waiter = c:get_lock(base .. ":wait")
  local started = core.redlock_now_ms()
  local tried = word(waiter:try_lock())
  local once = core.redlock_now_ms() - started < 300
  local locked = waiter:lock(5000)
  print(("wait try=%s once=%s lock=%s waited=%s"):format(
    tried, yes(once), word(locked), yes(core.redlock_now_ms() - started >= 300)))
  waiter:unlock()

  -- A multi-lock's answer: locked when any resource is, for the longest.
  local multi = c:get_multi_lock({ base .. ":ma", base .. ":mb", base .. ":mc" })
  local free = multi:is_locked()
  local b, d = other:get_lock(base .. ":mb"), other:get_lock(base .. ":mc")
  assert(b:try_lock(0, 3000))
  assert(d:try_lock(0, 8000))
  local left = multi:remain_time_to_live()
  print(("multi free=%s locked=%s longest=%s"):format(
    yes(not free), yes(multi:is_locked()), yes(left > 7000 and left <= 8000)))
  b:unlock()
  d:unlock()

  -- close() releases what is held; every later call raises.
  local closing = assert(redlock.new(split(nodes_csv)))
  local held = closing:get_lock(base .. ":closed")
  assert(held:try_lock(0, 10000))
  closing:close()
  local released = not other:get_lock(base .. ":closed"):is_locked()
  print(("closed released=%s get=%s try=%s unlock=%s"):format(yes(released),
    closed(closing.get_lock, closing, "x"), closed(held.try_lock, held),
    closed(held.unlock, held)))
  os.exit(0)
end

local client = assert(redlock.new(split(nodes_csv)))
local names = split(names_csv)
kind = kind or "plain"
local permits = tonumber(kind:match("^permits=(%d+)$"))
local lock, ok, err, code
if permits then
  lock, err, code = client:get_semaphore(names[1], permits):try_acquire(0, 30000)
  ok = lock ~= nil
elseif kind == "read" or kind == "write" then
  local rw = client:get_read_write_lock(names[1])
  lock = kind == "read" and rw:read_lock() or rw:write_lock()
elseif kind == "fair" then
  lock = client:get_fair_lock(names[1])
else
  lock = #names == 1 and client:get_lock(names[1]) or client:get_multi_lock(names)
end
if not permits then
  ok, err, code = lock:try_lock(0, 30000)
end
if not ok then
  print(code == "locked" and "refused" or ("error: " .. err))
  os.exit(0)
end
print("acquired")
io.stdout:flush()
if mode == "hold" then io.read("l") end
local released, uerr = lock:unlock()
print(released and "released" or ("error: " .. uerr))
client:close()
