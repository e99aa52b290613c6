-- Takes every key in KEYS for token ARGV[1] with lease ARGV[2] ms, or none.
-- Returns 1 when all were taken, 0 when one of them is held by another
-- token. A key that already holds ARGV[1] counts as taken (a command resent
-- after a lost connection finds its own earlier success), and its lease is
-- set again. Keys go to EXISTS and MGET in chunks, so unpack() stays within
-- Lua's stack.
-- With ARGV[3] (fencing), taking them also increments each key's counter
-- (used for several keys, and on nodes older than Redis 7.0: one key on a
-- newer node is taken by SET NX GET with the INCR of its counter behind it)
-- (the key followed by a zero byte and 'fence': no lock key is named so, as
-- resource names never hold a zero byte), and the reply is the list of the
-- counters' new values instead of 1.
-- ARGV[3] is '1', or 'c' on a Cluster node, where the counter of a key
-- without a hash tag is named with the key as its tag ({key}, a zero byte
-- and 'fence') so that it lives in the key's slot.
local n, chunk = #KEYS, 1000
local function counter(key)
  local open = string.find(key, '{', 1, true)
  local close = open and string.find(key, '}', open + 1, true)
  if ARGV[3] == 'c' and not (close and close > open + 1) then
    return '{' .. key .. '}\0fence'
  end
  return key .. '\0fence'
end
if n == 1 and ARGV[3] then
  -- One key with fencing, the common case, in the fewest calls: taken
  -- outright, or found to be ours (lease set again), another's, or not a
  -- lock at all.
  if not redis.call('set', KEYS[1], ARGV[1], 'nx', 'px', ARGV[2]) then
    local value = redis.pcall('get', KEYS[1])
    if type(value) == 'table' then
      return redis.error_reply('WRONGTYPE key ' .. KEYS[1] .. ' holds a '
                               .. redis.call('type', KEYS[1]).ok .. ', not a lock')
    elseif value ~= ARGV[1] then
      return 0
    end
    redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
  end
  return { redis.call('incr', counter(KEYS[1])) }
end
for first = 1, n, chunk do
  local last = math.min(first + chunk - 1, n)
  if redis.call('exists', unpack(KEYS, first, last)) > 0 then
    for i = first, last do
      local kind = redis.call('type', KEYS[i]).ok
      if kind ~= 'none' and kind ~= 'string' then
        return redis.error_reply('WRONGTYPE key ' .. KEYS[i] .. ' holds a ' .. kind .. ', not a lock')
      end
    end
    local values = redis.call('mget', unpack(KEYS, first, last))
    for i = first, last do
      local value = values[i - first + 1]
      if value and value ~= ARGV[1] then
        return 0
      end
    end
  end
end
local fences = nil
if ARGV[3] then
  fences = {}
  for i = 1, n do
    fences[i] = redis.call('incr', counter(KEYS[i]))
  end
end
for i = 1, n do
  redis.call('set', KEYS[i], ARGV[1], 'px', ARGV[2])
end
return fences or 1
