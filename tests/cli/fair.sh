#!/usr/bin/env bash
# --fair: NAME's fair lock. Commands waiting for it run in the order they
# came; it is NAME's plain lock, so a plain command and a fair one exclude
# each other.
. "$(dirname "$0")/lib.sh"
start_nodes 3

# queued: how many waiters node 1 lists for "job".
queued() {
  cli_node 1 EVAL "local v = redis.call('get', KEYS[1] .. '\0queue')
    if not v then return 0 end
    local n = 0
    for _ in string.gmatch(v, ' ') do n = n + 1 end
    return n" 1 job
}

run_bg holder redlock --nodes "$NODES" --fair job -- sh -c '
  touch "$0/held"; while [ ! -e "$0/go" ]; do sleep 0.05; done' "$work"
wait_for_file "$work/held"
run redlock --nodes "$NODES" -n job -- true
expect_eq 75 "$status" "a plain command beside the fair holder"

# Three waiters, each queued before the next one starts; each appends its
# name to the log under the lock.
pids=()
for who in first second third; do
  redlock --nodes "$NODES" --fair -w 30 job -- sh -c 'echo "$1" >> "$0/order"' "$work" "$who" &
  pids+=("$!")
  want=${#pids[@]}
  for _ in $(seq 1 300); do
    [ "$(queued)" -ge "$want" ] && break
    sleep 0.01
  done
  [ "$(queued)" -ge "$want" ] || fail "the $who waiter is not queued"
done
touch "$work/go"
wait_bg "$holder"
expect_eq 0 "$status" "status of the holder"
for pid in "${pids[@]}"; do
  wait_bg "$pid"
  expect_eq 0 "$status" "status of a waiter"
done
expect_eq "first second third" "$(paste -sd' ' "$work/order")" "the order the waiters ran in"
expect_released job

run redlock --nodes "$NODES" --fair -s job -- true 2> "$work/err"
expect_eq 64 "$status" "--fair with --shared"
run redlock --nodes "$NODES" --fair --permits 2 job -- true 2> "$work/err"
expect_eq 64 "$status" "--fair with --permits"
echo ok
