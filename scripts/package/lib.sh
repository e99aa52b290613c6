# lib.sh - sourced by scripts/package.sh and the scripts/package/*.sh it
# runs. They share, from the environment package.sh exports:
#   REDLOCK_SRC      the source tree
#   REDLOCK_DIST     where the artifacts go
#   REDLOCK_WORK     scratch space (removed when package.sh succeeds)
#   REDLOCK_VERSION  the version, from abi/redlock.h
#   REDLOCK_GLIBC_TARGETS, REDLOCK_MUSL_TARGETS
#                    the zig targets of the artifacts (cmake/zig.cmake)
# and, set here, the hiredis that every artifact embeds:
#   REDLOCK_HIREDIS_VERSION, REDLOCK_HIREDIS_SHA256
#                    its release, and the sha256 of its source tarball
#                    (git archive of the redis/hiredis repository's tag
#                    v1.4.1, commit 616f2286ba5503f74ae96e720623fa11dbc690af)
#   REDLOCK_HIREDIS_TARBALL
#                    where that tarball is, from the environment; default
#                    shared/third_party/hiredis-VERSION.tar.gz beside the
#                    source tree (../shared/third_party/ from its root)

REDLOCK_HIREDIS_VERSION=1.4.1
REDLOCK_HIREDIS_SHA256=bd21d4d1b6157b56e506266027fde471b0820884bebbdbd14498eb3b1657aba8
: "${REDLOCK_HIREDIS_TARBALL:=$REDLOCK_SRC/../shared/third_party/hiredis-$REDLOCK_HIREDIS_VERSION.tar.gz}"
export REDLOCK_HIREDIS_VERSION REDLOCK_HIREDIS_SHA256 REDLOCK_HIREDIS_TARBALL

# hiredis_tarball: the path of hiredis' source tarball, once its sha256 is
# the one pinned above; else says what was expected, and fails.
hiredis_tarball() {
  local path sum
  path=$(realpath -m "$REDLOCK_HIREDIS_TARBALL")
  if [ ! -f "$path" ]; then
    echo "package: hiredis $REDLOCK_HIREDIS_VERSION's source is missing: no $path" \
      "(hiredis-$REDLOCK_HIREDIS_VERSION.tar.gz, sha256 $REDLOCK_HIREDIS_SHA256; the" \
      "environment variable REDLOCK_HIREDIS_TARBALL names another path)" >&2
    return 1
  fi
  sum=$(sha256sum "$path" | cut -d' ' -f1)
  if [ "$sum" != "$REDLOCK_HIREDIS_SHA256" ]; then
    echo "package: $path is not hiredis $REDLOCK_HIREDIS_VERSION's source" \
      "(hiredis-$REDLOCK_HIREDIS_VERSION.tar.gz): its sha256 is $sum," \
      "expected $REDLOCK_HIREDIS_SHA256" >&2
    return 1
  fi
  echo "$path"
}

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
