#!/usr/bin/env bash
# sysroot.sh TARGET PREFIX - makes PREFIX the prefix that a build for the zig
# target TARGET (cmake/zig.cmake) finds its dependencies in:
#   lib/libhiredis.a, include/hiredis/, lib/pkgconfig/hiredis.pc
#       hiredis, built for TARGET from the source of the build machine's
#       libhiredis-dev (Debian's hiredis 0.14.1-3: upstream's 0.14.1 with
#       Debian's patches, among them the fix for CVE-2021-32765), fetched
#       from Debian's archive and checked against the checksums below;
#   share/licenses/hiredis/COPYING
#       hiredis' license, for the artifacts that carry it;
#   include/openssl/
#       OpenSSL 3's headers, for TLS (the library opens the system's
#       libssl.so.3 at run time and links nothing of it).
# The downloads are kept in REDLOCK_CACHE (default ~/.cache/redlock).
set -euo pipefail
target=${1:?usage: sysroot.sh TARGET PREFIX}
prefix=$(realpath -m "${2:?usage: sysroot.sh TARGET PREFIX}")
cache=${REDLOCK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/redlock}
zig=$(python3 -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')

archive=http://deb.debian.org/debian/pool/main/h/hiredis
files=(
  "hiredis_0.14.1-3.dsc 6dee69e4c29f8b71de5e4ac76d1f887a6c545bd49b6801bcf2c03b646c98a235"
  "hiredis_0.14.1.orig.tar.gz 2663b2aed9fd430507e30fc5e63274ee40cdd1a296026e22eafd7d99b01c8913"
  "hiredis_0.14.1-3.debian.tar.xz be4e12bce6df66cf42c98386d18b7df4841a499d85a1a9cb909cc9104184260d"
)
mkdir -p "$cache"
for entry in "${files[@]}"; do
  set -- $entry
  if ! echo "$2  $cache/$1" | sha256sum -c --status 2>/dev/null; then
    curl -sSf --retry 3 -o "$cache/$1.part" "$archive/$1"
    echo "$2  $cache/$1.part" | sha256sum -c --status ||
      { echo "sysroot: $1 does not have the expected checksum" >&2; rm -f "$cache/$1.part"; exit 1; }
    mv "$cache/$1.part" "$cache/$1"
  fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# dpkg-source applies Debian's patches; the signature is not checked, the
# checksums above are.
(cd "$work" && dpkg-source --no-check -x "$cache/hiredis_0.14.1-3.dsc" src >/dev/null)
mkdir -p "$prefix/lib/pkgconfig" "$prefix/include/hiredis"
# Debian's fix for CVE-2021-32765 widened createArrayObject's count to
# size_t without changing read.h's function pointer type (int); the count
# is never negative there (read.c passes nil arrays as nil), so the call is
# the same on every 64-bit target, but clang calls the mismatch an error.
for f in hiredis net read sds alloc; do
  "$zig" cc -target "$target" -O2 -g -fPIC -fno-sanitize=undefined \
    -Wno-incompatible-function-pointer-types -c "$work/src/$f.c" -o "$work/$f.o"
done
rm -f "$prefix/lib/libhiredis.a"
"$zig" ar rcs "$prefix/lib/libhiredis.a" "$work"/*.o
cp "$work"/src/{hiredis,read,sds,alloc}.h "$prefix/include/hiredis/"
# Its license (BSD-3-Clause), which every artifact that carries it carries.
mkdir -p "$prefix/share/licenses/hiredis"
cp "$work/src/COPYING" "$prefix/share/licenses/hiredis/COPYING"
cat > "$prefix/lib/pkgconfig/hiredis.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: hiredis
Description: hiredis 0.14.1 (Debian 0.14.1-3) built for $target
Version: 0.14.1
Libs: -L\${libdir} -lhiredis
Cflags: -I\${includedir}
PC

# OpenSSL's headers: the build machine's, with opensslconf.h and configuration.h
# (which Debian keeps in the multiarch folder); they describe the same OpenSSL 3
# API on every 64-bit Linux.
ossl=/usr/include/openssl
[ -f "$ossl/ssl.h" ] || { echo "sysroot: OpenSSL's headers are missing (Debian: libssl-dev)" >&2; exit 1; }
rm -rf "$prefix/include/openssl"
cp -r "$ossl" "$prefix/include/openssl"
for conf in /usr/include/*-linux-gnu/openssl; do
  [ -d "$conf" ] && cp "$conf"/*.h "$prefix/include/openssl/" && break
done
echo "sysroot: $prefix ($target)"
