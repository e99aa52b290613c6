-- Raises the fencing counter of each key in KEYS (the key followed by a zero
-- byte and 'fence') to at least ARGV[i + 1], if every key still holds the
-- token ARGV[1]: an acquisition's fence written back to the nodes of its
-- quorum that counted less. Returns 1 when done, 0 when a key is not ours
-- (and then nothing changed).
for i = 1, #KEYS do
  if redis.call('get', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
-- After the counters, 'c' on a Cluster node: the counter of a key without a
-- hash tag is named with the key as its tag (as acquire.lua names it).
local cluster = ARGV[#KEYS + 2] == 'c'
for i = 1, #KEYS do
  local counter = KEYS[i] .. '\0fence'
  local open = string.find(KEYS[i], '{', 1, true)
  local close = open and string.find(KEYS[i], '}', open + 1, true)
  if cluster and not (close and close > open + 1) then
    counter = '{' .. KEYS[i] .. '}\0fence'
  end
  if tonumber(redis.call('get', counter) or '0') < tonumber(ARGV[i + 1]) then
    redis.call('set', counter, ARGV[i + 1])
  end
end
return 1
