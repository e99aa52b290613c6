-- Deletes the lock KEYS[1] whatever its token (a forced unlock), and
-- publishes the token it held on the key's channel, as a release does, so
-- that waiters try again. Returns 1 when a lock was deleted, 0 when there
-- was none; a key of another type is an error, and is left alone.
local value = redis.call('get', KEYS[1])
if not value then
  return 0
end
redis.call('del', KEYS[1])
redis.pcall('publish', KEYS[1], value)
return 1
