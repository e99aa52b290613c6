-- Deletes each key in KEYS whose value is the token ARGV[1], and publishes
-- the token on a channel named after each key it deleted (a wake-up for the
-- clients waiting for it; pcall: without the channel permission in the ACL
-- the release still happens, and waiters fall back on their timed retries).
-- Returns how many keys were deleted; a key of another type is an error.
-- Keys go to MGET and DEL in chunks, so unpack() stays within Lua's stack.
-- Of several keys, only the channels someone listens to here get their
-- message: one PUBSUB NUMSUB instead of a PUBLISH a key, which a multi-lock
-- of many keys would otherwise pay for every key. Every channel gets it on
-- a Cluster node (ARGV[2] 'c': a PUBLISH reaches the subscribers of every
-- node there, not only of this one), when pattern subscribers listen, and
-- when the counts cannot be read.
-- function flags: allow-oom (it deletes or expires keys, and frees memory)
local n, chunk, deleted = #KEYS, 1000, 0
if n == 1 then
  -- One key, the common case, in the fewest calls.
  local value = redis.pcall('get', KEYS[1])
  if value == ARGV[1] then
    local n = redis.call('del', KEYS[1])
    redis.pcall('publish', KEYS[1], ARGV[1])
    return n
  elseif type(value) ~= 'table' then
    return 0
  end
end
for first = 1, n, chunk do
  local last = math.min(first + chunk - 1, n)
  local values = redis.call('mget', unpack(KEYS, first, last))
  local ours = {}
  for i = first, last do
    local value = values[i - first + 1]
    if value == ARGV[1] then
      ours[#ours + 1] = KEYS[i]
    elseif not value then
      local kind = redis.call('type', KEYS[i]).ok
      if kind ~= 'none' then
        return redis.error_reply('WRONGTYPE key ' .. KEYS[i] .. ' holds a ' .. kind .. ', not a lock')
      end
    end
  end
  if #ours > 0 then
    deleted = deleted + redis.call('del', unpack(ours))
    local counts = ARGV[2] ~= 'c' and redis.pcall('pubsub', 'numpat') == 0
                   and redis.pcall('pubsub', 'numsub', unpack(ours))
    for i, key in ipairs(ours) do
      if type(counts) ~= 'table' or counts.err or counts[2 * i] ~= 0 then
        redis.pcall('publish', key, ARGV[1])
      end
    end
  end
end
return deleted
