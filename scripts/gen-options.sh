#!/usr/bin/env bash
# gen-options.sh GEN - rewrites the options' documentation in README.md and
# abi/redlock.h from GEN (the gen_options program built from
# core/options.def), between their "options:begin" and "options:end" lines.
#   gen-options.sh GEN --check   only compares, and fails with a diff
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
gen=${1:?usage: gen-options.sh path/to/gen_options [--check]}
check=${2:-}

# region FILE KIND: FILE with the lines between the markers replaced by GEN KIND.
region() {
  local file=$1 kind=$2 generated
  generated=$("$gen" "$kind")
  awk -v text="$generated" '
    /options:begin/ { print; print text; skipping = 1; next }
    /options:end/   { skipping = 0 }
    !skipping       { print }' "$file"
}

status=0
for pair in "README.md markdown" "abi/redlock.h header"; do
  read -r file kind <<<"$pair"
  new=$(region "$root/$file" "$kind")
  if [ "$check" = "--check" ]; then
    if ! diff -u "$root/$file" <(printf '%s\n' "$new") >&2; then
      echo "FAIL: the options in $file are not core/options.def's; run: scripts/gen-options.sh $gen" >&2
      status=1
    fi
  else
    printf '%s\n' "$new" > "$root/$file"
  fi
done
exit $status
