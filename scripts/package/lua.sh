#!/usr/bin/env bash
# lua.sh - the Lua rocks (scripts/package.sh runs it).
set -euo pipefail
. "$REDLOCK_SRC/scripts/package/lib.sh"
# A binary rock per Lua ABI: 5.4, and 5.1 for LuaJIT and OpenResty. Both
# are named for the platform alone, hence a folder each.
for lua in 5.4 5.1; do
  step "Lua $lua rock" "lua-$lua.log" \
    bash -c 'cd "$1/bindings/lua" && luarocks --lua-version "$2" --tree "$3" make' _ \
      "$REDLOCK_SRC" "$lua" "$REDLOCK_WORK/lua-$lua"
  mkdir -p "$REDLOCK_DIST/lua-$lua"
  (cd "$REDLOCK_DIST/lua-$lua" && luarocks --lua-version "$lua" --tree "$REDLOCK_WORK/lua-$lua" pack redlock >/dev/null)
done
