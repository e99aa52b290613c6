#!/usr/bin/env bash
# gen-options.sh GEN - rewrites the options' documentation in docs/options.md
# (the table), abi/redlock.h (the comment) and bindings/lua/README.md (the
# names) from GEN (the gen_options program built from core/engine/options.def),
# between their "options:begin" and "options:end" lines.
#   gen-options.sh GEN --check   only compares, and fails with a diff
# GEN is build/tools/gen_options (or build/tests/options/gen_options in a
# build without the tool).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
gen=${1:?usage: gen-options.sh path/to/gen_options [--check]}
check=${2:-}

status=0
for pair in "docs/options.md markdown" "abi/redlock.h header" "bindings/lua/README.md names"; do
  read -r file kind <<<"$pair"
  # Without both markers, once each, there is nothing to compare or rewrite.
  if [ "$(grep -c 'options:begin' "$root/$file")" != 1 ] ||
     [ "$(grep -c 'options:end' "$root/$file")" != 1 ]; then
    echo "FAIL: $file needs one 'options:begin' and one 'options:end' line" >&2
    status=1
    continue
  fi
  # Here, not inside the substitution below, so that a failing GEN stops us.
  if [ "$kind" = names ]; then
    # The names alone, from the table's first column: `a`, `b`, ...
    table=$("$gen" markdown)
    generated=$(sed -n 's/^| `\([a-z0-9_]*\)` |.*/`\1`/p' <<<"$table" | paste -sd, | sed 's/,/, /g')
    [ -n "$generated" ] || { echo "FAIL: no option names in GEN's table" >&2; exit 1; }
  else
    generated=$("$gen" "$kind")
  fi
  # Through the environment: awk -v would take backslashes as escapes.
  new=$(GENERATED=$generated awk '
    /options:begin/ { print; print ENVIRON["GENERATED"]; skipping = 1; next }
    /options:end/   { skipping = 0 }
    !skipping       { print }' "$root/$file")
  if [ "$check" = "--check" ]; then
    if ! diff -u "$root/$file" <(printf '%s\n' "$new") >&2; then
      echo "FAIL: the options in $file are not core/engine/options.def's; run: scripts/gen-options.sh $gen" >&2
      status=1
    fi
  else
    printf '%s\n' "$new" > "$root/$file"
  fi
done
exit $status
