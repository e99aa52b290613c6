#!/usr/bin/env bash
# package_libc_only.sh SRC DIST - every native library in the wheels, the
# jar, the rocks and the PHP tarballs needs only the C library (readelf -d),
# of glibc 2.17 at most (objdump -T), and exports only its entry points
# (nm -D). (scripts/package/python.sh checks the wheels' tags.)
. "$(dirname "$0")/lib.sh"

# libc_only NAME FILE EXPORTS: the native libraries packed in FILE (a zip,
# or a .tar.gz) need nothing but libc, and export only names matching
# EXPORTS (a regex).
libc_only() {
  local name=$1 file=$2 exports=$3 lib needed n newest extra count=0
  mkdir -p "$tmp/$name"
  if [[ $file == *.tar.gz ]]; then
    tar -C "$tmp/$name" -xzf "$file"
  else
    python3 -m zipfile -e "$file" "$tmp/$name"
  fi
  while IFS= read -r -d '' lib; do
    count=$((count + 1))
    needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' | tr '\n' ' ')
    for n in $needed; do
      case $n in
        libc.so.6 | ld-linux*.so.* | libm.so.6 | libpthread.so.0 | libdl.so.2) ;;
        # musl's C library is one file.
        libc.so) [[ $lib == *musl* ]] || fail "${lib#"$tmp"/} needs $n" ;;
        *) fail "${lib#"$tmp"/} needs $n" ;;
      esac
    done
    newest=$(objdump -T "$lib" | { grep -o 'GLIBC_[0-9.]*' || true; } | sed 's/GLIBC_//' | sort -uV | tail -n 1)
    if [ -n "$newest" ] && [ "$(printf '%s\n2.17\n' "$newest" | sort -V | tail -n 1)" != 2.17 ]; then
      fail "${lib#"$tmp"/} needs glibc $newest (2.17 at most)"
    fi
    extra=$(nm -D --defined-only "$lib" | awk '{ print $NF }' | grep -Ev "^($exports)\$" || true)
    [ -z "$extra" ] || fail "${lib#"$tmp"/} exports more than its entry points: $extra"
    echo "${lib#"$tmp"/}: NEEDED $needed"
  done < <(find "$tmp/$name" -name '*.so*' -type f -print0)
  [ "$count" -gt 0 ] || fail "no native library in ${file##*/}"
}

for wheel in "$dist"/redlock_native-*.whl; do
  name=${wheel##*/}
  libc_only "${name%.whl}" "$wheel" 'PyInit__capi'
done
libc_only jar "$(one 'redlock-[0-9]*.jar')" 'Java_io_redlock_.*|JNI_OnLoad|JNI_OnUnload'
for rock in "$dist"/lua-*/redlock-*.rock; do
  folder=${rock%/*}
  libc_only "${folder##*/}-${rock##*.linux-}" "$rock" 'luaopen_redlock_core'
done
for tarball in "$dist"/redlock-php-*.tar.gz; do
  name=${tarball##*/}
  libc_only "${name%.tar.gz}" "$tarball" 'get_module'
done
