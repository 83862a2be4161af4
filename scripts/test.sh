#!/usr/bin/env bash
# The README's second command: build and run the whole test suite (unit and scenario tests;
# the GPU test skips itself where there is no GPU), then the fuzz tests (scripts/fuzz.sh: a
# clang build of its own in build-fuzz, 12 s per harness; skipped without clang).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# Two ctest slots a core, plus one: a busy test takes 2, one that mostly waits (IDLE in
# tests/CMakeLists.txt: Slurm's, the slow clients') takes 1 and runs beside them.
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j "$((2 * $(nproc) + 1))" "$@")
[ "${OPTIMAS_SKIP_FUZZ:-0}" = 1 ] || bash scripts/fuzz.sh
