-- A read-write lock on KEYS[1] (docs/kinds.md). A writer holds it as a plain
-- lock does: KEYS[1] holds its token, taken by the plain lock's acquire, so
-- a plain lock and a read-write lock of one name exclude each other.
-- Readers hold it together: KEYS[1] holds 'redlock:readers' for as long as
-- the last of them, and KEYS[2] the readers, "token:expiry" pairs (expiry in
-- this server's TIME, ms), each reader with its own lease.
-- ARGV[1]: the call: 'read' (take a read lock), 'read_extend',
-- 'read_release', 'write_extend' or 'write_release'; ARGV[2]: the token;
-- ARGV[3]: the lease in ms (read, read_extend, write_extend); ARGV[4] (read):
-- the token of the caller's own write lock, which the read lock may join
-- (a downgrade), or ''.
-- Returns 1 when done; 0 when a writer holds it (read), or the lock is not
-- the token's (extend, release).
local call, token = ARGV[1], ARGV[2]
local SHARED = 'redlock:readers'
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- A lock key's value (false: none), or nil and an error reply.
local function value(key)
  local v = redis.pcall('get', key)
  if type(v) == 'table' then
    local name = key == KEYS[1] and key or 'of the readers of ' .. KEYS[1]
    return nil, redis.error_reply('WRONGTYPE key ' .. name .. ' holds a '
                                  .. redis.call('type', key).ok .. ', not a lock')
  end
  return v
end

-- The live readers other than token, and when the last of them ends (0:
-- none); and whether token is a live reader.
local function readers(list)
  local others, last, reading = {}, 0, false
  for tok, ends in string.gmatch(list or '', '(%x+):(%d+)') do
    ends = tonumber(ends)
    if ends > now then
      if tok == token then
        reading = true
      else
        others[#others + 1] = tok .. ':' .. ends
        last = math.max(last, ends)
      end
    end
  end
  return others, last, reading
end

-- Stores the readers (their last end at last), and KEYS[1] to match: shared
-- for as long as they last, or under a writer's token (a downgrade) at
-- least as long; without readers, a shared KEYS[1] goes (a release told).
local function store(list, last, holder)
  if #list == 0 then
    redis.call('del', KEYS[2])
    if holder == SHARED then
      redis.call('del', KEYS[1])
      redis.pcall('publish', KEYS[1], SHARED)
    end
    return
  end
  redis.call('set', KEYS[2], table.concat(list, ' '), 'px', last - now)
  if not holder or holder == SHARED then
    redis.call('set', KEYS[1], SHARED, 'px', last - now)
  elseif redis.call('pttl', KEYS[1]) < last - now then
    redis.call('pexpire', KEYS[1], last - now)
  end
end

local holder, bad = value(KEYS[1])
if bad then
  return bad
end
local list
list, bad = value(KEYS[2])
if bad then
  return bad
end
local others, last, reading = readers(list)

if call == 'read' or call == 'read_extend' then
  if call == 'read' and holder and holder ~= SHARED and holder ~= ARGV[4] then
    return 0
  end
  if call == 'read_extend' and not reading then
    return 0
  end
  local ends = now + tonumber(ARGV[3])
  others[#others + 1] = token .. ':' .. ends
  store(others, math.max(last, ends), holder)
  return 1
elseif call == 'read_release' then
  store(others, last, holder)
  return reading and 1 or 0
elseif call == 'write_extend' then
  if holder ~= token then
    return 0
  end
  -- The writer's own readers (a downgrade) keep the key at least that long.
  redis.call('pexpire', KEYS[1], math.max(tonumber(ARGV[3]), last - now))
  return 1
elseif call == 'write_release' then
  if holder ~= token then
    return 0
  end
  if #others > 0 then
    redis.call('set', KEYS[1], SHARED, 'px', last - now)
  else
    redis.call('del', KEYS[1])
  end
  redis.pcall('publish', KEYS[1], token)
  return 1
end
return redis.error_reply('rw.lua: unknown call ' .. tostring(call))
