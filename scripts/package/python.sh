#!/usr/bin/env bash
# python.sh - the Python wheel (scripts/package.sh runs it).
set -euo pipefail
. "$REDLOCK_SRC/scripts/package/lib.sh"
python=${PYTHON:-python3}
step "Python wheel" python.log \
  "$python" -m pip wheel --no-deps --wheel-dir "$REDLOCK_WORK/wheel" \
    --config-settings=build-dir="$REDLOCK_WORK/python" "$REDLOCK_SRC/bindings/python"
# --patcher none: nothing may need bundling, so nothing is patched.
step "manylinux tag (auditwheel)" auditwheel.log \
  python3 -m auditwheel repair --patcher none --wheel-dir "$REDLOCK_DIST" "$REDLOCK_WORK"/wheel/*.whl
