#!/usr/bin/env bash
# package_tarball.sh SRC DIST - the x86_64 C tarball unpacked anywhere, used
# where no libhiredis (nor OpenSSL) can be loaded: its tool takes a lock,
# and programs built against it with pkg-config (shared and static) and
# CMake's find_package (shared and static) take locks; a rediss:// node is
# refused with an error that names the TLS library looked for; the tool's
# --version names the hiredis inside (1.4.1).
. "$(dirname "$0")/lib.sh"
. "$here/tarball.sh"
unpack_tarball x86_64
start_nodes
csv=$(IFS=,; echo "${nodes[*]}")

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
libdir=$(pkg-config --variable=libdir redlock)
# shellcheck disable=SC2046
cc -std=c99 -Wall -Werror -o "$tmp/take-shared" "$here/take_lock.c" \
   $(pkg-config --cflags --libs redlock) -Wl,-rpath,"$libdir"
static_libs=$(pkg-config --static --libs redlock)
# shellcheck disable=SC2046
cc -std=c99 -Wall -Werror -o "$tmp/take-static" "$here/take_lock.c" \
   $(pkg-config --cflags redlock) ${static_libs/-lredlock/-l:libredlock.a}
[[ $(readelf -d "$tmp/take-static") != *libredlock* ]] || fail "take-static needs libredlock.so"
cmake -S "$src/examples" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_RPATH="$libdir" >/dev/null
cmake --build "$tmp/cmake-build" >/dev/null

# Without root, nothing can be hidden: the same runs, but the TLS check.
run=() no_tls=()
if [ "$(id -u)" -eq 0 ]; then
  run=(env "REDLOCK_HIDE=libssl libcrypto" "$here/without-hiredis.sh")
  no_tls=(--no-tls)
else
  echo "not root: libhiredis and OpenSSL stay loadable; the TLS refusal is not checked"
fi
# The tool says which hiredis the library carries: the pinned one.
version=$("${run[@]}" "$prefix/bin/redlock" --version)
[[ $version == *", hiredis $hiredis_version)" ]] || fail "the tool's --version: $version"
echo "$version"
"${run[@]}" "$prefix/bin/redlock" --nodes "$csv" -n package-tarball -- true ||
  fail "the tarball's tool cannot take a lock"
"${run[@]}" "$tmp/take-shared" "${no_tls[@]}" package-tarball-shared "${nodes[@]}"
"${run[@]}" "$tmp/take-static" "${no_tls[@]}" package-tarball-static "${nodes[@]}"
for hello in hello hello_static; do
  "${run[@]}" "$tmp/cmake-build/$hello" "${nodes[@]}" | tee "$tmp/out"
  grep -q "released: success" "$tmp/out" || fail "find_package's $hello"
done
echo "the x86_64 tarball: tool, pkg-config (shared, static) and find_package (shared, static) work"
