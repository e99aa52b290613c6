#!/usr/bin/env bash
# package_libc_only.sh SRC DIST - every native library in the wheel, the jar
# and the rocks needs only libc (readelf -d) and exports only its entry
# points (nm -D); auditwheel finds the wheel's manylinux tag right.
. "$(dirname "$0")/lib.sh"

# libc_only NAME FILE EXPORTS: the native libraries packed in the zip FILE
# need nothing but libc, and export only names matching EXPORTS (a regex).
libc_only() {
  local name=$1 file=$2 exports=$3 lib needed n extra count=0
  mkdir -p "$tmp/$name"
  python3 -m zipfile -e "$file" "$tmp/$name"
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
    extra=$(nm -D --defined-only "$lib" | awk '{ print $NF }' | grep -Ev "^($exports)\$" || true)
    [ -z "$extra" ] || fail "${lib#"$tmp"/} exports more than its entry points: $extra"
    echo "${lib#"$tmp"/}: NEEDED $needed"
  done < <(find "$tmp/$name" -name '*.so*' -type f -print0)
  [ "$count" -gt 0 ] || fail "no native library in ${file##*/}"
}

wheel=$(one 'redlock_native-*.whl')
libc_only wheel "$wheel" 'PyInit__capi'
libc_only jar "$(one 'redlock-*.jar')" 'Java_io_redlock_.*|JNI_OnLoad|JNI_OnUnload'
for rock in "$dist"/lua-*/redlock-*.rock; do
  folder=${rock%/*}
  libc_only "${folder##*/}-${rock##*.linux-}" "$rock" 'luaopen_redlock_core'
done
# The file's platform tag is the one auditwheel finds, and a manylinux one.
tag=$(sed -n 's/.*-\(manylinux_[0-9]*_[0-9]*_x86_64\)\.whl$/\1/p' <<<"${wheel##*/}")
[ -n "$tag" ] || fail "${wheel##*/} has no manylinux platform tag"
show=$(python3 -m auditwheel show "$wheel" | tr -s ' \n' ' ')
[[ $show == *"consistent with the following platform tag: \"$tag\""* ]] ||
  fail "auditwheel does not find $tag: $show"
[[ $show != *"external shared libraries"* ]] || fail "the wheel needs libraries: $show"
echo "auditwheel: ${wheel##*/} is $tag"
