"""redlock.resty_lock, lua-resty-lock's API over a Redlock, inside a real
nginx with the lua module: requests in two workers and two phases exclude
each other (a read-modify-write counter in a shared dict loses no update,
where the same code without the lock does); the return values and errors
of new, lock, unlock and expire; the cache-lock pattern of lua-resty-lock's
documentation, written for resty.lock with only its require changed,
fetches a value once for many concurrent requests; the phases without
cosockets get an error.

Run by CTest with the environment of test_openresty.py, whose nginx and
nodes it uses: REDLOCK_NGINX, REDLOCK_NGINX_NDK_MODULE,
REDLOCK_NGINX_LUA_MODULE and REDLOCK_LUA_DIR.
"""

from concurrent.futures import ThreadPoolExecutor

from test_openresty import CONF_START, nginx_factory, nodes  # noqa: F401 (fixtures)

APP = r"""
local resty_lock = require "redlock.resty_lock"
local state = ngx.shared.state
local app = {}

-- A read-modify-write of ?counter in the shared dict, under the lock of
-- that name (?lock=0: without it), with a pause between the read and the
-- write in which other requests run. Returns what went wrong, or nil. (No
-- ngx.exit: it would end the light threads reading the nodes' late replies.)
local function count()
  local name = ngx.var.arg_counter
  local lock, err, elapsed
  if ngx.var.arg_lock ~= "0" then
    lock, err = resty_lock:new("counters", { timeout = 20, exptime = 10 })
    if not lock then
      return "new: " .. err
    end
    elapsed, err = lock:lock(name)
    if not elapsed then
      return "lock: " .. err
    end
  end
  local n = state:get(name) or 0
  ngx.sleep(0.005)
  state:set(name, n + 1)
  state:incr(name .. ":worker" .. ngx.worker.id(), 1, 0)
  if lock then
    local ok, unlock_err = lock:unlock()
    if not ok then
      return "unlock: " .. unlock_err
    end
  end
end

-- count() in the phase it runs in (access or content); the content phase
-- answers.
function app.count()
  if ngx.get_phase() == "access" then
    ngx.ctx.failed = count() or false
    return
  end
  local failed = ngx.ctx.failed
  if failed == nil then
    failed = count()
  end
  if failed then
    ngx.status = 500
  end
  ngx.say(failed or "ok")
end

function app.stats()
  local name = ngx.var.arg_counter
  ngx.say(state:get(name) or 0, " ", state:get(name .. ":worker0") or 0, " ",
          state:get(name .. ":worker1") or 0)
end

-- One line per call: its name and what it returned, as text.
local function said(what, ...)
  local words = { what }
  for i = 1, select("#", ...) do
    local value = select(i, ...)
    -- An error of the library shows as its code's word.
    words[#words + 1] = type(value) == "string" and (value:match("^(%l+): ") or value)
                        or tostring(value)
  end
  ngx.say(table.concat(words, " "))
end

-- What new, lock, unlock and expire return, in order.
function app.shapes()
  local key = "shapes-" .. ngx.var.request_id
  local a = assert(resty_lock:new("my_locks", { exptime = 5, timeout = 0.2 }))
  local b = assert(resty_lock:new("my_locks", { exptime = 5, timeout = 0.2 }))
  said("first", a:lock(key))
  said("held-elsewhere", b:lock(key))
  said("same-object", a:lock(key))
  said("same-object-other-key", a:lock(key .. "-other"))

  -- a is released 0.3 s from now, by a light thread.
  local released = false
  local releaser = ngx.thread.spawn(function()
    ngx.sleep(0.3)
    released = true
    return a:unlock()
  end)
  local at_once = assert(resty_lock:new("my_locks", { timeout = 0 }))
  local elapsed, err = at_once:lock(key)
  said("timeout-0", elapsed, err, released)
  local waiter = assert(resty_lock:new("my_locks", { timeout = 5 }))
  elapsed, err = waiter:lock(key)
  local _, unlocked = ngx.thread.wait(releaser)
  said("waited", type(elapsed), elapsed and elapsed > 0, err, released, unlocked)
  said("unlock", waiter:unlock())
  said("unlock-again", waiter:unlock())
  said("expire-unheld", waiter:expire(5))
  said("nil-key", waiter:lock(nil))

  -- exptime 0.6 s: one lock extended to 3 s, one extended by expire() (its
  -- exptime again, from then), one left to expire.
  local extended = assert(resty_lock:new("my_locks", { exptime = 0.6 }))
  local again = assert(resty_lock:new("my_locks", { exptime = 0.6 }))
  local left = assert(resty_lock:new("my_locks", { exptime = 0.6 }))
  said("locks", extended:lock(key .. "-x"), again:lock(key .. "-a"), left:lock(key .. "-l"))
  said("expire", extended:expire(3))
  ngx.sleep(0.4)
  said("expire-default", again:expire())
  ngx.sleep(0.4)
  local probe = assert(resty_lock:new("my_locks", { timeout = 0 }))
  said("probe-extended", probe:lock(key .. "-x"))
  said("probe-expire-default", probe:lock(key .. "-a"))
  said("probe-left", probe:lock(key .. "-l"))
  said("probe-unlock", probe:unlock())
  said("unlock-extended", extended:unlock())
  said("unlock-expire-default", again:unlock())
  said("unlock-left", left:unlock())
  said("expire-after-unlock", extended:expire())

  -- Bad options: nil and why, as for a missing dict in lua-resty-lock.
  for _, case in ipairs({ { "exptime", { exptime = 0 } }, { "timeout", { timeout = -1 } },
                          { "step", { step = 0 } }, { "ratio", { ratio = "2" } },
                          { "max_step", { max_step = -0.5 } }, { "name", { exptim = 1 } },
                          { "client", { client = {} } } }) do
    local lock, problem = resty_lock:new("my_locks", case[2])
    said("bad-" .. case[1], lock, problem and problem:match("^bad %S+"))
  end
  local no_dict, problem = resty_lock:new(nil)
  said("bad-dict", no_dict, problem:match("^bad %S+"))
  said("with-a-dot", type(resty_lock.new("my_locks", { timeout = 1 })))
  said("in-init", INIT_ANSWER[1], INIT_ANSWER[2], INIT_ANSWER[3])
end

return app
"""

