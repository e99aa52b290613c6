#!/usr/bin/env bash
# A command the nodes' ACL forbids (their NOPERM) is not refused credentials:
# the message names the nodes and what they refused, and the exit status is
# 77, the one sysexits.h has for permission denied, which refused
# credentials share (password.sh); -v shows the permission_denied events.
. "$(dirname "$0")/lib.sh"
start_nodes 3

# A user with what locking needs but +incr (fencing's counter), and one whose
# keys are elsewhere.
for i in 1 2 3; do
  cli_node "$i" ACL SETUSER nofence on '>pw-nofence' '~*' resetchannels -@all +set +get \
    +exists +mget +del +pexpire +pttl +type +eval +evalsha '+script|load' +info +ping > /dev/null
  cli_node "$i" ACL SETUSER elsewhere on '>pw-elsewhere' '~other:*' resetchannels -@all +set \
    +get +exists +mget +del +pexpire +pttl +type +incr +eval +evalsha '+script|load' +info \
    +ping > /dev/null
done
as_user() {
  paste -sd, "$work/nodes/uris" | sed "s|redis://|redis://$1@|g"
}
nofence=$(as_user nofence:pw-nofence)
elsewhere=$(as_user elsewhere:pw-elsewhere)

run redlock --nodes "$nofence" job -- true
expect_eq 0 "$status" "status of a lock without fencing"

run redlock --fencing --nodes "$nofence" job -- touch "$work/ran" 2> "$work/err"
expect_eq 77 "$status" "status when the ACL forbids INCR: $(cat "$work/err")"
[ ! -e "$work/ran" ] || fail "the command ran without the lock"
grep -q "^redlock: cannot acquire 'job': a node's ACL does not allow a command or key" "$work/err" ||
  fail "no message for the ACL's refusal: $(cat "$work/err")"
# Each refusal is named with its node: the node's own NOPERM, or, inside a
# script (Redis 7.0 does not say which command), what the script calls.
refusals=$(grep -oE "127\.0\.0\.1:[0-9]+: (NOPERM[^;]*'incr'|ERR The user executing the script[^;]*calls [^;)]*incr)" \
  "$work/err" | wc -l)
[ "$refusals" -ge 2 ] || fail "the message does not name a quorum of refusing nodes: $(cat "$work/err")"
! grep -q "pw-nofence" "$work/err" || fail "the message shows the password"
expect_released job

run redlock --nodes "$elsewhere" job -- true 2> "$work/err"
expect_eq 77 "$status" "status for a key outside the user's pattern: $(cat "$work/err")"
grep -q "no permissions to access one of the keys" "$work/err" ||
  fail "no word of the key: $(cat "$work/err")"

# -v: the nodes' events, at the error level.
run redlock -v --fencing --nodes "$nofence" job -- true 2> "$work/err"
expect_eq 77 "$status" "status with -v"
grep -q "permission_denied node=127\.0\.0\.1:[0-9]* was=" "$work/err" ||
  fail "-v does not show the permission_denied event: $(cat "$work/err")"
echo "ok"
