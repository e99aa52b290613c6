#!/usr/bin/env bash
# redis-topo.sh - start and stop local Redis topologies for tests and demos:
# a Sentinel group (a master, its replicas, the sentinels watching it) or a
# Redis Cluster. Every process listens on a free loopback port and keeps its
# config, data and log in DIR/I/; `stop` stops them all.
#
#   redis-topo.sh sentinel DIR [REPLICAS [SENTINELS [NAME]]]
#                     start a master, REPLICAS replicas (default 2) and
#                     SENTINELS sentinels (default 3, quorum a majority) that
#                     monitor it as NAME (default mymaster); wait until the
#                     sentinels agree and the replicas are in sync; print
#                     redis-sentinel://127.0.0.1:P1,...?sentinelMasterId=NAME
#   redis-topo.sh cluster DIR [MASTERS [REPLICAS]]
#                     start MASTERS (default 3, at least 3) cluster nodes and
#                     REPLICAS (default 0) replicas of each, create the
#                     Cluster with redis-cli, wait for cluster_state:ok
#                     everywhere; print redis-cluster://127.0.0.1:P1,...
#   redis-topo.sh stop DIR          stop every process started in DIR
#   redis-topo.sh uri DIR           print the URI again
#   redis-topo.sh addrs DIR         print "I kind host:port" a line
#                                   (kind: server, sentinel, node)
#   redis-topo.sh master DIR        Sentinel: the master's host:port, as
#                                   every sentinel names it
#   redis-topo.sh failover DIR      Sentinel: SENTINEL FAILOVER, then wait
#                                   until every sentinel names the new master
#                                   and every other server replicates it;
#                                   print its host:port
#   redis-topo.sh kill DIR I        SIGKILL process I
#   redis-topo.sh restart DIR I [--no-data]
#                                   start process I again on its port, with
#                                   its data, or empty with --save ""
#                                   --appendonly no
#
# Processes are numbered from 0: a Sentinel group's master, replicas, then
# sentinels; a Cluster's masters, then the replicas (replica R of master M
# is MASTERS + M * REPLICAS + R). Timings are short (see tests/support/topo.h):
# Sentinel down-after-milliseconds 1000, failover-timeout 3000, SENTINEL DEBUG
# periods lowered; cluster-node-timeout 2000, repl-ping-replica-period 1.
# REDIS_SERVER and REDIS_CLI name the binaries (default: redis-server,
# redis-cli on PATH).
set -euo pipefail

server=${REDIS_SERVER:-redis-server}
cli=${REDIS_CLI:-redis-cli}
here=$(cd "$(dirname "$0")" && pwd)
settle_s=60

usage() {
  awk 'NR > 1 && !/^#/ {exit} NR > 1' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 64
}

die() {
  echo "redis-topo: $*" >&2
  exit 1
}

# Running, and not a zombie.
alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

port_of() { cat "$dir/$1/port"; }
rcli() { local i=$1; shift; "$cli" -h 127.0.0.1 -p "$(port_of "$i")" "$@" 2>/dev/null; }
# The value of FIELD in INFO SECTION of process I.
info() { rcli "$1" info "$2" | tr -d '\r' | sed -n "s/^$3://p"; }
count() { cat "$dir/count"; }

# Writes process I's config file (KIND: server, sentinel, node; MASTER: the
# port a server or sentinel follows, or empty).
write_conf() {
  local i=$1 kind=$2 master=$3 ndir="$dir/$1"
  local port bus
  port=$(port_of "$i")
  {
    echo "port $port"
    echo "bind 127.0.0.1"
    echo "dir $ndir"
    echo "logfile $ndir/$kind.log"
    echo "daemonize no"
    echo "protected-mode no"
    if [ "$kind" = sentinel ]; then
      local name quorum
      name=$(cat "$dir/name")
      quorum=$(( $(cat "$dir/sentinels") / 2 + 1 ))
      echo "sentinel monitor $name 127.0.0.1 $master $quorum"
      echo "sentinel down-after-milliseconds $name 1000"
      echo "sentinel failover-timeout $name 3000"
      echo "sentinel parallel-syncs $name 1"
    else
      echo "enable-debug-command yes"
      echo "appendonly yes"
      echo "appendfsync always"
      echo 'save ""'
      echo "repl-diskless-sync-delay 0"
      [ -n "$master" ] && echo "replicaof 127.0.0.1 $master"
      if [ "$kind" = node ]; then
        bus=$(cat "$ndir/bus_port")
        echo "cluster-enabled yes"
        echo "cluster-config-file nodes.conf"
        echo "cluster-node-timeout 2000"
        echo "cluster-port $bus"
        echo "cluster-allow-replica-migration no"
        echo "repl-ping-replica-period 1"
      fi
    fi
  } > "$ndir/$kind.conf"
}

