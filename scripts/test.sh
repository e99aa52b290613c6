#!/usr/bin/env bash
# test.sh - installs what is missing, builds, and runs every test: the whole
# suite (C core, tool, bindings, ABI check) on a normal build, then the C and
# tool tests again under AddressSanitizer+UndefinedBehaviorSanitizer and under
# ThreadSanitizer. Every test starts and stops its own redis-server nodes.
#
#   scripts/test.sh            everything
#   scripts/test.sh --fast     the normal build only, no sanitizer builds
set -euo pipefail
cd "$(dirname "$0")/.."

fast=0
[ "${1:-}" = "--fast" ] && fast=1

scripts/setup.sh
jobs=$(nproc)

run_suite() {
  local dir=$1; shift
  echo "==== $dir: cmake $*"
  cmake -S . -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  ctest --test-dir "$dir" --output-on-failure -j2
}

run_suite build -DREDLOCK_BUILD_BINDINGS=ON
if [ "$fast" = 0 ]; then
  run_suite build-asan -DREDLOCK_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug
  TSAN_OPTIONS="halt_on_error=1" run_suite build-tsan -DREDLOCK_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug
fi
echo "==== all test suites passed"
