#!/usr/bin/env bash
# check.sh LIB - checks a built libredlock against the committed ABI:
#   - the exported symbols (nm -D) equal abi/redlock.symbols;
#   - abidiff finds no change at all against the baseline abi/redlock.abi, and no
#     incompatible one against the baseline of every earlier release
#     (abi/redlock-X.Y.abi). Both headers count: redlock.h and redlock_engine.h.
# check.sh --update LIB rewrites both from LIB (for a deliberate ABI change,
# together with a new node in abi/redlock.map).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

exported() {
  nm -D --defined-only "$1" | awk '{print $3}' | sed 's/@.*//' | grep -v '^REDLOCK_' | sort
}

if [ "${1:-}" = "--update" ]; then
  lib=$2
  exported "$lib" > "$here/redlock.symbols"
  abidw --no-corpus-path --no-comp-dir-path --headers-dir "$here" "$lib" > "$here/redlock.abi"
  echo "updated redlock.symbols and redlock.abi from $lib"
  exit 0
fi

lib=${1:?usage: check.sh [--update] path/to/libredlock.so}
if ! diff -u "$here/redlock.symbols" <(exported "$lib"); then
  echo "FAIL: exported symbols differ from abi/redlock.symbols" >&2
  exit 1
fi
echo "exported symbols: $(wc -l < "$here/redlock.symbols") as committed"

for baseline in "$here"/redlock-*.abi "$here/redlock.abi"; do
  set +e
  abidiff --hd2 "$here" --suppressions "$here/engine-0.suppr" "$baseline" "$lib"
  rc=$?
  set -e
  # abidiff's status is a bit field: 1 error, 2 usage error, 4 change, 8 incompatible change.
  # Against an earlier release, additions are changes; against the committed baseline of
  # this one, any change is one nobody meant (a deliberate one is made with --update). A
  # changed parameter or return type is only a "change" to abidiff: the committed baseline
  # is what holds it.
  mask=11
  [ "$baseline" = "$here/redlock.abi" ] && mask=15
  if (( rc & mask )); then
    echo "FAIL: abidiff reports an incompatible ABI change against $(basename "$baseline") or failed (status $rc)" >&2
    exit 1
  fi
  echo "abidiff: no incompatible change against $(basename "$baseline") (status $rc)"
done
