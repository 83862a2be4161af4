#!/usr/bin/env bash
# Configures (once) and builds Optimas into build/: every target, or the targets named
# (scripts/setup.sh builds optimas_tool: optimas and the kernel tracer only).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# The build type is CMakeLists.txt's default (Release) unless BUILD_TYPE names another.
[ -f "$BUILD_DIR/build.ninja" ] || cmake -S . -B "$BUILD_DIR" -G Ninja ${BUILD_TYPE:+-DCMAKE_BUILD_TYPE=$BUILD_TYPE}
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j "$(nproc)" "${targets[@]}"
