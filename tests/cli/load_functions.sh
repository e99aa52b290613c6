#!/usr/bin/env bash
# --load-functions: loads the function library on every node ("loaded"); a
# second run changes nothing ("already loaded"); both exit 0. A node whose
# ACL refuses FUNCTION LOAD: 77, the node and the refusal named; a node
# down: 69. Then the documented ACL for the library (+fcall, no +eval)
# takes a lock, and cannot run a script of its own.
. "$(dirname "$0")/lib.sh"
start_nodes 3

# The library's name on node I: the line that is redlock_v and 12 hex digits.
library_of() {
  cli_node "$1" FUNCTION LIST LIBRARYNAME 'redlock_v*' | grep '^redlock_v[0-9a-f]\{12\}$' || true
}

run redlock --nodes "$NODES" --load-functions > "$work/out"
expect_eq 0 "$status" "the first run: $(cat "$work/out")"
expect_eq 3 "$(grep -c '^127\.0\.0\.1:[0-9]*: loaded$' "$work/out")" "a line per node: $(cat "$work/out")"
library=$(library_of 1)
[ -n "$library" ] || fail "no library on node 1"
for i in 2 3; do
  expect_eq "$library" "$(library_of "$i")" "the library of node $i"
done

run redlock --nodes "$NODES" --load-functions > "$work/out"
expect_eq 0 "$status" "the second run"
expect_eq 3 "$(grep -c ': already loaded$' "$work/out")" "a line per node: $(cat "$work/out")"
run redlock --nodes "$NODES" --load-functions -q > "$work/out"
expect_eq "0 0" "$status $(wc -c < "$work/out")" "-q: the status alone"

run redlock --nodes "$NODES" --load-functions job -- true 2> "$work/err"
expect_eq 64 "$status" "--load-functions with a NAME"
run redlock --nodes "$NODES" --load-functions --check 2> "$work/err"
expect_eq 64 "$status" "--load-functions with --check"

# A user whose ACL refuses FUNCTION LOAD, on a node without the library.
for i in 1 2 3; do
  cli_node "$i" ACL SETUSER noload on '>pw-noload' '~*' '&*' +@all -function > /dev/null
done
cli_node 1 FUNCTION FLUSH > /dev/null
noload=$(paste -sd, "$work/nodes/uris" | sed "s|redis://|redis://noload:pw-noload@|g")
run redlock --nodes "$noload" --load-functions > "$work/out"
expect_eq 77 "$status" "a refused FUNCTION LOAD: $(cat "$work/out")"
grep -q "^127\.0\.0\.1:[0-9]*: not loaded (FUNCTION LOAD refused: NOPERM .*'function|load'" \
  "$work/out" || fail "the refusal is not named: $(cat "$work/out")"
expect_eq 2 "$(grep -c ': already loaded$' "$work/out")" "the other nodes: $(cat "$work/out")"
! grep -q "pw-noload" "$work/out" || fail "the output shows the password"

# A node down.
run redlock --nodes "$NODES" --load-functions > "$work/out"
expect_eq 0 "$status" "loaded again on node 1: $(cat "$work/out")"
"$REDIS_NODES_SH" stop-node "$work/nodes" 3
run redlock --nodes "$NODES" --load-functions > "$work/out"
expect_eq 69 "$status" "a node down: $(cat "$work/out")"
grep -q ": not loaded (cannot connect" "$work/out" || fail "the node down: $(cat "$work/out")"
"$REDIS_NODES_SH" start-node "$work/nodes" 3 > /dev/null
run redlock --nodes "$NODES" --load-functions > "$work/out"
expect_eq 0 "$status" "the node back: $(cat "$work/out")"

# The ACL for the library (docs/guarantees.md): the scripts go by FCALL.
for i in 1 2 3; do
  cli_node "$i" ACL SETUSER locker reset on '>pw-locker' '~app:*' resetchannels -@all +set +get \
    +incr +exists +mget +del +pexpire +pttl +type +fcall +info +time +ping +publish +subscribe \
    +unsubscribe '&app:*' > /dev/null
done
locker=$(paste -sd, "$work/nodes/uris" | sed "s|redis://|redis://locker:pw-locker@|g")
run redlock --nodes "$locker" --key-prefix app: --fencing job -- touch "$work/ran" 2> "$work/err"
expect_eq 0 "$status" "a lock under the library's ACL: $(cat "$work/err")"
[ -e "$work/ran" ] || fail "the command did not run"
run redlock --nodes "$locker" --key-prefix app: --permits 2 job2 -- true 2> "$work/err"
expect_eq 0 "$status" "a permit under the library's ACL: $(cat "$work/err")"
expect_eq "NOPERM" "$(cli_node 1 --user locker --pass pw-locker EVAL 'return 1' 0 2>/dev/null \
  | cut -d' ' -f1)" "EVAL as the library's user"
echo "ok"
