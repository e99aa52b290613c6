-- Reads the lock KEYS[1] for a query (is it held, for how long): its value,
-- the holder's token (false when there is no key), and its PTTL in ms (-1:
-- no expiry). A key of another type is an error.
-- function flags: no-writes
return { redis.call('get', KEYS[1]) or false, redis.call('pttl', KEYS[1]) }
