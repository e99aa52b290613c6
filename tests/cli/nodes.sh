#!/usr/bin/env bash
# Ways to name the nodes (REDLOCK_NODES, unix sockets, repeated --nodes), the
# key prefix, and the quorum: 2 of 5 nodes down still works, 3 down fails
# with 69 within about a node deadline.
. "$(dirname "$0")/lib.sh"
start_nodes 5

# REDLOCK_NODES, when no --nodes is given.
run env REDLOCK_NODES="$NODES" "$REDLOCK_BIN" env-job -- sh -c 'redis-cli -s "$0" GET env-job' \
  "$work/nodes/1/redis.sock" > "$work/out"
expect_eq 0 "$status" "status with REDLOCK_NODES"
[[ "$(cat "$work/out")" =~ ^[0-9a-f]{32}$ ]] || fail "no key on node 1 with REDLOCK_NODES"
# --nodes wins over REDLOCK_NODES.
run env REDLOCK_NODES="redis://127.0.0.1:1" "$REDLOCK_BIN" --nodes "$NODES" env-job -- true
expect_eq 0 "$status" "status with --nodes and REDLOCK_NODES"

# unix:// sockets, listed with spaces after the commas.
sockets=$(paste -sd, "$work/nodes/sockets" | sed 's/,/, /g')
run redlock --nodes "$sockets" unix-job -- sh -c 'redis-cli -s "$0" GET unix-job' \
  "$work/nodes/3/redis.sock" > "$work/out"
expect_eq 0 "$status" "status with unix sockets"
[[ "$(cat "$work/out")" =~ ^[0-9a-f]{32}$ ]] || fail "no key on node 3 with unix sockets"

# --nodes may be repeated.
run redlock --nodes "${URIS[0]},${URIS[1]}" --nodes "${URIS[2]}" --nodes "${URIS[3]},${URIS[4]}" \
  split-job -- sh -c 'redis-cli -s "$0" EXISTS split-job' "$work/nodes/5/redis.sock" > "$work/out"
expect_eq "0 1" "$status $(cat "$work/out")" "repeated --nodes"

# --key-prefix and --option key_prefix=... name the key.
run redlock --nodes "$NODES" --key-prefix app: pfx -- sh -c 'redis-cli -s "$0" EXISTS app:pfx' \
  "$work/nodes/2/redis.sock" > "$work/out"
expect_eq "0 1" "$status $(cat "$work/out")" "key with --key-prefix"
run redlock --nodes "$NODES" --option key_prefix=other: pfx -- \
  sh -c 'redis-cli -s "$0" EXISTS other:pfx' "$work/nodes/2/redis.sock" > "$work/out"
expect_eq "0 1" "$status $(cat "$work/out")" "key with --option key_prefix"

# Two of five nodes down: a quorum of three remains.
"$REDIS_NODES_SH" stop-node "$work/nodes" 1
"$REDIS_NODES_SH" stop-node "$work/nodes" 2
run redlock --nodes "$NODES" quorum-job -- true 2> /dev/null
expect_eq 0 "$status" "status with 2 of 5 nodes down"

# Three of five down: no quorum, exit 69 within about a node deadline with
# one attempt (refused connections fail at once; the slack is for a busy
# machine).
"$REDIS_NODES_SH" stop-node "$work/nodes" 3
start=$(date +%s%N)
run "$REDLOCK_BIN" -n --nodes "$NODES" quorum-job -- touch "$work/ran" 2> "$work/err"
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
expect_eq 69 "$status" "status with 3 of 5 nodes down"
[ ! -e "$work/ran" ] || fail "the command ran without a quorum"
[ "$elapsed_ms" -lt 3000 ] || fail "no quorum took $elapsed_ms ms"
grep -q "^redlock: cannot acquire 'quorum-job': .*127.0.0.1:" "$work/err" ||
  fail "the message does not name the nodes: $(cat "$work/err")"

# Waiting (no -n, no -w) does not outlast an outage: 69 once every attempt
# for unavailable_timeout_ms lacked answers.
start=$(date +%s%N)
run "$REDLOCK_BIN" --nodes "$NODES" -o unavailable_timeout_ms=1000 quorum-job -- \
  touch "$work/ran" 2> "$work/err"
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
expect_eq 69 "$status" "status of a default wait with 3 of 5 nodes down"
[ ! -e "$work/ran" ] || fail "the command ran without a quorum"
[ "$elapsed_ms" -ge 1000 ] && [ "$elapsed_ms" -lt 6000 ] ||
  fail "a default wait through an outage took $elapsed_ms ms, not about 1000"
grep -q "unavailable_timeout_ms" "$work/err" || fail "no outage message: $(cat "$work/err")"
echo "ok"
