#!/usr/bin/env bash
# java.sh - the jar (scripts/package.sh runs it): the JNI library built for
# every target (bindings/java's CMake build, through cmake/zig.cmake, hiredis
# linked in, without debug information), then one Maven package of them all, each as
# native/<platform>/libredlock_jni.so (linux-x86_64, linux-aarch64-musl, ...,
# as NativeLoader.java looks them up), with hiredis' license and notice, and
# its version in the manifest (Hiredis-Version); then the adapters' jars on it.
set -euo pipefail
. "$REDLOCK_SRC/scripts/package/lib.sh"

# What Maven packages (pom.xml's redlock.native.dir): the natives of every
# target, the generated Java and hiredis' license.
natives=$REDLOCK_WORK/java-natives
rm -rf "$natives"
mkdir -p "$natives/native"
for target in $REDLOCK_GLIBC_TARGETS $REDLOCK_MUSL_TARGETS; do
  build=$REDLOCK_WORK/java-$target
  platform=linux-$(arch "$target")
  if is_musl "$target"; then
    platform=$platform-musl
  fi
  step "JNI library for $target" "java-$target.log" bash -c '
    . "$REDLOCK_SRC/scripts/package/lib.sh"
    cross_cmake "$1" "$REDLOCK_SRC/bindings/java" "$2" -DREDLOCK_STATIC_HIREDIS=ON \
      -DCMAKE_SHARED_LINKER_FLAGS=-Wl,--strip-debug -DCMAKE_EXPORT_COMPILE_COMMANDS=ON &&
    cmake --build "$2" --target redlock_jni' _ "$target" "$build"
  lib=$build/native/$platform/libredlock_jni.so
  [ -f "$lib" ] || { echo "package: no $platform/libredlock_jni.so from the $target build" >&2; exit 1; }
  # The build machine's C library headers are for its own C library only.
  if grep -Eq '[ =]/usr/(local/)?include' "$build/compile_commands.json"; then
    echo "package: the $target build of the JNI library uses the build machine's /usr/include" >&2
    exit 1
  fi
  cp -r "$build/native/$platform" "$natives/native/"
  # The generated Java is the same for every target: the first one's is
  # packaged, the others' must match it.
  if [ -d "$natives/java" ]; then
    diff -r "$natives/java" "$build/java" >/dev/null ||
      { echo "package: the $target build generated other Java sources" >&2; exit 1; }
  else
    cp -r "$build/java" "$natives/java"
    cp -r "$build/licenses" "$natives/licenses"
  fi
done
[ -f "$natives/licenses/LICENSE.hiredis" ] ||
  { echo "package: hiredis' license is missing from the JNI builds" >&2; exit 1; }
# Which hiredis the libraries carry: a notice beside its license
# (META-INF/NOTICE.hiredis), and the manifest's Hiredis-Version.
cp "$(sysroot "${REDLOCK_GLIBC_TARGETS%% *}")/share/licenses/hiredis/NOTICE" \
   "$natives/licenses/NOTICE.hiredis"

step "jar (Maven)" maven.log \
  mvn --batch-mode --no-transfer-progress -f "$REDLOCK_SRC/bindings/java/pom.xml" package \
    -DskipTests -Dredlock.cmake.skip=true -Dredlock.native.dir="$natives" \
    -Dredlock.hiredis.version="$REDLOCK_HIREDIS_VERSION" \
    -Dredlock.target.dir="$REDLOCK_WORK/maven"
jar=$REDLOCK_WORK/maven/redlock-$REDLOCK_VERSION.jar
# Every native went in.
listing=$(python3 -m zipfile -l "$jar")
for lib in "$natives"/native/*/libredlock_jni.so; do
  entry=native/${lib#"$natives/native/"}
  grep -q "^$entry " <<<"$listing" || { echo "package: $entry is not in the jar" >&2; exit 1; }
done
cp "$jar" "$REDLOCK_DIST/"

# The adapters (bindings/java/adapters), each a jar of its own that depends on
# the one above: Maven finds it in its local repository, where it is
# installed first.
step "jar in Maven's local repository" maven-install.log \
  mvn --batch-mode --no-transfer-progress \
    org.apache.maven.plugins:maven-install-plugin:3.1.1:install-file \
    -Dfile="$jar" -DpomFile="$REDLOCK_SRC/bindings/java/pom.xml"
for adapter in shedlock spring-integration; do
  step "jar of the $adapter adapter (Maven)" "maven-$adapter.log" \
    mvn --batch-mode --no-transfer-progress \
      -f "$REDLOCK_SRC/bindings/java/adapters/$adapter/pom.xml" package -DskipTests \
      -Dredlock.target.dir="$REDLOCK_WORK/maven-$adapter"
  cp "$REDLOCK_WORK/maven-$adapter/redlock-$adapter-$REDLOCK_VERSION.jar" "$REDLOCK_DIST/"
done
