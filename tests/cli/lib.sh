# lib.sh - shared set-up for the tests of the redlock tool; sourced by each test.
#
# CTest passes REDLOCK_BIN (the tool) and REDIS_NODES_SH (scripts/redis-nodes.sh).
# Every test gets a temp dir $work; nodes started with start_nodes and
# commands started with run_bg are stopped when the test exits.
set -euo pipefail

: "${REDLOCK_BIN:?REDLOCK_BIN must name the redlock binary}"
: "${REDIS_NODES_SH:?REDIS_NODES_SH must name scripts/redis-nodes.sh}"

# The tests choose their nodes and passwords themselves.
unset REDLOCK_NODES REDLOCK_PASSWORD

work=$(mktemp -d)

# Stops the background jobs still running (a failed test leaves some), then the nodes.
cleanup() {
  local pid
  for pid in $(jobs -p); do
    kill -KILL "$pid" 2>/dev/null || true
  done
  "$REDIS_NODES_SH" stop "$work/nodes" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# "redlock" runs the tool with generous deadlines (the machine running the
# tests may be busy). It is a script that execs the tool, so that the pid of
# a background "redlock" is the tool's.
mkdir "$work/bin"
printf '#!/bin/sh\nexec "%s" --node-timeout 2s --connect-timeout 2s "$@"\n' "$REDLOCK_BIN" \
  > "$work/bin/redlock"
chmod +x "$work/bin/redlock"
PATH="$work/bin:$PATH"

# start_nodes N: starts N nodes; sets NODES (comma-separated redis:// URIs),
# URIS and SOCKETS (arrays of redis:// and unix:// URIs).
start_nodes() {
  "$REDIS_NODES_SH" start "$work/nodes" "$1" >/dev/null
  mapfile -t URIS < "$work/nodes/uris"
  mapfile -t SOCKETS < "$work/nodes/sockets"
  NODES=$(paste -sd, "$work/nodes/uris")
}

# cli_node I ARGS...: runs redis-cli against node I (1-based) on its socket.
cli_node() {
  local i=$1
  shift
  redis-cli -s "$work/nodes/$i/redis.sock" "$@"
}

# nodes_with_key KEY: how many nodes hold KEY.
nodes_with_key() {
  local i count=0
  for i in $(seq 1 "${#URIS[@]}"); do
    if [ "$(cli_node "$i" EXISTS "$1")" = 1 ]; then
      count=$((count + 1))
    fi
  done
  echo "$count"
}

# expect_released KEY: the key is gone from every node. Unlock returns once a
# majority confirmed, so a busy node may delete it a moment later.
expect_released() {
  local _
  for _ in $(seq 1 100); do
    [ "$(nodes_with_key "$1")" = 0 ] && return 0
    sleep 0.05
  done
  fail "$(nodes_with_key "$1") nodes still hold $1 after its release"
}

# run_bg VAR ARGS...: runs ARGS in the background, stores its pid in VAR.
run_bg() {
  local var=$1
  shift
  "$@" &
  printf -v "$var" '%s' "$!"
}

# wait_bg PID: waits for background job PID; sets status to its exit status.
wait_bg() {
  status=0
  wait "$1" || status=$?
}

# wait_for_file FILE: waits up to 20 s for FILE to exist.
wait_for_file() {
  local _
  for _ in $(seq 1 2000); do
    [ -e "$1" ] && return 0
    sleep 0.01
  done
  fail "timed out waiting for $1"
}

# expect_eq EXPECTED ACTUAL WHAT
expect_eq() {
  [ "$1" = "$2" ] || fail "$3: expected '$1', got '$2'"
}

# run ARGS...: runs ARGS; sets status to their exit status.
run() {
  status=0
  "$@" || status=$?
}

# expect STATUS ARGS...: runs ARGS, appends their output to $log (which
# the test searches for secrets at its end), and checks their status.
expect() {
  local expected=$1
  shift
  run "$@" >> "$log" 2>&1
  expect_eq "$expected" "$status" "status of: $*"
}
