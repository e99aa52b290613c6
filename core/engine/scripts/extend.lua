-- Sets the lease of every key in KEYS to ARGV[2] ms if all hold the token
-- ARGV[1]. Returns 1 when extended, 0 when any key is not ours; a key of
-- another type is an error. Keys go to MGET in chunks, so unpack() stays
-- within Lua's stack.
-- function flags: allow-oom (it deletes or expires keys, and frees memory)
local n, chunk = #KEYS, 1000
if n == 1 then
  -- One key, the common case, in the fewest calls.
  local value = redis.pcall('get', KEYS[1])
  if value == ARGV[1] then
    redis.call('pexpire', KEYS[1], ARGV[2])
    return 1
  elseif type(value) ~= 'table' then
    return 0
  end
end
for first = 1, n, chunk do
  local last = math.min(first + chunk - 1, n)
  local values = redis.call('mget', unpack(KEYS, first, last))
  for i = first, last do
    local value = values[i - first + 1]
    if value ~= ARGV[1] then
      local kind = redis.call('type', KEYS[i]).ok
      if kind ~= 'none' and kind ~= 'string' then
        return redis.error_reply('WRONGTYPE key ' .. KEYS[i] .. ' holds a ' .. kind .. ', not a lock')
      end
      return 0
    end
  end
end
for i = 1, n do
  redis.call('pexpire', KEYS[i], ARGV[2])
end
return 1