# Starts process I from its config file (extra arguments after it) and waits
# until it answers PING; a sentinel then gets its shorter periods. Its ping
# period stays above 200 ms: a sentinel picks a replica to promote only if
# that replica's INFO is younger than five ping periods, and while the master
# is down it asks replicas for INFO once a second, so with a shorter ping
# period it often finds none fresh enough and gives the failover up.
start_proc() {
  local i=$1; shift
  local ndir="$dir/$i" kind
  kind=$(cat "$ndir/kind")
  local args=("$ndir/$kind.conf")
  [ "$kind" = sentinel ] && args+=(--sentinel)
  "$server" "${args[@]}" "$@" >/dev/null 2>&1 &
  local pid=$!
  echo "$pid" > "$ndir/pid"
  for _ in $(seq 1 500); do
    # PONG from our process (another test's server may have taken the port).
    if [ "$(rcli "$i" ping)" = PONG ] && [ "$(info "$i" server process_id)" = "$pid" ]; then
      if [ "$kind" = sentinel ]; then
        rcli "$i" sentinel debug info-period 500 publish-period 500 ping-period 250 \
          ask-period 100 | grep -q OK || return 1
      fi
      return 0
    fi
    alive "$pid" || return 1
    sleep 0.02
  done
  return 1
}

stop_proc() {
  local ndir="$dir/$1"
  [ -f "$ndir/pid" ] || return 0
  local pid
  pid=$(cat "$ndir/pid")
  if alive "$pid"; then
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do
      alive "$pid" || break
      sleep 0.01
    done
  fi
  rm -f "$ndir/pid"
}

# Process I's first start: free ports, its config, a few tries.
first_start() {
  local i=$1 kind=$2 master=$3
  mkdir -p "$dir/$i"
  echo "$kind" > "$dir/$i/kind"
  for _ in 1 2 3 4 5; do
    "$here/redis-nodes.sh" free-port > "$dir/$i/port"
    [ "$kind" = node ] && "$here/redis-nodes.sh" free-port > "$dir/$i/bus_port"
    write_conf "$i" "$kind" "$master"
    if start_proc "$i"; then
      return 0
    fi
    stop_proc "$i"
  done
  "$0" stop "$dir"
  die "$kind $i did not start; see $dir/$i"
}

# Repeats a check (a function) until it succeeds or settle_s seconds pass.
settle() {
  local what=$1; shift
  local deadline=$(( SECONDS + settle_s ))
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || die "$what did not settle in ${settle_s}s; see $dir"
    sleep 0.05
  done
}

# ---- Sentinel ----

# The master's port every sentinel names, or nothing.
named_master() {
  local port="" p name
  name=$(cat "$dir/name")
  for i in $(seq "$(cat "$dir/servers")" $(( $(count) - 1 ))); do
    [ -f "$dir/$i/pid" ] || continue
    p=$(rcli "$i" sentinel get-master-addr-by-name "$name" | sed -n 2p)
    [ -n "$p" ] || return 1
    [ -z "$port" ] || [ "$p" = "$port" ] || return 1
    port=$p
  done
  [ -n "$port" ] && echo "$port"
}

index_of_port() {
  for i in $(seq 0 $(( $(count) - 1 ))); do
    [ "$(port_of "$i")" = "$1" ] && echo "$i" && return 0
  done
  return 1
}

# Every sentinel names master M and knows the replicas and the other sentinels.
sentinels_settled() {
  local m=$1 name servers sentinels
  name=$(cat "$dir/name")
  servers=$(cat "$dir/servers")
  sentinels=$(cat "$dir/sentinels")
  for i in $(seq "$servers" $(( $(count) - 1 ))); do
    [ "$(rcli "$i" sentinel get-master-addr-by-name "$name" | sed -n 2p)" = "$(port_of "$m")" ] \
      || return 1
    local state
    state=$(rcli "$i" sentinel master "$name" | paste - - | tr '\t' ' ')
    grep -qx 'flags master' <<<"$state" || return 1
    [ "$(sed -n 's/^num-slaves //p' <<<"$state")" -ge $(( servers - 1 )) ] || return 1
    [ "$(sed -n 's/^num-other-sentinels //p' <<<"$state")" = $(( sentinels - 1 )) ] || return 1
  done
}

