#!/usr/bin/env bash
# lua.sh - the Lua rocks (scripts/package.sh runs it): a binary rock per Lua
# ABI (5.4; 5.1 for LuaJIT and OpenResty) and per glibc target,
# lua-ABI/redlock-V-1.linux-ARCH.rock. A rock is named for its platform
# alone, hence a folder per ABI. Each is the module built by zig for the
# target (bindings/lua as a project of its own) and the Lua files
# (redlock.lua, redlock/*.lua), in the layout `luarocks pack` gives
# (rock_manifest, the rockspec, lib/, lua/, doc/), with the project's and
# hiredis' licenses; the rockspec's description names the hiredis inside, as doc/hiredis-NOTICE does.
set -euo pipefail
. "$REDLOCK_SRC/scripts/package/lib.sh"
rockspec=$REDLOCK_SRC/bindings/lua/redlock-$REDLOCK_VERSION-1.rockspec
[ -f "$rockspec" ] || { echo "package: no $rockspec" >&2; exit 1; }

# The headers of each ABI: Lua 5.4's and LuaJIT's, copied into the sysroot
# (no zig build may look into the build machine's /usr/include).
declare -A headers=([5.4]=/usr/include/lua5.4 [5.1]=/usr/include/luajit-2.1)
for target in $REDLOCK_GLIBC_TARGETS; do
  for lua in 5.4 5.1; do
    incdir=$(sysroot "$target")/include/lua-$lua
    mkdir -p "$incdir"
    cp -L "${headers[$lua]}"/*.h "$incdir/"
    # Debian's luaconf.h names its multiarch folder in a header of its own
    # (for the default module paths, which the module does not use).
    printf '#define DEB_HOST_MULTIARCH "%s-linux-gnu"\n' "$(arch "$target")" \
      >"$incdir/lua$lua-deb-multiarch.h"
    build=$REDLOCK_WORK/lua-$lua-$target
    stage=$REDLOCK_WORK/rock-$lua-$target
    step "Lua $lua module for $target" "lua-$lua-$target.log" bash -c '
      . "$REDLOCK_SRC/scripts/package/lib.sh"
      cross_cmake "$1" "$REDLOCK_SRC/bindings/lua" "$2" -DREDLOCK_LUA_INCDIR="$3" \
        -DREDLOCK_LUA_CMOD="$4/lib" -DREDLOCK_LUA_LMOD="$4/lua" &&
      cmake --build "$2" && cmake --install "$2"' _ "$target" "$build" "$incdir" "$stage"
    mkdir -p "$stage/doc" "$REDLOCK_DIST/lua-$lua"
    cp "$REDLOCK_SRC/bindings/lua/README.md" "$REDLOCK_SRC/LICENSE" "$stage/doc/"
    cp "$(sysroot "$target")/share/licenses/hiredis/COPYING" "$stage/doc/hiredis-COPYING"
    cp "$(sysroot "$target")/share/licenses/hiredis/NOTICE" "$stage/doc/hiredis-NOTICE"
    # The rock's rockspec says which hiredis its module carries, at the end
    # of its description (luarocks show prints it).
    python3 - "$rockspec" "$stage/${rockspec##*/}" "$REDLOCK_HIREDIS_VERSION" <<'PY'
import sys
source, dest, version = sys.argv[1:]
text = open(source).read()
end = "  ]],\n  labels"
if text.count(end) != 1:
    sys.exit("package: no end of description.detailed in " + source)
note = ("\n    This binary rock's module has hiredis %s linked in (BSD-3-Clause:\n"
        "    doc/hiredis-COPYING, doc/hiredis-NOTICE).\n" % version)
open(dest, "w").write(text.replace(end, note + end))
PY
    python3 "$REDLOCK_SRC/scripts/package/pack_rock.py" "$stage" \
      "$REDLOCK_DIST/lua-$lua/redlock-$REDLOCK_VERSION-1.linux-$(arch "$target").rock"
  done
done
