#!/usr/bin/env bash
# Usage errors exit with 64 and a message, before any node is contacted and
# without running the command. No node listens on the URIs used here.
. "$(dirname "$0")/lib.sh"

nodes=redis://127.0.0.1:1,redis://127.0.0.1:2,redis://127.0.0.1:3

# expect_usage_error ARGS...: the tool fails with 64 and says why.
expect_usage_error() {
  run "$REDLOCK_BIN" "$@" > "$work/out" 2> "$work/err"
  expect_eq 64 "$status" "status of: redlock $*"
  grep -q "^redlock: " "$work/err" || fail "no message for: redlock $*"
  [ ! -e "$work/ran" ] || fail "the command ran for: redlock $*"
}

for duration in 10x -5s "" s 10sec " 10s" 99999999999999999999 2147483648ms 597h \
                . 1. 1.5.0 1,5 1e3 0.5ms 0.0005 1.0000000001 -0.5 2147483.6475; do
  expect_usage_error --nodes "$nodes" --ttl "$duration" job -- touch "$work/ran"
  expect_usage_error --nodes "$nodes" --wait "$duration" job -- touch "$work/ran"
  expect_usage_error --nodes "$nodes" --node-timeout "$duration" job -- touch "$work/ran"
done
expect_usage_error --nodes "$nodes" --ttl 0ms job -- touch "$work/ran"
# The library's messages, the same in every language.
expect_usage_error --nodes "$nodes" --ttl 0 job -- touch "$work/ran"
grep -qF -- "--ttl must be a time above 0 ms and at most 2147483647 ms, not 0 ms" "$work/err" ||
  fail "message of --ttl 0: $(cat "$work/err")"
expect_usage_error --nodes " ,$nodes" job -- touch "$work/ran"
grep -qF "URI 1 of the list of nodes is empty" "$work/err" ||
  fail "message of an empty URI: $(cat "$work/err")"

expect_usage_error
expect_usage_error --nodes "$nodes"
expect_usage_error --nodes "$nodes" job
expect_usage_error --nodes "$nodes" job --
expect_usage_error --nodes "$nodes" "" -- touch "$work/ran"
expect_usage_error --nodes "$nodes" --no-such-option job -- touch "$work/ran"
expect_usage_error --nodes "$nodes" -z job -- touch "$work/ran"
expect_usage_error --nodes "$nodes" --ttl
expect_usage_error job -- touch "$work/ran"
REDLOCK_NODES="" expect_usage_error job -- touch "$work/ran"
expect_usage_error --nodes "" job -- touch "$work/ran"
expect_usage_error --nodes "$nodes,,redis://127.0.0.1:4" job -- touch "$work/ran"
expect_usage_error --nodes "not-a-uri" job -- touch "$work/ran"
expect_usage_error --nodes "rediss://127.0.0.1:0" job -- touch "$work/ran"
expect_usage_error --nodes "redis://127.0.0.1:1,redis://127.0.0.1:1" job -- touch "$work/ran"
expect_usage_error --nodes "$nodes" --option no_such_option=1 job -- touch "$work/ran"
expect_usage_error --nodes "$nodes" --option pool_size=many job -- touch "$work/ran"
expect_usage_error --nodes "$nodes" --option pool_size job -- touch "$work/ran"
expect_usage_error --nodes "$nodes" --option =1 job -- touch "$work/ran"
expect_usage_error --nodes "$nodes" --conflict-exit-code 256 job -- touch "$work/ran"
expect_usage_error --nodes "$nodes" --conflict-exit-code -1 job -- touch "$work/ran"
expect_usage_error --nodes "$nodes" --conflict-exit-code x job -- touch "$work/ran"
expect_usage_error --nodes "$nodes" --password-file "$work/no-such-file" job -- touch "$work/ran"
: > "$work/empty"
expect_usage_error --nodes "$nodes" --password-file "$work/empty" job -- touch "$work/ran"
# -c takes one STRING, after NAME as in flock or among the options.
expect_usage_error --nodes "$nodes" job -c
expect_usage_error --nodes "$nodes" job -c "touch $work/ran" extra
expect_usage_error --nodes "$nodes" job --command "touch $work/ran" -- extra
expect_usage_error --nodes "$nodes" -c "touch $work/ran" job -- touch "$work/ran"
expect_usage_error --nodes "$nodes" -c "touch $work/ran" job -c "touch $work/ran"
expect_usage_error --nodes "$nodes" --command
# -n used to name the nodes: a node URI in place of NAME says so.
expect_usage_error -n "$nodes" job -- touch "$work/ran"
grep -q -- "--nodes" "$work/err" || fail "no hint for the old -n: $(cat "$work/err")"
expect_usage_error -qn "unix:///tmp/x.sock" job -- touch "$work/ran"
# Usage errors are reported even with --quiet.
expect_usage_error --quiet --nodes "$nodes" --ttl soon job -- touch "$work/ran"
echo "ok"
