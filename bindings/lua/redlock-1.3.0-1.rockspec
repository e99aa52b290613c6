rockspec_format = "3.0"
package = "redlock"
version = "1.3.0-1"

source = {
  url = "git+file://../..",
  tag = "v1.3.0",
}

description = {
  summary = "Distributed locks over N independent Redis masters (Redlock)",
  detailed = [[
    Lua binding of libredlock, for Lua 5.1 to 5.4, LuaJIT and OpenResty:
    locks taken on a quorum of independent Redis masters, with leases,
    extension, kept locks (renewed until unlock, with a lost-lock signal),
    multi-resource locks and nil, err returns; redlock.resty_lock has the
    API of lua-resty-lock over such locks.
  ]],
  labels = { "redis", "lock", "distributed" },
  license = "MIT",
}

dependencies = {
  "lua >= 5.1, < 5.5",
}

-- hiredis is needed to build only: its static library is linked into the
-- module (REDLOCK_STATIC_HIREDIS), so an installed rock needs nothing but libc.
external_dependencies = {
  HIREDIS = { header = "hiredis/hiredis.h" },
}

-- Builds the native module from the SWIG interface and the C core of this
-- source tree (bindings/lua/CMakeLists.txt run as a project of its own), so
-- it needs CMake, SWIG 4, a C compiler and hiredis with its pkg-config file
-- and libhiredis.a. Run `luarocks make` in bindings/lua;
-- scripts/package.sh packs the result as a binary rock.
build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    REDLOCK_WERROR = "OFF",
    REDLOCK_LUA_INCDIR = "$(LUA_INCDIR)",
    REDLOCK_LUA_CMOD = "$(LIBDIR)",
    REDLOCK_LUA_LMOD = "$(LUADIR)",
  },
}
