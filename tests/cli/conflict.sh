#!/usr/bin/env bash
# While one invocation holds the lock, another with --wait 0 or -n is refused
# with 75 (or --conflict-exit-code) and its command does not run; one with a
# long enough --wait runs its command after the first has finished.
. "$(dirname "$0")/lib.sh"
start_nodes 5

# A holds "job" until the file "go" appears.
run_bg a redlock --nodes "$NODES" job -- sh -c '
  touch "$0/a-started"
  while [ ! -e "$0/go" ]; do sleep 0.05; done
  touch "$0/a-done"' "$work"
wait_for_file "$work/a-started"

run redlock --nodes "$NODES" --wait 0 job -- touch "$work/b-ran" 2> "$work/err"
expect_eq 75 "$status" "status while someone else holds the lock"
[ ! -e "$work/b-ran" ] || fail "the refused command ran"
grep -q "^redlock: cannot acquire 'job': .*held by someone else" "$work/err" ||
  fail "no message for the refusal: $(cat "$work/err")"

run redlock --nodes "$NODES" -n --conflict-exit-code 3 job -- true
expect_eq 3 "$status" "status with --conflict-exit-code 3"
run redlock --nodes "$NODES" --nonblock -E 0 job -- touch "$work/b-ran"
expect_eq 0 "$status" "status with -E 0"
[ ! -e "$work/b-ran" ] || fail "the refused command ran with -E 0"

run redlock --quiet --nb --nodes "$NODES" job -- true 2> "$work/err"
expect_eq 75 "$status" "status with --quiet"
[ ! -s "$work/err" ] || fail "--quiet printed: $(cat "$work/err")"

# Another name is not affected.
run redlock --nodes "$NODES" other-job -- true
expect_eq 0 "$status" "status for another name"

# C waits: it must run after A has finished, not before.
run_bg c redlock --nodes "$NODES" --wait 20s job -- sh -c '
  [ -e "$0/a-done" ] && touch "$0/c-ran-after-a"' "$work"
sleep 0.5
[ ! -e "$work/c-ran-after-a" ] || fail "C ran while A held the lock"
touch "$work/go"
wait_bg "$a"
expect_eq 0 "$status" "status of A"
wait_bg "$c"
expect_eq 0 "$status" "status of C, which waited for A"
[ -e "$work/c-ran-after-a" ] || fail "C did not run after A"
expect_released job
echo "ok"
