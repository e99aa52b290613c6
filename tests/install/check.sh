#!/usr/bin/env bash
# check.sh SRC BUILD - installs BUILD into a temporary prefix, then builds and
# runs examples/hello.c against it twice: with pkg-config and with CMake's
# find_package, each taking a lock on nodes started for the test.
set -euo pipefail
src=$1
build=$2
tmp=$(mktemp -d)
trap '"$src/scripts/redis-nodes.sh" stop "$tmp/nodes"; rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name 'libredlock.so.1' | head -n1)")
for f in include/redlock.h bin/redlock; do
  [ -e "$tmp/prefix/$f" ] || { echo "FAIL: $f not installed" >&2; exit 1; }
done
ls "$libdir"/pkgconfig/redlock.pc "$libdir"/cmake/redlock/redlockConfig.cmake >/dev/null

mapfile -t nodes < <("$src/scripts/redis-nodes.sh" start "$tmp/nodes" 3)

# pkg-config
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# shellcheck disable=SC2046
cc -std=c99 -Wall -Werror -o "$tmp/hello-pc" "$src/examples/hello.c" \
   $(pkg-config --cflags --libs redlock) -Wl,-rpath,"$libdir"
"$tmp/hello-pc" "${nodes[@]}" | tee "$tmp/out-pc"
grep -q "released: success" "$tmp/out-pc"

# find_package
cmake -S "$src/examples" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DCMAKE_BUILD_RPATH="$libdir" >/dev/null
cmake --build "$tmp/cmake-build" >/dev/null
"$tmp/cmake-build/hello" "${nodes[@]}" | tee "$tmp/out-cmake"
grep -q "released: success" "$tmp/out-cmake"
echo "install: pkg-config and find_package consumers both work"