# Server I replicates master M and is in sync.
in_sync() {
  [ "$(info "$1" replication role)" = slave ] &&
    [ "$(info "$1" replication master_port)" = "$(port_of "$2")" ] &&
    [ "$(info "$1" replication master_link_status)" = up ]
}

# Every sentinel names one master other than OLD, and every other running
# server replicates it.
new_master_settled() {
  local old=$1 port m
  port=$(named_master) || return 1
  m=$(index_of_port "$port") || return 1
  [ "$m" != "$old" ] || return 1
  [ "$(info "$m" replication role)" = master ] || return 1
  for i in $(seq 0 $(( $(cat "$dir/servers") - 1 ))); do
    [ "$i" = "$m" ] || [ ! -f "$dir/$i/pid" ] || in_sync "$i" "$m" || return 1
  done
  echo "$m" > "$dir/master"
}

start_sentinel() {
  local replicas=${1:-2} sentinels=${2:-3} name=${3:-mymaster}
  [[ "$replicas" =~ ^[0-9]+$ && "$sentinels" =~ ^[1-9][0-9]*$ && "$name" =~ ^[A-Za-z0-9_.-]+$ ]] \
    || usage
  echo sentinel > "$dir/topology"
  echo "$name" > "$dir/name"
  echo $(( replicas + 1 )) > "$dir/servers"
  echo "$sentinels" > "$dir/sentinels"
  echo $(( replicas + 1 + sentinels )) > "$dir/count"
  first_start 0 server ""
  local mport
  mport=$(port_of 0)
  for i in $(seq 1 "$replicas"); do
    first_start "$i" server "$mport"
  done
  local uri="redis-sentinel://"
  for j in $(seq 0 $(( sentinels - 1 ))); do
    local i=$(( replicas + 1 + j ))
    first_start "$i" sentinel "$mport"
    [ "$j" = 0 ] || uri+=","
    uri+="127.0.0.1:$(port_of "$i")"
  done
  echo "$uri?sentinelMasterId=$name" > "$dir/uri"
  all_settled() {
    sentinels_settled 0 || return 1
    for i in $(seq 1 "$replicas"); do in_sync "$i" 0 || return 1; done
  }
  settle "the Sentinel group" all_settled
  cat "$dir/uri"
}

failover() {
  [ "$(cat "$dir/topology")" = sentinel ] || die "failover: not a Sentinel group"
  local port old name s reply
  name=$(cat "$dir/name")
  port=$(named_master) || die "the sentinels do not agree on a master"
  old=$(index_of_port "$port")
  s=$(cat "$dir/servers")
  local deadline=$(( SECONDS + settle_s ))
  while :; do
    reply=$(rcli "$s" sentinel failover "$name")
    [ "$reply" = OK ] && break
    case "$reply" in
      INPROG*|NOGOODSLAVE*) [ "$SECONDS" -lt "$deadline" ] || die "SENTINEL FAILOVER: $reply" ;;
      *) die "SENTINEL FAILOVER: $reply" ;;
    esac
    sleep 0.1
  done
  settle "the failover" new_master_settled "$old"
  echo "127.0.0.1:$(port_of "$(cat "$dir/master")")"
}

# ---- Cluster ----

# Every node says cluster_state:ok, knows every node, and no node is
# failing or in a handshake; every replica is in sync.
cluster_settled() {
  local n
  n=$(count)
  for i in $(seq 0 $(( n - 1 ))); do
    [ -f "$dir/$i/pid" ] || continue
    rcli "$i" cluster info | tr -d '\r' | grep -qx 'cluster_state:ok' || return 1
    local nodes
    nodes=$(rcli "$i" cluster nodes)
    [ "$(grep -c . <<<"$nodes")" = "$n" ] || return 1
    ! awk '{print $3}' <<<"$nodes" | grep -Eq 'fail|handshake|noaddr' || return 1
    # Node I sees every replica as its master's, and lists it in CLUSTER
    # SLOTS (Redis 7.0 leaves out a replica whose replication offset is 0).
    local slots
    slots=$(rcli "$i" cluster slots)
    for r in $(seq 0 $(( n - 1 ))); do
      [ -f "$dir/$r/master" ] || continue
      local mid
      mid=$(cat "$dir/$(cat "$dir/$r/master")/id")
      awk -v id="$(cat "$dir/$r/id")" '$1 == id && $3 ~ /slave/ {print $4}' <<<"$nodes" \
        | grep -qx "$mid" || return 1
      grep -qx "$(port_of "$r")" <<<"$slots" || return 1
    done
    [ ! -f "$dir/$i/master" ] || in_sync "$i" "$(cat "$dir/$i/master")" || return 1
  done
}

