# Settings every build of this project shares: the top level, and the builds
# that stand alone (a binding built by pip, Maven or luarocks, the fuzz
# targets built with clang). Include it before add_subdirectory(core).

set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_C_EXTENSIONS OFF)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo CACHE STRING "Build type" FORCE)
endif()

option(REDLOCK_WERROR "Treat warnings as errors" ON)
add_compile_options(-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
                    -Wformat=2 -Wno-unused-parameter)
if(REDLOCK_WERROR)
  add_compile_options(-Werror)
endif()

find_package(PkgConfig REQUIRED)
pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET hiredis)
find_package(Threads REQUIRED)
