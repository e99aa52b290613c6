#!/usr/bin/env bash
# setup.sh - installs the peers the benchmarks compare against, from their
# registries, and the Python packages the report needs. Safe to run again: it
# only does what is missing or out of date. Needs the tools scripts/setup.sh
# installs, plus Go, Node and npm.
#
#   .venv/                      Python: matplotlib, pottery (PyPI)
#   peers/redisson/target/      Redisson and its dependencies (Maven Central)
#   peers/node-redlock/node_modules/  node-redlock and ioredis (npm ci)
#   .tools/redsync-bench        redsync (Go module proxy, go.mod/go.sum here)
#   .tools/toxiproxy-server     Toxiproxy, for the straggler (Go module proxy)
set -euo pipefail

TOXIPROXY_VERSION=v2.5.0
bench=$(cd "$(dirname "$0")" && pwd)
cd "$bench"

for tool in python3 java mvn go node npm luajit; do
  command -v "$tool" >/dev/null || echo "bench/setup: $tool is missing; the clients that need it are skipped" >&2
done

# Is any of the given files newer than the stamp (or the stamp missing)?
stale() {
  local stamp=$1
  shift
  [ -e "$stamp" ] || return 0
  [ -n "$(find "$@" -newer "$stamp" -print -quit)" ]
}

if stale .venv/.installed requirements.txt peers/pottery/requirements.txt; then
  echo "bench/setup: Python packages"
  python3 -m venv .venv
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt -r peers/pottery/requirements.txt
  touch .venv/.installed
fi

if command -v mvn >/dev/null && stale peers/redisson/target/.installed peers/redisson/pom.xml \
     peers/redisson/src clients/java/harness; then
  echo "bench/setup: Redisson"
  mvn -B -q --no-transfer-progress -f peers/redisson/pom.xml package dependency:copy-dependencies
  touch peers/redisson/target/.installed
fi

if command -v npm >/dev/null && stale peers/node-redlock/node_modules/.installed \
     peers/node-redlock/package-lock.json; then
  echo "bench/setup: node-redlock"
  (cd peers/node-redlock && npm ci --no-audit --no-fund --loglevel=error)
  touch peers/node-redlock/node_modules/.installed
fi

if command -v go >/dev/null; then
  mkdir -p .tools
  if stale .tools/redsync-bench peers/redsync; then
    echo "bench/setup: redsync"
    (cd peers/redsync && go build -o "$bench/.tools/redsync-bench" .)
  fi
  if [ ! -x .tools/toxiproxy-server ]; then
    echo "bench/setup: Toxiproxy $TOXIPROXY_VERSION"
    # The module's server command is named "server" at this version.
    GOBIN="$bench/.tools" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION"
    mv .tools/server .tools/toxiproxy-server
  fi
fi
echo "bench/setup: peers installed"
