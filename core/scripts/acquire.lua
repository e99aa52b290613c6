-- Takes every key in KEYS for token ARGV[1] with lease ARGV[2] ms, or none.
-- Returns 1 when all were taken, 0 when one of them is held by another
-- token. A key that already holds ARGV[1] counts as taken (a command resent
-- after a lost connection finds its own earlier success), and its lease is
-- set again. Keys go to EXISTS and MGET in chunks, so unpack() stays within
-- Lua's stack.
local n, chunk = #KEYS, 1000
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
for i = 1, n do
  redis.call('set', KEYS[i], ARGV[1], 'px', ARGV[2])
end
return 1
