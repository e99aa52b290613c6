#!/usr/bin/env bash
# java_growth.sh NATIVE_DIR WORK_DIR [CYCLES] - packages the Java binding with
# Maven over the JNI library that the build made in NATIVE_DIR (its
# bindings/java folder), starts three nodes and runs JavaGrowth.java on it.
# The heap is fixed in size and touched up front, so the resident set follows
# what the program allocates, not how the JVM sizes its heap.
set -euo pipefail
native_dir=$1
work=$2
cycles=${3:-100000}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

rm -f "$work"/maven/redlock-*.jar   # one jar: a version bump leaves the old one
mvn --batch-mode --no-transfer-progress -q -f "$top/bindings/java/pom.xml" package \
  -DskipTests -Dredlock.cmake.skip=true -Dredlock.native.dir="$native_dir" \
  -Dredlock.target.dir="$work/maven"
jar=$(ls "$work"/maven/redlock-*.jar)

nodes="$work/nodes"
trap '"$top/scripts/redis-nodes.sh" stop "$nodes" > /dev/null 2>&1 || true' EXIT
mapfile -t uris < <("$top/scripts/redis-nodes.sh" start "$nodes" 3)

java -Xms64m -Xmx64m -XX:+AlwaysPreTouch -XX:+UseSerialGC -cp "$jar" \
  "$here/JavaGrowth.java" "$cycles" "${uris[@]}"
