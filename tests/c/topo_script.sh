#!/usr/bin/env bash
# topo_script.sh SCRIPTS_DIR - scripts/redis-topo.sh (what the shell and
# Python tests start topologies with) does what it says, checked with
# redis-cli: a Sentinel group's URI, master and forced failover, a server
# restarted without its data; a Cluster's URI, nodes and roles; stop.
set -euo pipefail

topo="$1/redis-topo.sh"
dir=$(mktemp -d "${TMPDIR:-/tmp}/redlock-topo-sh-XXXXXX")
trap '"$topo" stop "$dir/s" 2>/dev/null || true; "$topo" stop "$dir/c" 2>/dev/null || true; rm -rf "$dir"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

rcli() {
  local addr=$1; shift
  redis-cli -h "${addr%:*}" -p "${addr##*:}" "$@"
}

field() { tr -d '\r' | sed -n "s/^$1://p"; }

# ---- Sentinel ----
uri=$("$topo" sentinel "$dir/s" 2 3 grp)
mapfile -t rows < <("$topo" addrs "$dir/s")
[ "${#rows[@]}" = 6 ] || fail "6 processes expected: ${rows[*]}"
want="redis-sentinel://"
for i in 3 4 5; do
  read -r n kind addr <<<"${rows[$i]}"
  [ "$n" = "$i" ] && [ "$kind" = sentinel ] || fail "row $i: ${rows[$i]}"
  [ "$i" = 3 ] || want+=","
  want+="$addr"
done
want+="?sentinelMasterId=grp"
[ "$uri" = "$want" ] || fail "URI $uri, want $want"
[ "$("$topo" uri "$dir/s")" = "$uri" ] || fail "uri differs"

master=$("$topo" master "$dir/s")
read -r _ _ first <<<"${rows[0]}"
[ "$master" = "$first" ] || fail "master $master, want $first"
# WAIT waits for its own connection's writes: one redis-cli, one connection.
[ "$(printf 'SET k v\nWAIT 2 5000\n' | rcli "$master" | tr '\n' ' ')" = "OK 2 " ] \
  || fail "SET and WAIT on the master"

new=$("$topo" failover "$dir/s")
[ "$new" != "$master" ] || fail "no new master"
[ "$("$topo" master "$dir/s")" = "$new" ] || fail "the sentinels do not name $new"
[ "$(rcli "$new" info replication | field role)" = master ] || fail "$new is no master"
[ "$(rcli "$master" info replication | field role)" = slave ] || fail "$master is no replica"
[ "$(rcli "$new" get k)" = v ] || fail "the data did not follow"

# A replica killed, written past, and restarted without data: empty, no
# persistence, then in sync again.
for i in 0 1 2; do
  read -r _ _ addr <<<"${rows[$i]}"
  [ "$addr" = "$new" ] || { replica=$i; raddr=$addr; break; }
done
"$topo" kill "$dir/s" "$replica"
! rcli "$raddr" ping >/dev/null 2>&1 || fail "$raddr still answers"
"$topo" restart "$dir/s" "$replica" --no-data
[ "$(rcli "$raddr" config get appendonly | sed -n 2p)" = no ] || fail "restarted with data"
for _ in $(seq 1 250); do
  [ "$(rcli "$raddr" get k)" = v ] && break
  sleep 0.02
done
[ "$(rcli "$raddr" get k)" = v ] || fail "the restarted replica did not sync"
! "$topo" restart "$dir/s" "$replica" 2>/dev/null || fail "restarted a running process"

"$topo" stop "$dir/s"
! rcli "$new" ping >/dev/null 2>&1 || fail "$new still answers after stop"

# ---- Cluster ----
! "$topo" cluster "$dir/c2" 2 2>/dev/null || fail "a Cluster of 2 masters"
uri=$("$topo" cluster "$dir/c" 3 1)
mapfile -t rows < <("$topo" addrs "$dir/c")
[ "${#rows[@]}" = 6 ] || fail "6 nodes expected: ${rows[*]}"
want="redis-cluster://"
for i in 0 1 2 3 4 5; do
  read -r n kind addr <<<"${rows[$i]}"
  [ "$kind" = node ] || fail "row $i: ${rows[$i]}"
  [ "$i" = 0 ] || want+=","
  want+="$addr"
  [ "$(rcli "$addr" cluster info | field cluster_state)" = ok ] || fail "$addr: not ok"
  role=$(rcli "$addr" info replication | field role)
  if [ "$i" -lt 3 ]; then
    [ "$role" = master ] || fail "$addr: role $role"
  else
    [ "$role" = slave ] || fail "$addr: role $role"
    read -r _ _ maddr <<<"${rows[$(( i - 3 ))]}"
    [ "$(rcli "$addr" info replication | field master_port)" = "${maddr##*:}" ] \
      || fail "$addr does not replicate $maddr"
  fi
done
[ "$uri" = "$want" ] || fail "URI $uri, want $want"
read -r _ _ a0 <<<"${rows[0]}"
[ "$(rcli "$a0" cluster slots | grep -c -x '[2-6][0-9][0-9][0-9][0-9]')" = 6 ] \
  || fail "CLUSTER SLOTS does not list the six nodes"
echo "redis-topo.sh: Sentinel group and Cluster as documented"
