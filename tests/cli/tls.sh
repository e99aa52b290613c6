#!/usr/bin/env bash
# rediss:// nodes: the tool takes the TLS options with -o; a certificate
# that fails the check is exit status 77, its message naming the node.
. "$(dirname "$0")/lib.sh"
certs="$work/certs"
bash "$(dirname "$0")/../support/tls-certs.sh" "$certs"
"$REDIS_NODES_SH" start "$work/nodes" 3 --tls "$certs" >/dev/null
mapfile -t URIS < "$work/nodes/uris"
NODES=$(paste -sd, "$work/nodes/uris")
[[ "$NODES" == rediss://* ]] || fail "the nodes are not rediss:// ($NODES)"

run redlock -n --nodes "$NODES" -o tls_ca_file="$certs/ca.crt" job -- touch "$work/ran"
expect_eq 0 "$status" "status over TLS"
[ -e "$work/ran" ] || fail "the command did not run over TLS"
expect_released job

run redlock -n --nodes "$NODES" -o tls_ca_file="$certs/other-ca.crt" job -- touch "$work/wrong"
expect_eq 77 "$status" "status with a CA that issued no node's certificate"
[ ! -e "$work/wrong" ] || fail "the command ran though no node's certificate was trusted"
redlock -n --nodes "$NODES" -o tls_ca_file="$certs/other-ca.crt" job -- true 2> "$work/err" || true
grep -q "TLS certificate check failed" "$work/err" || fail "no certificate problem told: $(cat "$work/err")"
grep -q "${URIS[0]#rediss://}" "$work/err" || fail "the node is not named: $(cat "$work/err")"
echo ok
