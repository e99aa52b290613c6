#!/usr/bin/env bash
# package_wheel.sh SRC DIST - pip install of the wheel into a fresh venv,
# where no libhiredis can be loaded: locks taken with it.
. "$(dirname "$0")/lib.sh"
needs_root
wheel=$(one 'redlock_native-*.whl')
python3 -m venv "$tmp/venv"
start_nodes
"$here/without-hiredis.sh" "$tmp/venv/bin/pip" install --no-index --disable-pip-version-check --quiet "$wheel"
cd "$tmp"
"$here/without-hiredis.sh" "$tmp/venv/bin/python" "$here/take_lock.py" package-wheel "${nodes[@]}"
