#!/usr/bin/env bash
# package_hiredis.sh SRC DIST - every artifact carries the pinned hiredis
# (scripts/package/lib.sh: 1.4.1) and says so:
#   - every native library (the wheels' modules, the jar's JNI libraries,
#     the rocks' modules, the tarballs' libredlock.so.1 and libredlock.a,
#     the PHP tarballs' redlock.so) was built with it: it holds "redlock built with hiredis 1.4.1";
#   - each carries hiredis' COPYING from the release's tarball, byte for
#     byte, and says which hiredis it embeds where its kind keeps such
#     things: a wheel in its dist-info (licenses/hiredis/NOTICE), the jar
#     in its manifest (Hiredis-Version) and META-INF/NOTICE.hiredis, a rock
#     in its rockspec's description and doc/hiredis-NOTICE, a tarball in
#     share/doc/redlock/hiredis-NOTICE and its tool's --version, a PHP
#     tarball in hiredis-NOTICE beside redlock.so.
# The tools run here for this machine's tarball; package_tarball_aarch64
# checks the other's under qemu-user.
. "$(dirname "$0")/lib.sh"
[ -n "$hiredis_version" ] || fail "no hiredis pinned in scripts/package/lib.sh"

# notice FILE: FILE is the notice of the pinned hiredis.
notice() {
  [ -f "$1" ] || fail "no ${1#"$tmp"/}"
  grep -q "^hiredis $hiredis_version is linked into the native code of this artifact" "$1" ||
    fail "${1#"$tmp"/} does not name hiredis $hiredis_version: $(cat "$1")"
}

# natives DIR PATTERN: the files under DIR named PATTERN, at least one, each
# built with the pinned hiredis.
natives() {
  local lib count=0
  while IFS= read -r -d '' lib; do
    built_with_hiredis "$lib"
    count=$((count + 1))
  done < <(find "$1" -name "$2" -type f -print0)
  [ "$count" -gt 0 ] || fail "no $2 in ${1#"$tmp"/}"
  echo "  $count native libraries built with hiredis $hiredis_version"
}

for wheel in "$dist"/redlock_native-*.whl; do
  dir=$tmp/${wheel##*/}
  python3 -m zipfile -e "$wheel" "$dir"
  echo "${wheel##*/}:"
  natives "$dir" '*.so'
  info=$(echo "$dir"/redlock_native-*.dist-info)
  hiredis_license "$info/licenses/hiredis/COPYING"
  notice "$info/licenses/hiredis/NOTICE"
done

jar=$(one 'redlock-[0-9]*.jar')
echo "${jar##*/}:"
python3 -m zipfile -e "$jar" "$tmp/jar"
natives "$tmp/jar/native" 'libredlock_jni.so'
grep -qx "Hiredis-Version: $hiredis_version" <(tr -d '\r' <"$tmp/jar/META-INF/MANIFEST.MF") ||
  fail "the jar's manifest lacks Hiredis-Version: $hiredis_version"
hiredis_license "$tmp/jar/META-INF/LICENSE.hiredis"
notice "$tmp/jar/META-INF/NOTICE.hiredis"

for rock in "$dist"/lua-*/redlock-*.rock; do
  folder=${rock%/*}
  dir=$tmp/${folder##*/}-${rock##*/}
  python3 -m zipfile -e "$rock" "$dir"
  echo "${folder##*/}/${rock##*/}:"
  natives "$dir/lib" '*.so'
  grep -q "module has hiredis $hiredis_version linked in" "$dir"/redlock-*.rockspec ||
    fail "${rock##*/}'s rockspec does not name hiredis $hiredis_version"
  # The rockspec is still one luarocks reads, its description with it.
  lua5.4 - "$(echo "$dir"/redlock-*.rockspec)" <<'LUA' || fail "${rock##*/}'s rockspec does not load"
local env = {}
assert(loadfile(arg[1], "t", env))()
print("  " .. assert(env.description.detailed:match("%s*([^\n]*hiredis[^\n]*)")))
LUA
  hiredis_license "$dir/doc/hiredis-COPYING"
  notice "$dir/doc/hiredis-NOTICE"
done

for tarball in "$dist"/redlock-[0-9]*-linux-*.tar.gz; do
  echo "${tarball##*/}:"
  mkdir -p "$tmp/c"
  tar -C "$tmp/c" -xzf "$tarball"
  prefix=$tmp/c/$(basename "$tarball" .tar.gz)
  built_with_hiredis "$prefix/lib/libredlock.so.1"
  built_with_hiredis "$prefix/lib/libredlock.a"
  hiredis_license "$prefix/share/doc/redlock/hiredis-COPYING"
  notice "$prefix/share/doc/redlock/hiredis-NOTICE"
  if [[ $tarball == *"-linux-$(uname -m).tar.gz" ]]; then
    version=$("$prefix/bin/redlock" --version)
    [[ $version == *", hiredis $hiredis_version)" ]] ||
      fail "the tool's --version does not name hiredis $hiredis_version: $version"
    echo "  $version"
  fi
done
for tarball in "$dist"/redlock-php-*-linux-*.tar.gz; do
  echo "${tarball##*/}:"
  mkdir -p "$tmp/php"
  tar -C "$tmp/php" -xzf "$tarball"
  root=$tmp/php/$(basename "$tarball" .tar.gz)
  built_with_hiredis "$root/redlock.so"
  hiredis_license "$root/hiredis-COPYING"
  notice "$root/hiredis-NOTICE"
done
echo "every artifact carries hiredis $hiredis_version, its license and its version"
