# cmake/zig.cmake - a toolchain file that compiles C for another Linux with
# zig cc (PyPI's ziglang), from any x86_64 Linux:
#
#   cmake -S . -B build-aarch64 --toolchain cmake/zig.cmake \
#         -DREDLOCK_ZIG_TARGET=aarch64-linux-gnu.2.17 -DREDLOCK_SYSROOT=<prefix>
#
# REDLOCK_ZIG_TARGET is a zig target: ARCH-linux-gnu.GLIBC (the oldest glibc
# the result may run on) or ARCH-linux-musl. zig brings the target's C
# library headers and link stubs itself; everything else (hiredis, OpenSSL's
# headers, a language's headers) is looked for in REDLOCK_SYSROOT only, never
# in the build machine's /usr, whose headers are for its own C library.
# scripts/package/sysroot.sh makes such a prefix.
set(CMAKE_SYSTEM_NAME Linux)
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES REDLOCK_ZIG_TARGET REDLOCK_SYSROOT REDLOCK_ZIG_WRAPPERS)
if(NOT REDLOCK_ZIG_TARGET)
  message(FATAL_ERROR "cmake/zig.cmake: set REDLOCK_ZIG_TARGET (x86_64-linux-gnu.2.17, aarch64-linux-musl, ...)")
endif()
string(REGEX MATCH "^[^-]+" CMAKE_SYSTEM_PROCESSOR "${REDLOCK_ZIG_TARGET}")

# zig is called through small scripts, one per tool, that name the target,
# so that every compile and link of this build (and of CMake's own checks)
# is for it.
if(NOT REDLOCK_ZIG_WRAPPERS)
  execute_process(
    COMMAND python3 -c "import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), 'zig'))"
    OUTPUT_VARIABLE _zig OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0 OR NOT EXISTS "${_zig}")
    message(FATAL_ERROR "cmake/zig.cmake: zig not found: pip install ziglang (scripts/setup.sh does)")
  endif()
  set(REDLOCK_ZIG_WRAPPERS ${CMAKE_BINARY_DIR}/zig-${REDLOCK_ZIG_TARGET})
  file(MAKE_DIRECTORY ${REDLOCK_ZIG_WRAPPERS})
  # zig cc builds in debug mode with UBSan's runtime unless told otherwise;
  # the project's own sanitizer builds use the build machine's compiler.
  file(WRITE ${REDLOCK_ZIG_WRAPPERS}/cc
       "#!/bin/sh\nexec '${_zig}' cc -target ${REDLOCK_ZIG_TARGET} -fno-sanitize=undefined \"$@\"\n")
  file(WRITE ${REDLOCK_ZIG_WRAPPERS}/ar "#!/bin/sh\nexec '${_zig}' ar \"$@\"\n")
  file(WRITE ${REDLOCK_ZIG_WRAPPERS}/ranlib "#!/bin/sh\nexec '${_zig}' ranlib \"$@\"\n")
  file(CHMOD ${REDLOCK_ZIG_WRAPPERS}/cc ${REDLOCK_ZIG_WRAPPERS}/ar ${REDLOCK_ZIG_WRAPPERS}/ranlib
       PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE)
endif()
set(CMAKE_C_COMPILER ${REDLOCK_ZIG_WRAPPERS}/cc)
set(CMAKE_AR ${REDLOCK_ZIG_WRAPPERS}/ar CACHE FILEPATH "zig ar")
set(CMAKE_RANLIB ${REDLOCK_ZIG_WRAPPERS}/ranlib CACHE FILEPATH "zig ranlib")

if(REDLOCK_SYSROOT)
  set(CMAKE_FIND_ROOT_PATH ${REDLOCK_SYSROOT})
  set(ENV{PKG_CONFIG_LIBDIR} ${REDLOCK_SYSROOT}/lib/pkgconfig)
  set(ENV{PKG_CONFIG_PATH} "")
endif()
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# What the build runs of its own output (the options' generator, the tool
# for its manual page) runs through qemu-user when the target is another
# machine (Debian: qemu-user-static; a glibc target's loader and libraries
# from its cross libc, libc6-arm64-cross for aarch64).
if(NOT CMAKE_SYSTEM_PROCESSOR STREQUAL CMAKE_HOST_SYSTEM_PROCESSOR)
  find_program(REDLOCK_QEMU qemu-${CMAKE_SYSTEM_PROCESSOR}-static qemu-${CMAKE_SYSTEM_PROCESSOR})
  if(REDLOCK_QEMU)
    set(CMAKE_CROSSCOMPILING_EMULATOR ${REDLOCK_QEMU} -L /usr/${CMAKE_SYSTEM_PROCESSOR}-linux-gnu)
  endif()
endif()
