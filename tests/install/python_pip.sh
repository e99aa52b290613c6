#!/usr/bin/env bash
# python_pip.sh SRC - installs the Python binding as a user does,
# `pip install ./bindings/python`, into a fresh virtual environment, and runs
# the binding's lock tests against that installed package.
set -euo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q "$src/bindings/python[test]"
# From outside the source tree, so that only the installed package is found.
cd "$tmp"
"$tmp/venv/bin/python" -c 'import redlock; print("installed redlock", redlock.__version__)'
"$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider "$src/bindings/python/tests/test_lock.py" \
  "$src/bindings/python/tests/test_asyncio.py"
