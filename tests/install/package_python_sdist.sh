#!/usr/bin/env bash
# package_python_sdist.sh SRC DIST - the Python source distribution built and
# installed by pip, as where no wheel fits (pip install redlock_native-V.tar.gz
# into a fresh venv: scikit-build-core and SWIG from the package index, this
# machine's compiler, CMake and hiredis' static library), and then used where
# no libhiredis can be loaded: locks taken with it. pip builds it from the
# unpacked archive alone, away from this source tree.
. "$(dirname "$0")/lib.sh"
needs_root
sdist=$(one 'redlock_native-*.tar.gz')
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --no-cache-dir --disable-pip-version-check --quiet "$sdist" >"$tmp/pip.log" 2>&1 ||
  { cat "$tmp/pip.log" >&2; fail "pip cannot build ${sdist##*/}"; }
site=$(echo "$tmp"/venv/lib/python3*/site-packages)
[ -f "$site/redlock/_capi.abi3.so" ] || fail "the built package has no _capi.abi3.so: $(ls "$site/redlock")"
# With hiredis linked in, hiredis' license goes with the project's.
for license in LICENSE hiredis/COPYING; do
  [ -f "$(echo "$site"/redlock_native-*.dist-info)/licenses/$license" ] ||
    fail "the built package lacks the license $license"
done
start_nodes
cd "$tmp"
"$here/without-hiredis.sh" "$tmp/venv/bin/python" "$here/take_lock.py" package-python-sdist "${nodes[@]}"
echo "${sdist##*/}: built by pip, its stable-ABI module takes locks"
