#!/usr/bin/env bash
# package_tarball_aarch64.sh SRC DIST - the aarch64 C tarball under
# qemu-user (the loader and glibc of Debian's libc6-arm64-cross): its tool
# takes a lock, and a program built against it by zig (shared, and static
# with libredlock.a) takes locks, on nodes of this machine; its --version
# names the hiredis inside (1.4.1).
. "$(dirname "$0")/lib.sh"
. "$here/tarball.sh"
qemu=$(command -v qemu-aarch64-static) || fail "qemu-aarch64-static is missing: run scripts/setup.sh"
[ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] ||
  fail "aarch64's glibc is missing (Debian: libc6-arm64-cross): run scripts/setup.sh"
zig=$(python3 -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
unpack_tarball aarch64
aarch64() {
  QEMU_LD_PREFIX=/usr/aarch64-linux-gnu "$qemu" "$@"
}
# --version: the tarball's version, and the pinned hiredis (1.4.1) inside.
v=$(sed -n 's/^Version: //p' "$prefix/lib/pkgconfig/redlock.pc")
[ "$(aarch64 "$prefix/bin/redlock" --version | head -n 1)" = \
  "redlock $v (libredlock $v, hiredis $hiredis_version)" ] ||
  fail "the aarch64 tool's --version: $(aarch64 "$prefix/bin/redlock" --version)"
start_nodes
csv=$(IFS=,; echo "${nodes[*]}")
aarch64 "$prefix/bin/redlock" --nodes "$csv" -n package-aarch64 -- true ||
  fail "the aarch64 tool cannot take a lock"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046
"$zig" cc -target aarch64-linux-gnu.2.17 -std=c99 -Wall -Werror -o "$tmp/take-shared" \
  "$here/take_lock.c" $(pkg-config --cflags --libs redlock) -Wl,-rpath,"$prefix/lib"
# shellcheck disable=SC2046
"$zig" cc -target aarch64-linux-gnu.2.17 -std=c99 -Wall -Werror -o "$tmp/take-static" \
  "$here/take_lock.c" $(pkg-config --cflags redlock) "$prefix/lib/libredlock.a" -lpthread -ldl
file "$tmp/take-shared" | grep -q aarch64 || fail "take-shared is not for aarch64"
aarch64 "$tmp/take-shared" package-aarch64-shared "${nodes[@]}"
aarch64 "$tmp/take-static" package-aarch64-static "${nodes[@]}"
echo "the aarch64 tarball: its tool and programs built against it (shared, static) take locks under qemu"
