#!/usr/bin/env bash
# The README's second command: build and run the whole test suite (unit and scenario tests;
# the GPU test skips itself where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" "$@"
