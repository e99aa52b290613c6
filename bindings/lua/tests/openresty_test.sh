#!/usr/bin/env bash
# The Lua binding inside nginx with the lua module (OpenResty's runtime):
# two workers serve /work, which takes one shared lock, counts the holders in
# a shared dict around an ngx.sleep, and releases. Concurrent requests must
# never see two holders at once, and must get the lock.
#
#   openresty_test.sh NGINX NDK_MODULE LUA_MODULE MODULE_DIR REDIS_NODES_SCRIPT
#
# MODULE_DIR holds redlock.lua and redlock_core.so built for LuaJIT.
set -euo pipefail

if [ $# -ne 5 ]; then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 64
fi
nginx=$1 ndk_module=$2 lua_module=$3 module_dir=$4 nodes_script=$5
requests=20

tmp=$(mktemp -d)
nginx_pid=
cleanup() {
  if [ -n "$nginx_pid" ]; then
    kill -QUIT "$nginx_pid" 2>/dev/null || true
    wait "$nginx_pid" 2>/dev/null || true
  fi
  bash "$nodes_script" stop "$tmp/nodes" || true
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
  echo "FAILED: $*" >&2
  echo "--- nginx error log:" >&2
  cat "$tmp/error.log" >&2 || true
  exit 1
}

bash "$nodes_script" start "$tmp/nodes" 3 > /dev/null
port=$(bash "$nodes_script" free-port) || fail "no free port"

# The handlers. The client is made in each worker on its first request.
cat > "$tmp/app.lua" <<EOF
local redlock = require "redlock"
local state = ngx.shared.state
local app = {}
local client

local function get_client()
  if not client then
    local uris = {}
    for uri in io.lines("$tmp/nodes/uris") do
      uris[#uris + 1] = uri
    end
    client = assert(redlock.new(uris, { node_timeout_ms = 500, connect_timeout_ms = 1000,
                                        retry_delay_ms = 20, retry_jitter_ms = 10 }))
  end
  return client
end

function app.work()
  local lock = get_client():get_lock("shared")
  local ok, err = lock:try_lock(15000, 10000)
  if not ok then
    state:incr("refused", 1, 0)
    ngx.status = 409
    ngx.say(tostring(err))
    return
  end
  if state:incr("inside", 1, 0) > 1 then
    state:incr("overlaps", 1, 0)
  end
  ngx.sleep(0.02)
  state:incr("inside", -1)
  local released, unlock_err = lock:unlock()
  if not released then
    ngx.status = 500
    ngx.say(tostring(unlock_err))
    return
  end
  state:incr("done", 1, 0)
  ngx.say("ok")
end

function app.stats()
  ngx.say(state:get("done") or 0, " ", state:get("overlaps") or 0, " ",
          state:get("refused") or 0)
end

return app
EOF

user_line=
if [ "$(id -u)" = 0 ]; then
  user_line="user root;"
fi
cat > "$tmp/nginx.conf" <<EOF
load_module $ndk_module;
load_module $lua_module;
$user_line
worker_processes 2;
pid $tmp/nginx.pid;
error_log $tmp/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $tmp/body;
  proxy_temp_path $tmp/proxy;
  fastcgi_temp_path $tmp/fastcgi;
  uwsgi_temp_path $tmp/uwsgi;
  scgi_temp_path $tmp/scgi;
  lua_package_path "$module_dir/?.lua;$tmp/?.lua;;";
  lua_package_cpath "$module_dir/?.so;;";
  lua_shared_dict state 1m;
  server {
    listen 127.0.0.1:$port;
    location = /work { content_by_lua_block { require("app").work() } }
    location = /stats { content_by_lua_block { require("app").stats() } }
  }
}
EOF

"$nginx" -p "$tmp" -c "$tmp/nginx.conf" -e "$tmp/error.log" -g 'daemon off;' &
nginx_pid=$!
for _ in $(seq 1 500); do
  curl -s -o /dev/null "http://127.0.0.1:$port/stats" && break
  kill -0 "$nginx_pid" 2>/dev/null || fail "nginx did not start"
  sleep 0.01
done

# Concurrent requests, each to its own files.
for i in $(seq 1 "$requests"); do
  curl -s -o "$tmp/body.$i" -w '%{http_code}\n' "http://127.0.0.1:$port/work" > "$tmp/code.$i" &
done
wait $(jobs -p | grep -vx "$nginx_pid")

read -r done overlaps refused < <(curl -s "http://127.0.0.1:$port/stats")
ok=$(cat "$tmp"/code.* | grep -c '^200$' || true)
echo "requests $requests, served with the lock $done ($ok answered 200), refused $refused, overlaps $overlaps"

[ "$overlaps" = 0 ] || fail "two requests held the lock at once ($overlaps times)"
[ "$done" -ge 1 ] || fail "no request got the lock: $(cat "$tmp"/body.* | sort | uniq -c)"
[ "$ok" = "$done" ] || fail "$ok answers 200 but $done requests counted"
[ $((done + refused)) = "$requests" ] || fail "unaccounted requests: $(cat "$tmp"/body.* | sort | uniq -c)"
if grep -E '\[(error|alert|crit|emerg)\]' "$tmp/error.log"; then
  fail "errors in the nginx log"
fi
echo "passed"
