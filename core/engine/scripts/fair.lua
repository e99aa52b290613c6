-- A fair lock on KEYS[1] (docs/kinds.md): held as a plain lock is (KEYS[1]
-- holds the holder's token; extended by the plain lock's script), taken in
-- the order its waiters arrived. KEYS[2] holds the queue: a counter, then
-- each waiter as "ticket:id:expiry" (expiry in this server's TIME, ms). A
-- waiter is first given a ticket (one more than the counter of every node
-- it asks), then queued under the largest; all nodes order their queues by
-- ticket, then id, so the same waiter heads each of them. A release wakes
-- the head alone, on its own channel (KEYS[1], ':waiter:' and its id).
-- ARGV[1]: the call: 'acquire' or 'release'; ARGV[2]: the token of this
-- attempt; acquire: ARGV[3] the lease in ms, ARGV[4] the waiter's id (the
-- same for all its attempts), ARGV[5] its ticket (0: none yet), ARGV[6] how
-- long its place is kept without a new attempt, in ms; release: ARGV[3] the
-- id the holder waited under, whose place goes (on a node that refused it
-- while it was let in elsewhere), or '' (a failed attempt's release); or,
-- for a failed attempt of a waiter that goes on waiting, ARGV[3] its id,
-- ARGV[4] its ticket and ARGV[5] how long its place is kept: where the
-- attempt took the lock (and so left the queue), the waiter is queued
-- again, so that the waiters behind it do not pass it while it pauses.
-- acquire returns {1, ticket} when taken, {0, ticket} when not (ticket: the
-- waiter's here, or the one this node gives it); release returns 1 when the
-- lock was the token's, else 0.
local call, token = ARGV[1], ARGV[2]
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function value(key, what)
  local v = redis.pcall('get', key)
  if type(v) == 'table' then
    return nil, redis.error_reply('WRONGTYPE key ' .. what .. ' holds a '
                                  .. redis.call('type', key).ok .. ', not a lock')
  end
  return v
end

local holder, bad = value(KEYS[1], KEYS[1])
if bad then
  return bad
end
local state
state, bad = value(KEYS[2], 'of the queue of ' .. KEYS[1])
if bad then
  return bad
end

-- The counter and the live waiters, the head (lowest ticket, then id) first.
local counter = tonumber(string.match(state or '', '^(%d+)')) or 0
local queue = {}
for ticket, id, ends in string.gmatch(state or '', ' (%d+):(%x+):(%d+)') do
  if tonumber(ends) > now then
    queue[#queue + 1] = { ticket = tonumber(ticket), id = id, ends = tonumber(ends) }
  end
end
local function before(a, b)
  return a.ticket < b.ticket or (a.ticket == b.ticket and a.id < b.id)
end
table.sort(queue, before)

local function store()
  local parts, last = { tostring(counter) }, 0
  for _, w in ipairs(queue) do
    parts[#parts + 1] = w.ticket .. ':' .. w.id .. ':' .. w.ends
    last = math.max(last, w.ends)
  end
  if last <= now then
    last = now + tonumber(ARGV[6] or 0)
  end
  if last <= now then
    redis.call('del', KEYS[2])
  else
    redis.call('set', KEYS[2], table.concat(parts, ' '), 'px', last - now)
  end
end

-- Waiter id's place, under ticket, kept keep_ms from now: found in the
-- queue, or put there in its order.
local function queued(id, ticket, keep_ms)
  counter = math.max(counter, ticket)
  local mine
  for _, w in ipairs(queue) do
    if w.id == id then
      mine = w
    end
  end
  if not mine then
    mine = { ticket = ticket, id = id }
    queue[#queue + 1] = mine
    table.sort(queue, before)
  end
  mine.ends = now + tonumber(keep_ms)
  return mine
end

if call == 'acquire' then
  local id, ticket = ARGV[4], tonumber(ARGV[5])
  if holder == token then
    return { 1, ticket }
  end
  if ticket == 0 then
    -- A first attempt: taken when nobody holds it or waits; else a ticket.
    if not holder and #queue == 0 then
      redis.call('set', KEYS[1], token, 'px', ARGV[3])
      return { 1, 0 }
    end
    counter = counter + 1
    store()
    return { 0, counter }
  end
  local mine = queued(id, ticket, ARGV[6])
  if not holder and queue[1] == mine then
    table.remove(queue, 1)
    redis.call('set', KEYS[1], token, 'px', ARGV[3])
    store()
    return { 1, ticket }
  end
  store()
  return { 0, ticket }
elseif call == 'release' then
  local requeue = ARGV[4] ~= nil
  if ARGV[3] ~= '' and not requeue then
    for i, w in ipairs(queue) do
      if w.id == ARGV[3] then
        table.remove(queue, i)
        store()
        break
      end
    end
  end
  if holder ~= token then
    return 0
  end
  redis.call('del', KEYS[1])
  if requeue then
    queued(ARGV[3], tonumber(ARGV[4]), ARGV[5])
    store()
  end
  if queue[1] then
    redis.pcall('publish', KEYS[1] .. ':waiter:' .. queue[1].id, token)
  else
    redis.pcall('publish', KEYS[1], token)
  end
  return 1
end
return redis.error_reply('fair.lua: unknown call ' .. tostring(call))
