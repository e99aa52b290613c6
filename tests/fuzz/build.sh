#!/bin/sh
# build.sh CLANG BUILD_DIR - builds the fuzz targets (tests/fuzz/targets) with
# clang into BUILD_DIR; CTest runs it before the fuzz tests.
set -eu
clang=$1
build_dir=$2
here=$(cd "$(dirname "$0")" && pwd)
cmake -S "$here/targets" -B "$build_dir" -DCMAKE_C_COMPILER="$clang" > "$build_dir.configure.log" 2>&1 ||
  { cat "$build_dir.configure.log"; exit 1; }
cmake --build "$build_dir" -j2
