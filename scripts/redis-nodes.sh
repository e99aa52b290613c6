#!/usr/bin/env bash
# redis-nodes.sh - start and stop independent local redis-server nodes for
# tests and demos. Every node listens on a free loopback port and on a unix
# socket in DIR, keeps no data on disk, and is stopped by `stop`.
#
#   redis-nodes.sh start DIR N [--tls CERTS [--tls-auth-clients]]
#                                  start N nodes and record them as a group
#                                  (see record); print one redis:// URI a line.
#                                  With --tls, TLS only (rediss:// URIs): the
#                                  certificate CERTS/server.crt, its key
#                                  CERTS/server.key, clients' CA CERTS/ca.crt
#                                  (tests/support/tls-certs.sh makes them), and
#                                  client certificates required with
#                                  --tls-auth-clients. NODES_TLS_CERT and
#                                  NODES_TLS_KEY name other files.
#   redis-nodes.sh stop DIR        stop every node started in DIR
#   redis-nodes.sh stop-node DIR I stop node I (1-based), keep its port
#   redis-nodes.sh start-node DIR I start node I again on the same port
#   redis-nodes.sh uris DIR        print the nodes' URIs again
#   redis-nodes.sh record DIR      write the group's records (restart_records'
#                                  key redlock:members) on every running node:
#                                  the run_ids of the servers running now, as
#                                  a group in use would hold them. After
#                                  start-node, a test not about restarts
#                                  without data counts the new server at once.
#   redis-nodes.sh free-port       print a loopback port nobody listens on
#
# DIR/uris holds the TCP URIs, DIR/sockets the unix:// URIs, DIR/I/ each
# node's files. REDIS_SERVER names the binary (default: redis-server on PATH).
# REDIS_NO_SCRIPTING, read by start, makes nodes that run no scripts, as
# tests/support/nodes.c does: "lua" unloads the Lua engine (MODULE UNLOAD lua,
# Valkey 9.1; the nodes run with --enable-module-command yes), "acl" takes
# @scripting from the default user (ACL SETUSER default -@scripting); unset,
# empty or 0: scripts run. EVAL must be refused after, or start fails. The
# group keeps its choice in DIR/no-scripting: start-node applies it again.
set -euo pipefail

server=${REDIS_SERVER:-redis-server}
# DEBUG is allowed by an option from Redis 7.0 on (and on Valkey); Redis 6.2
# has no such option, and allows it.
debug_option=(--enable-debug-command yes)
case $("$server" --version 2>/dev/null) in
  "Redis server v="[0-6].*) debug_option=() ;;
esac

usage() {
  sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 64
}

# A port nobody listens on now, below the kernel's ephemeral range (32768
# up): a port in it may be the local end of an outgoing connection, and a
# listener then cannot bind it.
free_port() {
  local port
  for _ in $(seq 1 200); do
    port=$(( 20000 + RANDOM % 12768 ))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return 0
    fi
  done
  echo "redis-nodes: no free port found" >&2
  return 1
}

# Waits until the node answers PING on its socket, or fails after 5 seconds.
wait_ready() {
  local sock=$1 pid=$2
  for _ in $(seq 1 500); do
    if [ -S "$sock" ] && redis-cli -s "$sock" ping 2>/dev/null | grep -q PONG; then
      return 0
    fi
    alive "$pid" || return 1
    sleep 0.01
  done
  return 1
}

# The listening options of the nodes in DIR: TCP on PORT, or TLS on it when
# DIR/tls lists the TLS options (one a line; the unix socket stays plain).
listen_args() {
  local dir=$1 port=$2
  if [ -f "$dir/tls" ]; then
    echo --port
    echo 0
    echo --tls-port
    echo "$port"
    cat "$dir/tls"
  else
    echo --port
    echo "$port"
  fi
}

# The group's way of running no scripts (DIR/no-scripting): lua, acl or "".
scripting_off() {
  cat "$1/no-scripting" 2>/dev/null || true
}

start_node() {
  local dir=$1 i=$2 port=$3
  local ndir="$dir/$i"
  mkdir -p "$ndir"
  local listen module_option=()
  mapfile -t listen < <(listen_args "$dir" "$port")
  # MODULE UNLOAD lua follows (without_scripting).
  [ "$(scripting_off "$dir")" = lua ] && module_option=(--enable-module-command yes)
  "$server" "${listen[@]}" --bind 127.0.0.1 --unixsocket "$ndir/redis.sock" \
    --unixsocketperm 700 --dir "$ndir" --save "" --appendonly no \
    --daemonize no --logfile "$ndir/redis.log" --protected-mode no \
    "${debug_option[@]}" "${module_option[@]}" >/dev/null 2>&1 &
  local pid=$!
  echo "$pid" > "$ndir/pid"
  echo "$port" > "$ndir/port"
  if ! wait_ready "$ndir/redis.sock" "$pid"; then
    echo "redis-nodes: node $i (port $port) did not start; see $ndir/redis.log" >&2
    return 1
  fi
}

