-- Renews many locks in one call: KEYS[i] is set to the lease ARGV[2i] ms
-- when it holds the token ARGV[2i-1]. Returns one integer per key: 1
-- extended, 0 not ours (absent, or another token), -1 a key of another type.
-- Keys go to MGET in chunks, so unpack() stays within Lua's stack.
-- function flags: allow-oom (it deletes or expires keys, and frees memory)
local n, chunk = #KEYS, 500
local out = {}
for first = 1, n, chunk do
  local last = math.min(first + chunk - 1, n)
  local values = redis.call('mget', unpack(KEYS, first, last))
  for i = first, last do
    local value = values[i - first + 1]
    if value == ARGV[2 * i - 1] then
      redis.call('pexpire', KEYS[i], ARGV[2 * i])
      out[i] = 1
    elseif value then
      out[i] = 0
    else
      local kind = redis.call('type', KEYS[i]).ok
      out[i] = (kind == 'none' or kind == 'string') and 0 or -1
    end
  end
end
return out
