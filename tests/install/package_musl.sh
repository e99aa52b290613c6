#!/usr/bin/env bash
# package_musl.sh SRC DIST - the library built for musl (x86_64 and aarch64,
# as the wheels' and the jar's musl natives are: zig, hiredis linked in),
# and a static musl program of it that takes locks: natively, and under
# qemu-user for aarch64. Static, it cannot load OpenSSL: a rediss:// node is
# refused with an error that names the library looked for. The library is
# built with the pinned hiredis (1.4.1).
. "$(dirname "$0")/lib.sh"
export REDLOCK_SRC=$src REDLOCK_WORK=$tmp
. "$src/scripts/package/lib.sh"
zig=$(python3 -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
start_nodes
for target in x86_64-linux-musl aarch64-linux-musl; do
  "$src/scripts/package/sysroot.sh" "$target" "$(sysroot "$target")" >/dev/null
  cross_cmake "$target" "$src" "$tmp/build-$target" -DREDLOCK_BUILD_TOOLS=OFF \
    -DREDLOCK_EMBED_HIREDIS=ON -DREDLOCK_STATIC_HIREDIS=ON >"$tmp/$target.log" 2>&1 &&
    cmake --build "$tmp/build-$target" --target redlock_archive >>"$tmp/$target.log" 2>&1 ||
    { cat "$tmp/$target.log" >&2; fail "the library does not build for $target"; }
  "$zig" cc -target "$target" -static -std=c99 -Wall -Werror -I"$src/abi" \
    -o "$tmp/take-$target" "$here/take_lock.c" "$tmp/build-$target/core/libredlock.a"
  [[ $(file "$tmp/take-$target") == *"statically linked"* ]] || fail "take-$target is not static"
  built_with_hiredis "$tmp/take-$target"
  run=()
  [ "${target%%-*}" = "$(uname -m)" ] || run=("$(command -v "qemu-${target%%-*}-static")")
  "${run[@]}" "$tmp/take-$target" --no-tls "package-$target" "${nodes[@]}"
  echo "$target: a static musl program takes locks"
done
