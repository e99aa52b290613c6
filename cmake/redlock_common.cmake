# Settings every build of this project shares: the top level, and the builds
# that stand alone (a binding built by pip, Maven or luarocks, the fuzz
# targets built with clang). Include it before add_subdirectory(core).

set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_C_EXTENSIONS OFF)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

# Warnings as errors: off by default, so that a compiler newer than ours,
# with warnings of its own, does not break a user's build. scripts/test.sh
# (and so CI) turns it on, for its builds and, through the environment
# variable REDLOCK_WERROR=ON (the default when set), for those its tests make
# on their own (the fuzz targets, Maven's); the builds meant for users (pip,
# luarocks, scripts/package.sh) turn it off explicitly.
if(DEFINED ENV{REDLOCK_WERROR})
  set(_werror_default $ENV{REDLOCK_WERROR})
else()
  set(_werror_default OFF)
endif()
option(REDLOCK_WERROR "Treat compiler warnings as errors" ${_werror_default})
add_compile_options(-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
                    -Wformat=2 -Wno-unused-parameter)
# SWIG's warnings follow the same option (a newer SWIG may warn anew).
set(REDLOCK_SWIG_WERROR "")
if(REDLOCK_WERROR)
  add_compile_options(-Werror)
  set(REDLOCK_SWIG_WERROR -Werror)
endif()

find_package(PkgConfig REQUIRED)
pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET hiredis)
find_package(Threads REQUIRED)

# hiredis for what embeds the core (redlock_static: the Python, Lua and Java
# modules, and the white-box tests). With REDLOCK_STATIC_HIREDIS its archive
# is linked in, so that a module needs nothing but libc at run time (the
# modules export their entry points only: hiredis' symbols stay hidden);
# the archive must be position-independent, as Debian's libhiredis.a is.
# libredlock.so, the installed libredlock.a and the tool use the shared
# hiredis either way, as a system's package does. On by default wherever
# bindings are built: a binding's own build (pip, Maven, luarocks) or
# REDLOCK_BUILD_BINDINGS.
if(DEFINED REDLOCK_BUILD_BINDINGS AND NOT REDLOCK_BUILD_BINDINGS)
  set(_static_hiredis OFF)
else()
  set(_static_hiredis ON)
endif()
option(REDLOCK_STATIC_HIREDIS "Link hiredis' static library into the bindings' modules" ${_static_hiredis})
add_library(redlock_hiredis INTERFACE IMPORTED)
if(REDLOCK_STATIC_HIREDIS)
  pkg_get_variable(_hiredis_libdir hiredis libdir)
  find_library(REDLOCK_HIREDIS_ARCHIVE NAMES libhiredis.a HINTS ${_hiredis_libdir})
  if(NOT REDLOCK_HIREDIS_ARCHIVE)
    message(FATAL_ERROR "libhiredis.a not found (Debian: libhiredis-dev). "
      "-DREDLOCK_STATIC_HIREDIS=OFF links the shared hiredis instead: the modules then need it at run time")
  endif()
  # The archive, with the compile flags pkg-config gives for hiredis.
  set_target_properties(redlock_hiredis PROPERTIES
    INTERFACE_LINK_LIBRARIES ${REDLOCK_HIREDIS_ARCHIVE}
    INTERFACE_INCLUDE_DIRECTORIES $<TARGET_PROPERTY:PkgConfig::HIREDIS,INTERFACE_INCLUDE_DIRECTORIES>
    INTERFACE_COMPILE_OPTIONS $<TARGET_PROPERTY:PkgConfig::HIREDIS,INTERFACE_COMPILE_OPTIONS>)
else()
  set_target_properties(redlock_hiredis PROPERTIES INTERFACE_LINK_LIBRARIES PkgConfig::HIREDIS)
endif()
