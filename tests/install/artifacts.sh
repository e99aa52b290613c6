#!/usr/bin/env bash
# artifacts.sh KIND SRC DIST - checks what scripts/package.sh wrote into DIST,
# installed as a user installs it:
#   libc_only  every native library in the wheel, the jar and the rocks needs
#              only libc (readelf -d) and exports only its entry points
#              (nm -D); auditwheel finds the wheel's manylinux tag right
#   wheel      pip install into a fresh venv, then locks taken with it
#   jar        java -cp the jar, locks taken with it
#   rocks      luarocks install of each rock into a fresh tree, locks taken
#   tarball    the C tarball unpacked anywhere: its tool takes a lock
# The wheel, the jar and the rocks are installed and used where no
# libhiredis can be loaded (without-hiredis.sh), which needs root: without
# it those checks are skipped (exit 77). The tarball uses the system's.
set -euo pipefail
kind=$1
src=$2
dist=$(realpath "$3")
here=$src/tests/install
tmp=$(mktemp -d)
trap '"$src/scripts/redis-nodes.sh" stop "$tmp/nodes" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
unset LD_LIBRARY_PATH

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# one PATTERN: the one file in DIST that matches PATTERN.
one() {
  local found=("$dist"/$1)
  [ ${#found[@]} -eq 1 ] && [ -f "${found[0]}" ] || fail "not one $1 in $dist: ${found[*]}"
  echo "${found[0]}"
}

needs_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED: hiding libhiredis takes root (unshare -m, bind mounts); run as root to check $kind"
    exit 77
  fi
}

start_nodes() {
  mapfile -t nodes < <("$src/scripts/redis-nodes.sh" start "$tmp/nodes" 3)
}

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
        *) fail "${lib#"$tmp"/} needs $n" ;;
      esac
    done
    extra=$(nm -D --defined-only "$lib" | awk '{ print $NF }' | grep -Ev "^($exports)\$" || true)
    [ -z "$extra" ] || fail "${lib#"$tmp"/} exports more than its entry points: $extra"
    echo "${lib#"$tmp"/}: NEEDED $needed"
  done < <(find "$tmp/$name" -name '*.so*' -type f -print0)
  [ "$count" -gt 0 ] || fail "no native library in ${file##*/}"
}

rocks() {
  local rocks=("$dist"/lua-*/redlock-*.rock)
  [ -f "${rocks[0]}" ] || fail "no rock in $dist"
  printf '%s\n' "${rocks[@]}"
}

case $kind in
  libc_only)
    wheel=$(one 'redlock_native-*.whl')
    libc_only wheel "$wheel" 'PyInit__capi'
    libc_only jar "$(one 'redlock-*.jar')" 'Java_io_redlock_.*|JNI_OnLoad|JNI_OnUnload'
    while read -r rock; do
      folder=${rock%/*}
      libc_only "${folder##*/}" "$rock" 'luaopen_redlock_core'
    done < <(rocks)
    # The file's platform tag is the one auditwheel finds, and a manylinux one.
    tag=$(sed -n 's/.*-\(manylinux_[0-9]*_[0-9]*_x86_64\)\.whl$/\1/p' <<<"${wheel##*/}")
    [ -n "$tag" ] || fail "${wheel##*/} has no manylinux platform tag"
    show=$(python3 -m auditwheel show "$wheel" | tr -s ' \n' ' ')
    [[ $show == *"consistent with the following platform tag: \"$tag\""* ]] ||
      fail "auditwheel does not find $tag: $show"
    [[ $show != *"external shared libraries"* ]] || fail "the wheel needs libraries: $show"
    echo "auditwheel: ${wheel##*/} is $tag"
    ;;
  wheel)
    needs_root
    wheel=$(one 'redlock_native-*.whl')
    python3 -m venv "$tmp/venv"
    start_nodes
    "$here/without-hiredis.sh" "$tmp/venv/bin/pip" install --no-index --disable-pip-version-check --quiet "$wheel"
    cd "$tmp"
    "$here/without-hiredis.sh" "$tmp/venv/bin/python" "$here/take_lock.py" package-wheel "${nodes[@]}"
    ;;
  jar)
    needs_root
    jar=$(one 'redlock-*.jar')
    start_nodes
    cd "$tmp"
    "$here/without-hiredis.sh" java -cp "$jar" "$here/TakeLock.java" package-jar "${nodes[@]}"
    ;;
  rocks)
    needs_root
    start_nodes
    while read -r rock; do
      folder=${rock%/*}
      version=${folder##*/lua-}
      case $version in
        5.4) lua=lua5.4 ;;
        5.1) lua=luajit ;;
        *) fail "no interpreter known for $folder" ;;
      esac
      tree=$tmp/tree-$version
      # HIREDIS_LIBDIR: a rock that asked for hiredis at install would not find it.
      "$here/without-hiredis.sh" luarocks --lua-version "$version" --tree "$tree" \
        install "$rock" HIREDIS_LIBDIR="$tmp/no-hiredis" >/dev/null
      (eval "$(luarocks --lua-version "$version" --tree "$tree" path)" && cd "$tmp" &&
        "$here/without-hiredis.sh" "$lua" "$here/take_lock.lua" "package-rock-$version" "${nodes[@]}")
    done < <(rocks)
    ;;
  tarball)
    tarball=$(one 'redlock-*-linux-*.tar.gz')
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
    ;;
  *)
    fail "unknown kind $kind"
    ;;
esac
