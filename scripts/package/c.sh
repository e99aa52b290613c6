#!/usr/bin/env bash
# c.sh - the C tarballs (scripts/package.sh runs it): for each glibc target,
# redlock-V-linux-ARCH.tar.gz, unpacking to redlock-V-linux-ARCH/ with the
# library (hiredis linked in: REDLOCK_EMBED_HIREDIS), its header, pkg-config
# and CMake files, the tool and its manual page; share/doc/redlock/ has the
# licenses and hiredis-NOTICE, which names the hiredis inside.
set -euo pipefail
. "$REDLOCK_SRC/scripts/package/lib.sh"
for target in $REDLOCK_GLIBC_TARGETS; do
  name=redlock-$REDLOCK_VERSION-linux-$(arch "$target")
  build=$REDLOCK_WORK/c-$target
  step "C library and tool for $target" "c-$target.log" bash -c '
    . "$REDLOCK_SRC/scripts/package/lib.sh"
    cross_cmake "$1" "$REDLOCK_SRC" "$2" -DREDLOCK_EMBED_HIREDIS=ON -DREDLOCK_STATIC_HIREDIS=ON &&
    cmake --build "$2" && cmake --install "$2" --prefix "$3"' _ \
    "$target" "$build" "$REDLOCK_WORK/stage/$name"
  # The licenses: the project's, and hiredis' (BSD-3-Clause), which it
  # carries, with the notice of which hiredis that is (as the tool's
  # --version says).
  mkdir -p "$REDLOCK_WORK/stage/$name/share/doc/redlock"
  cp "$REDLOCK_SRC/LICENSE" "$REDLOCK_SRC/README.md" "$REDLOCK_WORK/stage/$name/share/doc/redlock/"
  for file in COPYING NOTICE; do
    cp "$(sysroot "$target")/share/licenses/hiredis/$file" \
       "$REDLOCK_WORK/stage/$name/share/doc/redlock/hiredis-$file"
  done
  tar -C "$REDLOCK_WORK/stage" -czf "$REDLOCK_DIST/$name.tar.gz" "$name"
done
