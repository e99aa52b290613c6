#!/usr/bin/env bash
# package_jar.sh SRC DIST - the jar on the class path, where no libhiredis
# can be loaded: locks taken with it.
. "$(dirname "$0")/lib.sh"
needs_root
jar=$(one 'redlock-*.jar')
start_nodes
cd "$tmp"
"$here/without-hiredis.sh" java -cp "$jar" "$here/TakeLock.java" package-jar "${nodes[@]}"
