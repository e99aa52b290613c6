#!/usr/bin/env bash
# check.sh SRC BUILD - installs BUILD into a temporary prefix, then runs what
# it holds with no LD_LIBRARY_PATH: the tool (RUNPATH $ORIGIN/../lib), and
# examples/hello.c built against it with pkg-config (shared, and static with
# pkg-config --static) and with CMake's find_package (redlock::redlock and
# redlock::redlock_static), each taking a lock on nodes started for the test.
set -euo pipefail
src=$1
build=$2
tmp=$(mktemp -d)
trap '"$src/scripts/redis-nodes.sh" stop "$tmp/nodes"; rm -rf "$tmp"' EXIT
unset LD_LIBRARY_PATH

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# needs_shared_redlock BINARY: whether BINARY needs libredlock.so.
needs_shared_redlock() {
  readelf -d "$1" | grep -q 'NEEDED.*\[libredlock\.so'
}

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name 'libredlock.so.1' | head -n1)")
for f in include/redlock.h bin/redlock share/man/man1/redlock.1; do
  [ -e "$tmp/prefix/$f" ] || fail "$f not installed"
done
ls "$libdir"/libredlock.a "$libdir"/pkgconfig/redlock.pc \
   "$libdir"/cmake/redlock/redlockConfig.cmake >/dev/null

mapfile -t nodes < <("$src/scripts/redis-nodes.sh" start "$tmp/nodes" 3)
csv=$(IFS=,; echo "${nodes[*]}")

# The installed tool runs and takes a lock.
"$tmp/prefix/bin/redlock" --version
"$tmp/prefix/bin/redlock" --nodes "$csv" -n install-check -- true ||
  fail "the installed tool cannot take a lock"

# pkg-config, shared: the program finds libredlock.so through the RUNPATH
# it was linked with, from pkg-config's libdir.
export PKG_CONFIG_PATH="$libdir/pkgconfig"
pc_libdir=$(pkg-config --variable=libdir redlock)
# shellcheck disable=SC2046
cc -std=c99 -Wall -Werror -o "$tmp/hello-pc" "$src/examples/hello.c" \
   $(pkg-config --cflags --libs redlock) -Wl,-rpath,"$pc_libdir"
needs_shared_redlock "$tmp/hello-pc" || fail "hello-pc does not use libredlock.so"
"$tmp/hello-pc" "${nodes[@]}" | tee "$tmp/out-pc"
grep -q "released: success" "$tmp/out-pc"

# pkg-config, static: --static adds hiredis and -pthread; the archive is
# chosen by name (-l:libredlock.a), since -lredlock would take the .so.
static_libs=$(pkg-config --static --libs redlock)
[[ " $static_libs " == *" -lhiredis "* ]] || fail "pkg-config --static lacks hiredis: $static_libs"
# shellcheck disable=SC2046
cc -std=c99 -Wall -Werror -o "$tmp/hello-static" "$src/examples/hello.c" \
   $(pkg-config --cflags redlock) ${static_libs/-lredlock/-l:libredlock.a}
! needs_shared_redlock "$tmp/hello-static" || fail "hello-static needs libredlock.so"
"$tmp/hello-static" "${nodes[@]}" | tee "$tmp/out-static"
grep -q "released: success" "$tmp/out-static"

# find_package: redlock::redlock (the installed RUNPATH is CMake's
# install-tree default for a program of the user's, so the build RPATH is
# set to the libdir), and redlock::redlock_static.
cmake -S "$src/examples" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DCMAKE_BUILD_RPATH="$libdir" >/dev/null
cmake --build "$tmp/cmake-build" >/dev/null
needs_shared_redlock "$tmp/cmake-build/hello" || fail "hello does not use libredlock.so"
"$tmp/cmake-build/hello" "${nodes[@]}" | tee "$tmp/out-cmake"
grep -q "released: success" "$tmp/out-cmake"
! needs_shared_redlock "$tmp/cmake-build/hello_static" || fail "hello_static needs libredlock.so"
"$tmp/cmake-build/hello_static" "${nodes[@]}" | tee "$tmp/out-cmake-static"
grep -q "released: success" "$tmp/out-cmake-static"
echo "install: the tool, pkg-config (shared, static) and find_package (shared, static) consumers work"
