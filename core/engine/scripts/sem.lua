-- A semaphore of ARGV[3] permits (docs/kinds.md). KEYS[2] holds its number
-- of permits and its holders, "P token:expiry token:expiry ..." (expiry in
-- this server's TIME, ms), each permit with its own lease; it lasts as long
-- as the last of them. KEYS[1] is the name's lock key, never touched here:
-- releases are published on its channel, where waiters listen.
-- ARGV[1]: the call: 'acquire', 'extend', 'release' or 'query'; ARGV[2]:
-- the permit's token; ARGV[3]: the number of permits P, which every client
-- of the semaphore gives alike; ARGV[4]: the lease in ms (acquire, extend).
-- Returns 1 when done; 0 when every permit is taken here (acquire) or the
-- permit is not held here (extend, release); query: {permits, held here}.
-- A semaphore of another P here is an error that names both numbers.
local call, token, permits = ARGV[1], ARGV[2], tonumber(ARGV[3])
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local state = redis.pcall('get', KEYS[2])
if type(state) == 'table' then
  return redis.error_reply('WRONGTYPE the key of the permits of ' .. KEYS[1] .. ' holds a '
                           .. redis.call('type', KEYS[2]).ok .. ', not a semaphore')
end
local here = state and tonumber(string.match(state, '^(%d+)'))
if here and here ~= permits then
  return redis.error_reply('PERMITS the semaphore has ' .. here .. ' permits on this node, '
                           .. 'not ' .. ARGV[3] .. ': every client of it must give the same number')
end

-- The live permits other than token's, when the last of them ends (0:
-- none), and whether token's is live.
local others, last, mine = {}, 0, false
for tok, ends in string.gmatch(state or '', ' (%x+):(%d+)') do
  ends = tonumber(ends)
  if ends > now then
    if tok == token then
      mine = true
    else
      others[#others + 1] = tok .. ':' .. ends
      last = math.max(last, ends)
    end
  end
end

local function store(list, until_)
  if #list == 0 then
    redis.call('del', KEYS[2])
  else
    redis.call('set', KEYS[2], permits .. ' ' .. table.concat(list, ' '), 'px', until_ - now)
  end
end

if call == 'acquire' or call == 'extend' then
  if call == 'acquire' and not mine and #others >= permits then
    return 0
  end
  if call == 'extend' and not mine then
    return 0
  end
  local ends = now + tonumber(ARGV[4])
  others[#others + 1] = token .. ':' .. ends
  store(others, math.max(last, ends))
  return 1
elseif call == 'release' then
  store(others, last)
  if mine then
    redis.pcall('publish', KEYS[1], token)
  end
  return mine and 1 or 0
elseif call == 'query' then
  return { here or permits, #others + (mine and 1 or 0) }
end
return redis.error_reply('sem.lua: unknown call ' .. tostring(call))
