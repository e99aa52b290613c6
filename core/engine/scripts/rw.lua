-- A read-write lock on KEYS[1] (docs/kinds.md). A writer holds it as a plain
-- lock does: KEYS[1] holds its token, taken by the plain lock's acquire, so
-- a plain lock and a read-write lock of one name exclude each other.
-- Readers hold it together: KEYS[1] holds 'redlock:readers' and then each
-- reader, " token:d", and lasts as long as the last of them. A reader's
-- lease ends d ms before the key's own expiry: the key's PTTL minus d is
-- what is left of it, so no other clock is read, and one reader alone is
-- one GET and one SET. KEYS[2] holds the readers of a writer that took the
-- read lock it downgrades to, the same way but without the prefix, and
-- becomes KEYS[1] when that writer lets go.
-- ARGV[1]: the call: 'read' (take a read lock), 'read_extend',
-- 'read_release', 'write_extend' or 'write_release'; ARGV[2]: the token;
-- ARGV[3]: the lease in ms (read, read_extend, write_extend); ARGV[4] (read):
-- the token of the caller's own write lock, which the read lock may join
-- (a downgrade), or ''.
-- Returns 1 when done; 0 when a writer holds it (read), or the lock is not
-- the token's (extend, release).
local call, token = ARGV[1], ARGV[2]
local SHARED = 'redlock:readers'
local holder = redis.pcall('get', KEYS[1])

-- The common cases first, before anything else is built: a first reader,
-- and the release of a sole reader whose lease ends with the key.
if call == 'read' and not holder then
  redis.call('set', KEYS[1], SHARED .. ' ' .. token .. ':0', 'px', ARGV[3])
  return 1
elseif call == 'read_release' and holder == SHARED .. ' ' .. token .. ':0' then
  redis.call('del', KEYS[1])
  redis.pcall('publish', KEYS[1], SHARED)
  return 1
end

-- The value of KEYS[2], a writer's own readers (false: none), or nil and
-- an error reply.
local function beside()
  local v = redis.pcall('get', KEYS[2])
  if type(v) == 'table' then
    return nil, redis.error_reply('WRONGTYPE key of the readers of ' .. KEYS[1] .. ' holds a '
                                  .. redis.call('type', KEYS[2]).ok .. ', not a lock')
  end
  return v
end

-- The live readers listed in list (the value of key) other than token, as
-- {token, ms left} pairs, and whether token is a live one. The key's PTTL
-- is read only when needed: not for token alone with d = 0.
local function readers(key, list)
  local others, reading, ttl = {}, false, nil
  for tok, d in string.gmatch(list, ' (%x+):(%d+)') do
    d = tonumber(d)
    if tok ~= token or d > 0 then
      ttl = ttl or redis.call('pttl', key)
    end
    if tok == token then
      reading = d == 0 or ttl - d > 0   -- d = 0: it ends with the key, which is here
    elseif ttl - d > 0 then
      others[#others + 1] = { tok, ttl - d }
    end
  end
  return others, reading
end

-- Stores the readers (pairs) under key, prefix first, for as long as the
-- last of them; none: the key goes. Returns how long that is (0: none).
local function store(key, prefix, pairs_)
  local last = 0
  for _, r in ipairs(pairs_) do
    last = math.max(last, r[2])
  end
  if last == 0 then
    redis.call('del', key)
    return 0
  end
  local out = { prefix }
  for _, r in ipairs(pairs_) do
    out[#out + 1] = ' ' .. r[1] .. ':' .. (last - r[2])
  end
  redis.call('set', key, table.concat(out), 'px', last)
  return last
end

if type(holder) == 'table' then
  return redis.error_reply('WRONGTYPE key ' .. KEYS[1] .. ' holds a '
                           .. redis.call('type', KEYS[1]).ok .. ', not a lock')
end
local bad
local shared = holder and string.sub(holder, 1, #SHARED) == SHARED

if call == 'write_extend' or call == 'write_release' then
  if holder ~= token then
    return 0
  end
  if call == 'write_extend' then
    -- The writer's own readers (a downgrade) keep the key at least that long.
    redis.call('pexpire', KEYS[1], math.max(tonumber(ARGV[3]), redis.call('pttl', KEYS[2])))
    return 1
  end
  -- The writer's own readers, if any, now hold it shared, as they were.
  local list
  list, bad = beside()
  if bad then
    return bad
  end
  local ttl = list and redis.call('pttl', KEYS[2]) or 0
  if ttl > 0 then
    redis.call('set', KEYS[1], SHARED .. list, 'px', ttl)
    redis.call('del', KEYS[2])
  else
    redis.call('del', KEYS[1])
  end
  redis.pcall('publish', KEYS[1], token)
  return 1
end

-- A reader's call: its list is KEYS[1] when shared, KEYS[2] under a writer.
if call == 'read' and holder and not shared and holder ~= ARGV[4] then
  return 0
end
local key, prefix, list = KEYS[1], SHARED, holder
if holder and not shared then
  key, prefix = KEYS[2], ''
  list, bad = beside()
  if bad then
    return bad
  end
end
local others, reading = readers(key, list or '')

if call == 'read' or call == 'read_extend' then
  if call == 'read_extend' and not reading then
    return 0
  end
  others[#others + 1] = { token, tonumber(ARGV[3]) }
  local last = store(key, prefix, others)
  if key == KEYS[2] and redis.call('pttl', KEYS[1]) < last then
    redis.call('pexpire', KEYS[1], last)
  end
  return 1
elseif call == 'read_release' then
  if not reading then
    return 0
  end
  if store(key, prefix, others) == 0 and key == KEYS[1] then
    redis.pcall('publish', KEYS[1], SHARED)
  end
  return 1
end
return redis.error_reply('rw.lua: unknown call ' .. tostring(call))
