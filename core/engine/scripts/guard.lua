-- The guard of a server that may have lost keys (docs/guarantees.md), run
-- once on each new connection. KEYS[1]: the guard key; ARGV[1]: how long
-- its votes for new keys do not count once it may have lost some (the
-- longest lease of any client, max_lease_ms, and on a Sentinel group's
-- master sentinel_poll_ms more: rl_node_guard_ms); ARGV[2]: for a Sentinel
-- group's master, the group's failover count (the sentinels'
-- config-epoch), else -1.
-- The key holds "<run_id> <epoch> <until>": the server that wrote it, the
-- failover count it was written in, and until when (in that server's own
-- TIME, ms) its votes for new keys do not count. A server that finds
-- another server's run_id there (a replica promoted with its old master's
-- copy, a server restarted with its data), or a count of failovers older
-- than the sentinels' (promoted since, maybe before its copy was whole),
-- may lack keys written before: it writes its own record with until =
-- now + max_lease. Without the key, a server is fresh, unless its group
-- has failed over or it was promoted (a second replication id). A record
-- that does not read as one is another server's. Returns the milliseconds
-- its votes do not count for, never more than ARGV[1].
local id = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
-- A replica promoted (by Sentinel, a Cluster or by hand) has a second
-- replication id until its next full sync: without a record, it is no
-- fresh server.
local id2 = string.match(redis.call('INFO', 'replication'), 'master_replid2:(%x+)')
local promoted = id2 ~= nil and string.match(id2, '[^0]') ~= nil
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local epoch = tonumber(ARGV[2])
local seen = redis.call('GET', KEYS[1])
local was, at_epoch, at
if seen then
  was, at_epoch, at = string.match(seen, '^(%x+) (%-?%d+) (%d+)$')
end
local until_ms
if was == id and tonumber(at_epoch) >= epoch then
  until_ms = tonumber(at)
  -- A time further than a guard's length ahead was never written by a
  -- client (a forged or garbled record): it becomes a guard of that length
  -- from now, so that no record holds a server back longer.
  if until_ms > now + tonumber(ARGV[1]) then
    until_ms = now + tonumber(ARGV[1])
    redis.call('SET', KEYS[1], id .. ' ' .. at_epoch .. ' ' .. until_ms)
  end
else
  until_ms = 0
  if seen or epoch > 0 or promoted then
    until_ms = now + tonumber(ARGV[1])
  end
  redis.call('SET', KEYS[1], id .. ' ' .. epoch .. ' ' .. until_ms)
end
if until_ms > now then
  return until_ms - now
end
return 0
