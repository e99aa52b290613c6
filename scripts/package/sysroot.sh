#!/usr/bin/env bash
# sysroot.sh TARGET PREFIX - makes PREFIX the prefix that a build for the zig
# target TARGET (cmake/zig.cmake) finds its dependencies in:
#   lib/libhiredis.a, include/hiredis/, lib/pkgconfig/hiredis.pc
#       hiredis REDLOCK_HIREDIS_VERSION (scripts/package/lib.sh: 1.4.1),
#       built for TARGET from its source tarball, REDLOCK_HIREDIS_TARBALL,
#       once its sha256 is the one pinned in lib.sh;
#   share/licenses/hiredis/COPYING, share/licenses/hiredis/NOTICE
#       hiredis' license (BSD-3-Clause, from the tarball) and a notice of
#       what is embedded (release, tarball, checksum), for the artifacts
#       that carry it;
#   include/openssl/
#       OpenSSL 3's headers, for TLS (the library opens the system's
#       libssl.so.3 at run time and links nothing of it).
set -euo pipefail
target=${1:?usage: sysroot.sh TARGET PREFIX}
prefix=$(realpath -m "${2:?usage: sysroot.sh TARGET PREFIX}")
: "${REDLOCK_SRC:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$REDLOCK_SRC/scripts/package/lib.sh"
zig=$(python3 -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
tarball=$(hiredis_tarball)
version=$REDLOCK_HIREDIS_VERSION

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/src"
tar -C "$work/src" --strip-components=1 -xzf "$tarball"
src=$work/src
# The version its header says. At the tag v1.4.1, hiredis.h still says 1.4.0
# (HIREDIS_PATCH 0, which upstream's Makefile and CMake report too): the
# copy built here says the release it is, so that what reads the macros
# (redlock --version, the library's "built with" string) names it. Any
# other difference than the patch number is a wrong tarball.
said=$(for m in MAJOR MINOR PATCH; do
         sed -n "s/^#define HIREDIS_$m \([0-9]*\)$/\1/p" "$src/hiredis.h"
       done | paste -sd.)
changed=""
if [ "$said" != "$version" ]; then
  [ "${said%.*}" = "${version%.*}" ] ||
    { echo "sysroot: $tarball's hiredis.h says $said, not $version" >&2; exit 1; }
  sed -i "s/^#define HIREDIS_PATCH [0-9]*$/#define HIREDIS_PATCH ${version##*.}/" "$src/hiredis.h"
  changed="Its hiredis.h says $said at that tag; the one built here says $version."
fi

mkdir -p "$prefix/lib/pkgconfig" "$prefix/include/hiredis"
# The objects of hiredis' static library, as its Makefile builds it
# (hiredis.c refers to async.c's functions; async.c includes dict.c).
for f in alloc async hiredis net read sds sockcompat; do
  "$zig" cc -target "$target" -std=c99 -O2 -g -fPIC -fno-sanitize=undefined \
    -c "$src/$f.c" -o "$work/$f.o"
done
rm -f "$prefix/lib/libhiredis.a"
"$zig" ar rcs "$prefix/lib/libhiredis.a" "$work"/*.o
rm -rf "$prefix/include/hiredis"
mkdir -p "$prefix/include/hiredis"
cp "$src"/{hiredis,read,sds,alloc}.h "$prefix/include/hiredis/"
# Its license (BSD-3-Clause), which every artifact that carries it carries,
# and what it is.
mkdir -p "$prefix/share/licenses/hiredis"
cp "$src/COPYING" "$prefix/share/licenses/hiredis/COPYING"
cat > "$prefix/share/licenses/hiredis/NOTICE" <<NOTICE
hiredis $version is linked into the native code of this artifact. It was built from
hiredis-$version.tar.gz, sha256 $REDLOCK_HIREDIS_SHA256
(the redis/hiredis repository's tag v$version, as git archive makes it).${changed:+
$changed}
Its license, BSD-3-Clause, is hiredis' COPYING, carried with this notice.
NOTICE
cat > "$prefix/lib/pkgconfig/hiredis.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: hiredis
Description: hiredis $version built for $target
Version: $version
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
echo "sysroot: $prefix ($target, hiredis $version)"
