#!/usr/bin/env bash
# flock(1)'s options: -n/--nonblock/--nb (one attempt, refused with -E's
# status), -w/--wait/--timeout with fractions, waiting by default when
# neither is given, -c/--command with a shell string, nodes from
# REDLOCK_NODES, and a signal ending a wait.
. "$(dirname "$0")/lib.sh"
start_nodes 3

# elapsed_ms: milliseconds since "start=$(date +%s%N)".
elapsed_ms() {
  echo $((($(date +%s%N) - start) / 1000000))
}

# A holds "job" until the file "go" appears.
run_bg a redlock --nodes "$NODES" job -- sh -c '
  touch "$0/a-started"
  while [ ! -e "$0/go" ]; do sleep 0.05; done' "$work"
wait_for_file "$work/a-started"
token=$(cli_node 1 GET job)

# -n and its long forms: one attempt, refused at once with 75 or -E's status.
for option in -n --nonblock --nb; do
  start=$(date +%s%N)
  run redlock --nodes "$NODES" "$option" job -- touch "$work/ran" 2> "$work/err"
  expect_eq 75 "$status" "status with $option"
  [ "$(elapsed_ms)" -lt 2000 ] || fail "$option waited $(elapsed_ms) ms"
done
run redlock --nodes "$NODES" -n -E 9 job -- touch "$work/ran"
expect_eq 9 "$status" "status with -n -E 9"
# -n wins over -w, in either order, as in flock.
start=$(date +%s%N)
run redlock --nodes "$NODES" -n -w 10 job -- touch "$work/ran" 2> /dev/null
expect_eq 75 "$status" "status with -n -w 10"
run redlock --nodes "$NODES" -w 10 -n job -- touch "$work/ran" 2> /dev/null
expect_eq 75 "$status" "status with -w 10 -n"
[ "$(elapsed_ms)" -lt 4000 ] || fail "-n with -w waited $(elapsed_ms) ms"
# The nodes from REDLOCK_NODES.
run env REDLOCK_NODES="$NODES" "$REDLOCK_BIN" -n job -- touch "$work/ran" 2> /dev/null
expect_eq 75 "$status" "status with -n and REDLOCK_NODES"

# -w with a fraction of a second, bare or with a unit, and --timeout.
for wait in "-w 0.5" "--wait .5" "--timeout 0.5s" "-w 500ms"; do
  start=$(date +%s%N)
  # shellcheck disable=SC2086
  run redlock --nodes "$NODES" $wait job -- touch "$work/ran" 2> /dev/null
  elapsed=$(elapsed_ms)
  expect_eq 75 "$status" "status with $wait"
  [ "$elapsed" -ge 450 ] && [ "$elapsed" -lt 3000 ] || fail "$wait waited $elapsed ms"
done
[ ! -e "$work/ran" ] || fail "a refused command ran"

# A signal ends a default wait: the waiter dies of it, its command does not
# run, and A's key is untouched.
run_bg w redlock --nodes "$NODES" job -- touch "$work/ran"
sleep 0.5
kill -TERM "$w"
wait_bg "$w"
expect_eq 143 "$status" "status of a wait ended by SIGTERM"
[ ! -e "$work/ran" ] || fail "the interrupted waiter ran its command"
expect_eq "$token" "$(cli_node 1 GET job)" "A's token after the interrupted wait"

# Default wait: with neither -n nor -w, B waits while A holds the lock (A
# finishes a second later) and then runs its command.
(sleep 1 && touch "$work/go") &
start=$(date +%s%N)
run redlock --nodes "$NODES" job -- sh -c '[ -e "$0/go" ] && touch "$0/b-ran"' "$work"
expect_eq 0 "$status" "status of B, which waited by default"
[ -e "$work/b-ran" ] || fail "B did not run after A"
[ "$(elapsed_ms)" -ge 900 ] || fail "B did not wait for A ($(elapsed_ms) ms)"
wait_bg "$a"
expect_eq 0 "$status" "status of A"

# -c runs a shell string with /bin/sh, after NAME (as in flock) or before it;
# its status is the tool's.
run redlock --nodes "$NODES" shell-job -c "echo \"\$REDLOCK_NAME\" | tr a-z A-Z > '$work/c1'; exit 3"
expect_eq 3 "$status" "status of -c"
expect_eq SHELL-JOB "$(cat "$work/c1")" "output of -c"
run redlock --nodes "$NODES" --command "echo \"\$REDLOCK_NAME\" > '$work/c2'" shell-job
expect_eq 0 "$status" "status of --command before NAME"
expect_eq shell-job "$(cat "$work/c2")" "output of --command before NAME"
run redlock --nodes "$NODES" shell-job --command "exit 7"
expect_eq 7 "$status" "status of --command after NAME"
# -c after "--" is the command's own argument.
run redlock --nodes "$NODES" shell-job -- sh -c 'echo "$1" > "$0"' "$work/c3" -c
expect_eq "0 -c" "$status $(cat "$work/c3")" "-c after --"
expect_released job
expect_released shell-job
echo "ok"
