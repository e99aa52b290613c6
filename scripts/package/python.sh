#!/usr/bin/env bash
# python.sh - the Python artifacts (scripts/package.sh runs it), made by
# scikit-build-core from bindings/python/pyproject.toml:
#   redlock_native-V.tar.gz
#       the source distribution: the package with the core's sources, which
#       pip builds where no wheel fits;
#   redlock_native-V-cp310-abi3-PLATFORM.whl
#       one wheel per target, built from that source distribution by zig
#       (cmake/zig.cmake) with the target's sysroot: CPython's stable ABI
#       (3.10 and later), hiredis linked in, its symbols hidden; manylinux
#       (glibc 2.17, tagged by auditwheel) and musllinux_1_2, x86_64 and
#       aarch64.
# Each wheel is checked, and any failure fails the packaging: abi3audit
# --strict; auditwheel show for the glibc ones (it reads any machine's
# wheel); for all, the module's ELF: its machine, what it needs (libc only),
# what it exports (PyInit__capi only), and no glibc symbol newer than 2.17.
# auditwheel cannot judge a musl wheel on a glibc machine (it takes the
# machine's libc.so, a linker script, for musl's), and no musl CPython runs
# here: the musl wheels are checked by their ELF alone.
set -euo pipefail
. "$REDLOCK_SRC/scripts/package/lib.sh"
python3 -c 'import build, scikit_build_core, swig, abi3audit' 2>/dev/null ||
  { echo "package: build, scikit-build-core, swig or abi3audit is missing: run scripts/setup.sh" >&2; exit 1; }

work=$REDLOCK_WORK/python
rm -rf "$work"
mkdir -p "$work/wheels"
fail() {
  echo "package: $*" >&2
  exit 1
}

# Every build runs in the build machine's Python with its packages (what
# scripts/setup.sh installs), not in an isolated environment of the build's
# requirements: cmake/zig.cmake finds zig through python3 (ziglang), which
# such an environment hides, and nothing is downloaded.
sdist=$REDLOCK_DIST/redlock_native-$REDLOCK_VERSION.tar.gz
step "Python source distribution" python-sdist.log \
  python3 -m build --sdist --no-isolation --outdir "$REDLOCK_DIST" "$REDLOCK_SRC/bindings/python"
[ -f "$sdist" ] || fail "no ${sdist##*/}"
tar -C "$work" -xzf "$sdist"
source_dir=$work/redlock_native-$REDLOCK_VERSION

# The build machine's CPython headers serve every target: what the limited
# API of 3.10 (Py_LIMITED_API=0x030A0000) declares depends on nothing of
# the machine but type sizes, alignment and byte order, which are the same
# on every 64-bit little-endian Linux. They are copied into each sysroot,
# so that a zig build sees them and nothing else of the build machine's
# /usr/include (where Debian's pyconfig.h only includes the machine's own:
# the copy is that one).
python_headers() {
  python3 - "$1" <<'EOF'
import os, shutil, sys, sysconfig
include = sysconfig.get_paths()["include"]
dest = os.path.join(sys.argv[1], os.path.basename(include))
shutil.rmtree(dest, ignore_errors=True)
shutil.copytree(include, dest)
multiarch = sysconfig.get_config_var("MULTIARCH")
if multiarch:
    own = os.path.join(os.path.dirname(include), multiarch, os.path.basename(include), "pyconfig.h")
    if os.path.isfile(own):
        shutil.copy(own, os.path.join(dest, "pyconfig.h"))
print(dest)
EOF
}

# check_module TARGET WHEEL: the ELF checks above of the wheel's module, and
# the licenses it carries; says what it found.
check_module() {
  local target=$1 wheel=$2 dir lib machine needed n exports versions newest
  dir=$work/check-$target
  python3 -m zipfile -e "$wheel" "$dir"
  lib=$dir/redlock/_capi.abi3.so
  [ -f "$lib" ] || fail "${wheel##*/} has no redlock/_capi.abi3.so"
  for license in LICENSE hiredis/COPYING; do
    [ -f "$dir/redlock_native-$REDLOCK_VERSION.dist-info/licenses/$license" ] ||
      fail "${wheel##*/} lacks the license $license"
  done
  machine=$(readelf -h "$lib" | sed -n 's/^ *Machine: *//p')
  case $(arch "$target") in
    x86_64) [[ $machine == *X86-64 ]] ;;
    aarch64) [[ $machine == AArch64 ]] ;;
  esac || fail "${wheel##*/}: the module is for $machine"
  needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' | xargs)
  for n in $needed; do
    if is_musl "$target"; then
      [ "$n" = libc.so ]
    else
      [[ $n =~ ^(libc\.so\.6|libpthread\.so\.0|libdl\.so\.2|libm\.so\.6|ld-linux.*\.so\.[0-9])$ ]]
    fi || fail "${wheel##*/}: the module needs $n"
  done
  exports=$(nm -D --defined-only "$lib" | awk '{ print $NF }' | xargs)
  [ "$exports" = PyInit__capi ] || fail "${wheel##*/}: the module exports $exports"
  versions=$(readelf -V -W "$lib" | sed -n 's/.*Name: GLIBC_\([0-9.]*\).*/\1/p' | sort -uV)
  if is_musl "$target"; then
    [ -z "$versions" ] || fail "${wheel##*/}: a musl module with glibc symbol versions"
    newest=none
  else
    newest=$(tail -n1 <<<"$versions")
    [ "$(printf '%s\n' "$newest" 2.17 | sort -V | tail -n1)" = 2.17 ] ||
      fail "${wheel##*/}: the module needs glibc $newest"
  fi
  echo "$machine, needs $needed (newest glibc symbol: $newest), exports $exports"
}

