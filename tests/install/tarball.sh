# tarball.sh - sourced by the package_tarball*.sh checks, after lib.sh:
# unpacks the C tarball for ARCH and checks what it holds.

# unpack_tarball ARCH: unpacks redlock-V-linux-ARCH.tar.gz; its root in prefix.
unpack_tarball() {
  local tarball f lib
  tarball=$(one "redlock-[0-9]*-linux-$1.tar.gz")
  mkdir -p "$tmp/unpacked"
  tar -C "$tmp/unpacked" -xzf "$tarball"
  prefix=$(echo "$tmp"/unpacked/redlock-[0-9]*-linux-"$1")
  for f in include/redlock.h lib/libredlock.so.1 lib/libredlock.a lib/pkgconfig/redlock.pc \
           lib/cmake/redlock/redlockConfig.cmake bin/redlock share/man/man1/redlock.1 \
           share/doc/redlock/LICENSE share/doc/redlock/hiredis-COPYING; do
    [ -e "$prefix/$f" ] || fail "$f not in ${tarball##*/}"
  done
  # hiredis is inside: the library and the tool need only the C library,
  # of glibc 2.17 at most, and the .pc file asks for no hiredis.
  for f in lib/libredlock.so.1 bin/redlock; do
    needs_only_libc "$prefix/$f"
  done
  ! grep -q hiredis "$prefix/lib/pkgconfig/redlock.pc" || fail "redlock.pc asks for hiredis"
  [[ $(nm "$prefix/lib/libredlock.a" 2>/dev/null) == *" T redisReaderCreate"* ]] ||
    fail "libredlock.a does not carry hiredis"
}

# needs_only_libc FILE: FILE's NEEDED are glibc's own, and no symbol it takes
# from them is newer than 2.17.
needs_only_libc() {
  local n newest
  for n in $(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
    case $n in
      libc.so.6 | ld-linux*.so.* | libm.so.6 | libpthread.so.0 | libdl.so.2 | libredlock.so.1) ;;
      *) fail "${1#"$prefix"/} needs $n" ;;
    esac
  done
  newest=$(objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)
  [ "$(printf '%s\n2.17\n' "$newest" | sort -V | tail -n 1)" = 2.17 ] ||
    fail "${1#"$prefix"/} needs glibc $newest"
  echo "${1#"$prefix"/}: NEEDED $(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' |
    tr '\n' ' ')(glibc $newest at most)"
}
