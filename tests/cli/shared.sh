#!/usr/bin/env bash
# -s/--shared and -x/-e/--exclusive, as in flock: shared commands run
# together, an exclusive one runs alone and waits for them, and a shared one
# waits for an exclusive one; the later of -s and -x wins.
. "$(dirname "$0")/lib.sh"
start_nodes 3

# Two shared holders of "data" at once, each until its own file appears.
run_bg a redlock --nodes "$NODES" -s data -- sh -c '
  touch "$0/a-started"; while [ ! -e "$0/a-go" ]; do sleep 0.05; done' "$work"
run_bg b redlock --nodes "$NODES" --shared data -- sh -c '
  touch "$0/b-started"; while [ ! -e "$0/b-go" ]; do sleep 0.05; done' "$work"
wait_for_file "$work/a-started"
wait_for_file "$work/b-started"
# Each was granted by a quorum: node 1 may take the second reader a moment
# after that one's command started.
for _ in $(seq 1 300); do
  shared=$(cli_node 1 GET data)
  case $shared in
    "redlock:readers "*:*" "*:*) break ;;
  esac
  sleep 0.01
done
case $shared in
  "redlock:readers "*:*" "*:*) ;;
  *) fail "the key while shared holds '$shared', not two readers" ;;
esac

# Exclusive (-x, -e, --exclusive, and the default) is refused while they run.
for option in -x -e --exclusive -s\ -x ""; do
  # shellcheck disable=SC2086
  run redlock --nodes "$NODES" $option -n data -- touch "$work/ran" 2> /dev/null
  expect_eq 75 "$status" "status with '$option' beside shared holders"
done
[ ! -e "$work/ran" ] || fail "an exclusive command ran beside shared ones"
# A third shared one runs at once.
run redlock --nodes "$NODES" -x -s -n data -- touch "$work/shared-ran"
expect_eq 0 "$status" "status of a third shared command"

# An exclusive waiter runs once both shared holders are done, not before.
run_bg c redlock --nodes "$NODES" -w 20 data -- touch "$work/exclusive-ran"
sleep 0.5
touch "$work/a-go"
wait_bg "$a"
sleep 0.5
[ ! -e "$work/exclusive-ran" ] || fail "the exclusive command ran beside a shared one"
touch "$work/b-go"
wait_bg "$b"
wait_bg "$c"
expect_eq 0 "$status" "status of the exclusive command"
[ -e "$work/exclusive-ran" ] || fail "the exclusive command did not run"
expect_released data

# A shared command waits for an exclusive holder.
run_bg d redlock --nodes "$NODES" data -- sh -c '
  touch "$0/d-started"; while [ ! -e "$0/d-go" ]; do sleep 0.05; done' "$work"
wait_for_file "$work/d-started"
run redlock --nodes "$NODES" -s -n data -- touch "$work/ran"
expect_eq 75 "$status" "a shared command beside an exclusive holder"
touch "$work/d-go"
wait_bg "$d"
expect_released data
echo ok