for target in $REDLOCK_GLIBC_TARGETS $REDLOCK_MUSL_TARGETS; do
  root=$(sysroot "$target")
  headers=$(python_headers "$root/include")
  # The wheel's platform: scikit-build-core takes it from
  # _PYTHON_HOST_PLATFORM, as setuptools does; auditwheel turns a glibc
  # one's linux_ARCH into its manylinux tags (and cannot make a musllinux
  # one here).
  if is_musl "$target"; then
    platform=musllinux_1_2_$(arch "$target")
  else
    platform=linux-$(arch "$target")
  fi
  build=$work/build-$target
  step "Python wheel for $target" "python-$target.log" \
    env _PYTHON_HOST_PLATFORM="$platform" python3 -m build --wheel --no-isolation \
      --outdir "$work/wheels/$target" \
      -C build-dir="$build" \
      -C cmake.toolchain-file="$REDLOCK_SRC/cmake/zig.cmake" \
      -C cmake.build-type=Release \
      -C cmake.define.REDLOCK_ZIG_TARGET="$target" \
      -C cmake.define.REDLOCK_SYSROOT="$root" \
      -C cmake.define.Python_INCLUDE_DIR="$headers" \
      -C cmake.define.REDLOCK_STATIC_HIREDIS=ON \
      -C cmake.define.BUILD_TESTING=OFF \
      -C cmake.define.CMAKE_EXPORT_COMPILE_COMMANDS=ON \
      "$source_dir"
  # The build machine's C library headers are for its own C library only.
  if grep -Eq '[ =]/usr/(local/)?include' "$build/compile_commands.json"; then
    fail "the $target build of the Python module uses the build machine's /usr/include"
  fi
  built=("$work/wheels/$target"/*.whl)
  [ ${#built[@]} -eq 1 ] || fail "not one wheel from the $target build: ${built[*]}"
  if is_musl "$target"; then
    wheel=${built[0]}
    audit="musl: its ELF only (auditwheel reads no musl wheel on a glibc machine)"
  else
    # --patcher none: nothing may need bundling, so nothing is patched.
    step "manylinux tags for $target (auditwheel)" "auditwheel-$target.log" \
      python3 -m auditwheel repair --patcher none --wheel-dir "$work/repaired/$target" "${built[0]}"
    wheel=$(echo "$work/repaired/$target"/*.whl)
    tag=manylinux_2_17_$(arch "$target")
    [[ ${wheel##*/} == *"$tag"* ]] || fail "${wheel##*/} is not tagged $tag"
    show=$(python3 -m auditwheel show "$wheel" 2>&1 | tr -s ' \n' ' ')
    [[ $show == *"consistent with the following platform tag: \"$tag\""* ]] ||
      fail "auditwheel does not find ${wheel##*/} $tag: $show"
    [[ $show != *"external shared libraries are required"* ]] || fail "${wheel##*/} needs libraries: $show"
    audit="auditwheel: $tag"
  fi
  [[ ${wheel##*/} == "redlock_native-$REDLOCK_VERSION-cp310-abi3-$platform"* ||
     ${wheel##*/} == "redlock_native-$REDLOCK_VERSION-cp310-abi3-manylinux"* ]] ||
    fail "${wheel##*/} is not a cp310-abi3 wheel for $target"
  step "abi3audit --strict ${wheel##*/}" "abi3audit-$target.log" abi3audit --strict --verbose "$wheel"
  elf=$(check_module "$target" "$wheel")
  echo "package:   $audit; $elf"
  cp "$wheel" "$REDLOCK_DIST/"
done
