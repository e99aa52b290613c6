#!/usr/bin/env bash
# The lock outlives its ttl while the command runs: ttl 1s, the command runs
# for 3 s at least (until the test is done checking), and after 2 s another
# invocation is still refused.
. "$(dirname "$0")/lib.sh"
start_nodes 5

run_bg a redlock --nodes "$NODES" --ttl 1s --verbose long-job -- sh -c '
  echo "$REDLOCK_TOKEN" > "$0/a-token"
  touch "$0/a-started"
  sleep 3
  while [ ! -e "$0/checked" ]; do sleep 0.05; done' "$work" 2> "$work/a-err"
wait_for_file "$work/a-started"
sleep 2

run redlock --nodes "$NODES" --wait 0 long-job -- true 2> /dev/null
expect_eq 75 "$status" "status of a second invocation past the first one's ttl (the first one said: $(cat "$work/a-err"))"
# A majority of nodes hold the key with a fresh lease (a minority may have
# answered too late and hold none).
fresh=0
for i in 1 2 3 4 5; do
  ttl=$(cli_node "$i" PTTL long-job)
  [ "$ttl" -gt 0 ] && [ "$ttl" -le 1000 ] && fresh=$((fresh + 1))
done
[ "$fresh" -ge 3 ] || fail "only $fresh nodes hold the key with a lease of at most 1 s"

touch "$work/checked"
wait_bg "$a"
expect_eq 0 "$status" "status of the long command"
# The library keeps it (redlock_handle_watch), and tells each renewal.
grep -q "^redlock: \[debug\] extended op=renew resource=long-job " "$work/a-err" ||
  fail "no extension reported: $(cat "$work/a-err")"
# Neither the tool's messages nor the library's events (extended ...) show a
# whole token.
token=$(cat "$work/a-token")
[[ "$token" =~ ^[0-9a-f]{32}$ ]] || fail "REDLOCK_TOKEN is not 32 hex characters: '$token'"
! grep -qF "$token" "$work/a-err" || fail "--verbose prints the whole token: $(cat "$work/a-err")"
expect_released long-job

# Without --ttl, the lease is the library's for a kept lock, which a lower
# max_lease_ms caps: the run is not refused for a default it cannot change.
run_bg b redlock --nodes "$NODES" -o max_lease_ms=10000 capped-job -- sh -c '
  touch "$0/b-started"
  while [ ! -e "$0/b-checked" ]; do sleep 0.05; done' "$work" 2> "$work/b-err"
for _ in $(seq 1 2000); do
  [ -e "$work/b-started" ] && break
  kill -0 "$b" 2>/dev/null || fail "the run with max_lease_ms=10000 ended: $(cat "$work/b-err")"
  sleep 0.01
done
[ -e "$work/b-started" ] || fail "the run with max_lease_ms=10000 did not start: $(cat "$work/b-err")"
capped=0
for i in 1 2 3 4 5; do
  ttl=$(cli_node "$i" PTTL capped-job)
  [ "$ttl" -gt 0 ] && [ "$ttl" -le 10000 ] && capped=$((capped + 1))
done
[ "$capped" -ge 3 ] || fail "only $capped nodes hold the key with a lease of at most 10 s"
touch "$work/b-checked"
wait_bg "$b"
expect_eq 0 "$status" "status of the run with max_lease_ms=10000 and no --ttl"
expect_released capped-job
echo "ok"
