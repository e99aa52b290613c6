#!/usr/bin/env bash
# package_wheel.sh SRC DIST - the x86_64 manylinux wheel (the stable ABI of
# CPython 3.10 and later), chosen by pip among DIST's wheels and installed
# into a fresh venv of every CPython 3.10 or later found here (python3,
# python3.1X on the PATH and pyenv's versions; python3 at least), where no
# libhiredis can be loaded: locks taken with each.
. "$(dirname "$0")/lib.sh"
. "$here/wheel.sh"
needs_root
one 'redlock_native-*-cp310-abi3-*manylinux_2_17_x86_64*.whl' >/dev/null

# usable PYTHON: whether PYTHON is a CPython 3.10 or later that makes venvs.
usable() {
  "$1" -c 'import sys, venv, ensurepip
sys.exit(sys.implementation.name != "cpython" or sys.version_info < (3, 10))' 2>/dev/null
}

default=$(command -v python3) || fail "no python3"
usable "$default" || fail "python3 is not a CPython 3.10 or later with venv: $("$default" --version 2>&1)"
# Every python3 and python3.1X on the PATH (not only the first of each).
mapfile -t candidates < <(type -ap python3 python3.10 python3.11 python3.12 python3.13 python3.14)
if command -v pyenv >/dev/null; then
  candidates+=("$(pyenv root)"/versions/*/bin/python3)
fi
pythons=("$default")
declare -A seen
seen[$("$default" -c 'import sys; print(sys.base_prefix, sys.version)')]=1
for python in "${candidates[@]}"; do
  [ -x "$python" ] && usable "$python" || continue
  # One run per interpreter, however many names lead to it.
  id=$("$python" -c 'import sys; print(sys.base_prefix, sys.version)')
  [ -z "${seen[$id]:-}" ] || continue
  seen[$id]=1
  pythons+=("$python")
done

start_nodes
cd "$tmp"
ran=()
for python in "${pythons[@]}"; do
  version=$("$python" -c 'import platform; print(platform.python_version())')
  venv=$tmp/venv-${#ran[@]}
  "$python" -m venv "$venv" || fail "$python cannot make a venv"
  # As bindings/python/README.md says: pip chooses among DIST's wheels.
  "$here/without-hiredis.sh" "$venv/bin/pip" install --no-index --find-links "$dist" \
    --disable-pip-version-check --quiet redlock-native
  installed_tag "$venv/bin/python" "cp310-abi3-manylinux_2_17_x86_64"
  "$here/without-hiredis.sh" "$venv/bin/python" "$here/take_lock.py" "package-wheel-$version" "${nodes[@]}"
  ran+=("$version ($python)")
done
printf 'the x86_64 wheel took locks on CPython %s\n' "${ran[@]}"
