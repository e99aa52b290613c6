-- Sets the lease of every key in KEYS to ARGV[2] ms if all hold the token
-- ARGV[1]. Returns 1 when extended, 0 when any key is not ours.
for i = 1, #KEYS do
  if redis.call('get', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
for i = 1, #KEYS do
  redis.call('pexpire', KEYS[i], ARGV[2])
end
return 1