start_cluster() {
  local masters=${1:-3} per=${2:-0}
  [[ "$masters" =~ ^[0-9]+$ && "$per" =~ ^[0-9]+$ ]] || usage
  [ "$masters" -ge 3 ] || die "a Cluster needs 3 masters or more (redis-cli --cluster create)"
  local n=$(( masters * (1 + per) ))
  echo cluster > "$dir/topology"
  echo "$n" > "$dir/count"
  local uri="redis-cluster://" addrs=()
  for i in $(seq 0 $(( n - 1 ))); do
    first_start "$i" node ""
    rcli "$i" cluster myid > "$dir/$i/id"
    [ "$i" = 0 ] || uri+=","
    uri+="127.0.0.1:$(port_of "$i")"
    [ "$i" -lt "$masters" ] && addrs+=("127.0.0.1:$(port_of "$i")")
  done
  echo "$uri" > "$dir/uri"
  if ! "$cli" --cluster create "${addrs[@]}" --cluster-yes > "$dir/cluster-create.log" 2>&1; then
    "$0" stop "$dir"
    die "redis-cli --cluster create failed; see $dir/cluster-create.log"
  fi
  for i in $(seq "$masters" $(( n - 1 ))); do
    local m=$(( (i - masters) / per ))
    echo "$m" > "$dir/$i/master"
    rcli "$i" cluster meet 127.0.0.1 "$(port_of "$m")" "$(cat "$dir/$m/bus_port")" >/dev/null
    replicate() { [ "$(rcli "$1" cluster replicate "$(cat "$dir/$2/id")")" = OK ]; }
    settle "replica $i" replicate "$i" "$m"
  done
  settle "the Cluster" cluster_settled
  cat "$dir/uri"
}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || usage

case "$cmd" in
  sentinel|cluster)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    [ ! -f "$dir/count" ] || die "$dir already holds a topology"
    shift 2
    "start_$cmd" "$@"
    ;;
  stop)
    for ndir in "$dir"/*/; do
      [ -d "$ndir" ] && stop_proc "$(basename "$ndir")"
    done
    ;;
  uri)
    cat "$dir/uri"
    ;;
  addrs)
    for i in $(seq 0 $(( $(count) - 1 ))); do
      echo "$i $(cat "$dir/$i/kind") 127.0.0.1:$(port_of "$i")"
    done
    ;;
  master)
    [ "$(cat "$dir/topology")" = sentinel ] || die "master: not a Sentinel group"
    port=$(named_master) || die "the sentinels do not agree on a master"
    echo "127.0.0.1:$port"
    ;;
  failover)
    failover
    ;;
  kill)
    i=${3:-}
    [ -n "$i" ] && [ -f "$dir/$i/pid" ] || die "kill: process '$i' is not running"
    stop_proc "$i"
    ;;
  restart)
    i=${3:-}
    [ -n "$i" ] && [ -f "$dir/$i/port" ] || usage
    [ ! -f "$dir/$i/pid" ] || die "restart: process $i is running"
    extra=()
    if [ "${4:-}" = --no-data ] && [ "$(cat "$dir/$i/kind")" != sentinel ]; then
      rm -rf "$dir/$i/appendonlydir" "$dir/$i/dump.rdb"
      extra=(--save "" --appendonly no)
    elif [ -n "${4:-}" ]; then
      usage
    fi
    for _ in 1 2 3 4 5; do
      start_proc "$i" "${extra[@]}" && exit 0
      stop_proc "$i"
      sleep 0.1
    done
    die "process $i did not restart; see $dir/$i"
    ;;
  *)
    usage
    ;;
esac
