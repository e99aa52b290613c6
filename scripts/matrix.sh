#!/usr/bin/env bash
# matrix.sh - the longer run of the server matrix (tests/matrix): on each
# server of scripts/servers.sh (Redis 6.2, Valkey 9.1), the C core tests,
# the Python binding's tests of every lock kind, fencing and kept locks, and
# the fault scenarios, in a build of its own (build-matrix). Every normal
# build already runs the core part of it.
#
#   scripts/matrix.sh
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/servers.sh install
cmake -S . -B build-matrix -DREDLOCK_BUILD_BINDINGS=ON -DREDLOCK_SERVER_MATRIX=full >/dev/null
cmake --build build-matrix -j"$(nproc)"
ctest --test-dir build-matrix --output-on-failure -j2 -L matrix
