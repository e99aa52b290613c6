-- A semaphore of ARGV[3] permits (docs/kinds.md). KEYS[2] holds its number
-- of permits and its holders, "P token:d token:d ...", each permit with its
-- own lease, and lasts as long as the last of them. A permit's lease ends
-- d ms before the key's own expiry: the key's PTTL minus d is what is left
-- of it, so no other clock is read. KEYS[1] is the name's lock key, never
-- touched here: releases are published on its channel, where waiters listen.
-- ARGV[1]: the call: 'acquire', 'extend', 'release' or 'query'; ARGV[2]:
-- the permit's token; ARGV[3]: the number of permits P, which every client
-- of the semaphore gives alike; ARGV[4]: the lease in ms (acquire, extend).
-- Returns 1 when done; 0 when every permit is taken here (acquire) or the
-- permit is not held here (extend, release); query: {permits, held here}.
-- A semaphore of another P here is an error that names both numbers.
local call, token, permits = ARGV[1], ARGV[2], tonumber(ARGV[3])

local state = redis.pcall('get', KEYS[2])

-- The common cases first, before anything else is built: the first permit,
-- and the release of the sole permit, whose lease ends with the key.
if call == 'acquire' and not state then
  redis.call('set', KEYS[2], ARGV[3] .. ' ' .. token .. ':0', 'px', ARGV[4])
  return 1
elseif call == 'release' and state == ARGV[3] .. ' ' .. token .. ':0' then
  redis.call('del', KEYS[2])
  redis.pcall('publish', KEYS[1], token)
  return 1
end
if type(state) == 'table' then
  return redis.error_reply('WRONGTYPE the key of the permits of ' .. KEYS[1] .. ' holds a '
                           .. redis.call('type', KEYS[2]).ok .. ', not a semaphore')
end
local here = state and tonumber(string.match(state, '^(%d+)'))
if here and here ~= permits then
  return redis.error_reply('PERMITS the semaphore has ' .. here .. ' permits on this node, '
                           .. 'not ' .. ARGV[3] .. ': every client of it must give the same number')
end

-- The live permits other than token's, as {token, ms left} pairs, and
-- whether token's is live. The key's PTTL is read only when needed.
local others, mine, ttl = {}, false, nil
for tok, d in string.gmatch(state or '', ' (%x+):(%d+)') do
  d = tonumber(d)
  if tok ~= token or d > 0 then
    ttl = ttl or redis.call('pttl', KEYS[2])
  end
  if tok == token then
    mine = d == 0 or ttl - d > 0   -- d = 0: it ends with the key, which is here
  elseif ttl - d > 0 then
    others[#others + 1] = { tok, ttl - d }
  end
end

-- Stores the permits (pairs) for as long as the last of them; none: the
-- key goes.
local function store(list)
  local last = 0
  for _, p in ipairs(list) do
    last = math.max(last, p[2])
  end
  if last == 0 then
    redis.call('del', KEYS[2])
    return
  end
  local out = { ARGV[3] }
  for _, p in ipairs(list) do
    out[#out + 1] = ' ' .. p[1] .. ':' .. (last - p[2])
  end
  redis.call('set', KEYS[2], table.concat(out), 'px', last)
end

if call == 'acquire' or call == 'extend' then
  if call == 'acquire' and not mine and #others >= permits then
    return 0
  end
  if call == 'extend' and not mine then
    return 0
  end
  others[#others + 1] = { token, tonumber(ARGV[4]) }
  store(others)
  return 1
elseif call == 'release' then
  if mine then
    store(others)
    redis.pcall('publish', KEYS[1], token)
  end
  return mine and 1 or 0
elseif call == 'query' then
  return { here or permits, #others + (mine and 1 or 0) }
end
return redis.error_reply('sem.lua: unknown call ' .. tostring(call))
