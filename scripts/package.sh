#!/usr/bin/env bash
# package.sh [DIST [WORK]] - builds, from this source tree, the artifacts a
# user installs without it, for every platform they serve, into DIST
# (default dist/; WORK, default build-package/, holds the builds and is
# removed on success):
#
#   redlock_native-V-cp310-abi3-PLATFORM.whl   pip install it; import redlock
#       (CPython 3.10 and later; manylinux2014 and musllinux_1_2, x86_64 and
#       aarch64), and redlock_native-V.tar.gz, the source distribution
#   redlock-V.jar                  java -cp it; natives for linux x86_64 and
#                                  aarch64, glibc and musl
#   redlock-shedlock-V.jar, redlock-spring-integration-V.jar
#                                  the Java adapters to ShedLock and Spring
#                                  Integration, beside redlock-V.jar
#   lua-5.4/redlock-V-1.linux-ARCH.rock   luarocks --lua-version 5.4 install it
#   lua-5.1/redlock-V-1.linux-ARCH.rock   the same for LuaJIT and OpenResty
#   redlock-V-linux-ARCH.tar.gz    the C library, header, pkg-config and CMake
#                                  files, the tool and its man page
#   redlock-php-V-php8.2-nts-linux-ARCH.tar.gz
#                                  the PHP extension (PHP 8.2, non-thread-safe,
#                                  PHP API 20220829), its ini file
#                                  (extension=redlock) and the PHP classes
#                                  with their autoloader (scripts/package/php.sh)
#
# Everything native is compiled by zig (cmake/zig.cmake) for glibc 2.17 or
# musl, with hiredis 1.4.1 built for each target (scripts/package/sysroot.sh)
# and linked in: nothing needs more than libc. hiredis' source is its
# release tarball, outside this tree: REDLOCK_HIREDIS_TARBALL, by default
# ../shared/third_party/hiredis-1.4.1.tar.gz from the tree's root; its
# sha256 is pinned in scripts/package/lib.sh and checked before use. Each
# artifact says which hiredis it carries (README.md, "From the artifacts").
# Needs what scripts/setup.sh installs.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
export REDLOCK_SRC=$src
export REDLOCK_DIST=$(realpath -m "${1:-$src/dist}")
export REDLOCK_WORK=$(realpath -m "${2:-$src/build-package}")
export REDLOCK_GLIBC_TARGETS="x86_64-linux-gnu.2.17 aarch64-linux-gnu.2.17"
export REDLOCK_MUSL_TARGETS="x86_64-linux-musl aarch64-linux-musl"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
. "$src/scripts/package/lib.sh"

REDLOCK_VERSION=$(sed -n 's/^#define REDLOCK_VERSION_STRING "\(.*\)"$/\1/p' "$src/abi/redlock.h")
export REDLOCK_VERSION
[ -n "$REDLOCK_VERSION" ] || { echo "package: no version in abi/redlock.h" >&2; exit 1; }
python3 -c 'import ziglang, build, scikit_build_core, auditwheel, abi3audit' 2>/dev/null ||
  { echo "package: zig, build, scikit-build-core, auditwheel or abi3audit is missing: run scripts/setup.sh" >&2
    exit 1; }

hiredis_tarball >/dev/null

rm -rf "$REDLOCK_WORK"
mkdir -p "$REDLOCK_WORK/tmp" "$REDLOCK_DIST"
export TMPDIR=$REDLOCK_WORK/tmp
# Only this run's artifacts in DIST (redlock-*.tar.gz: the C and the PHP ones).
rm -rf "$REDLOCK_DIST"/redlock_native-* "$REDLOCK_DIST"/redlock-*.jar \
       "$REDLOCK_DIST"/redlock-*.tar.gz "$REDLOCK_DIST"/lua-*

for target in $REDLOCK_GLIBC_TARGETS $REDLOCK_MUSL_TARGETS; do
  step "dependencies for $target" "sysroot-$target.log" \
    "$src/scripts/package/sysroot.sh" "$target" "$(sysroot "$target")"
done
for kind in c python java lua php; do
  "$src/scripts/package/$kind.sh"
done

rm -rf "$REDLOCK_WORK"
echo "package: in $REDLOCK_DIST:"
(cd "$REDLOCK_DIST" && find . -type f \( -name '*.whl' -o -name '*.jar' -o -name '*.rock' -o -name '*.tar.gz' \) |
  sed 's|^\./|  |' | sort)
