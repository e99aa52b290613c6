# lib.sh - sourced by scripts/package.sh and the scripts/package/*.sh it
# runs. They share, from the environment package.sh exports:
#   REDLOCK_SRC      the source tree
#   REDLOCK_DIST     where the artifacts go
#   REDLOCK_WORK     scratch space (removed when package.sh succeeds)
#   REDLOCK_VERSION  the version, from abi/redlock.h
#   REDLOCK_GLIBC_TARGETS, REDLOCK_MUSL_TARGETS
#                    the zig targets of the artifacts (cmake/zig.cmake)

# step NAME LOG COMMAND...: runs COMMAND with its output in WORK/LOG, shown
# if it fails.
step() {
  local name=$1 log=$REDLOCK_WORK/$2
  shift 2
  echo "package: $name"
  "$@" >"$log" 2>&1 || { cat "$log" >&2; echo "package: $name failed" >&2; exit 1; }
}

# sysroot TARGET: the prefix of TARGET's dependencies (scripts/package/sysroot.sh).
sysroot() {
  echo "$REDLOCK_WORK/sysroot/$1"
}

# arch TARGET: its machine (x86_64, aarch64).
arch() {
  echo "${1%%-*}"
}

# is_musl TARGET: whether TARGET's C library is musl.
is_musl() {
  [[ $1 == *-musl* ]]
}

# cross_cmake TARGET SOURCE BUILD [ARG...]: configures BUILD from SOURCE for
# TARGET (zig, its sysroot), as a user's Release build: no warnings as
# errors, no tests.
cross_cmake() {
  local target=$1 source=$2 build=$3
  shift 3
  cmake -S "$source" -B "$build" --toolchain "$REDLOCK_SRC/cmake/zig.cmake" \
    -DREDLOCK_ZIG_TARGET="$target" -DREDLOCK_SYSROOT="$(sysroot "$target")" \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DREDLOCK_WERROR=OFF "$@"
}
