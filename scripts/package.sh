#!/usr/bin/env bash
# package.sh [DIST [WORK]] - builds, from this source tree, the artifacts a
# user installs without it, into DIST (default dist/; WORK, default
# build-package/, holds the builds and is removed on success):
#
#   redlock_native-V-cpXY-cpXY-manylinux_2_N_x86_64.whl   pip install it; import redlock
#   redlock-V.jar                       java -cp it; it carries libredlock_jni.so
#   lua-5.4/redlock-V-1.linux-x86_64.rock   luarocks --lua-version 5.4 install it
#   lua-5.1/redlock-V-1.linux-x86_64.rock   the same for LuaJIT and OpenResty
#   redlock-V-linux-x86_64.tar.gz       the C library, header, pkg-config and
#                                       CMake files, the tool and its man page
#
# The wheel, the jar and the rocks have hiredis linked in
# (REDLOCK_STATIC_HIREDIS) and need nothing but libc; auditwheel gives the
# wheel its manylinux tag, and refuses a wheel that would need a library
# bundled. The tarball is a system install: its library and tool use the
# system's libhiredis. Each build starts from scratch. Needs what
# scripts/setup.sh installs; PYTHON picks the Python the wheel is for.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dist=$(realpath -m "${1:-$src/dist}")
work=$(realpath -m "${2:-$src/build-package}")
python=${PYTHON:-python3}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}

version=$(sed -n 's/^#define REDLOCK_VERSION_STRING "\(.*\)"$/\1/p' "$src/abi/redlock.h")
[ -n "$version" ] || { echo "package: no version in abi/redlock.h" >&2; exit 1; }
python3 -m auditwheel --version >/dev/null 2>&1 ||
  { echo "package: auditwheel is missing: run scripts/setup.sh" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work/tmp" "$dist"
export TMPDIR=$work/tmp
# Only this run's artifacts in DIST.
rm -rf "$dist"/redlock_native-*.whl "$dist"/redlock-*.jar "$dist"/redlock-*.tar.gz "$dist"/lua-*

# step NAME LOG COMMAND...: runs COMMAND with its output in WORK/LOG, shown if it fails.
step() {
  local name=$1 log=$work/$2
  shift 2
  echo "package: $name"
  "$@" >"$log" 2>&1 || { cat "$log" >&2; echo "package: $name failed" >&2; exit 1; }
}

step "Python wheel" python.log \
  "$python" -m pip wheel --no-deps --wheel-dir "$work/wheel" \
    --config-settings=build-dir="$work/python" "$src/bindings/python"
# --patcher none: nothing may need bundling, so nothing is patched.
step "manylinux tag (auditwheel)" auditwheel.log \
  python3 -m auditwheel repair --patcher none --wheel-dir "$dist" "$work"/wheel/*.whl

step "jar (Maven)" maven.log \
  mvn --batch-mode --no-transfer-progress -f "$src/bindings/java/pom.xml" package \
    -DskipTests -Dredlock.target.dir="$work/maven"
cp "$work/maven/redlock-$version.jar" "$dist/"

# A binary rock per Lua ABI: 5.4, and 5.1 for LuaJIT and OpenResty. Both
# are named for the platform alone, hence a folder each.
for lua in 5.4 5.1; do
  step "Lua $lua rock" "lua-$lua.log" \
    bash -c 'cd "$1/bindings/lua" && luarocks --lua-version "$2" --tree "$3" make' _ \
      "$src" "$lua" "$work/lua-$lua"
  mkdir -p "$dist/lua-$lua"
  (cd "$dist/lua-$lua" && luarocks --lua-version "$lua" --tree "$work/lua-$lua" pack redlock >/dev/null)
done

name=redlock-$version-linux-$(uname -m)
step "C library and tool" c.log \
  bash -c 'cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DREDLOCK_WERROR=OFF &&
           cmake --build "$2" && cmake --install "$2" --prefix "$3"' _ \
    "$src" "$work/c" "$work/stage/$name"
tar -C "$work/stage" -czf "$dist/$name.tar.gz" "$name"

rm -rf "$work"
echo "package: in $dist:"
(cd "$dist" && find . -type f \( -name '*.whl' -o -name '*.jar' -o -name '*.rock' -o -name '*.tar.gz' \) |
  sed 's|^\./|  |' | sort)
