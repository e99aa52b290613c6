#!/usr/bin/env bash
# without-hiredis.sh COMMAND [ARG...] - runs COMMAND where no libhiredis can
# be loaded: in a private mount namespace of its own (unshare -m, as root),
# with /dev/null bind-mounted over every libhiredis*.so* file the loader
# knows of (its cache) or the usual library folders hold. It checks that
# each one then fails to load, by name, before running COMMAND.
set -euo pipefail
if [ -z "${REDLOCK_IN_PRIVATE_MOUNTS:-}" ]; then
  REDLOCK_IN_PRIVATE_MOUNTS=1 exec unshare --mount --propagation private "$0" "$@"
fi
unset REDLOCK_IN_PRIVATE_MOUNTS

mapfile -t libs < <(
  { ldconfig -p | awk '$1 ~ /^libhiredis/ { print $NF }'
    find /usr/lib /usr/local/lib -name 'libhiredis*.so*' 2>/dev/null || true
  } | xargs -r readlink -f | sort -u)
for lib in "${libs[@]}"; do
  mount --bind /dev/null "$lib"
  if python3 -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "${lib##*/}" 2>/dev/null; then
    echo "without-hiredis: ${lib##*/} still loads" >&2
    exit 1
  fi
done
echo "without-hiredis: hidden: ${libs[*]:-(no libhiredis on this machine)}" >&2
exec "$@"
