-- Deletes the lock KEYS[1] whatever its token (a forced unlock), and
-- publishes the token it held on the key's channel, as a release does, so
-- that waiters try again. Returns 1 when a lock was deleted, 0 when there
-- was none. Only a lock is deleted: a key with an expiry that holds a token
-- (32 hex digits: a plain, fair or write lock) or a read lock's list of
-- readers. Anything else (a typo's data, a key of another type) is an error
-- that says what was found, without its value, and is left alone.
-- function flags: allow-oom (it deletes or expires keys, and frees memory)
local value = redis.call('get', KEYS[1])
if not value then
  return 0
end
local token = #value == 32 and string.match(value, '^%x+$') ~= nil
local readers = string.sub(value, 1, 16) == 'redlock:readers '
local ttl = redis.call('pttl', KEYS[1])
if not (token or readers) or ttl < 0 then
  return redis.error_reply('WRONGTYPE the key holds a string of ' .. #value .. ' bytes'
    .. (ttl < 0 and ' without an expiry' or '') .. ', not a lock: left alone')
end
redis.call('del', KEYS[1])
redis.pcall('publish', KEYS[1], value)
return 1
