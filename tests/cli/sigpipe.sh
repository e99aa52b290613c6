#!/usr/bin/env bash
# A lost stderr neither kills the tool nor strands the lock: with stderr on a
# pipe whose reader has gone (2>&1 | head -c 1) or closed (2>&-), the command
# completes, the tool exits with its status and the key is released. The
# command gets SIGPIPE's disposition back (default here).
. "$(dirname "$0")/lib.sh"
start_nodes 3

# The verbose messages (one an extension, every third of the 1.5 s lease)
# go to a reader that leaves after the first byte.
set +e
env --default-signal=PIPE "$REDLOCK_BIN" -v --nodes "$NODES" --ttl 1500ms pipe-job -- \
  sh -c 'sleep 1.5; touch "$0/done"' "$work" 2>&1 | head -c 1 > "$work/first"
statuses="${PIPESTATUS[*]}"
set -e
expect_eq "0 0" "$statuses" "statuses of redlock and head"
expect_eq r "$(cat "$work/first")" "first byte read"
[ -e "$work/done" ] || fail "the command did not complete"
expect_released pipe-job

# Closed stderr.
run "$REDLOCK_BIN" -v --nodes "$NODES" closed-job -- sh -c 'touch "$0/done2"' "$work" 2>&-
expect_eq 0 "$status" "status with stderr closed"
[ -e "$work/done2" ] || fail "the command did not run with stderr closed"
expect_released closed-job

# The command's SIGPIPE is not ignored (bit 13, 0x1000, of SigIgn).
run env --default-signal=PIPE "$REDLOCK_BIN" --nodes "$NODES" mask-job -- \
  grep '^SigIgn:' /proc/self/status > "$work/mask"
expect_eq 0 "$status" "status of the mask check"
mask=$(awk '{print $2}' "$work/mask")
[ $((0x$mask & 0x1000)) = 0 ] || fail "the command runs with SIGPIPE ignored (SigIgn $mask)"
# A command in a pipeline still stops on SIGPIPE when its reader leaves.
set +e
timeout 20 "$REDLOCK_BIN" --nodes "$NODES" yes-job -- yes | head -n 1 > /dev/null
statuses="${PIPESTATUS[*]}"
set -e
expect_eq "141 0" "$statuses" "statuses of redlock running yes, and head"
expect_released yes-job
echo "ok"
