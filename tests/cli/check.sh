#!/usr/bin/env bash
# --check: a line per node and 0 while a quorum answers (2 of 5 nodes down),
# 69 once it does not (3 down); -q prints nothing; -v prints the library's
# events, with no whole token among them.
. "$(dirname "$0")/lib.sh"
start_nodes 5

run redlock --nodes "$NODES" --check > "$work/out"
expect_eq 0 "$status" "--check with every node up"
expect_eq 5 "$(grep -c ' up rtt .* ms, run_id [0-9a-f]\{40\}, redis [0-9]' "$work/out")" \
  "a line per node: $(cat "$work/out")"
grep -q '^healthy: 5 of 5 nodes answer, 3 needed$' "$work/out" || fail "summary: $(cat "$work/out")"

"$REDIS_NODES_SH" stop-node "$work/nodes" 1
"$REDIS_NODES_SH" stop-node "$work/nodes" 2
run env REDLOCK_NODES="$NODES" "$REDLOCK_BIN" --check > "$work/out"
expect_eq 0 "$status" "--check with 2 of 5 nodes down"
expect_eq 2 "$(grep -c ' down (cannot connect' "$work/out")" "the nodes down: $(cat "$work/out")"
grep -q "^${URIS[0]#redis://} down " "$work/out" || fail "node 1 not down: $(cat "$work/out")"

"$REDIS_NODES_SH" stop-node "$work/nodes" 3
run redlock --nodes "$NODES" --check > "$work/out"
expect_eq 69 "$status" "--check with 3 of 5 nodes down"
# The two that answer are young servers whose records a majority cannot
# confirm (restart_records): they do not count.
grep -q '^not healthy: 2 of 5 nodes answer, 0 of them count, 3 needed$' "$work/out" \
  || fail "$(cat "$work/out")"
run redlock --nodes "$NODES" --check -q > "$work/out" 2>&1
expect_eq "69 0" "$status $(wc -c < "$work/out")" "--check -q: the status alone"
run redlock --nodes "$NODES" --check -v > /dev/null 2> "$work/err"
expect_eq 69 "$status" "--check -v"
expect_eq 3 "$(grep -c '^redlock: \[warn\] node_down node=127.0.0.1:' "$work/err")" \
  "node_down told: $(cat "$work/err")"
grep -q '^redlock: \[warn\] no_quorum op=ping nodes=0/5 need=3 ' "$work/err" \
  || fail "no_quorum told: $(cat "$work/err")"

run redlock --nodes "$NODES" --check job -- true 2> "$work/err"
expect_eq 64 "$status" "--check with a NAME"
"$REDIS_NODES_SH" start-node "$work/nodes" 1 > /dev/null

# -v: the library's events of a lock's life (the tool's own lines show the
# token, as they always did; the library's events show 8 of its characters).
# Node 1 came back empty, a new server the others' records do not name:
# with restart_records it would wait out max_lease_ms (tests/faults).
run redlock -v -o restart_records=0 --nodes "$NODES" events-job -- true 2> "$work/err"
expect_eq 0 "$status" "a run with 3 of 5 nodes"
grep -q '^redlock: \[debug\] acquired op=lock resource=events-job owner=[0-9a-f]\{8\} ' \
  "$work/err" || fail "acquired told: $(cat "$work/err")"
grep -q '^redlock: \[debug\] released op=unlock resource=events-job ' "$work/err" \
  || fail "released told: $(cat "$work/err")"
if grep '^redlock: \[' "$work/err" | grep -q '[0-9a-f]\{32\}'; then
  fail "an event shows a whole token: $(cat "$work/err")"
fi
echo "ok"
