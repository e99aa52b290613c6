-- The public header through LuaJIT's ffi, with no glue: the preprocessed
-- redlock.h goes to ffi.cdef as it is, and the shared library is called
-- directly for a full lock, extend and unlock against three local nodes.
--     luajit test_luajit_ffi.lua LIBREDLOCK HEADER REDIS_NODES_SCRIPT [CC]
-- LIBREDLOCK and CC may also come from $REDLOCK_LIB and $CC.
local ffi = require "ffi"

local lib_path = arg[1] or os.getenv("REDLOCK_LIB")
local header, nodes_script = arg[2], arg[3]
local cc = arg[4] or os.getenv("CC") or "cc"
assert(lib_path and header and nodes_script,
       "usage: test_luajit_ffi.lua LIBREDLOCK HEADER REDIS_NODES_SCRIPT [CC]")

local function quote(text)
  return "'" .. text:gsub("'", "'\\''") .. "'"
end

local function sh(command)
  local pipe = assert(io.popen(command .. '; echo "exit=$?"'))
  local out = pipe:read("*a")
  pipe:close()
  local body, status = out:match("^(.-)exit=(%d+)%s*$")
  assert(status == "0", command .. " failed: " .. body)
  return body
end

-- The header as a C compiler sees it, without the line markers.
local lines = {}
for line in sh(quote(cc) .. " -E -P " .. quote(header)):gmatch("[^\n]+") do
  if not line:match("^%s*#") then
    lines[#lines + 1] = line
  end
end
ffi.cdef(table.concat(lines, "\n"))
local C = ffi.load(lib_path)

local failures = 0
local function check(cond, what)
  if cond then
    print("ok     " .. what)
  else
    failures = failures + 1
    print("FAILED " .. what .. "\n" .. debug.traceback())
  end
end

-- Status codes: macros do not survive the preprocessor; their values are
-- published in redlock.h and never change.
local ELOCKED, ENOTHELD, EINVAL = -1, -3, -4

local function errmsg() return ffi.string(C.redlock_errmsg()) end

local dir = sh("mktemp -d"):gsub("%s+$", "")
local uris = {}
for uri in sh(("bash %s start %s 3"):format(quote(nodes_script), quote(dir))):gmatch("%S+") do
  uris[#uris + 1] = uri
end

local function get(i, key)
  return (sh(("redis-cli -u %s GET %s"):format(quote(uris[i]), quote(key))):gsub("%s+$", ""))
end
local function pttl(i, key)
  return tonumber(sh(("redis-cli -u %s PTTL %s"):format(quote(uris[i]), quote(key))))
end

-- Replies are awaited from a quorum only, so a slow node may miss a write:
-- keys are checked on a quorum of the three nodes.
local QUORUM = 2

-- How many nodes store value under key.
local function holding(key, value)
  local n = 0
  for i = 1, #uris do
    if get(i, key) == value then n = n + 1 end
  end
  return n
end

local function new_ctx(list)
  local out = ffi.new("redlock_ctx *[1]")
  local array = ffi.new("const char *[?]", #list, list)
  local rc = C.redlock_ctx_new(out, array, #list)
  return rc, out[0]
end

local function run()
  check(C.redlock_version_number() == 10300, "redlock_version_number")
  check(ffi.string(C.redlock_version_string()) == "1.3.0", "redlock_version_string")
  check(ffi.string(C.redlock_strerror(ELOCKED)):find("someone else", 1, true) ~= nil,
        "redlock_strerror")

  local rc, ctx = new_ctx(uris)
  check(rc == 0 and ctx ~= nil, "redlock_ctx_new")
  check(C.redlock_ctx_set_option(ctx, "node_timeout_ms", "200") == 0, "set node_timeout_ms")
  check(C.redlock_ctx_set_option(ctx, "no_such_option", "1") == EINVAL, "unknown option is EINVAL")

  local name = "ffi-" .. os.time()
  local out = ffi.new("redlock_handle *[1]")
  rc = C.redlock_lock(out, ctx, name, 5000, 0)
  local h = out[0]
  check(rc == 0 and h ~= nil, "redlock_lock: " .. rc .. " " .. errmsg())
  local token = ffi.string(C.redlock_handle_token(h))
  check(#token == 32 and token:match("^[0-9a-f]+$") ~= nil, "token is 32 lowercase hex")
  local validity = tonumber(C.redlock_handle_validity_ms(h))
  check(validity > 0 and validity <= 5000, "validity within the lease: " .. validity)
  check(holding(name, token) >= QUORUM, "a quorum of nodes stores the token")

  local rc2, ctx2 = new_ctx(uris)
  assert(rc2 == 0)
  local out2 = ffi.new("redlock_handle *[1]", { ffi.cast("redlock_handle *", 1) })
  rc = C.redlock_lock(out2, ctx2, name, 5000, 0)
  check(rc == ELOCKED and out2[0] == nil, "another client gets ELOCKED and a NULL handle")
  check(errmsg() ~= "", "errmsg explains: " .. errmsg())

  check(C.redlock_extend(h, 20000) == 0, "redlock_extend")
  check(tonumber(C.redlock_handle_validity_ms(h)) > 10000, "validity after extend")
  local renewed = 0
  for i = 1, #uris do
    if pttl(i, name) > 10000 then renewed = renewed + 1 end
  end
  check(renewed >= QUORUM, "the nodes' ttl after extend")

  local names = { name .. "-a", name .. "-b" }
  local multi = ffi.new("redlock_handle *[1]")
  rc = C.redlock_lock_multi(multi, ctx2, ffi.new("const char *[2]", names), 2, 5000, 0)
  check(rc == 0 and multi[0] ~= nil, "redlock_lock_multi")
  local multi_token = ffi.string(C.redlock_handle_token(multi[0]))
  check(holding(names[1], multi_token) >= QUORUM and holding(names[2], multi_token) >= QUORUM,
        "multi keys stored")
  check(C.redlock_unlock(multi[0]) == 0, "multi unlock")
  C.redlock_handle_free(multi[0])

  check(C.redlock_unlock(h) == 0, "redlock_unlock")
  check(tonumber(C.redlock_handle_validity_ms(h)) <= 0, "no validity after unlock")
  check(holding(name, token) < QUORUM, "the key is gone from a quorum of nodes")
  check(C.redlock_unlock(h) == ENOTHELD, "a second unlock is ENOTHELD")
  check(C.redlock_extend(h, 1000) == ENOTHELD, "extend after unlock is ENOTHELD")
  C.redlock_handle_free(h)

  rc = C.redlock_lock(out, nil, name, 1000, 0)
  check(rc == EINVAL and out[0] == nil, "NULL ctx is EINVAL")
  rc = C.redlock_lock(out, ctx, name, 0, 0)
  check(rc == EINVAL, "ttl 0 is EINVAL")
  local bad
  rc, bad = new_ctx({ "rediss://127.0.0.1:0" })
  check(rc == EINVAL and bad == nil, "a bad rediss:// URI is EINVAL")
  C.redlock_handle_free(nil)
  C.redlock_ctx_free(nil)
  C.redlock_ctx_free(ctx2)
  C.redlock_ctx_free(ctx)
end

local ok, err = pcall(run)
sh(("bash %s stop %s; rm -rf %s"):format(quote(nodes_script), quote(dir), quote(dir)))
if not ok then
  failures = failures + 1
  print("FAILED " .. tostring(err))
end
print(failures == 0 and "all passed" or failures .. " failed")
os.exit(failures == 0 and 0 or 1)
