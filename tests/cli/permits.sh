#!/usr/bin/env bash
# --permits N: one of N permits of NAME's semaphore. N commands run together,
# the next waits (or exits 75 with -n) until one of them ends; every command
# of NAME must give the same N; REDLOCK_TOKEN is the permit's id.
. "$(dirname "$0")/lib.sh"
start_nodes 3

# permits_held I: how many permits node I lists for "jobs" (live or not).
permits_held() {
  cli_node "$1" EVAL "local v = redis.call('get', KEYS[1] .. '\0permits')
    if not v then return 0 end
    local n = 0
    for _ in string.gmatch(v, ' ') do n = n + 1 end
    return n" 1 jobs
}

# Two holders of "jobs" at once, each until its own file appears.
for who in a b; do
  run_bg "$who" redlock --nodes "$NODES" --permits 2 jobs -- sh -c '
    echo "$REDLOCK_TOKEN" > "$0/$1-token"
    while [ ! -e "$0/$1-go" ]; do sleep 0.05; done' "$work" "$who"
done
wait_for_file "$work/a-token"
wait_for_file "$work/b-token"
expect_eq 2 "$(permits_held 1)" "permits on node 1 while two run"
[ "$(cat "$work/a-token")" != "$(cat "$work/b-token")" ] || fail "two permits with one id"
grep -Eq '^[0-9a-f]{32}$' "$work/a-token" || fail "REDLOCK_TOKEN is not a permit id"

# A third is refused with -n, and a plain lock of the name is another thing.
run redlock --nodes "$NODES" --permits 2 -n jobs -- touch "$work/ran" 2> "$work/err"
expect_eq 75 "$status" "status of a third command"
[ ! -e "$work/ran" ] || fail "a third command ran beside two permits"
run redlock --nodes "$NODES" -n jobs -- true
expect_eq 0 "$status" "a lock of the semaphore's name"

# Another number of permits is refused, naming both.
run redlock --nodes "$NODES" --permits 3 -n jobs -- true 2> "$work/err"
expect_eq 64 "$status" "status with another number of permits"
grep -q "has 2 permits" "$work/err" && grep -q "not 3" "$work/err" \
  || fail "the message does not name both numbers: $(cat "$work/err")"

# A waiter runs once a holder is done.
run_bg c redlock --nodes "$NODES" --permits 2 -w 20 jobs -- touch "$work/c-ran"
sleep 0.5
[ ! -e "$work/c-ran" ] || fail "a third command ran before a permit was free"
touch "$work/a-go"
wait_bg "$a"
expect_eq 0 "$status" "status of the first holder"
wait_bg "$c"
expect_eq 0 "$status" "status of the waiter"
[ -e "$work/c-ran" ] || fail "the waiter did not run"
touch "$work/b-go"
wait_bg "$b"
for _ in $(seq 1 100); do
  [ "$(permits_held 1)$(permits_held 2)$(permits_held 3)" = 000 ] && break
  sleep 0.05
done
expect_eq 000 "$(permits_held 1)$(permits_held 2)$(permits_held 3)" "permits left after all ended"

# Bad values: not a number, or out of the library's range (its message, the
# same in every language).
for bad in two ""; do
  run redlock --nodes "$NODES" --permits "$bad" jobs -- true 2> "$work/err"
  expect_eq 64 "$status" "status of --permits '$bad'"
  grep -q "permits takes a number from 1" "$work/err" || fail "message for '$bad': $(cat "$work/err")"
done
for bad in 0 -1 10001 1.5; do
  run redlock --nodes "$NODES" --permits "$bad" jobs -- true 2> "$work/err"
  expect_eq 64 "$status" "status of --permits '$bad'"
  grep -qF -- "--permits must be a whole number from 1 to 10000, not $bad" "$work/err" ||
    fail "message for '$bad': $(cat "$work/err")"
done
run redlock --nodes "$NODES" --permits 2 -s jobs -- true 2> "$work/err"
expect_eq 64 "$status" "--permits with --shared"
echo ok
