#!/usr/bin/env bash
# java.sh - the jar (scripts/package.sh runs it).
set -euo pipefail
. "$REDLOCK_SRC/scripts/package/lib.sh"
step "jar (Maven)" maven.log \
  mvn --batch-mode --no-transfer-progress -f "$REDLOCK_SRC/bindings/java/pom.xml" package \
    -DskipTests -Dredlock.target.dir="$REDLOCK_WORK/maven"
cp "$REDLOCK_WORK/maven/redlock-$REDLOCK_VERSION.jar" "$REDLOCK_DIST/"
