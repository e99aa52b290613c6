-- Takes every key in KEYS for token ARGV[1] with lease ARGV[2] ms, or none.
-- Returns 1 when all were taken, 0 when one of them is held already.
for i = 1, #KEYS do
  local kind = redis.call('type', KEYS[i]).ok
  if kind == 'string' then
    return 0
  elseif kind ~= 'none' then
    return redis.error_reply('WRONGTYPE key ' .. KEYS[i] .. ' holds a ' .. kind .. ', not a lock')
  end
end
for i = 1, #KEYS do
  redis.call('set', KEYS[i], ARGV[1], 'px', ARGV[2])
end
return 1
