#!/usr/bin/env bash
# without-hiredis.sh COMMAND [ARG...] - runs COMMAND where no libhiredis can
# be loaded: in a private mount namespace of its own (unshare -m, as root),
# with /dev/null bind-mounted over every libhiredis*.so* file the loader
# knows of (its cache) or the usual library folders hold. It checks that
# each one then fails to load, by name, before running COMMAND.
# REDLOCK_HIDE names more libraries to hide the same way (space-separated
# prefixes: "libssl libcrypto").
set -euo pipefail
if [ -z "${REDLOCK_IN_PRIVATE_MOUNTS:-}" ]; then
  REDLOCK_IN_PRIVATE_MOUNTS=1 exec unshare --mount --propagation private "$0" "$@"
fi
unset REDLOCK_IN_PRIVATE_MOUNTS

mapfile -t libs < <(
  for prefix in libhiredis ${REDLOCK_HIDE:-}; do
    ldconfig -p | awk -v p="^$prefix" '$1 ~ p { print $NF }'
    find /usr/lib /usr/local/lib -name "$prefix*.so*" 2>/dev/null || true
  done | xargs -r readlink -f | sort -u)
for lib in "${libs[@]}"; do
  mount --bind /dev/null "$lib"
  if python3 -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "${lib##*/}" 2>/dev/null; then
    echo "without-hiredis: ${lib##*/} still loads" >&2
    exit 1
  fi
done
echo "without-hiredis: hidden: ${libs[*]:-(no such library on this machine)}" >&2
exec "$@"
