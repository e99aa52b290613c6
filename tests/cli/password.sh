#!/usr/bin/env bash
# Passwords from REDLOCK_PASSWORD and --password-file, for nodes started with
# requirepass, apply to the URIs that have none; no output ever shows them.
. "$(dirname "$0")/lib.sh"
start_nodes 5

password='p@ss:w/rd%2F x#1'
encoded='p%40ss%3Aw%2Frd%252F%20x%231'
for i in 1 2 3 4 5; do
  cli_node "$i" CONFIG SET requirepass "$password" > /dev/null
  cli_node "$i" -a "$password" --no-auth-warning \
    ACL SETUSER alice on ">alice-$password" '~*' '+@all' > /dev/null
done
printf '%s\n' "$password" > "$work/password"
printf '%s\n' "wrong-$password" > "$work/wrong-password"
# All output of the tool goes to one file, checked for the passwords at the end.
log="$work/log"
: > "$log"

expect 77 redlock --nodes "$NODES" job -- true
expect 0 env REDLOCK_PASSWORD="$password" "$REDLOCK_BIN" --verbose --nodes "$NODES" job -- true
expect 77 env REDLOCK_PASSWORD="wrong-$password" "$REDLOCK_BIN" --verbose --nodes "$NODES" job -- true
expect 0 redlock --verbose --nodes "$NODES" --password-file "$work/password" job -- true
expect 77 redlock --verbose --nodes "$NODES" --password-file "$work/wrong-password" job -- true
# --check exits as a lock would: 77 for credentials a quorum refuses.
expect 0 redlock --nodes "$NODES" --password-file "$work/password" --check
expect 77 redlock --nodes "$NODES" --password-file "$work/wrong-password" --check
# --password-file wins over REDLOCK_PASSWORD.
expect 0 env REDLOCK_PASSWORD="wrong-$password" \
  "$REDLOCK_BIN" --nodes "$NODES" --password-file "$work/password" job -- true
# A password in the URI is kept.
own=$(paste -sd, "$work/nodes/uris" | sed "s|redis://|redis://:$encoded@|g")
expect 0 env REDLOCK_PASSWORD="wrong-$password" "$REDLOCK_BIN" --nodes "$own" job -- true
# unix sockets, and a user without a password in the URI.
sockets=$(paste -sd, "$work/nodes/sockets")
expect 0 env REDLOCK_PASSWORD="$password" "$REDLOCK_BIN" --nodes "$sockets" job -- true
alice=$(paste -sd, "$work/nodes/uris" | sed "s|redis://|redis://alice@|g")
expect 0 env REDLOCK_PASSWORD="alice-$password" "$REDLOCK_BIN" --nodes "$alice" job -- true
expect 77 env REDLOCK_PASSWORD="$password" "$REDLOCK_BIN" --nodes "$alice" job -- true

# The command runs under the lock and the key is released afterwards.
# (REDLOCK_PASSWORD does not reach it: the password comes as an argument.)
expect 0 env REDLOCK_PASSWORD="$password" "$REDLOCK_BIN" --nodes "$NODES" job -- \
  sh -c 'test -z "$REDLOCK_PASSWORD" && redis-cli -s "$0" -a "$1" --no-auth-warning GET job' \
  "$work/nodes/1/redis.sock" "$password"
expect_eq 0 "$(cli_node 1 -a "$password" --no-auth-warning EXISTS job)" "key left after release"

grep -q "^redlock: cannot acquire 'job': .*" "$log" || fail "no message for refused credentials"
for secret in "$password" "$encoded" "${password%%#*}"; do
  ! grep -qF -- "$secret" "$log" || fail "the output shows the password: $(cat "$log")"
done
echo "ok"
