-- Deletes each key in KEYS whose value is the token ARGV[1].
-- Returns how many keys were deleted.
local deleted = 0
for i = 1, #KEYS do
  if redis.call('get', KEYS[i]) == ARGV[1] then
    redis.call('del', KEYS[i])
    deleted = deleted + 1
  end
end
return deleted
