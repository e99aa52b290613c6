#!/usr/bin/env bash
# When the lock is lost while the command runs, the command gets SIGTERM and
# the tool reports it and exits with 74: once when the keys are taken away,
# once when too many nodes stop and the extensions fail until validity ends.
. "$(dirname "$0")/lib.sh"
start_nodes 5

# The command records SIGTERM, stops its sleep and exits 0: the tool's status
# must still be 74.
command='trap "touch \"$0/$1-term\"; kill \$!; exit 0" TERM
touch "$0/$1-started"
sleep 30 & wait'

# 1. Someone deletes the keys.
run_bg a redlock --nodes "$NODES" --ttl 1s stolen -- sh -c "$command" "$work" a 2> "$work/a-err"
wait_for_file "$work/a-started"
for i in 1 2 3 4 5; do
  cli_node "$i" DEL stolen > /dev/null
done
wait_bg "$a"
expect_eq 74 "$status" "status when the keys were deleted ($(cat "$work/a-err"))"
[ -e "$work/a-term" ] || fail "the command did not get SIGTERM"
grep -q "^redlock: lost the lock on 'stolen'" "$work/a-err" ||
  fail "no message for the lost lock: $(cat "$work/a-err")"

# 2. Three of five nodes stop: extensions fail, then validity runs out.
run_bg b redlock --nodes "$NODES" --ttl 1s unreachable -- sh -c "$command" "$work" b \
  2> "$work/b-err"
wait_for_file "$work/b-started"
for i in 1 2 3; do
  "$REDIS_NODES_SH" stop-node "$work/nodes" "$i"
done
wait_bg "$b"
expect_eq 74 "$status" "status when a majority of nodes stopped ($(cat "$work/b-err"))"
[ -e "$work/b-term" ] || fail "the command did not get SIGTERM"
grep -q "^redlock: cannot extend 'unreachable'" "$work/b-err" ||
  fail "no message for the failed extension: $(cat "$work/b-err")"
grep -q "^redlock: lost the lock on 'unreachable'" "$work/b-err" ||
  fail "no message for the lost lock: $(cat "$work/b-err")"
echo "ok"
