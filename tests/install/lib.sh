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
