# lib.sh - sourced by the package_*.sh checks: each checks one kind of what
# scripts/package.sh wrote into DIST, installed as a user installs it.
# Sets src, dist, here and tmp (removed on exit, with any nodes started).
set -euo pipefail
src=$(realpath "${1:?usage: $0 SRC DIST}")
dist=$(realpath "${2:?usage: $0 SRC DIST}")
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

# The bindings are installed and used where no libhiredis can be loaded
# (without-hiredis.sh), which needs root: without it a check is skipped.
needs_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED: hiding libhiredis takes root (unshare -m, bind mounts); run as root"
    exit 77
  fi
}

# start_nodes [N]: N local nodes (3), their URIs in the array nodes.
start_nodes() {
  mapfile -t nodes < <("$src/scripts/redis-nodes.sh" start "$tmp/nodes" "${1:-3}")
}

# The hiredis the artifacts embed, as scripts/package/lib.sh pins it
# (REDLOCK_HIREDIS_VERSION, REDLOCK_HIREDIS_TARBALL).
hiredis_pin() {
  (REDLOCK_SRC=$src; . "$src/scripts/package/lib.sh"; echo "$REDLOCK_HIREDIS_VERSION"; hiredis_tarball)
}
mapfile -t _pin < <(hiredis_pin)
hiredis_version=${_pin[0]:-}
hiredis_tarball=${_pin[1]:-}

# built_with_hiredis FILE: FILE (a library, a module or a program with the
# core in it) was built with the pinned hiredis: it holds the core's
# "redlock built with hiredis X.Y.Z" (core/api/ctx.c) for that version.
built_with_hiredis() {
  [ -n "$hiredis_version" ] || fail "no hiredis pinned in scripts/package/lib.sh"
  local found
  found=$(strings -a "$1" | grep -o 'redlock built with hiredis [0-9.]*' | sort -u | xargs)
  [ "$found" = "redlock built with hiredis $hiredis_version" ] ||
    fail "${1#"$tmp"/} is not built with hiredis $hiredis_version: ${found:-no such string}"
}

# hiredis_license FILE: FILE is hiredis' COPYING (BSD-3-Clause) from the
# pinned release's tarball, byte for byte.
hiredis_license() {
  [ -f "$hiredis_tarball" ] || fail "no hiredis tarball to compare ${1#"$tmp"/} with"
  cmp -s "$1" <(tar -xzOf "$hiredis_tarball" "hiredis-$hiredis_version/COPYING") ||
    fail "${1#"$tmp"/} is not hiredis $hiredis_version's COPYING"
  grep -q 'Redistribution and use in source and binary forms' "$1" ||
    fail "${1#"$tmp"/} is no BSD license"
}