# The cache-lock pattern as lua-resty-lock's documentation describes it (look
# in the cache, lock, look again, fetch, store, unlock), written for
# resty.lock: only its first line names this module.
CACHE = r"""
local resty_lock = require "redlock.resty_lock"
local cache = ngx.shared.my_cache

-- The slow source of the values, which counts its calls.
local function from_backend(key)
  ngx.shared.state:incr("fetches", 1, 0)
  ngx.sleep(0.05)
  return "value of " .. key
end

local function failed(...)
  ngx.status = 500
  ngx.say(...)
end

return function(key)
  local value = cache:get(key)
  if value then
    ngx.say(value)
    return
  end

  local lock, err = resty_lock:new("cache_locks")
  if not lock then
    return failed("cannot make the lock: ", err)
  end
  local elapsed, lock_err = lock:lock(key)
  if not elapsed then
    return failed("cannot lock: ", lock_err)
  end

  -- The holder before us may have filled it.
  value = cache:get(key)
  if not value then
    value = from_backend(key)
    local stored, set_err = cache:set(key, value, 60)
    if not stored then
      lock:unlock()
      return failed("cannot store: ", set_err)
    end
  end

  local ok, unlock_err = lock:unlock()
  if not ok then
    return failed("cannot unlock: ", unlock_err)
  end
  ngx.say(value)
end
"""

CONF = CONF_START + r"""
  lua_shared_dict my_cache 1m;
  init_by_lua_block {{
    local resty_lock = require "redlock.resty_lock"
    local uris = {{}}
    for uri in io.lines("{nodes}") do
      uris[#uris + 1] = uri
    end
    assert(resty_lock.configure(uris, {{ key_prefix = "resty:", node_timeout_ms = 500,
                                        retry_delay_ms = 20, retry_jitter_ms = 10 }}))
    -- The master has no cosockets: the lock says so (and makes no client).
    local lock = assert(resty_lock:new("my_locks"))
    INIT_ANSWER = {{ lock:lock("init") }}
  }}
  server {{
    listen 127.0.0.1:{port} reuseport;
    keepalive_requests 100000;
    location = /ping {{ content_by_lua_block {{ ngx.say("pong") }} }}
    location = /count {{ content_by_lua_block {{ require("app").count() }} }}
    location = /count_in_access {{
      access_by_lua_block {{ require("app").count() }}
      content_by_lua_block {{ require("app").count() }}
    }}
    location = /stats {{ content_by_lua_block {{ require("app").stats() }} }}
    location = /shapes {{ content_by_lua_block {{ require("app").shapes() }} }}
    location = /cached {{ content_by_lua_block {{ require("cache")(ngx.var.arg_key) }} }}
    location = /filter {{
      content_by_lua_block {{ ngx.say("body") }}
      header_filter_by_lua_block {{
        local lock = require("redlock.resty_lock"):new("my_locks")
        local elapsed, err = lock:lock("filtered")
        ngx.header["X-Lock"] = tostring(elapsed) .. " " .. tostring(err)
      }}
    }}
  }}
}}
"""


