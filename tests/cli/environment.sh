#!/usr/bin/env bash
# What the command inherits and what the process list shows: no password in
# the command's environment (REDLOCK_PASSWORD, REDLOCK_SENTINEL_PASSWORD and
# the credentials of REDLOCK_NODES are gone; REDLOCK_NAME, REDLOCK_TOKEN,
# REDLOCK_FENCE and the other variables stay), none in /proc/PID/cmdline of
# the tool while it holds the lock, and a resource name's newline escaped in
# every line -v prints.
. "$(dirname "$0")/lib.sh"
start_nodes 3

password='En-v@r:pw/1'
encoded='En-v%40r%3Apw%2F1'
for i in 1 2 3; do
  cli_node "$i" CONFIG SET requirepass "$password" > /dev/null
done
with_password=$(sed "s|redis://|redis://:$encoded@|" "$work/nodes/uris" | paste -sd,)
plain=$(paste -sd, "$work/nodes/uris")

# no_secret FILE WHAT: FILE shows neither form of the password.
no_secret() {
  local secret
  for secret in "$password" "$encoded" 'pw/1' 'pw%2F1' 'En-v'; do
    ! grep -qF -- "$secret" "$1" || fail "$2 shows the password: $(cat "$1")"
  done
}

# The environment: passwords given by the environment and in REDLOCK_NODES.
REDLOCK_NODES="$with_password" REDLOCK_PASSWORD="$password" \
  REDLOCK_SENTINEL_PASSWORD="$password" KEEP_ME=kept \
  redlock --fencing job -- env > "$work/env"
no_secret "$work/env" "the command's environment"
grep -qx 'REDLOCK_NAME=job' "$work/env" || fail "no REDLOCK_NAME: $(cat "$work/env")"
grep -qE '^REDLOCK_TOKEN=[0-9a-f]{32}$' "$work/env" || fail "no REDLOCK_TOKEN"
grep -qE '^REDLOCK_FENCE=[0-9]+$' "$work/env" || fail "no REDLOCK_FENCE"
grep -qx 'KEEP_ME=kept' "$work/env" || fail "another variable was lost"
expect_eq "REDLOCK_NODES=$plain" "$(grep '^REDLOCK_NODES=' "$work/env")" \
  "REDLOCK_NODES without its credentials"
! grep -q '^REDLOCK_PASSWORD=\|^REDLOCK_SENTINEL_PASSWORD=' "$work/env" ||
  fail "a password variable reached the command"

# A user, a Sentinel URI and a unix socket lose their credentials alike.
sentinel="redis-sentinel://u:$encoded@127.0.0.1:1,127.0.0.1:2?sentinelMasterId=m"
socket="unix://u:$encoded@${SOCKETS[0]#unix://}"
run env REDLOCK_NODES="$with_password,$sentinel,$socket" \
  "$REDLOCK_BIN" --node-timeout 50ms --connect-timeout 50ms -n job -- env > "$work/env2" 2>&1
no_secret "$work/env2" "a failed run"

# The process list while the lock is held: --nodes with passwords, -o with
# the sentinels' password (set, then overwritten by the tool).
run_bg pid redlock --nodes "$with_password" -o "sentinel_password=$password" \
  -o key_prefix=app: held -- sh -c "touch '$work/started'; exec sleep 30"
wait_for_file "$work/started"
tr '\0' ' ' < "/proc/$pid/cmdline" > "$work/cmdline"
no_secret "$work/cmdline" "/proc/PID/cmdline"
grep -q -- "--nodes redis://x*@127.0.0.1:" "$work/cmdline" ||
  fail "the nodes are not shown as the tool hid them: $(cat "$work/cmdline")"
grep -q -- "sentinel_password=xxx" "$work/cmdline" || fail "-o's value is not hidden"
grep -q -- "key_prefix=app:" "$work/cmdline" || fail "an option that is no secret was hidden"
# Not dumpable while it runs: the kernel gives its /proc files to root
# (seen by a user other than root only).
if [ "$(id -u)" != 0 ]; then
  expect_eq 0 "$(stat -c %u "/proc/$pid/environ")" "the owner of /proc/PID/environ"
fi
kill -TERM "$pid"
wait_bg "$pid"

# Escaped names: a newline in NAME forges no line under -v.
REDLOCK_NODES="$with_password" redlock -v "$(printf 'job\n[error] lost x\033[31m')" -- true \
  2> "$work/verbose"
! grep -q '^\[error\] lost' "$work/verbose" || fail "a name forged a line: $(cat "$work/verbose")"
grep -q 'resource=job\\n\[error\] lost x\\x1b\[31m' "$work/verbose" ||
  fail "the event does not show the name escaped: $(cat "$work/verbose")"
grep -q "acquired 'job\\\\n\[error\] lost x\\\\x1b\[31m'" "$work/verbose" ||
  fail "the tool's own line does not show the name escaped: $(cat "$work/verbose")"
while IFS= read -r line; do
  case $line in
    redlock:*) ;;
    *) fail "a line that is not the tool's: '$line'" ;;
  esac
done < "$work/verbose"
echo "ok"
