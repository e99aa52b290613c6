#!/usr/bin/env bash
# package_rocks.sh SRC DIST - luarocks install of each rock for this
# machine into a fresh tree, where no libhiredis can be loaded: locks taken
# with it. (The other machines' rocks are checked by package_libc_only.)
. "$(dirname "$0")/lib.sh"
needs_root
rocks=("$dist"/lua-*/redlock-*.linux-"$(uname -m)".rock)
[ -f "${rocks[0]}" ] || fail "no rock in $dist"
start_nodes
for rock in "${rocks[@]}"; do
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
done
