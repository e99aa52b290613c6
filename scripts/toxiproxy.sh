#!/usr/bin/env bash
# toxiproxy.sh - install Toxiproxy's server, the fault-injecting TCP proxy
# that the fault tests and the mutual-exclusion run put between clients and
# redis-server nodes.
#
#   toxiproxy.sh install   build toxiproxy-server with `go install` (pinned
#                          version) into $GOBIN, or $(go env GOPATH)/bin
#   toxiproxy.sh path      print the installed binary's path; fail if absent
set -euo pipefail

version=v2.5.0
module=github.com/Shopify/toxiproxy/v2

bin_dir() {
  local gobin
  gobin=$(go env GOBIN)
  if [ -n "$gobin" ]; then
    echo "$gobin"
  else
    echo "$(go env GOPATH)/bin"
  fi
}

case "${1:-}" in
  install)
    dir=$(bin_dir)
    # The binary says which module version it was built from.
    if [ -x "$dir/toxiproxy-server" ] \
       && go version -m "$dir/toxiproxy-server" | grep -q "mod[[:space:]]*$module[[:space:]]*$version"; then
      exit 0
    fi
    mkdir -p "$dir"
    # In v2 the server is the package cmd/server: go install names it `server`.
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    GOBIN=$tmp go install "$module/cmd/server@$version"
    mv "$tmp/server" "$dir/toxiproxy-server"
    echo "toxiproxy-server $version installed in $dir"
    ;;
  path)
    command -v go >/dev/null || exit 1
    path="$(bin_dir)/toxiproxy-server"
    [ -x "$path" ] || exit 1
    echo "$path"
    ;;
  *)
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 64
    ;;
esac
