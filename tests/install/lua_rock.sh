#!/usr/bin/env bash
# lua_rock.sh SRC LUA_VERSION INTERPRETER - installs the Lua binding as a
# user does, `luarocks make` in bindings/lua, into a temporary rocks tree,
# then takes and releases locks with it on local nodes (take_lock.lua).
set -euo pipefail
src=$1
version=$2
lua=$3
tmp=$(mktemp -d)
trap '"$src/scripts/redis-nodes.sh" stop "$tmp/nodes"; rm -rf "$tmp"' EXIT

(cd "$src/bindings/lua" && luarocks --lua-version "$version" --tree "$tmp/tree" make >"$tmp/make.log" 2>&1) \
  || { cat "$tmp/make.log" >&2; exit 1; }
mapfile -t nodes < <("$src/scripts/redis-nodes.sh" start "$tmp/nodes" 3)
eval "$(luarocks --lua-version "$version" --tree "$tmp/tree" path)"
cd "$tmp"
"$lua" "$src/tests/install/take_lock.lua" rock-installed "${nodes[@]}"
