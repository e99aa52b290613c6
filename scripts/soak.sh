#!/usr/bin/env bash
# soak.sh - the fault and topology tests of the C library, again and again
# under the sanitizers on a loaded machine: each round runs them in the
# ASan+UBSan build and in the TSan build while two simulator runs keep both
# cores busy beside them. A flaky test shows up here before it shows up in CI.
#
#   scripts/soak.sh [ROUNDS]    (default 10; stops at the first failure)
#
# The tests: the C tests that break nodes (c_faults, c_fence, c_stall), the
# topology tests (c_topo_support, topo_script), and those that flaked under
# load before (c_lock, c_rw, c_many). Each round's output is in
# soak/round-N-BUILD.log.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-10}
tests='^(c_faults|c_fence|c_stall|c_topo_support|topo_script|c_lock|c_rw|c_many)$'
export REDLOCK_WERROR=ON

build() {
  local dir=$1; shift
  cmake -S . -B "$dir" -DREDLOCK_WERROR=ON -DCMAKE_BUILD_TYPE=Debug "$@" >/dev/null
  cmake --build "$dir" -j"$(nproc)" >/dev/null
}
build build-asan -DREDLOCK_SANITIZE=address,undefined
build build-tsan -DREDLOCK_SANITIZE=thread
build build   # the simulator, unsanitized (the load)

mkdir -p soak
sims=()
stop_sims() { [ ${#sims[@]} -eq 0 ] || kill "${sims[@]}" 2>/dev/null || true; }
trap stop_sims EXIT
# Two simulations, new seeds each time one ends, for as long as the rounds run.
for n in 1 2; do
  (seed=$((1000 * n)); while :; do
     build/tests/sim/sim --seed "$seed" --ops 1000000 >/dev/null 2>&1 || {
       echo "soak: the simulator failed with seed $seed" >&2; exit 1; }
     seed=$((seed + 1)); done) &
  sims+=($!)
done

start=$(date +%s)
for round in $(seq 1 "$rounds"); do
  for dir in build-asan build-tsan; do
    log="soak/round-$round-$dir.log"
    if ! TSAN_OPTIONS="halt_on_error=1" ctest --test-dir "$dir" -R "$tests" \
         --output-on-failure -j2 >"$log" 2>&1; then
      echo "soak: round $round failed in $dir (see $log):"
      grep -E 'Failed|\*\*\*' "$log" || true
      exit 1
    fi
    for sim in "${sims[@]}"; do
      kill -0 "$sim" 2>/dev/null || { echo "soak: a simulator run failed"; exit 1; }
    done
    echo "soak: round $round $dir: $(grep -E 'tests passed' "$log") ($(( $(date +%s) - start )) s)"
  done
done
echo "soak: $rounds rounds passed under ASan+UBSan and TSan beside two simulations"