# Node I, just started, made to run no scripts as the group asks; checked:
# EVAL is refused after. Says why and fails otherwise.
without_scripting() {
  local dir=$1 i=$2 how sock out
  how=$(scripting_off "$dir")
  [ -n "$how" ] || return 0
  sock="$dir/$i/redis.sock"
  if [ "$how" = lua ]; then
    out=$(redis-cli -s "$sock" MODULE UNLOAD lua 2>&1)
  else
    out=$(redis-cli -s "$sock" ACL SETUSER default -@scripting 2>&1)
  fi
  if [ "$out" != OK ]; then
    echo "redis-nodes: node $i keeps its scripts (REDIS_NO_SCRIPTING=$how): $out" >&2
    return 1
  fi
  out=$(redis-cli -s "$sock" EVAL "return 1" 0 2>&1)
  case $out in
    ERR*|NOPERM*) ;;
    *)
      echo "redis-nodes: node $i still runs EVAL (REDIS_NO_SCRIPTING=$how): $out" >&2
      return 1
      ;;
  esac
}

# Running, and not a zombie waiting for a parent that may never reap it.
alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

stop_node() {
  local ndir=$1
  [ -f "$ndir/pid" ] || return 0
  local pid
  pid=$(cat "$ndir/pid")
  if alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do
      alive "$pid" || break
      sleep 0.01
    done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$ndir/pid"
}

cmd=${1:-}
dir=${2:-}
if [ "$cmd" = free-port ]; then
  free_port
  exit
fi
[ -n "$cmd" ] && [ -n "$dir" ] || usage

case "$cmd" in
  start)
    n=${3:-}
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || usage
    mkdir -p "$dir"
    rm -f "$dir/tls" "$dir/no-scripting"
    case ${REDIS_NO_SCRIPTING:-} in
      ""|0) ;;
      lua|acl) echo "$REDIS_NO_SCRIPTING" > "$dir/no-scripting" ;;
      *)
        echo "redis-nodes: REDIS_NO_SCRIPTING must be lua or acl, not '$REDIS_NO_SCRIPTING'" >&2
        exit 64
        ;;
    esac
    scheme=redis
    if [ "${4:-}" = --tls ]; then
      certs=$(cd "${5:?--tls needs the directory of the certificates}" && pwd)
      auth=no
      [ "${6:-}" = --tls-auth-clients ] && auth=yes
      printf '%s\n' --tls-cert-file "${NODES_TLS_CERT:-$certs/server.crt}" \
        --tls-key-file "${NODES_TLS_KEY:-$certs/server.key}" --tls-ca-cert-file "$certs/ca.crt" \
        --tls-auth-clients "$auth" > "$dir/tls"
      scheme=rediss
    elif [ -n "${4:-}" ]; then
      usage
    fi
    : > "$dir/uris"
    : > "$dir/sockets"
    for i in $(seq 1 "$n"); do
      started=0
      for _ in 1 2 3 4 5; do
        port=$(free_port)
        if start_node "$dir" "$i" "$port" 2>/dev/null; then
          started=1
          break
        fi
        stop_node "$dir/$i"
      done
      if [ "$started" != 1 ]; then
        echo "redis-nodes: could not start node $i" >&2
        "$0" stop "$dir"
        exit 1
      fi
      if ! without_scripting "$dir" "$i"; then
        "$0" stop "$dir"
        exit 1
      fi
      echo "$scheme://127.0.0.1:$port" >> "$dir/uris"
      echo "unix://$(cd "$dir/$i" && pwd)/redis.sock" >> "$dir/sockets"
    done
    "$0" record "$dir"
    cat "$dir/uris"
    ;;
  stop)
    for ndir in "$dir"/*/; do
      [ -d "$ndir" ] && stop_node "${ndir%/}"
    done
    ;;
  stop-node)
    i=${3:-}
    [ -d "$dir/$i" ] || usage
    stop_node "$dir/$i"
    ;;
  start-node)
    i=${3:-}
    [ -f "$dir/$i/port" ] || usage
    start_node "$dir" "$i" "$(cat "$dir/$i/port")"
    if ! without_scripting "$dir" "$i"; then
      stop_node "$dir/$i"
      exit 1
    fi
    ;;
  uris)
    cat "$dir/uris"
    ;;
  record)
    sockets=()
    ids=()
    for ndir in "$dir"/*/; do
      sock=${ndir%/}/redis.sock
      if [ -f "${ndir%/}/pid" ] && [ -S "$sock" ]; then
        sockets+=("$sock")
        ids+=("$(redis-cli -s "$sock" INFO server | tr -d '\r' | sed -n 's/^run_id://p')")
      fi
    done
    for sock in "${sockets[@]}"; do
      redis-cli -s "$sock" SET redlock:members "${ids[*]}" > /dev/null
    done
    ;;
  *)
    usage
    ;;
esac
