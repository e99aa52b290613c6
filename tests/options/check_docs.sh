#!/usr/bin/env bash
# check_docs.sh GEN [REDLOCK_BIN] - the options' documentation is what
# core/engine/options.def says: docs/options.md's table and abi/redlock.h's comment are
# GEN's output (a diff and the command that rewrites them otherwise), and the
# tool's --help, when REDLOCK_BIN is given, lists every option as GEN does.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
gen=${1:?usage: check_docs.sh path/to/gen_options [path/to/redlock]}
bin=${2:-}
status=0

"$root/scripts/gen-options.sh" "$gen" --check || status=1

if [ -n "$bin" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  "$gen" help > "$work/expected"
  "$bin" --help > "$work/help"
  # The lines under the heading, up to the blank line that ends the list.
  sed -n '/^Library options/,/^$/{/^Library options/d;/^$/d;p}' "$work/help" > "$work/listed"
  if ! diff -u "$work/expected" "$work/listed" >&2; then
    echo "FAIL: $bin --help does not list the options as 'gen_options help' does;" \
         "rebuild the tool (its redlock_options_help.h comes from gen_options help-c)" >&2
    status=1
  fi
  [ -s "$work/listed" ] || { echo "FAIL: --help lists no library options" >&2; status=1; }
fi
[ "$status" = 0 ] && echo "ok"
exit $status
