#!/usr/bin/env bash
# test.sh - installs what is missing, builds, and runs every test: the whole
# suite (C core, tool, bindings, ABI check) on a normal build, then the C and
# tool tests again under AddressSanitizer+UndefinedBehaviorSanitizer and under
# ThreadSanitizer. Every test starts and stops its own redis-server nodes.
#
#   scripts/test.sh            everything
#   scripts/test.sh --fast     the normal build and the Release build, no sanitizer builds
#
# Every build here treats warnings as errors (REDLOCK_WERROR, off for users):
# the Release build is built (not tested: the normal build's suite covers the
# code) because optimisation brings warnings of its own, such as gcc's
# -Wformat-truncation.
set -euo pipefail
cd "$(dirname "$0")/.."

fast=0
[ "${1:-}" = "--fast" ] && fast=1

scripts/setup.sh
jobs=$(nproc)

# The builds that tests make on their own (the fuzz targets, Maven's) take
# their default from this.
export REDLOCK_WERROR=ON

build() {
  local dir=$1; shift
  echo "==== $dir: cmake $*"
  cmake -S . -B "$dir" -DREDLOCK_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
}

run_suite() {
  build "$@"
  ctest --test-dir "$1" --output-on-failure -j2
}

run_suite build -DREDLOCK_BUILD_BINDINGS=ON
build build-release -DCMAKE_BUILD_TYPE=Release
if [ "$fast" = 0 ]; then
  run_suite build-asan -DREDLOCK_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug
  TSAN_OPTIONS="halt_on_error=1" run_suite build-tsan -DREDLOCK_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug
fi
echo "==== all test suites passed"
