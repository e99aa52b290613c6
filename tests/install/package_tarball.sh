#!/usr/bin/env bash
# package_tarball.sh SRC DIST - the C tarball unpacked anywhere: its tool
# takes a lock.
. "$(dirname "$0")/lib.sh"
tarball=$(one 'redlock-*-linux-x86_64.tar.gz')
mkdir "$tmp/unpacked"
tar -C "$tmp/unpacked" -xzf "$tarball"
prefix=("$tmp"/unpacked/redlock-*)
for f in include/redlock.h lib/libredlock.so.1 lib/libredlock.a lib/pkgconfig/redlock.pc \
         lib/cmake/redlock/redlockConfig.cmake bin/redlock share/man/man1/redlock.1; do
  [ -e "${prefix[0]}/$f" ] || fail "$f not in ${tarball##*/}"
done
start_nodes
csv=$(IFS=,; echo "${nodes[*]}")
"${prefix[0]}/bin/redlock" --nodes "$csv" -n package-tarball -- true ||
  fail "the tarball's tool cannot take a lock"
echo "the tarball's tool takes a lock (NEEDED $(readelf -d "${prefix[0]}/lib/libredlock.so.1" |
  sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' | tr '\n' ' '))"
