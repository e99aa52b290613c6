#!/usr/bin/env bash
# The sentinels' password from REDLOCK_SENTINEL_PASSWORD, from
# --sentinel-password-file, or -o sentinel_password (which wins over both),
# for a Sentinel group whose sentinel requires AUTH; never printed.
. "$(dirname "$0")/lib.sh"
TOPO_SH=${REDIS_NODES_SH%/*}/redis-topo.sh

password='S3nt-p@ss:x'
"$TOPO_SH" sentinel "$work/topo" 0 1 > "$work/uri"
trap '"$TOPO_SH" stop "$work/topo" >/dev/null 2>&1 || true; cleanup' EXIT
uri=$(cat "$work/uri")
sentinel=$("$TOPO_SH" addrs "$work/topo" | awk '$2 == "sentinel" {print $3}')
redis-cli -h "${sentinel%:*}" -p "${sentinel##*:}" ACL SETUSER default on resetpass ">$password" \
  > /dev/null
printf '%s\n' "$password" > "$work/password"
printf '%s\n' "wrong-$password" > "$work/wrong"
log="$work/log"
: > "$log"

quick=(-o unavailable_timeout_ms=1000)

expect 69 redlock "${quick[@]}" --nodes "$uri" job -- true
expect 0 env REDLOCK_SENTINEL_PASSWORD="$password" "$REDLOCK_BIN" --nodes "$uri" job -- true
expect 77 env REDLOCK_SENTINEL_PASSWORD="wrong-$password" \
  "$REDLOCK_BIN" "${quick[@]}" --nodes "$uri" job -- true
expect 0 redlock --nodes "$uri" --sentinel-password-file "$work/password" job -- true
expect 77 redlock "${quick[@]}" --nodes "$uri" --sentinel-password-file "$work/wrong" job -- true
# The file wins over the environment; -o over both.
expect 0 env REDLOCK_SENTINEL_PASSWORD="wrong-$password" \
  "$REDLOCK_BIN" --nodes "$uri" --sentinel-password-file "$work/password" job -- true
expect 0 env REDLOCK_SENTINEL_PASSWORD="wrong-$password" \
  "$REDLOCK_BIN" --nodes "$uri" -o "sentinel_password=$password" job -- true
expect 64 redlock --nodes "$uri" --sentinel-password-file "$work/missing" job -- true
# The command gets no password.
expect 0 env REDLOCK_SENTINEL_PASSWORD="$password" "$REDLOCK_BIN" --nodes "$uri" job -- env
grep -q '^REDLOCK_NAME=job$' "$log" || fail "the command did not run"

grep -q "sentinel_password" "$log" || fail "no refusal named sentinel_password: $(cat "$log")"
for secret in "$password" "${password%%@*}"; do
  ! grep -qF -- "$secret" "$log" || fail "the output shows the password: $(cat "$log")"
done
echo "ok"
