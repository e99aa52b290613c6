#!/usr/bin/env bash
# The tool runs the command under the lock, passes REDLOCK_NAME and
# REDLOCK_TOKEN to it, returns its status, and releases the lock after it.
. "$(dirname "$0")/lib.sh"
start_nodes 5

run redlock --nodes "$NODES" job -- true
expect_eq 0 "$status" "status of true"
run redlock --nodes "$NODES" job -- sh -c 'exit 3'
expect_eq 3 "$status" "status of exit 3"
run redlock --nodes "$NODES" job -- sh -c 'kill -KILL $$'
expect_eq 137 "$status" "status of a command killed by SIGKILL"
run redlock --nodes "$NODES" job -- sh -c 'kill -TERM $$'
expect_eq 143 "$status" "status of a command killed by SIGTERM"

# Arguments reach the command unchanged, its own options included.
run redlock --nodes "$NODES" job -- printf '%s|' -n --ttl "a b" > "$work/args"
expect_eq 0 "$status" "status of printf"
expect_eq "-n|--ttl|a b|" "$(cat "$work/args")" "arguments of the command"
# Options come before NAME: after it they belong to the command.
run redlock --nodes "$NODES" job --ttl 5s 2> /dev/null
expect_eq 127 "$status" "status for a command named --ttl"
# "--" is optional after NAME.
run redlock --nodes "$NODES" job printf ok > "$work/out"
expect_eq "0 ok" "$status $(cat "$work/out")" "command without --"

# While the command runs, every node holds the key with the token it was given.
run redlock --verbose --nodes "$NODES" job -- sh -c '
  echo "$REDLOCK_NAME" > "$0/name"
  echo "$REDLOCK_TOKEN" > "$0/token"
  for sock in $(sed "s|^unix://||" "$0/nodes/sockets"); do
    redis-cli -s "$sock" GET job
  done > "$0/values"
' "$work" 2> "$work/err"
expect_eq 0 "$status" "status of the command reading the nodes"
expect_eq job "$(cat "$work/name")" "REDLOCK_NAME"
token=$(cat "$work/token")
[[ "$token" =~ ^[0-9a-f]{32}$ ]] || fail "REDLOCK_TOKEN is not 32 hex characters: '$token'"
expect_eq "$(printf '%s\n' "$token" "$token" "$token" "$token" "$token")" \
  "$(cat "$work/values")" "the key's value on each node"
# --verbose names the owner by the token's first 8 characters, as the
# library's events do, and never prints a whole token (it authorises
# releasing the lock).
grep -q "acquired 'job' (owner ${token:0:8}, valid for" "$work/err" ||
  fail "--verbose does not name the owner: $(cat "$work/err")"
grep -q "owner=${token:0:8}" "$work/err" || fail "no event names the owner: $(cat "$work/err")"
! grep -qF "$token" "$work/err" || fail "--verbose prints the whole token: $(cat "$work/err")"
grep -q "released 'job'" "$work/err" || fail "--verbose does not report the release"
expect_released job

# With --fencing the command gets REDLOCK_FENCE, larger each time; without
# it, none (not even one inherited from a caller).
run redlock --fencing --nodes "$NODES" fenced -- sh -c 'echo "$REDLOCK_FENCE" > "$0/f1"' "$work"
run redlock -o fencing=1 --nodes "$NODES" fenced -- sh -c 'echo "$REDLOCK_FENCE" > "$0/f2"' "$work"
expect_eq "0 1 2" "$status $(cat "$work/f1") $(cat "$work/f2")" "REDLOCK_FENCE of two holders"
REDLOCK_FENCE=99 run redlock --nodes "$NODES" fenced -- sh -c 'echo "${REDLOCK_FENCE-unset}" > "$0/f3"' "$work"
expect_eq unset "$(cat "$work/f3")" "REDLOCK_FENCE without fencing"

# Command not found and not executable, as in the shell.
run redlock --nodes "$NODES" job -- "$work/no-such-command" 2> "$work/err"
expect_eq 127 "$status" "status for a missing command"
grep -q "redlock: cannot run" "$work/err" || fail "no message for a missing command"
touch "$work/not-executable"
run redlock --nodes "$NODES" job -- "$work/not-executable" 2> "$work/err"
expect_eq 126 "$status" "status for a command that cannot be executed"
expect_released job

# The command inherits no connection to the nodes: it sees no more sockets
# than a command run without the tool.
sockets_seen() {
  ls -l /proc/self/fd | grep -c 'socket:' || true
}
baseline=$(sockets_seen)
inherited=$(redlock --nodes "$NODES" job -- bash -c "$(declare -f sockets_seen); sockets_seen")
expect_eq "$baseline" "$inherited" "sockets open in the command"

# The command's stdin and stdout are its caller's.
out=$(echo piped | redlock --nodes "$NODES" job -- cat)
expect_eq piped "$out" "stdin and stdout of the command"
echo "ok"
