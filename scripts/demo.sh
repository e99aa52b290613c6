#!/usr/bin/env bash
# demo.sh - the redlock tool at work: three jobs compete for one lock held on
# five local Redis nodes.
#
#   A takes "demo-job" and works for about 3 seconds;
#   B asks with --wait 0 while A works, and is refused (exit status 75);
#   C asks with --wait 10s, waits for A to finish, then runs.
#
# Installs what is missing (scripts/setup.sh) and builds the tool first, in
# ./build (or $BUILD_DIR). Run it from anywhere.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}

say() {
  printf '\n==> %s\n' "$*"
}

say "Installing what is missing"
"$root/scripts/setup.sh"
say "Configuring the build in $build"
cmake -S "$root" -B "$build" -DREDLOCK_BUILD_TOOLS=ON >/dev/null
say "Building the redlock tool"
cmake --build "$build" -j2 --target redlock_cli
redlock="$build/tools/redlock"

work=$(mktemp -d)
cleanup() {
  "$root/scripts/redis-nodes.sh" stop "$work/nodes" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

say "Starting 5 independent Redis nodes"
"$root/scripts/redis-nodes.sh" start "$work/nodes" 5 >/dev/null
REDLOCK_NODES=$(paste -sd, "$work/nodes/uris")
export REDLOCK_NODES
echo "REDLOCK_NODES=$REDLOCK_NODES"

say "A: redlock --ttl 5s demo-job -- <a job of about 3 s>  (in the background)"
"$redlock" --verbose --ttl 5s demo-job -- sh -c '
  echo "[A] got the lock (token $REDLOCK_TOKEN); working for 3 s..."
  touch "$0/a-working"
  sleep 3
  echo "[A] done"' "$work" &
a=$!
while [ ! -e "$work/a-working" ]; do
  kill -0 "$a" 2>/dev/null || { echo "A did not start"; exit 1; }
  sleep 0.05
done

say "B: redlock -n demo-job -- echo ...  (one attempt, while A holds the lock)"
status=0
"$redlock" -n demo-job -- echo "[B] this must not run" || status=$?
echo "B's exit status: $status (75 = held by someone else)"

say "C: redlock --wait 10s demo-job -- echo ...  (waits for A)"
status=0
"$redlock" --wait 10s demo-job -- sh -c 'echo "[C] got the lock after A: my turn"' || status=$?
echo "C's exit status: $status"

a_status=0
wait "$a" || a_status=$?
echo "A's exit status: $a_status"

say "Done: A ran, B was refused with 75, C ran after A. Stopping the nodes."
