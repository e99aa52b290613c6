#!/usr/bin/env bash
# cli_secrets.sh - the redlock tool never prints a password: not in --help,
# usage errors, bad node lists, refused or wrong passwords, unreachable nodes,
# a password file that is missing, empty or too long, nor in --verbose runs.
# Every line the tool prints goes to one log, searched for the passwords last.
#
# Environment: REDLOCK_BIN (the tool), REDIS_NODES_SH (scripts/redis-nodes.sh).
set -euo pipefail
: "${REDLOCK_BIN:?REDLOCK_BIN must name the redlock binary}"
: "${REDIS_NODES_SH:?REDIS_NODES_SH must name scripts/redis-nodes.sh}"
unset REDLOCK_NODES REDLOCK_PASSWORD

work=$(mktemp -d)
trap '"$REDIS_NODES_SH" stop "$work/nodes" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

password='Cl1-p@ss:w/rd x#9'
encoded='Cl1-p%40ss%3Aw%2Frd%20x%239'
# Parts of it that would show a careless copy or a partial escape.
secrets=("$password" "$encoded" 'w/rd x#9' 'w%2Frd' "${password%%@*}")

"$REDIS_NODES_SH" start "$work/nodes" 3 > /dev/null
mapfile -t uris < "$work/nodes/uris"
for i in 1 2 3; do
  redis-cli -s "$work/nodes/$i/redis.sock" CONFIG SET requirepass "$password" > /dev/null
done
nodes=$(IFS=,; echo "${uris[*]}")
with_password=$(IFS=,; echo "${uris[*]}" | sed "s|redis://|redis://:$encoded@|g")
printf '%s\n' "$password" > "$work/password"
printf 'x%s\n' "$password" > "$work/wrong-password"
: > "$work/empty"
{ printf '%s' "$password"; head -c 1100 /dev/zero | tr '\0' 'p'; echo; } > "$work/long-password"
# The port of a node that is stopped: nothing listens there.
"$REDIS_NODES_SH" stop-node "$work/nodes" 3 > /dev/null
down=$(echo "${uris[2]}" | sed "s|redis://|redis://:$encoded@|")

log="$work/log"
: > "$log"
# expect ok|fail ARGS...: runs ARGS with generous deadlines, output to the log.
expect() {
  local want=$1 status=0
  shift
  echo "== $*" | sed "s|$password|PASSWORD|g; s|$encoded|ENCODED|g" >> "$log"
  "$@" >> "$log" 2>&1 || status=$?
  if [ "$want" = ok ] && [ "$status" != 0 ]; then fail "status $status: $(tail -3 "$log")"; fi
  if [ "$want" = fail ] && [ "$status" = 0 ]; then fail "succeeded: $(tail -3 "$log")"; fi
}
tool=("$REDLOCK_BIN" --node-timeout 2s --connect-timeout 2s)
two=$(IFS=,; echo "${uris[*]:0:2}")
two_with_password=$(echo "$two" | sed "s|redis://|redis://:$encoded@|g")

export REDLOCK_PASSWORD="$password"
expect ok "${tool[@]}" --help
expect ok "${tool[@]}" --version
expect ok "${tool[@]}" --password-file "$work/password" --help
expect fail "${tool[@]}" --no-such-option job -- true
expect fail "${tool[@]}" --nodes "$nodes" --ttl forever job -- true
expect fail "${tool[@]}" --nodes "$nodes" job
expect fail "${tool[@]}" --nodes "redis://:$encoded@127.0.0.1:99999" job -- true
expect fail "${tool[@]}" --nodes "redis://:$password@127.0.0.1" job -- true
expect fail "${tool[@]}" --nodes "unix://:$encoded@relative.sock" job -- true
expect fail "${tool[@]}" --nodes "$with_password,$with_password" job -- true
expect fail env REDLOCK_NODES="redis://:$encoded@[::1" "${tool[@]}" job -- true
expect fail "${tool[@]}" --nodes "$nodes" -o "key_prefix" job -- true
# A refused password option is named, its value never shown.
expect fail "${tool[@]}" --nodes "$nodes" -o "sentinel_password=$password$(head -c 4100 /dev/zero | tr '\0' 'p')" job -- true
expect fail "${tool[@]}" --nodes "$nodes" -o "password=$password" job -- true
expect fail "${tool[@]}" --nodes "$nodes" -o "tls_password=$password" job -- true
grep -q "cannot set option sentinel_password (its value is not shown)" "$log" ||
  fail "the refused sentinel_password is not named: $(tail -3 "$log")"
# The sentinels' password from the environment and a file, refused or unused.
printf '%s\n' "$password" > "$work/sentinel-password"
expect ok env REDLOCK_SENTINEL_PASSWORD="$password" "${tool[@]}" --verbose --nodes "$two" job -- true
expect ok "${tool[@]}" --verbose --nodes "$two" --sentinel-password-file "$work/sentinel-password" \
  job -- true
expect fail env REDLOCK_SENTINEL_PASSWORD="$password$(head -c 4100 /dev/zero | tr '\0' 'p')" \
  "${tool[@]}" --nodes "$two" job -- true
expect fail "${tool[@]}" --nodes "$two" --sentinel-password-file "$work/empty" job -- true

# Succeeding, verbosely, with the password from the environment, a file, the URIs.
expect ok "${tool[@]}" --verbose --nodes "$two" job -- true
expect ok "${tool[@]}" --verbose --nodes "$two" --password-file "$work/password" job -- true
expect ok "${tool[@]}" --verbose --nodes "$two_with_password" job -- true
expect fail "${tool[@]}" --verbose --nodes "$two" job -- false
expect fail "${tool[@]}" --verbose --nodes "$two" job -- "$work/no-such-command"

# Refused: a wrong password (environment, file, URI), and no password at all.
expect fail env REDLOCK_PASSWORD="x$password" "${tool[@]}" --verbose --nodes "$two" job -- true
expect fail "${tool[@]}" --verbose --nodes "$two" --password-file "$work/wrong-password" job -- true
expect fail "${tool[@]}" --verbose --nodes "$(echo "$two" | sed "s|redis://|redis://:x$encoded@|g")" \
  job -- true
expect fail env -u REDLOCK_PASSWORD "${tool[@]}" --verbose --nodes "$two" job -- true

# Unreachable: the stopped node alone, with the password in the URI and from the file.
expect fail "${tool[@]}" --verbose --nodes "$down" job -- true
expect fail "${tool[@]}" --verbose --nodes "${uris[2]}" --password-file "$work/password" job -- true
expect fail "${tool[@]}" --verbose --wait 300ms --nodes "$down" job -- true

# Password files that cannot be used.
expect fail "${tool[@]}" --nodes "$two" --password-file "$work/missing" job -- true
expect fail "${tool[@]}" --nodes "$two" --password-file "$work/empty" job -- true
expect fail "${tool[@]}" --nodes "$two" --password-file "$work/long-password" job -- true

for secret in "${secrets[@]}"; do
  if grep -qF -- "$secret" "$log"; then
    fail "the output shows '$secret':"$'\n'"$(grep -F -- "$secret" "$log")"
  fi
done
grep -q "refused the credentials\|WRONGPASS\|NOAUTH" "$log" || fail "no refusal was reported: $(cat "$log")"
echo "ok: $(grep -c '^== ' "$log") runs, no password in their output"