def start(nginx_factory, workers):
    nginx = nginx_factory(workers=workers, app=APP, conf=CONF)
    (nginx.tmp / "cache.lua").write_text(CACHE)
    return nginx


def concurrently(nginx, paths, threads=10):
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(nginx.get, paths))


def test_requests_in_two_workers_and_two_phases_exclude_each_other(nginx_factory):
    nginx = start(nginx_factory, workers=2)
    n = 120
    paths = [("/count", "/count_in_access")[i % 2] + "?counter=locked" for i in range(n)]
    answers = concurrently(nginx, paths)
    assert [status for status, _, _ in answers] == [200] * n, \
        [body for status, body, _ in answers if status != 200][:3]
    total, worker0, worker1 = map(int, nginx.get("/stats?counter=locked")[1].split())
    assert total == n
    assert worker0 + worker1 == n and worker0 > 0 and worker1 > 0, (worker0, worker1)

    # The same requests without the lock lose updates: the count can tell.
    answers = concurrently(nginx, ["/count?counter=unlocked&lock=0" for _ in range(n)])
    assert [status for status, _, _ in answers] == [200] * n
    assert int(nginx.get("/stats?counter=unlocked")[1].split()[0]) < n


def test_what_new_lock_unlock_and_expire_return(nginx_factory):
    nginx = start(nginx_factory, workers=1)
    status, body, _ = nginx.get("/shapes")
    assert status == 200, body
    assert body.splitlines() == [
        "first 0",
        "held-elsewhere nil timeout",
        "same-object nil locked",
        "same-object-other-key nil locked",
        "timeout-0 nil timeout false",
        "waited number true nil true 1",
        "unlock 1",
        "unlock-again nil unlocked",
        "expire-unheld nil unlocked",
        "nil-key nil nil key",
        "locks 0 0 0",
        "expire true",
        "expire-default true",
        "probe-extended nil timeout",
        "probe-expire-default nil timeout",
        "probe-left 0",
        "probe-unlock 1",
        "unlock-extended 1",
        "unlock-expire-default 1",
        "unlock-left nil notheld notheld",
        "expire-after-unlock nil unlocked",
        "bad-exptime nil bad exptime:",
        "bad-timeout nil bad timeout:",
        "bad-step nil bad step:",
        "bad-ratio nil bad ratio:",
        "bad-max_step nil bad max_step:",
        "bad-name nil bad opts:",
        "bad-client nil bad client:",
        "bad-dict nil bad dict_name:",
        "with-a-dot table",
        "in-init nil unsupported unsupported",
    ], body


def test_the_cache_lock_pattern_fetches_once_for_many_requests(nginx_factory):
    nginx = start(nginx_factory, workers=2)
    answers = concurrently(nginx, ["/cached?key=report"] * 40)
    assert [(status, body) for status, body, _ in answers] == [(200, "value of report\n")] * 40
    # One request fetched it, the others found it in the cache once they had
    # the lock, or before they needed it.
    status, body, _ = nginx.get("/stats?counter=fetches")
    assert status == 200 and body.split()[0] == "1", body


def test_a_phase_without_cosockets_gets_an_error(nginx_factory):
    nginx = start(nginx_factory, workers=1)
    status, body, response = nginx.get("/filter")
    assert status == 200 and body == "body\n"
    header = response.getheader("X-Lock")
    assert header.startswith("nil unsupported: "), header
    assert "header_filter" in header, header
