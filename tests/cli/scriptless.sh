#!/usr/bin/env bash
# On nodes that run no scripts (REDIS_NO_SCRIPTING: lua on Valkey, acl
# elsewhere, unless set): a command runs under a plain lock kept past its
# ttl, a second -w 0 is refused with 75 meanwhile, fences increase, -v tells
# no_scripting for each node and --check finds them healthy; --shared,
# --fair and --permits exit 70 naming scripting; a node started again runs
# no scripts either; no script ran.
. "$(dirname "$0")/lib.sh"
if [ -z "${REDIS_NO_SCRIPTING:-}" ]; then
  case ${REDIS_SERVER:-} in
    *valkey*) export REDIS_NO_SCRIPTING=lua ;;
    *) export REDIS_NO_SCRIPTING=acl ;;
  esac
fi
start_nodes 3

# A holds "job" with a ttl of 600 ms until the file "go" appears.
run_bg a redlock --nodes "$NODES" --ttl 600ms --fencing -v job -- sh -c '
  echo "$REDLOCK_FENCE" > "$0/a-fence"
  touch "$0/a-started"
  while [ ! -e "$0/go" ]; do sleep 0.05; done' "$work" 2> "$work/a-err"
wait_for_file "$work/a-started"
sleep 1.5
run redlock --nodes "$NODES" -w 0 job -- touch "$work/b-ran" 2> "$work/err"
expect_eq 75 "$status" "status while A holds the lock past its ttl (A said: $(cat "$work/a-err"))"
[ ! -e "$work/b-ran" ] || fail "the refused command ran"
[ "$(nodes_with_key job)" -ge 2 ] || fail "a quorum does not hold the key"
touch "$work/go"
wait_bg "$a"
expect_eq 0 "$status" "status of A"
expect_released job
expect_eq 3 "$(grep -c '^redlock: \[warn\] no_scripting node=127.0.0.1:' "$work/a-err")" \
  "no_scripting told for each node: $(cat "$work/a-err")"
grep -q '^redlock: \[debug\] extended op=renew resource=job ' "$work/a-err" ||
  fail "no renewal told: $(cat "$work/a-err")"

run redlock --nodes "$NODES" --fencing job -- sh -c 'echo "$REDLOCK_FENCE" > "$0/b-fence"' "$work"
expect_eq 0 "$status" "status of a second run"
[ "$(cat "$work/a-fence")" -ge 1 ] && [ "$(cat "$work/b-fence")" -gt "$(cat "$work/a-fence")" ] ||
  fail "fences $(cat "$work/a-fence") then $(cat "$work/b-fence")"

run redlock --nodes "$NODES" --check > "$work/out"
expect_eq 0 "$status" "--check"
grep -q '^healthy: 3 of 3 nodes answer, 2 needed$' "$work/out" || fail "$(cat "$work/out")"

# What needs a script: 70, the message naming scripting, the command not run.
for option in --shared --fair "--permits 2"; do
  # shellcheck disable=SC2086
  run redlock --nodes "$NODES" $option -w 0 other -- touch "$work/ran" 2> "$work/err"
  expect_eq 70 "$status" "status with $option"
  grep -q "^redlock: cannot acquire 'other': .*runs no scripting" "$work/err" ||
    fail "$option: $(cat "$work/err")"
done
[ ! -e "$work/ran" ] || fail "a refused command ran"

# A node started again runs no scripts either, and locks go on.
"$REDIS_NODES_SH" stop-node "$work/nodes" 1
"$REDIS_NODES_SH" start-node "$work/nodes" 1
case $(cli_node 1 EVAL "return 1" 0) in
  ERR*|NOPERM*) ;;
  *) fail "node 1 runs scripts after start-node" ;;
esac
run redlock --nodes "$NODES" -w 0 job -- true
expect_eq 0 "$status" "status after node 1 started again"

# No script ran: every call of one failed (for want of Lua) or was refused
# by the ACL, which counts none.
for i in 1 2 3; do
  while read -r line; do
    [[ $line =~ ^cmdstat_(eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro):calls=([0-9]+),.*failed_calls=([0-9]+) ]] ||
      continue
    [ "${BASH_REMATCH[2]}" = "${BASH_REMATCH[3]}" ] || fail "node $i ran scripts: $line"
  done < <(cli_node "$i" INFO commandstats | tr -d '\r')
done
echo "ok"
